"""Keras `Loss` wrappers over `ops.info_nce`: configuration and serialisation only.

Called as `loss(z1, z2)` on two batches of embeddings (row i of each a positive
pair), they return the mean loss over the anchor rows. As every Keras loss, the
value is divided by the number of replicas when called under a `tf.distribute`
strategy so that summed replica gradients are right; `ContrastiveModel` calls
`per_row_losses` instead and gathers negatives across replicas.

`loss_variant` builds the loss (and, for AnInfoNCE, its Lambda_hat layer) of each
named variant the recipes compare, from their config fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import keras
import numpy as np

from aninfonce_tf import ops as core
from aninfonce_tf.layers import DiagonalScaling


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class InfoNCE(keras.losses.Loss):
    """InfoNCE / NT-Xent loss on two batches of embeddings.

    Args:
        similarity: `"cosine"` (default, SimCLR) or `"euclidean"` (-1/2 ||u - v||^2).
        temperature: positive float, or a sequence of them for a loss ensemble
            (default 0.1, SimCLR's; the recipes' InfoNCE uses 0.2,
            `--infonce-temperature`).
        candidates: `"nt_xent"` (both views as anchors, each of the 2B rows against
            the other 2B - 1) or `"one_directional"` (z1 rows against z2).
        hard_negative_beta: weights negatives by exp(beta * similarity / temperature),
            as the reference code of Robinson et al. (2021) does; 0 is plain.
        ensemble_weights: weights of an ensemble's temperatures (default uniform).
        block_size: compute the loss over blocks of this many candidates, in
            memory that grows with the batch times the block instead of the batch
            squared (same value and gradients; no hard negatives). None: dense.
        name: name of the loss.

    Example:

    >>> loss = InfoNCE(temperature=0.5)
    >>> z = np.eye(4, dtype="float32")
    >>> round(float(loss(z, z)), 4)
    0.5944

    Reference:
        Chen et al., "A Simple Framework for Contrastive Learning of Visual
        Representations", 2020; Rusak et al., AISTATS 2025.
    """

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
        self.block_size = core.check_block_size(block_size, hard_negative_beta)
        self.similarity = core.check_similarity(similarity)
        self.candidates = core.check_candidates(candidates)
        core.check_temperature(temperature)
        self.temperature = (
            list(temperature) if isinstance(temperature, (list, tuple)) else float(temperature)
        )
        self.hard_negative_beta = float(hard_negative_beta)
        self.ensemble_weights = (
            None if ensemble_weights is None else [float(w) for w in ensemble_weights]
        )

    @property
    def options(self) -> dict:
        """Keyword arguments of `ops.info_nce` that this loss stands for."""
        return dict(
            similarity=self.similarity,
            temperature=self.temperature,
            candidates=self.candidates,
            hard_negative_beta=self.hard_negative_beta,
            ensemble_weights=self.ensemble_weights,
            block_size=self.block_size,
        )

    def per_row_losses(self, z1, z2, **gathered):
        """Per-anchor-row losses; `gathered` are `ops.info_nce`'s replica arguments."""
        return core.info_nce(z1, z2, **self.options, **gathered)

    def call(self, y_true, y_pred):
        return self.per_row_losses(y_true, y_pred)

    def get_config(self):
        config = super().get_config()
        config.update(self.options)
        return config


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class AnInfoNCE(InfoNCE):
    """Anisotropic InfoNCE: Euclidean InfoNCE on Lambda_hat-scaled embeddings.

    Feed it embeddings passed through `layers.DiagonalScaling`: with u, v on the
    unit sphere, `AnInfoNCE()(scaling(u), scaling(v))` uses the similarity
    -1/2 (u - v)^T Lambda_hat (u - v) of Rusak et al. (2025).

    Args:
        temperature: divides the similarity; keep 1 when Lambda_hat is trained.
        candidates: as for `InfoNCE`.
        hard_negative_beta: as for `InfoNCE`.
        ensemble_weights: as for `InfoNCE`; an ensemble over temperatures is an
            ensemble over global concentration multipliers 1 / temperature.
        block_size: as for `InfoNCE`.
        name: name of the loss.

    Example:

    >>> from aninfonce_tf.layers import DiagonalScaling
    >>> scaling = DiagonalScaling(initial_concentration=[1.0, 4.0])
    >>> u = np.array([[1.0, 0.0], [0.0, 1.0]], "float32")
    >>> v = np.array([[0.8, 0.6], [0.6, 0.8]], "float32")
    >>> round(float(AnInfoNCE()(scaling(u), scaling(v))), 4)
    0.8561

    Reference:
        Rusak et al., "InfoNCE: Identifying the Gap Between Theory and Practice",
        AISTATS 2025.
    """

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
        # The similarity is what makes this AnInfoNCE; only its own value (as in a
        # saved config) is accepted, so that a user's other choice never vanishes.
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


