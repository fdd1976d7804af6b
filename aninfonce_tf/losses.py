"""Keras `Loss` classes of the contrastive family and their protocol
(`ContrastiveLoss`). Details: docs/api.md#your-own-loss"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import keras

from aninfonce_tf import functional
from aninfonce_tf.layers import DiagonalScaling

CONCENTRATIONS = ("diagonal", "isotropic")


class ContrastiveLoss(keras.losses.Loss):
    """Base class of the contrastive losses: subclasses implement `per_row_losses` and
    set `concentration` and `stat_names`. Details: docs/api.md#your-own-loss

    Example (a loss defined in a user's file):

    >>> import numpy as np
    >>> class SquaredAlignment(ContrastiveLoss):
    ...     def per_row_losses(self, z1, z2, z1_all=None, z2_all=None, row_offset=0):
    ...         return keras.ops.sum(keras.ops.square(z1 - z2), axis=-1), {}
    >>> float(SquaredAlignment()(np.zeros((2, 3)), np.ones((2, 3))))
    3.0
    """

    concentration: ClassVar[str | None] = None
    stat_names: ClassVar[tuple[str, ...]] = ()

    def per_row_losses(self, z1, z2, z1_all=None, z2_all=None, row_offset=0):
        """`(losses, stats)`: `[R]` float32 losses of the pairs `(z1[i], z2[i])` and
        `{name: scalar}` for each of `stat_names`.

        Args:
            z1: `[B, d]` first views (this replica's rows).
            z2: `[B, d]` second views.
            z1_all: the first views gathered over every replica (None: `z1`).
            z2_all: the second views gathered likewise.
            row_offset: index of this replica's first row in the gathered batch.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `per_row_losses`.")

    def call(self, y_true, y_pred):
        return self.per_row_losses(y_true, y_pred)[0]

    def check_scaling(self, scaling: DiagonalScaling | None) -> None:
        """Raises `ValueError` when the model's `scaling` (Lambda_hat) does not fit."""
        if self.concentration is not None and scaling is None:
            raise ValueError(
                f"{type(self).__name__} needs the model's `scaling` (a DiagonalScaling holding "
                "Lambda_hat); without it, it is a Euclidean InfoNCE at a fixed concentration."
            )
        if self.concentration == "isotropic" and not scaling.tied:
            raise ValueError(
                f"{type(self).__name__} learns one concentration for every dimension: give "
                "the model `DiagonalScaling(..., tied=True)`."
            )


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class InfoNCE(ContrastiveLoss):
    """InfoNCE / NT-Xent loss on two batches of embeddings (Chen et al., 2020).

    Args:
        similarity: `"cosine"` (default, SimCLR) or `"euclidean"` (-1/2 ||u - v||^2).
        temperature: positive float (default 0.1, SimCLR's), or several for an ensemble.
        candidates: `"nt_xent"` (both views as anchors) or `"one_directional"`.
        hard_negative_beta: hard-negative reweighting strength; 0 is plain.
        ensemble_weights: weights of an ensemble's temperatures (default uniform).
        block_size: the loss over blocks of this many candidates (memory batch x
            block; no hard negatives). None: dense.
        name: name of the loss.

    Example:

    >>> import numpy as np
    >>> loss = InfoNCE(temperature=0.5)
    >>> z = np.eye(4, dtype="float32")
    >>> round(float(loss(z, z)), 4)
    0.5944
    """

    stat_names = ("accuracy", "candidates")

    def __init__(
        self,
        similarity: str = "cosine",
        temperature: float | Sequence[float] = 0.1,
        candidates: str = "nt_xent",
        hard_negative_beta: float = 0.0,
        ensemble_weights: Sequence[float] | None = None,
        block_size: int | None = None,
        name: str = "info_nce",
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        functional.check_info_nce_options(
            similarity, temperature, candidates, hard_negative_beta, ensemble_weights, block_size
        )
        self.similarity, self.candidates = similarity, candidates
        self.temperature = (
            list(temperature) if isinstance(temperature, (list, tuple)) else float(temperature)
        )
        self.hard_negative_beta = float(hard_negative_beta)
        self.block_size = None if block_size is None else int(block_size)
        self.ensemble_weights = (
            None if ensemble_weights is None else [float(w) for w in ensemble_weights]
        )

    @property
    def options(self) -> dict:
        """Keyword arguments of `functional.info_nce` that this loss stands for."""
        return dict(
            similarity=self.similarity,
            temperature=self.temperature,
            candidates=self.candidates,
            hard_negative_beta=self.hard_negative_beta,
            ensemble_weights=self.ensemble_weights,
            block_size=self.block_size,
        )

    def per_row_losses(self, z1, z2, z1_all=None, z2_all=None, row_offset=0):
        functional.validate_pair(z1, z2)  # the options: checked when made
        return functional.info_nce_unchecked(
            z1, z2, **self.options, z1_all=z1_all, z2_all=z2_all, row_offset=row_offset
        )

    def check_scaling(self, scaling: DiagonalScaling | None) -> None:
        if scaling is not None and self.similarity == "cosine":
            raise ValueError(
                "A cosine InfoNCE normalises away the `scaling` (Lambda_hat), which would "
                "train without effect; use AnInfoNCE(), or a model without `scaling`."
            )
        super().check_scaling(scaling)

    def get_config(self):
        config = super().get_config()
        config.update(self.options)
        return config


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class AnInfoNCE(InfoNCE):
    """Euclidean InfoNCE on `DiagonalScaling`'s embeddings. Details: docs/method.md#the-loss-family

    Args:
        temperature: divides the similarity; keep 1 when Lambda_hat is trained.
        candidates, hard_negative_beta, ensemble_weights, block_size: as for `InfoNCE`.
        name: name of the loss.

    Example:

    >>> import numpy as np
    >>> from aninfonce_tf.layers import DiagonalScaling
    >>> scaling = DiagonalScaling(initial_concentration=[1.0, 4.0])
    >>> u = np.array([[1.0, 0.0], [0.0, 1.0]], "float32")
    >>> v = np.array([[0.8, 0.6], [0.6, 0.8]], "float32")
    >>> round(float(AnInfoNCE()(scaling(u), scaling(v))), 4)
    0.8561
    """

    concentration = "diagonal"

    def __init__(
        self,
        temperature: float | Sequence[float] = 1.0,
        candidates: str = "nt_xent",
        hard_negative_beta: float = 0.0,
        ensemble_weights: Sequence[float] | None = None,
        block_size: int | None = None,
        name: str = "an_info_nce",
        **kwargs,
    ):
        # Only the Euclidean similarity (as in a saved config) is accepted.
        similarity = kwargs.pop("similarity", "euclidean")
        if similarity != "euclidean":
            raise ValueError(
                f"AnInfoNCE uses the Euclidean similarity on Lambda_hat-scaled embeddings; "
                f"got `similarity={similarity!r}`. Use InfoNCE for another similarity."
            )
        super().__init__(
            similarity="euclidean",
            temperature=temperature,
            candidates=candidates,
            hard_negative_beta=hard_negative_beta,
            ensemble_weights=ensemble_weights,
            block_size=block_size,
            name=name,
            **kwargs,
        )


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class IsotropicAnInfoNCE(AnInfoNCE):
    """AnInfoNCE with one learned concentration, for `DiagonalScaling(..., tied=True)`.

    Args:
        **kwargs: as for `AnInfoNCE`.

    Example:

    >>> import numpy as np
    >>> scaling = DiagonalScaling(4.0, tied=True)
    >>> u = np.array([[1.0, 0.0], [0.0, 1.0]], "float32")
    >>> cosine = InfoNCE(temperature=0.25)(u, u[::-1])
    >>> bool(np.isclose(IsotropicAnInfoNCE()(scaling(u), scaling(u[::-1])), cosine))
    True
    """

    concentration = "isotropic"

    def __init__(self, name: str = "isotropic_an_info_nce", **kwargs):
        super().__init__(name=name, **kwargs)


__all__ = [
    "CONCENTRATIONS",
    "AnInfoNCE",
    "ContrastiveLoss",
    "InfoNCE",
    "IsotropicAnInfoNCE",
]
