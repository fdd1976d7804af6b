"""CIFAR10 in the setting the paper's CIFAR10 result follows, SimSiam's (Chen and He,
2021): ResNet-18 with the CIFAR stem, SGD with momentum 0.9 at 0.03 x B / 256
cosine-decayed to 0, weight decay 5e-4 as PyTorch applies it (an L2 term of the
gradient, through the momentum: `l2_weight_decay`), SimSiam's views (crops of
20-100 %, jitter 0.4/0.4/0.4/0.1 with p 0.8, grayscale p 0.2, flip), batch 512,
800 epochs (97 steps each at batch 512). The schedule is given in epochs and the
learning rate per 256 pairs, so that another `--batch-size` B keeps 800 epochs at
0.03 x B / 256 (`ImageConfig.resolved`). Batch norm is synchronised across replicas
(SimCLR's global batch norm), so that `--strategy mirrored` over several GPUs
computes the statistics one GPU would.
Not public, chosen here: the InfoNCE temperature 0.2 and the projector 2048-128.

Example:

>>> preset = PRESETS["cifar10"].resolved()
>>> preset.steps, round(preset.learning_rate, 3), preset.l2_weight_decay
(77600, 0.06, 0.0005)
"""

from aninfonce_tf.configs import images
from aninfonce_tf.configs.images import ImageConfig, build

PRESETS = {
    "cifar10": ImageConfig(
        dataset="cifar10",
        augmentation="simsiam_cifar10",
        encoder="resnet18_cifar",
        synchronized_batch_norm=True,
        batch_size=512,
        epochs=800,
        eval_epochs=100,
        base_learning_rate=0.03,
        l2_weight_decay=5e-4,
        **images.FROM_EPOCHS,
        **images.SGD_COSINE,
    ),
}
SMOKE = dict(images.SMOKE, mock_data=True)
# The flags of this recipe: CIFAR10's 32-pixel views and encoders (`parse_config`).
NOT_FLAGS = ("dataset", "patches_per_photo")
FLAG_CHOICES = {
    "encoder": ("resnet18_cifar", "small_cnn"),
    "augmentation": ("simsiam_cifar10", "simclr_cifar10"),
}

__all__ = ["FLAG_CHOICES", "NOT_FLAGS", "PRESETS", "SMOKE", "build"]
