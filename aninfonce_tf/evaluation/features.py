"""Features of a model over many inputs, in batches, and the ridge readout on them."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import tensorflow as tf
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler

from aninfonce_tf import distribute

# The ridge penalties `ridge_r2` chooses from, for standardised features.
RIDGE_ALPHAS = np.logspace(-3, 5, 17)
# Where the image evaluators read a model's features (`level_features`): the backbone
# (encoder) output and the projector output before Lambda_hat.
LEVELS = ("backbone", "projector")


def batched_features(function: Callable, inputs, batch_size: int) -> np.ndarray:
    """`function` of `inputs` in batches of `batch_size` rows, as one float32 array.

    Example:

    >>> batched_features(lambda x: 2 * x, np.arange(5.0)[:, None], batch_size=2).ravel().tolist()
    [0.0, 2.0, 4.0, 6.0, 8.0]
    """
    return np.concatenate(
        [
            np.asarray(function(inputs[start : start + batch_size]), "float32")
            for start in range(0, len(inputs), batch_size)
        ]
    )


def several_replicas(model) -> tf.distribute.Strategy | None:
    """`model`'s strategy when it has several replicas on one host, else None."""
    strategy = getattr(model, "distribute_strategy", None)
    if strategy is None or strategy.num_replicas_in_sync == 1:
        return None
    return None if distribute.is_multi_worker(strategy) else strategy


def on_devices(
    model, forward: Callable[[tf.Tensor], tf.Tensor], batch_size: int, jit_compile: bool = False
) -> Callable[[np.ndarray], np.ndarray]:
    """`forward` of up to `batch_size` rows, compiled on `model`'s devices, as float32 NumPy.

    Example:

    >>> import keras
    >>> double = on_devices(keras.Sequential([keras.layers.Rescaling(2.0)]), lambda x: 2 * x, 4)
    >>> double(np.arange(3, dtype="float32")[:, None]).ravel().tolist()
    [0.0, 2.0, 4.0]
    """
    strategy = several_replicas(model)
    if strategy is None:
        compiled = tf.function(forward, jit_compile=jit_compile, reduce_retracing=True)
        return lambda batch: np.asarray(compiled(tf.convert_to_tensor(batch)), "float32")
    replicas = strategy.num_replicas_in_sync
    per_replica = -(-batch_size // replicas)
    run = tf.function(lambda values: strategy.run(forward, args=(values,)))

    def on_replicas(batch: np.ndarray) -> np.ndarray:
        batch = np.asarray(batch)
        padded = np.zeros((replicas * per_replica, *batch.shape[1:]), batch.dtype)
        padded[: len(batch)] = batch

        def replica_rows(context: tf.distribute.ValueContext) -> np.ndarray:
            first = context.replica_id_in_sync_group * per_replica
            return padded[first : first + per_replica]

        values = strategy.experimental_distribute_values_from_function(replica_rows)
        outputs = strategy.experimental_local_results(run(values))
        return np.concatenate([np.asarray(output, "float32") for output in outputs])[: len(batch)]

    return on_replicas


def ridge_r2(features, targets, fit_rows, test_rows) -> np.ndarray:
    """Per-column `[T]` R^2 on `test_rows` of a leave-one-out ridge fitted on `fit_rows`.

    Args:
        features: `[N, d]`.
        targets: `[N, T]`.
        fit_rows, test_rows: row indices.

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
    """Images as float32 in [0, 1]: uint8 divided by 255, floats cast.

    Example:

    >>> unit_float32(np.array([0, 51, 255], "uint8")).tolist()
    [0.0, 0.20000000298023224, 1.0]
    """
    images = np.asarray(images)
    if images.dtype == np.uint8:
        return images.astype("float32") / 255
    return images.astype("float32", copy=False)


def level_features(model, images, level: str, batch_size: int) -> np.ndarray:
    """`[N, d]` float32 features of `images` at one of `LEVELS`, batch by batch.

    Args:
        model: a `ContrastiveModel`.
        images: `[N, ...]` inputs.
        level: "backbone" (the model's call), else the projector (`embed(scaled=False)`).
        batch_size: inputs per forward pass.
    """
    features = model if level == "backbone" else functools.partial(model.embed, scaled=False)
    if several_replicas(model) is None:
        return batched_features(lambda batch: features(unit_float32(batch)), images, batch_size)

    def forward(batch: tf.Tensor) -> tf.Tensor:
        unit = tf.cast(batch, tf.float32)
        if batch.dtype == tf.uint8:
            unit = unit / 255
        return tf.cast(features(unit), tf.float32)

    batch_size = max(1, min(batch_size, len(images)))
    return batched_features(on_devices(model, forward, batch_size), images, batch_size)


__all__ = [
    "LEVELS",
    "RIDGE_ALPHAS",
    "batched_features",
    "level_features",
    "on_devices",
    "several_replicas",
    "ridge_r2",
    "unit_float32",
]
