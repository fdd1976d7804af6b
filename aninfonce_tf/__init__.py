"""aninfonce-tf: contrastive learning that recovers all latent factors (AnInfoNCE)."""

from aninfonce_tf import layers, losses, models, ops
from aninfonce_tf.layers import DiagonalScaling, SphereNormalization, projection_head
from aninfonce_tf.losses import AnInfoNCE, InfoNCE
from aninfonce_tf.models import ContrastiveModel

__version__ = "0.1.0"

__all__ = [
    "AnInfoNCE",
    "ContrastiveModel",
    "DiagonalScaling",
    "InfoNCE",
    "SphereNormalization",
    "layers",
    "losses",
    "models",
    "ops",
    "projection_head",
]
