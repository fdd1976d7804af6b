"""ImageNet in SimCLR's setting (Chen et al., 2020; the paper's ImageNet protocol is
not public): ResNet-50 v1.5, SimCLR's views at 224x224 (jitter strength 1.0:
0.8/0.8/0.8/0.2 with p 0.8, grayscale p 0.2, blur p 0.5), cropped from the image at
its full resolution, LARS (momentum 0.9, trust coefficient 0.001, weight decay 1e-6;
biases and batch norm excluded from both) at 0.3 x B / 256 with a 10-epoch linear
warm-up then a cosine decay to 0, InfoNCE temperature 0.1, a 2048-2048-128 projector
with batch norm and SimCLR's N(0, 0.01^2) kernels, batch norm synchronised across
replicas, 100 epochs, the encoder in mixed_bfloat16 (TPUs and A100-class GPUs; on a
V100, which lacks bfloat16, pass `--mixed-precision false`). Batch 1024
(SimCLR's is 4096): the schedule is given in epochs and the learning rate per 256
pairs, so that another `--batch-size` B keeps 100 epochs, a 10-epoch warm-up and
0.3 x B / 256 (`ImageConfig.resolved`).

The `mocov2` preset keeps everything but the views: MoCo v2's (jitter
0.4/0.4/0.4/0.1, crops of 20-100 %).

Example:

>>> preset = PRESETS["imagenet"].resolved()
>>> preset.optimizer, preset.steps, preset.warmup_steps, preset.learning_rate
('lars', 125100, 12510, 1.2)
"""

import dataclasses

from aninfonce_tf.configs import images
from aninfonce_tf.configs.images import ImageConfig, build

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
    base_learning_rate=0.3,
    learning_rate_schedule="cosine",
    warmup_epochs=10,
    l2_weight_decay=1e-6,
    infonce_temperature=0.1,
    projector_units="2048,128",
    projector_batch_norm=True,
    projector_kernel_stddev=0.01,
    probe_size=10_000,
    readout_size=10_000,
    mixed_precision=True,
    **images.FROM_EPOCHS,
)
PRESETS = {
    "imagenet": SIMCLR,
    "mocov2": dataclasses.replace(SIMCLR, augmentation="mocov2_imagenet"),
}
SMOKE = dict(
    images.SMOKE,
    mock_data=True,
    augmentation="simclr_cifar10",
    warmup_steps=5,
    synchronized_batch_norm=False,
    mixed_precision=False,
)
# The flags of this recipe: ImageNet's 224-pixel views and encoders (`parse_config`).
NOT_FLAGS = ("dataset", "patches_per_photo")
FLAG_CHOICES = {
    "encoder": ("resnet50", "small_cnn"),
    "augmentation": ("simclr_imagenet", "mocov2_imagenet"),
}

__all__ = ["FLAG_CHOICES", "NOT_FLAGS", "PRESETS", "SMOKE", "build"]
