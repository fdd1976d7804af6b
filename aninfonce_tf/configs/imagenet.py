"""ImageNet in SimCLR v1's setting: ResNet-50, LARS, 100 epochs at batch 1024; `mocov2`
with MoCo v2's views. Sources: docs/method.md#imagenet

Example:

>>> preset = PRESETS["imagenet"].resolved()
>>> preset.optimizer, preset.steps, preset.warmup_steps, round(preset.learning_rate, 6)
('lars', 125100, 12510, 2.4)
"""

import dataclasses

from aninfonce_tf.configs import images
from aninfonce_tf.configs.images import ImageConfig, build

# SimCLR v1: its 2-layer projection head and weight decay 1e-6 (v2: 3 layers, 1e-4).
SIMCLR = ImageConfig(
    dataset="imagenet2012",
    augmentation="simclr_imagenet",
    encoder="resnet50",
    synchronized_batch_norm=True,
    batch_size=1024,
    epochs=100,
    eval_epochs=10,
    optimizer="lars",
    momentum=0.9,
    base_learning_rate=0.075,
    learning_rate_scaling="sqrt",
    learning_rate_schedule="cosine",
    warmup_epochs=10,
    l2_weight_decay=1e-6,
    infonce_temperature=0.1,
    projector_units="2048,128",
    projector_batch_norm=True,
    projector_kernel_stddev=0.01,
    probe_size=10_000,
    readout_size=10_000,
    linear_eval_epochs=90,
    linear_eval_batch_size=4096,
    linear_eval_weight_decay=1e-6,
    mixed_precision=True,
    view_dtype="uint8",
    **images.FROM_EPOCHS,
)
PRESETS = {
    "imagenet": SIMCLR,
    "mocov2": dataclasses.replace(SIMCLR, augmentation="mocov2_imagenet"),
}
SMOKE = dict(
    images.SMOKE,
    mock_data=True,
    linear_eval_epochs=2,
    augmentation="simclr_cifar10",
    warmup_steps=5,
    synchronized_batch_norm=False,
    mixed_precision=False,
)
SMOKE_FULL = images.SMOKE_FULL
# The flags of this recipe: ImageNet's 224-pixel views and encoders (`parse_config`).
NOT_FLAGS = ("dataset", "patches_per_photo")
FLAG_CHOICES = {
    "encoder": ("resnet50", "small_cnn"),
    "augmentation": ("simclr_imagenet", "mocov2_imagenet"),
}

__all__ = ["FLAG_CHOICES", "NOT_FLAGS", "PRESETS", "SMOKE", "SMOKE_FULL", "build"]
