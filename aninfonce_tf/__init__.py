"""aninfonce-tf: contrastive learning that recovers all latent factors (AnInfoNCE).

InfoNCE and AnInfoNCE (Rusak et al., AISTATS 2025) for TensorFlow / Keras 3. The public API:

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
    backbone: a backbone by name (keras.applications too) for images in [0, 1].
    for_unit_images: a backbone that expects pixel values in [0, 255], fed [0, 1] views.

Optimizers (weight decay an L2 term of the gradient):
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

Submodules, one by one: docs/api.md.

Example:

>>> import aninfonce_tf as ait
>>> model = ait.ContrastiveModel(ait.mlp_encoder(4, 3, [16]), scaling=ait.DiagonalScaling(5.0))
>>> model.compile(optimizer="adam", loss=ait.AnInfoNCE(), concentration_optimizer=1e-2)
"""

import importlib
import sys

from aninfonce_tf import tensorflow_notices

# The command line (`python -m aninfonce_tf`, `aninfonce-tf`, `recipes/*.py`) imports
# this package before its own code: TensorFlow comes in here without its start-up
# notices, except for `--help` and `--version` of the package's command, which need
# none of it. A program that imports the package keeps its stderr.
_LIGHT = tensorflow_notices.command_line() and tensorflow_notices.light_command(sys.argv)
if tensorflow_notices.command_line() and not _LIGHT:
    tensorflow_notices.import_tensorflow()

__version__ = "0.1.0"

# The public API by module: imported with the package (which registers its Keras
# objects for `keras.saving.load_model`), except for the command line's `--help` and
# `--version`, which run without TensorFlow.
_API = {
    "aninfonce_tf.backbones": ("backbone", "for_unit_images"),
    "aninfonce_tf.data.augment": ("SimCLRAugment", "augment_pairs"),
    "aninfonce_tf.data.options": ("without_autotune",),
    "aninfonce_tf.encoders": ("mlp_encoder", "resnet18_cifar", "resnet50", "small_cnn"),
    "aninfonce_tf.evaluation.callbacks": (
        "EvaluationCallback",
        "StopOnNonFiniteLoss",
        "TrainingLogger",
    ),
    "aninfonce_tf.evaluation.identifiability": ("IdentifiabilityEvaluator",),
    "aninfonce_tf.evaluation.probes": ("ImageProbeEvaluator",),
    "aninfonce_tf.export": ("export_encoder",),
    "aninfonce_tf.layers": (
        "DiagonalScaling",
        "LinearAlignment",
        "SphereNormalization",
        "projection_head",
    ),
    "aninfonce_tf.loss_variants": ("register_loss",),
    "aninfonce_tf.losses": ("AnInfoNCE", "ContrastiveLoss", "InfoNCE", "IsotropicAnInfoNCE"),
    "aninfonce_tf.models": ("ContrastiveModel",),
    "aninfonce_tf.optimizers": ("LARS", "CoupledSGD"),
    "aninfonce_tf.rotation": ("LearnedRotation",),
}
_MODULE_OF = {name: module for module, names in _API.items() for name in names}

__all__ = sorted(_MODULE_OF, key=lambda name: (name[0].islower(), name))


def __getattr__(name: str):
    if name in _MODULE_OF:
        value = getattr(importlib.import_module(_MODULE_OF[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'aninfonce_tf' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if not _LIGHT:
    for _name in __all__:
        __getattr__(_name)
