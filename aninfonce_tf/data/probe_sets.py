"""The image experiments' probe sets: a split's examples drawn stratified by class, as
centre squares and augmented views. Details: docs/method.md#the-image-experiments-probe-sets-and-schedule"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf
from numpy.typing import ArrayLike

from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.datasets import on_canvas

# The probe sets are drawn from the first PROBE_POOL times as many examples as they need.
PROBE_POOL = 5

# What `stratified_arrays` makes of an example and its index in the pool.
Prepare = Callable[[dict, tf.Tensor], dict]


def stratified_order(labels: ArrayLike, seed: int | Sequence[int] = 0) -> np.ndarray:
    """A seeded order of `labels`' indices; every prefix holds each class in proportion.

    Example:

    >>> labels = np.array([0] * 6 + [1] * 3)
    >>> np.bincount(labels[stratified_order(labels)[:3]]).tolist()
    [2, 1]
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"`labels` must be one-dimensional; got shape {labels.shape}.")
    rng = np.random.default_rng(seed)
    grouped = np.lexsort((rng.random(len(labels)), labels))  # by class, random within
    _, inverse, counts = np.unique(labels[grouped], return_inverse=True, return_counts=True)
    rank = np.arange(len(labels)) - (np.cumsum(counts) - counts)[inverse]
    keys = (rank + 0.5) / counts[inverse]
    return grouped[np.lexsort((rng.random(len(labels)), keys))]


def stratified_arrays(
    dataset: tf.data.Dataset, count: int, seed: int | Sequence[int], prepare: Prepare
) -> tuple[dict, np.ndarray, np.ndarray]:
    """`(arrays, labels, pool_labels)`: `count` examples of the first `PROBE_POOL * count`
    of `dataset` in `stratified_order`, each as `prepare(example, index)` in `[n, ...]` arrays.

    Args:
        dataset: `{"image", "label", ...}` examples.
        count: examples to draw (fewer where the pool holds fewer).
        seed: of `stratified_order`.
        prepare: what each drawn example is kept as.

    Example:

    >>> examples = tf.data.Dataset.from_tensor_slices(
    ...     {"image": np.zeros((12, 6, 8, 3), "uint8"), "label": np.arange(12) % 3}
    ... )
    >>> arrays, labels, pool = stratified_arrays(examples, 6, seed=0, prepare=centre_squares(4))
    >>> arrays["image"].shape, class_counts(labels, pool)
    ((6, 4, 4, 3), {0: 2, 1: 2, 2: 2})
    """
    pool = dataset.take(PROBE_POOL * count)
    pool_labels = np.concatenate(
        [labels.numpy() for labels in pool.map(lambda example: example["label"]).batch(4096)]
    )
    drawn = stratified_order(pool_labels, seed)[:count]
    wanted = np.zeros(len(pool_labels), bool)
    wanted[drawn] = True
    kept = pool.enumerate().filter(lambda index, _: tf.gather(wanted, index))
    prepared = kept.map(
        lambda index, example: (example["label"], prepare(example, index)),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    # The k-th example kept (in the pool's order) is the destination[k]-th drawn.
    destination = np.argsort(drawn)
    labels = np.empty(len(drawn), pool_labels.dtype)
    arrays = tf.nest.map_structure(
        lambda spec: np.empty((len(drawn), *spec.shape), spec.dtype.as_numpy_dtype),
        prepared.element_spec[1],
    )
    start = 0
    for batch_labels, values in prepared.batch(256):
        rows = destination[start : start + len(batch_labels)]
        labels[rows] = batch_labels.numpy()
        for array, value in zip(tf.nest.flatten(arrays), tf.nest.flatten(values), strict=True):
            array[rows] = value.numpy()
        start += len(rows)
    return arrays, labels, pool_labels


def centre_square(image: tf.Tensor, size: int, proportion: float = 1.0) -> tf.Tensor:
    """The centre square of a uint8 image, `proportion` of its shorter side, resized to `size`.

    Example:

    >>> image = np.arange(64 * 48 * 3).reshape(64, 48, 3) % 256
    >>> centre_square(image.astype("uint8"), 24, proportion=0.875).shape
    TensorShape([24, 24, 3])
    """
    shorter = tf.reduce_min(tf.shape(image)[:2])
    if proportion != 1.0:
        side = tf.math.rint(proportion * tf.cast(shorter, tf.float32))
        shorter = tf.maximum(1, tf.cast(side, tf.int32))
    image = tf.image.resize_with_crop_or_pad(image, shorter, shorter)
    resized = tf.image.resize(image, [size, size], antialias=True)
    return tf.cast(tf.round(tf.clip_by_value(resized, 0.0, 255.0)), tf.uint8)


def centre_squares(size: int) -> Prepare:
    """The `prepare` of the class probes' images: `{"image": centre_square}`."""

    def square(example: dict, index: tf.Tensor) -> dict:
        return {"image": centre_square(example["image"], size)}

    return square


def centre_squares_and_views(
    augment: SimCLRAugment, seed: tf.Tensor, canvas: int | None = None
) -> Prepare:
    """The `prepare` of the probes' test images: a centre square and a view with its parameters."""
    square = centre_squares(augment.image_size)

    def square_and_view(example: dict, index: tf.Tensor) -> dict:
        placed = on_canvas(example, canvas) if canvas else example
        view_seed = tf.random.experimental.stateless_fold_in(seed, index)
        view, params = augment(placed["image"], view_seed, placed.get("image_size"))
        view = tf.cast(view, tf.float16)
        return {**square(example, index), "view": view, "params": params}

    return square_and_view


def class_counts(labels: np.ndarray, pool_labels: np.ndarray) -> dict[int, int]:
    """Examples of each class of the pool among `labels` (0 for the classes left out)."""
    return {int(label): int(np.sum(labels == label)) for label in np.unique(pool_labels)}


__all__ = [
    "PROBE_POOL",
    "centre_square",
    "centre_squares",
    "centre_squares_and_views",
    "class_counts",
    "stratified_arrays",
    "stratified_order",
]
