"""Which readout targets one view determines (a supervised network finds them), and the
readout averaged over those alone. Details: docs/method.md#readout-check

Example (a grayscale flag that the views show, and a flag they do not):

>>> import keras
>>> rng = np.random.default_rng(0)
>>> def views(n):
...     images = rng.uniform(size=(n, 8, 8, 3)).astype("float32")
...     gray, other = rng.integers(0, 2, (2, n)).astype("float32")
...     mono = np.repeat(images.mean(-1, keepdims=True), 3, axis=-1)
...     shown = np.where(gray[:, None, None, None] > 0, mono, images)
...     return shown, {"grayscale": gray, "solarize": other}
>>> batches = [views(64) for _ in range(30)]
>>> layers = keras.layers
>>> def encoder():
...     return keras.Sequential([layers.Conv2D(8, 1, activation="relu"),
...                              layers.GlobalAveragePooling2D()])
>>> record = determinability(encoder, batches, *views(400), steps=30, learning_rate=1e-2)
>>> record["kept"], record["targets"]["solarize"]["reason"].split(" (")[0]
(['grayscale'], 'read at 0.497 by a supervised network from one view')
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import keras
import numpy as np

from aninfonce_tf.errors import is_integer
from aninfonce_tf.evaluation.callbacks import scalar_items
from aninfonce_tf.evaluation.features import LEVELS, batched_features, unit_float32
from aninfonce_tf.evaluation.probes import (
    COLOUR_ONLY,
    SOURCE_FRAME,
    UNDIRECTED_SCORES,
    ImageProbeEvaluator,
    readout_targets,
)

# A balanced accuracy's chance, the margin above it a kept target's interval clears,
# and the normal quantile of a two-sided 95 % interval.
CHANCE = 0.5
MARGIN = 0.05
Z_95 = 1.959964
# Training views whose parameters set the continuous targets' medians.
THRESHOLD_VIEWS = 4096
# The supervised network's optimiser's default: Adam at a constant learning rate.
LEARNING_RATE = 1e-3
RULE = (
    f"kept when the lower end of the 95 % interval of its supervised balanced accuracy "
    f"exceeds {CHANCE + MARGIN:g}; source-frame targets never"
)
ALL_TARGETS = "augmentation_readout_all_targets"


def masked_binary_crossentropy(labels, logits):
    """The sum over targets of the mean binary cross-entropy where each is defined."""
    defined = keras.ops.logical_not(keras.ops.isnan(labels))
    weights = keras.ops.cast(defined, logits.dtype)
    safe = keras.ops.where(defined, labels, keras.ops.zeros_like(labels))
    losses = keras.ops.binary_crossentropy(safe, logits, from_logits=True) * weights
    views = keras.ops.maximum(keras.ops.sum(weights, axis=0), 1.0)
    return keras.ops.sum(keras.ops.sum(losses, axis=0) / views)


def label_thresholds(params: Mapping, channels: int = 3) -> tuple[dict, dict[str, str]]:
    """The learnable targets' thresholds (None for a flag) and why each other is not learned."""
    thresholds, dropped = {}, {}
    for name, target in readout_targets(params).items():
        values = target[~np.isnan(target)]
        if channels == 1 and name in COLOUR_ONLY:
            dropped[name] = "a one-channel view does not show it (probes.COLOUR_ONLY)"
        elif not len(values) or np.ptp(values) == 0:
            dropped[name] = "undefined or constant on the training views"
        elif set(np.unique(values)) <= {0.0, 1.0}:
            thresholds[name] = None
        else:
            thresholds[name] = float(np.median(values))
    return thresholds, dropped


def target_labels(params: Mapping, thresholds: Mapping[str, float | None]) -> np.ndarray:
    """`[N, T]` float32 labels of the targets of `thresholds` (NaN where undefined)."""
    targets = readout_targets(params)
    columns = []
    for name, threshold in thresholds.items():
        target = targets.get(name, np.full(len(next(iter(targets.values()))), np.nan))
        above = target if threshold is None else (target > threshold).astype("float64")
        columns.append(np.where(np.isnan(target), np.nan, above))
    return np.stack(columns, axis=1).astype("float32")


