"""ImageNet with ResNet-50 (chosen here; the paper's ImageNet protocol is not public):
SimCLR's ImageNet views at 224x224 with blur, batch 1024, SGD with momentum 0.9 at
0.1 x B / 256 cosine-decayed, weight decay 1e-4 (SimCLR used LARS, which Keras core
lacks), 100 epochs of 1,251 steps, synchronised batch norm.

Example:

>>> PRESETS["imagenet"].steps
125100
"""

from aninfonce_tf.configs import images
from aninfonce_tf.configs.images import ImageConfig, build

BATCH = 1024
STEPS_PER_EPOCH = 1_281_167 // BATCH
PRESETS = {
    "imagenet": ImageConfig(
        dataset="imagenet2012",
        augmentation="simclr_imagenet",
        encoder="resnet50",
        synchronized_batch_norm=True,
        batch_size=BATCH,
        steps=100 * STEPS_PER_EPOCH,
        eval_every=10 * STEPS_PER_EPOCH,
        learning_rate=0.1 * BATCH / 256,
        weight_decay=1e-4,
        mixed_precision=True,
        **images.SGD_COSINE,
    ),
}
SMOKE = dict(
    images.SMOKE,
    mock_data=True,
    augmentation="simclr_cifar10",
    synchronized_batch_norm=False,
    mixed_precision=False,
)

__all__ = ["PRESETS", "SMOKE", "build"]
