"""Keras `Loss` wrappers over `ops.info_nce`: configuration and serialisation only.

Called as `loss(z1, z2)` on two batches of embeddings (row i of each a positive
pair), they return the mean loss over the anchor rows. As every Keras loss, the
value is divided by the number of replicas when called under a `tf.distribute`
strategy so that summed replica gradients are right; `ContrastiveModel` calls
`per_row_losses` instead and gathers negatives across replicas.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras

from aninfonce_tf import ops as core


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class InfoNCE(keras.losses.Loss):
    """InfoNCE / NT-Xent loss on two batches of embeddings.

    Args:
        similarity: `"cosine"` (default, SimCLR) or `"euclidean"` (-1/2 ||u - v||^2).
        temperature: positive float, or a sequence of them for a loss ensemble.
        candidates: `"nt_xent"` (both views as anchors, each of the 2B rows against
            the other 2B - 1) or `"one_directional"` (z1 rows against z2).
        hard_negative_beta: weights negatives by exp(beta * similarity); 0 is plain.
        ensemble_weights: weights of an ensemble's temperatures (default uniform).
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
        temperature: float | Sequence[float] = 1.0,
        candidates: str = "nt_xent",
        hard_negative_beta: float = 0.0,
        ensemble_weights: Sequence[float] | None = None,
        name: str = "info_nce",
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
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
        name: str = "an_info_nce",
        **kwargs,
    ):
        kwargs.pop("similarity", None)
        super().__init__(
            similarity="euclidean",
            temperature=temperature,
            candidates=candidates,
            hard_negative_beta=hard_negative_beta,
            ensemble_weights=ensemble_weights,
            name=name,
            **kwargs,
        )
