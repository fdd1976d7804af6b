"""The real-image experiment sized for a 2-core CPU: patches of nine packaged photos
(class = photo), a small CNN. Sizes: docs/method.md#photos

Example:

>>> PRESETS["photos"].dataset, PRESETS["photos"].encoder
('photos', 'small_cnn')
"""

from aninfonce_tf.configs import images
from aninfonce_tf.configs.images import ImageConfig, build

PRESETS = {
    "photos": ImageConfig(
        dataset="photos",
        encoder="small_cnn",
        batch_size=256,
        steps=1500,
        eval_every=500,
        learning_rate=1e-3,
        projector_units="256,64",
        probe_size=900,
        readout_size=2000,
        readout_check_steps=1000,
    ),
}
SMOKE = dict(images.SMOKE, patches_per_photo=10, probe_size=90)
# The flags of this recipe: its own data, 32-pixel views and encoders, its whole
# training split for a final evaluation (`parse_config`).
NOT_FLAGS = ("dataset", "data_dir", "mock_data")
FLAG_CHOICES = {
    "encoder": ("small_cnn", "resnet18_cifar"),
    "augmentation": ("simclr_cifar10", "simsiam_cifar10"),
    "linear_eval_split": ("train",),
}

__all__ = ["FLAG_CHOICES", "NOT_FLAGS", "PRESETS", "SMOKE", "build"]
