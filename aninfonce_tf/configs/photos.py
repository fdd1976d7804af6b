"""The real-image experiment sized for a 2-core CPU: patches of the nine colour
photos that ship inside scikit-learn and scikit-image (class = source photo),
CIFAR10's SimCLR views at 32x32, a small CNN. The class probes fit on 100 training
patches of each photo and are scored on 100 test patches of each; the readout reads
2,000 views of test patches (222 or 223 of each photo), averaged over the targets that
a supervised small CNN reads from one view after 1,000 steps at batch 256 (about a
minute before training: `configs.readout_check`).

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
