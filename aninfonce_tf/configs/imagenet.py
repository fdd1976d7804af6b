"""ImageNet in SimCLR v1's setting (Chen et al., 2020; the paper's ImageNet protocol
is not public), with the source of every number:

- SimCLR v1 (its paper and google-research/simclr's v1 command): ResNet-50 v1.5,
  SimCLR's views at 224x224 (jitter strength 1.0: 0.8/0.8/0.8/0.2 with p 0.8,
  grayscale p 0.2, blur p 0.5), cropped from the image at its full resolution, LARS
  (momentum 0.9, trust coefficient 0.001, weight decay 1e-6; biases and batch norm
  excluded from both) with a 10-epoch linear warm-up then a cosine decay to 0,
  InfoNCE temperature 0.1, v1's 2-layer projection head (2048-2048-128: one hidden
  layer) with batch norm and N(0, 0.01^2) kernels, batch norm synchronised across
  replicas, 100 epochs. SimCLR v2 differs in its 3-layer head and weight decay 1e-4;
  `--projector-units 2048,2048,128 --l2-weight-decay 1e-4` comes near it.
- The learning rate 0.075 x sqrt(B): SimCLR's square-root scaling (Chen et al. 2020,
  appendix B.1: it trains better than linear scaling below batch 4096, where the two
  agree, 0.075 x 64 = 0.3 x 4096 / 256 = 4.8): 2.4 at this preset's batch 1024
  (`--learning-rate-scaling linear --base-learning-rate 0.3`: SimCLR's default, 1.2).
- Batch 1024 (SimCLR's is 4096, on 128 TPU cores): the schedule is given in epochs, so
  that another `--batch-size` B keeps 100 epochs and a 10-epoch warm-up
  (`ImageConfig.resolved`).
- AnInfoNCE's Lambda_hat starts at 1 / 0.1 = 10, where InfoNCE is
  (`RunConfig.initial_concentration`), each dimension's log with Gaussian noise of
  standard deviation 0.1 (`--losses aninfonce_isotropic` starts at exactly 10).
- The final linear evaluation: SimCLR's linear-head command (its README: 90 epochs,
  batch 4096, SGD with Nesterov momentum at 0.1 x B / 256, weight decay 1e-6) on
  frozen features of the centre crop (87.5 % of the shorter side) of every training
  image (`--linear-eval-split 10pct`: SimCLR's 10 % subset, its semi-supervised list,
  whose number is not comparable with the paper's linear evaluation), scored on the
  50,000 validation images (`configs.linear_eval_settings`); the probes on 10,000 images
  monitor training. Deviation: the crop is resized bilinearly with antialiasing
  (SimCLR: bicubic).
- Chosen here: the encoder in mixed_bfloat16 (TPUs and A100-class GPUs; on a V100,
  which lacks bfloat16, pass `--mixed-precision false`); an evaluation every 10 epochs
  (`eval_epochs`); the monitoring probes' sizes (`images.ImageConfig` defaults), which
  only watch training; photos on a canvas of 512 pixels per 224 of view
  (`images.CANVAS_PER_224`: typical ImageNet photos fit whole, so crops see the whole
  image as SimCLR's do) for the readout probes' views, while the training views decode
  only their crop window from the JPEG files, at full resolution, as SimCLR's input
  pipeline; the training views sent to the devices as uint8 (`view_dtype`: a quarter
  of float32's bytes; the model reads them as / 255, the views to within 1/510);
  no readout check (`configs.readout_check`): it runs before
  training outside the run's strategy, on a TPU host's CPU, where ResNet-50 at 224
  pixels is too slow (`--readout-check-steps 1000` runs it on a GPU host's first GPU).

The `mocov2` preset keeps everything but the views: MoCo v2's (jitter
0.4/0.4/0.4/0.1, crops of 20-100 %).

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