def balanced_accuracy_interval(labels, predicted) -> tuple[float, float]:
    """The balanced accuracy of `predicted` 0/1 labels and its 95 % interval's lower end.

    Example:

    >>> labels = np.arange(2000) % 2  # a fifth of the 0s predicted as 1, every 1 right
    >>> predicted = np.where(np.arange(2000) % 10 == 0, 1, labels)
    >>> [round(value, 3) for value in balanced_accuracy_interval(labels, predicted)]
    [0.9, 0.888]
    """
    labels, predicted = np.asarray(labels), np.asarray(predicted)
    if not (np.any(labels == 0) and np.any(labels == 1)):
        raise ValueError("`labels` must hold both classes, 0 and 1, for a balanced accuracy.")
    rates, variance = [], 0.0
    for side in (0, 1):
        rows = labels == side
        count, right = int(rows.sum()), int(np.sum(predicted[rows] == side))
        rates.append(right / count)
        smoothed = (right + 2) / (count + 4)
        variance += smoothed * (1 - smoothed) / (count + 4)
    score = float(np.mean(rates))
    return score, score - Z_95 * math.sqrt(variance) / 2


def determinability(
    encoder: Callable[[], keras.Model],
    train_batches: Iterable[tuple[Any, Mapping]],
    test_views,
    test_params: Mapping,
    steps: int,
    seed: int = 0,
    learning_rate: float = LEARNING_RATE,
    batch_size: int = 512,
    jit_compile: bool | str = "auto",
) -> dict[str, Any]:
    """Which readout targets a supervised network reads from one view.

    Args:
        encoder: builds a fresh backbone (views -> `[B, d]` features).
        train_batches: `(views, params)` batches, read twice: for the medians, then to train.
        test_views, test_params: `[N, H, W, C]` fresh test views and their parameters.
        steps: training steps (batches).
        seed: of the network's initialisation (`keras.utils.set_random_seed`).
        learning_rate: Adam's, constant.
        batch_size: test views per forward pass.
        jit_compile: of the training step (Keras' `compile`).

    Returns:
        `{"rule", "steps", "seed", "targets": {name: {..., "kept", "reason"}}, "kept"}`.
    """
    if not (is_integer(steps) and steps >= 1):
        raise ValueError(f"`steps` must be an int of at least 1; got {steps!r}.")
    steps = int(steps)
    test_params = {name: np.asarray(value) for name, value in test_params.items()}
    lengths = {len(value) for value in test_params.values()}
    if lengths != {len(test_views)}:
        raise ValueError(
            f"`test_params` must hold a value per test view ({len(test_views)}); got "
            f"lengths {sorted(lengths)}."
        )
    seen, count = [], 0
    for _, params in itertools.islice(train_batches, steps):
        seen.append({name: np.asarray(value) for name, value in params.items()})
        count += len(next(iter(seen[-1].values())))
        if count >= THRESHOLD_VIEWS:
            break
    thresholds, dropped = label_thresholds(
        {name: np.concatenate([p[name] for p in seen]) for name in (seen or [{}])[0]},
        np.shape(test_views)[-1],
    )
    if not thresholds:
        raise ValueError("No readout target varies on `train_batches`: nothing to learn.")
    keras.utils.set_random_seed(seed)
    network = keras.Sequential([encoder(), keras.layers.Dense(len(thresholds), name="targets")])
    network.compile(
        keras.optimizers.Adam(learning_rate), masked_binary_crossentropy, jit_compile=jit_compile
    )
    for views, params in itertools.islice(train_batches, steps):
        params = {k: np.asarray(v) for k, v in params.items()}
        network.train_on_batch(unit_float32(views), target_labels(params, thresholds))
    logits = batched_features(
        lambda batch: network.predict_on_batch(unit_float32(batch)), test_views, batch_size
    )
    labels = target_labels(test_params, thresholds)
    targets = {name: _entry(name, [], [], reason) for name, reason in dropped.items()}
    for column, name in enumerate(thresholds):
        defined = ~np.isnan(labels[:, column])
        targets[name] = _entry(name, labels[defined, column], logits[defined, column] > 0)
    return {
        "rule": RULE,
        "steps": steps,
        "seed": seed,
        "targets": targets,
        "kept": [name for name, target in targets.items() if target["kept"]],
    }


