"""aninfonce-tf: contrastive learning that recovers all latent factors (AnInfoNCE)."""

from aninfonce_tf import layers, losses, models, ops
from aninfonce_tf.layers import DiagonalScaling, SphereNormalization, projection_head
from aninfonce_tf.losses import AnInfoNCE, InfoNCE
from aninfonce_tf.models import ContrastiveModel, export_encoder

__version__ = "0.1.0"

__all__ = [
    "AnInfoNCE",
    "ContrastiveModel",
    "DiagonalScaling",
    "InfoNCE",
    "SphereNormalization",
    "export_encoder",
    "layers",
    "losses",
    "models",
    "ops",
    "projection_head",
]
