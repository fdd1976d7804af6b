"""CIFAR10 in SimSiam's setting, which the paper's CIFAR10 result follows: ResNet-18, SGD,
800 epochs at batch 512. Sources: docs/method.md#cifar10

Example:

>>> preset = PRESETS["cifar10"].resolved()
>>> preset.steps, round(preset.learning_rate, 3), preset.l2_weight_decay
(77600, 0.06, 0.0005)
>>> preset.infonce_temperature, preset.linear_eval_epochs
(0.5, 100)
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
        infonce_temperature=0.5,
        linear_eval_epochs=100,
        linear_eval_batch_size=512,
        readout_check_steps=1000,
        **images.FROM_EPOCHS,
        **images.SGD_COSINE,
    ),
}
SMOKE = dict(images.SMOKE, mock_data=True, linear_eval_epochs=2)
SMOKE_FULL = dict(images.SMOKE_FULL, readout_check_steps=2, readout_check_batch_size=8)
# The flags of this recipe: CIFAR10's 32-pixel views and encoders, its whole training
# split for the final evaluation (`parse_config`).
NOT_FLAGS = ("dataset", "patches_per_photo")
FLAG_CHOICES = {
    "encoder": ("resnet18_cifar", "small_cnn"),
    "augmentation": ("simsiam_cifar10", "simclr_cifar10"),
    "linear_eval_split": ("train",),
}

__all__ = ["FLAG_CHOICES", "NOT_FLAGS", "PRESETS", "SMOKE", "SMOKE_FULL", "build"]
