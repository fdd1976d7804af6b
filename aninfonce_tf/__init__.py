"""aninfonce-tf: contrastive learning that recovers all latent factors (AnInfoNCE).

InfoNCE and AnInfoNCE (Rusak et al., AISTATS 2025) for TensorFlow / Keras 3: AnInfoNCE
learns a diagonal concentration Lambda_hat and recovers the latents that augmentations
change strongly, which InfoNCE's single temperature loses.

The public API, importable from `aninfonce_tf`:

Losses and model:
    ContrastiveLoss: the base class (and protocol) of every loss the model trains.
    InfoNCE, AnInfoNCE: the InfoNCE family (`functional`) as Keras losses.
    IsotropicAnInfoNCE: AnInfoNCE with one learned concentration (a learned temperature).
    register_loss: makes a loss class a variant the recipes run by name.
    ContrastiveModel: the training model (encoder, optional projector, Lambda_hat).
    export_encoder: a SavedModel of the encoder, loadable without this package.

Layers and encoders:
    DiagonalScaling: the trainable Lambda_hat.
    SphereNormalization: projection onto the unit sphere.
    LinearAlignment: the fitted slow-feature alignment (the `embed_aligned` endpoint).
    LearnedRotation: a trainable rotation of an embedding, one angle per pair of axes.
    projection_head: SimCLR's MLP projector.
    mlp_encoder, small_cnn, resnet18_cifar, resnet50: the encoders of the recipes.

Optimizers (their weight decay an L2 term of the gradient, as in PyTorch and SimCLR):
    LARS: SimCLR's layer-wise adaptive optimizer.
    CoupledSGD: SGD with momentum as PyTorch's `torch.optim.SGD`.

Data:
    SimCLRAugment: SimCLR views that return their parameters.
    augment_pairs: a `tf.data` dataset of images -> pairs of augmented views.
    without_autotune: a `tf.data` dataset without autotuning (steady XLA steps on CPU).

Evaluation during `fit`:
    EvaluationCallback: runs evaluators, logs them, stops at score targets.
    IdentifiabilityEvaluator: R^2, MCC and Lambda_hat against known latents.
    ImageProbeEvaluator: class probes and augmentation readout on frozen features.
    StopOnNonFiniteLoss: stops at the first NaN or infinite loss, naming the step.
    TrainingLogger: the training metrics and Lambda_hat to TensorBoard every N steps.

Submodules: `functional` (pure functions), `losses`, `layers`, `models`, `export`,
`rotation`, `encoders`, `data` (pair sources, augmentations, datasets), `evaluation` (metrics,
probes, callbacks), `optimizers`, `statistics` (scores over seeds), `runner` (the
runner of the recipes), `configs` (one module per experiment) and `recipes` (every
recipe by name, the command line `python -m aninfonce_tf RECIPE` and `aninfonce-tf`).

Example:

>>> import aninfonce_tf as ait
>>> model = ait.ContrastiveModel(ait.mlp_encoder(4, 3, [16]), scaling=ait.DiagonalScaling(5.0))
>>> model.compile(optimizer="adam", loss=ait.AnInfoNCE(), concentration_optimizer=1e-2)
"""

from aninfonce_tf import tensorflow_notices

# The command line (`python -m aninfonce_tf`, `aninfonce-tf`, `recipes/*.py`) imports
# this package, and with it TensorFlow, before its own code: TensorFlow comes in here
# without its start-up notices. A program that imports the package keeps its stderr.
if tensorflow_notices.command_line():
    tensorflow_notices.import_tensorflow()

from aninfonce_tf.data.augment import SimCLRAugment, augment_pairs
from aninfonce_tf.data.options import without_autotune
from aninfonce_tf.encoders import mlp_encoder, resnet18_cifar, resnet50, small_cnn
from aninfonce_tf.evaluation.callbacks import EvaluationCallback
from aninfonce_tf.evaluation.identifiability import IdentifiabilityEvaluator
from aninfonce_tf.evaluation.probes import ImageProbeEvaluator
from aninfonce_tf.evaluation.training_callbacks import StopOnNonFiniteLoss, TrainingLogger
from aninfonce_tf.export import export_encoder
from aninfonce_tf.layers import (
    DiagonalScaling,
    LinearAlignment,
    SphereNormalization,
    projection_head,
)
from aninfonce_tf.loss_variants import register_loss
from aninfonce_tf.losses import AnInfoNCE, ContrastiveLoss, InfoNCE, IsotropicAnInfoNCE
from aninfonce_tf.models import ContrastiveModel
from aninfonce_tf.optimizers import LARS, CoupledSGD
from aninfonce_tf.rotation import LearnedRotation

__version__ = "0.1.0"

__all__ = [
    "AnInfoNCE",
    "ContrastiveLoss",
    "ContrastiveModel",
    "CoupledSGD",
    "DiagonalScaling",
    "EvaluationCallback",
    "IdentifiabilityEvaluator",
    "ImageProbeEvaluator",
    "InfoNCE",
    "IsotropicAnInfoNCE",
    "LARS",
    "LearnedRotation",
    "LinearAlignment",
    "SimCLRAugment",
    "SphereNormalization",
    "StopOnNonFiniteLoss",
    "TrainingLogger",
    "augment_pairs",
    "export_encoder",
    "mlp_encoder",
    "projection_head",
    "register_loss",
    "resnet18_cifar",
    "resnet50",
    "small_cnn",
    "without_autotune",
]