def _entry(name: str, truth, predicted, reason: str = "") -> dict:
    """A target's entry of the record, from its test labels and predictions (or `reason`)."""
    entry = {"balanced_accuracy": None, "lower_bound": None, "test_views": len(truth)}
    if reason or len(np.unique(truth)) < 2:
        return {**entry, "kept": False, "reason": reason or "its test views lie on one side"}
    score, lower = balanced_accuracy_interval(truth, predicted)
    entry.update(balanced_accuracy=score, lower_bound=lower)
    read = (
        f"read at {score:.3f} by a supervised network from one view ({len(truth)} test "
        f"views; 95 % interval from {lower:.3f})"
    )
    if name in SOURCE_FRAME:
        return {**entry, "kept": False, "reason": f"a source-frame target, scored apart; {read}"}
    if lower > CHANCE + MARGIN:
        return {**entry, "kept": True}
    return {**entry, "kept": False, "reason": f"{read}: not above {CHANCE + MARGIN:g}"}


def determinable_readout(scores: Mapping[str, Any], record: Mapping[str, Any]) -> dict:
    """A finished run's per-target readout averaged over the targets a record keeps.

    Args:
        scores: one variant's `<level>/readout/<target>`, nested, flat or `summary.json`'s.
        record: a `determinability` record (`run.readout_determinable`): its `kept`.

    Returns:
        `<level>/augmentation_readout` (kept targets), `<level>/augmentation_readout_all_targets`.

    Example:

    >>> scores = {"backbone": {"readout": {"grayscale": 0.7, "crop_center_y": 0.5}}}
    >>> determinable_readout(scores, {"kept": ["grayscale"]})
    {'backbone/augmentation_readout': 0.7, 'backbone/augmentation_readout_all_targets': 0.6}
    """
    if "kept" not in record:
        raise ValueError("`record` must hold `kept`, the targets the rule keeps.")
    readouts: dict[str, dict[str, float]] = {}
    for key, value in scalar_items(dict(scores)).items():
        parts = key.removesuffix("/mean").split("/")  # summary.json: `/mean`, `/sd`, `/n`
        if len(parts) == 3 and parts[1] == "readout" and np.isfinite(value):
            readouts.setdefault(parts[0], {})[parts[2]] = value
    if not readouts:
        raise ValueError("`scores` hold no per-target readout, `<level>/readout/<target>`.")
    means = {}
    for level, values in readouts.items():
        kept_mean, every_mean = _means(values, record["kept"])
        means.update(
            {f"{level}/augmentation_readout": kept_mean, f"{level}/{ALL_TARGETS}": every_mean}
        )
    return means


def _means(readout: Mapping[str, float], kept: Collection[str]) -> tuple[float, float]:
    """The mean of `readout`'s scores over the `kept` targets and over every one."""
    chosen = [value for name, value in readout.items() if name in kept]
    return tuple(
        float(np.mean(values)) if values else math.nan
        for values in (chosen, list(readout.values()))
    )


class DeterminableProbeEvaluator(ImageProbeEvaluator):
    """`ImageProbeEvaluator` whose `augmentation_readout` averages the `kept` targets.

    Args:
        *args, **kwargs: `ImageProbeEvaluator`'s.
        kept: the targets the mean averages.
    """

    SCORES = (*ImageProbeEvaluator.SCORES, ALL_TARGETS)
    undirected_scores = UNDIRECTED_SCORES | {f"{level}/{ALL_TARGETS}" for level in LEVELS}

    def __init__(self, *args, kept: Collection[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.kept = tuple(kept)

    @property
    def summary_scores(self) -> frozenset[str]:
        """`ImageProbeEvaluator`'s, without the mean over every target."""
        return frozenset(
            f"{level}/{name}" for level in LEVELS for name in ImageProbeEvaluator.SCORES
        )

    def evaluate(self, model, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
        """`ImageProbeEvaluator.evaluate`'s scores, the readout averaged over `kept`."""
        scores = super().evaluate(model, progress)
        for level in LEVELS:
            kept, every = _means(scores[level]["readout"], self.kept)
            scores[level].update({"augmentation_readout": kept, ALL_TARGETS: every})
        return scores


__all__ = [
    "ALL_TARGETS",
    "CHANCE",
    "DeterminableProbeEvaluator",
    "LEARNING_RATE",
    "MARGIN",
    "RULE",
    "THRESHOLD_VIEWS",
    "balanced_accuracy_interval",
    "determinability",
    "determinable_readout",
    "label_thresholds",
    "masked_binary_crossentropy",
    "target_labels",
]
