"""CIFAR10 with ResNet-18 (CIFAR stem) and the SimSiam-style optimisation the paper
followed: SGD with momentum 0.9, learning rate 0.03 x B / 256 cosine-decayed, weight
decay 5e-4, batch 512, 800 epochs (97 steps each).

Example:

>>> PRESETS["cifar10"].steps, round(PRESETS["cifar10"].learning_rate, 3)
(77600, 0.06)
"""

from aninfonce_tf.configs import images
from aninfonce_tf.configs.images import ImageConfig, build

BATCH = 512
PRESETS = {
    "cifar10": ImageConfig(
        dataset="cifar10",
        augmentation="simclr_cifar10",
        encoder="resnet18_cifar",
        batch_size=BATCH,
        steps=800 * (50_000 // BATCH),
        eval_every=100 * (50_000 // BATCH),
        learning_rate=0.03 * BATCH / 256,
        weight_decay=5e-4,
        **images.SGD_COSINE,
    ),
}
SMOKE = dict(images.SMOKE, mock_data=True)

__all__ = ["PRESETS", "SMOKE", "build"]
