"""Features of a model over many inputs, computed in batches, and the ridge readout
fitted on them.

Example:

>>> batched_features(lambda x: 2 * x, np.arange(5.0)[:, None], batch_size=2).ravel().tolist()
[0.0, 2.0, 4.0, 6.0, 8.0]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler

# The ridge penalties `ridge_r2` chooses from, for standardised features.
RIDGE_ALPHAS = np.logspace(-3, 5, 17)
# Where the image evaluators read a model's features (`level_features`): the backbone
# (encoder) output and the projector output before Lambda_hat.
LEVELS = ("backbone", "projector")


def batched_features(function: Callable, inputs, batch_size: int) -> np.ndarray:
    """`function` applied to `inputs` in batches of `batch_size` rows, the outputs
    concatenated as one float32 NumPy array."""
    return np.concatenate(
        [
            np.asarray(function(inputs[start : start + batch_size]), "float32")
            for start in range(0, len(inputs), batch_size)
        ]
    )


def ridge_r2(features, targets, fit_rows, test_rows) -> np.ndarray:
    """Per-column R^2 on `test_rows` of a ridge regression fitted on `fit_rows`
    (features standardised on them), each column with its own penalty from
    `RIDGE_ALPHAS`, chosen by leave-one-out cross-validation on `fit_rows` (`RidgeCV`).

    Args:
        features: `[N, d]`.
        targets: `[N, T]`.
        fit_rows, test_rows: row indices.

    Returns:
        `[T]` R^2 values.

    Example:

    >>> rng = np.random.default_rng(0)
    >>> features = rng.normal(size=(200, 3))
    >>> targets = np.stack([features[:, 0], rng.normal(size=200)], 1)
    >>> r2 = ridge_r2(features, targets, np.arange(100), np.arange(100, 200))
    >>> bool(r2[0] > 0.99), bool(r2[1] < 0.1)
    (True, True)
    """
    features, targets = np.asarray(features, "float64"), np.asarray(targets, "float64")
    scaler = StandardScaler().fit(features[fit_rows])
    ridge = RidgeCV(alphas=RIDGE_ALPHAS, alpha_per_target=True)
    ridge.fit(scaler.transform(features[fit_rows]), targets[fit_rows])
    predicted = ridge.predict(scaler.transform(features[test_rows])).reshape(len(test_rows), -1)
    return r2_score(targets[test_rows], predicted, multioutput="raw_values")


def unit_float32(images) -> np.ndarray:
    """Images as float32 in [0, 1]: uint8 ones divided by 255 (as `SimCLRAugment`
    reads them), float ones (float16 to halve a stored set's memory) cast.

    Example:

    >>> unit_float32(np.array([0, 51, 255], "uint8")).tolist()
    [0.0, 0.20000000298023224, 1.0]
    """
    images = np.asarray(images)
    if images.dtype == np.uint8:
        return images.astype("float32") / 255
    return images.astype("float32", copy=False)


def level_features(model, images, level: str, batch_size: int) -> np.ndarray:
    """Features of `images` at one of `LEVELS`: the backbone output ("backbone") or
    the projector output before Lambda_hat (any other level), in batches, each batch
    made float32 by `unit_float32` first (so that uint8 or float16 images are stored
    at a quarter or half of float32's memory).

    Args:
        model: a `ContrastiveModel` (its call gives the backbone's features,
            `embed(..., scaled=False)` the projector's).
        images: `[N, ...]` inputs.
        level: "backbone", or any other for the projector.
        batch_size: inputs per forward pass.

    Returns:
        `[N, d]` float32 features.
    """
    if level == "backbone":
        return batched_features(lambda batch: model(unit_float32(batch)), images, batch_size)
    return batched_features(
        lambda batch: model.embed(unit_float32(batch), scaled=False), images, batch_size
    )


__all__ = [
    "LEVELS",
    "RIDGE_ALPHAS",
    "batched_features",
    "level_features",
    "ridge_r2",
    "unit_float32",
]
