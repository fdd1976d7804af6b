"""CIFAR10 in the setting the paper's CIFAR10 result follows, SimSiam's (Chen and He,
2021), with the source of every number:

- SimSiam's CIFAR10 setting (its CIFAR experiments; a public SimCLR-CIFAR10 benchmark states
  that the paper's 90.9 follows it): ResNet-18 with the CIFAR stem, SGD with momentum
  0.9 at 0.03 x B / 256 (linear scaling) cosine-decayed to 0, weight decay 5e-4 as
  PyTorch applies it (an L2 term of the gradient, through the momentum:
  `l2_weight_decay`), SimSiam's views (crops of 20-100 %, jitter 0.4/0.4/0.4/0.1 with
  p 0.8, grayscale p 0.2, flip), 800 epochs (97 steps each at batch 512).
- Batch 512 and the InfoNCE temperature 0.5: SimCLR's CIFAR10 command
  (google-research/simclr, README: `--train_batch_size=512 --temperature=0.5`) and the
  SimSiam-style SimCLR baselines that reproduce the paper's 90.9. `--infonce-temperature
  0.2` runs solo-learn's value (its LARS recipe). AnInfoNCE's Lambda_hat starts at
  1 / 0.5 = 2, where InfoNCE is (`RunConfig.initial_concentration`).
- The final linear evaluation: SimCLR's CIFAR10 linear-head command (its README: 100
  epochs, batch 512, SGD with Nesterov momentum at 0.1 x B / 256, no weight decay,
  whole 32-pixel images) on all 50,000 training images, scored on the 10,000 test
  images (`configs.linear_eval_settings`); the probes on 10,000 of them monitor training.
- Batch norm synchronised across replicas (SimCLR's global batch norm), so that
  `--strategy mirrored` over several GPUs computes the statistics one GPU would.
- Not public, chosen here: the projector 2048-128 (SimCLR's output width 128 after
  one hidden layer); an evaluation every 100 epochs (`eval_epochs`: eight points on
  the curve); the monitoring probes' sizes (`images.ImageConfig` defaults: 10,000
  training images, the readout's views), which only watch training; the readout check's
  1,000 steps at batch 256 (`configs.readout_check`), its mean over the targets one view
  determines.

The schedule is given in epochs and the learning rate per 256 pairs, so that another
`--batch-size` B keeps 800 epochs at 0.03 x B / 256 (`ImageConfig.resolved`).

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