@dataclasses.dataclass(frozen=True)
class LossVariant:
    """A row of the recipes' comparison: AnInfoNCE or InfoNCE, plain, with
    hard-negative reweighting, or as an ensemble over temperatures."""

    anisotropic: bool
    hard_negatives: bool = False
    ensemble: bool = False


LOSS_VARIANTS = {
    "aninfonce": LossVariant(anisotropic=True),
    "infonce": LossVariant(anisotropic=False),
    "aninfonce_hard_negatives": LossVariant(anisotropic=True, hard_negatives=True),
    "infonce_hard_negatives": LossVariant(anisotropic=False, hard_negatives=True),
    "aninfonce_ensemble": LossVariant(anisotropic=True, ensemble=True),
    "infonce_ensemble": LossVariant(anisotropic=False, ensemble=True),
}


def loss_variant(
    name: str,
    *,
    normalized: bool = True,
    infonce_temperature: float = 0.2,
    hard_negative_beta: float = 0.5,
    ensemble_temperatures: Sequence[float] = (0.05, 0.1, 0.5),
    initial_concentration: float = 5.0,
    parametrization: str = "exp",
    seed: int | None = None,
    block_size: int | None = None,
) -> tuple[InfoNCE, DiagonalScaling | None]:
    """The loss and Lambda_hat layer of a named variant of `LOSS_VARIANTS`.

    Args:
        name: a key of `LOSS_VARIANTS`.
        normalized: embeddings lie on the unit sphere; InfoNCE then uses the
            cosine similarity, otherwise the Euclidean one (box and R^n latents).
        infonce_temperature: temperature of plain and hard-negative InfoNCE.
        hard_negative_beta: beta of the `*_hard_negatives` variants.
        ensemble_temperatures: temperatures of the `*_ensemble` variants. For
            AnInfoNCE they become global concentration multipliers centred on the
            learned Lambda_hat (divided by their median).
        initial_concentration: Lambda_hat's start (AnInfoNCE variants).
        parametrization: Lambda_hat's parametrisation (AnInfoNCE variants).
        seed: seed of Lambda_hat's initial noise.
        block_size: the losses' `block_size` (None: dense).

    Returns:
        `(loss, scaling)`; `scaling` is None for InfoNCE variants.

    Example:

    >>> loss, scaling = loss_variant("aninfonce_ensemble", ensemble_temperatures=[0.5, 1, 2])
    >>> type(loss).__name__, loss.temperature, type(scaling).__name__
    ('AnInfoNCE', [0.5, 1.0, 2.0], 'DiagonalScaling')
    """
    if name not in LOSS_VARIANTS:
        raise ValueError(f"Unknown loss variant {name!r}; expected one of {tuple(LOSS_VARIANTS)}.")
    variant = LOSS_VARIANTS[name]
    beta = hard_negative_beta if variant.hard_negatives else 0.0
    # Checked here, so that the message names the argument (the recipes' flag).
    ensemble = (
        core.check_temperature(list(ensemble_temperatures), "ensemble_temperatures")
        if variant.ensemble
        else []
    )
    if not variant.anisotropic:
        temperature = (
            ensemble
            if variant.ensemble
            else core.check_temperature(infonce_temperature, "infonce_temperature")[0]
        )
        similarity = "cosine" if normalized else "euclidean"
        loss = InfoNCE(
            similarity, temperature=temperature, hard_negative_beta=beta, block_size=block_size
        )
        return loss, None
    median = float(np.median(ensemble)) if variant.ensemble else 1.0
    temperature = [t / median for t in ensemble] if variant.ensemble else 1.0
    scaling = DiagonalScaling(
        initial_concentration, parametrization=parametrization, initial_noise=0.1, seed=seed
    )
    loss = AnInfoNCE(temperature=temperature, hard_negative_beta=beta, block_size=block_size)
    return loss, scaling
