"""The random draws of the SimCLR views (`PARAMETERS`), from an explicit stateless seed
and without the images (`draw_parameters`). Details: docs/api.md#simclraugments-views

Example:

>>> from aninfonce_tf.data.augment import SimCLRAugment
>>> params = draw_parameters(SimCLRAugment(), 3, tf.ones([3, 2]), stateless_seed(0))
>>> sorted(params) == sorted(PARAMETERS), tuple(params["crop_box"].shape)
(True, (3, 4))
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.image_ops import JITTER_OPS

# Attempts per image at a crop box within the image before falling back to a
# central crop (torchvision's RandomResizedCrop tries 10 times too).
CROP_ATTEMPTS = 10
PARAMETERS = (
    "crop_box",
    "flip",
    "jitter",
    "brightness",
    "contrast",
    "saturation",
    "hue",
    "jitter_order",
    "grayscale",
    "blur",
    "blur_sigma",
    "solarize",
)


class ViewSettings(Protocol):
    """The settings `draw_parameters` reads, as `SimCLRAugment` holds and documents them.

    Example:

    >>> from aninfonce_tf.data.augment import SimCLRAugment
    >>> settings: ViewSettings = SimCLRAugment(hue=0.0)
    >>> settings.hue, settings.crop_scale
    (0.0, (0.08, 1.0))
    """

    crop_scale: tuple[float, float]
    crop_ratio: tuple[float, float]
    flip_probability: float
    jitter_probability: float
    brightness: float
    contrast: float
    saturation: float
    hue: float
    random_jitter_order: bool
    grayscale_probability: float
    blur_probability: float
    blur_sigma: tuple[float, float]
    solarize_probability: float


def stateless_seed(seed) -> tf.Tensor:
    """The `[2]` int64 stateless seed from an int `s` (`[s, 0]`), a pair of ints, or None.

    Example:

    >>> stateless_seed(7).numpy().tolist(), stateless_seed([1, 2]).numpy().tolist()
    ([7, 0], [1, 2])
    """
    if seed is None:
        return tf.random.uniform([2], 0, tf.int64.max, dtype=tf.int64)
    expected = "`seed` must be an int, a pair of ints or None; got"
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"{expected} {seed!r}.")
    if isinstance(seed, (int, np.integer)):
        return tf.constant([seed, 0], tf.int64)
    try:
        tensor = tf.convert_to_tensor(seed)
    except (TypeError, ValueError):
        raise TypeError(f"{expected} {seed!r}.") from None
    if not tensor.dtype.is_integer:
        raise TypeError(f"{expected} {seed!r} ({tensor.dtype.name}).")
    if tensor.shape.rank != 1 or tensor.shape[0] not in (2, None):
        raise ValueError(f"{expected} shape {tensor.shape}.")
    return tf.cast(tensor, tf.int64)


def draw_parameters(
    augment: ViewSettings, batch: int | tf.Tensor, image_sizes: tf.Tensor, seed: tf.Tensor
) -> dict[str, tf.Tensor]:
    """`PARAMETERS` of `batch` views of images `image_sizes` (`[B, 2]` pixels) by
    `augment`'s settings, from the stateless `seed`.

    Example:

    >>> from aninfonce_tf.data.augment import SimCLRAugment
    >>> params = draw_parameters(SimCLRAugment(flip_probability=1.0), 2, tf.ones([2, 2]),
    ...                          stateless_seed(3))
    >>> params["flip"].numpy().tolist()
    [1.0, 1.0]
    """
    seeds = tf.random.experimental.stateless_split(seed, 12)

    def uniform(index, low=0.0, high=1.0, shape=None):
        return tf.random.stateless_uniform(
            shape if shape is not None else [batch], seeds[index], low, high
        )

    def chosen(index, probability):
        return tf.cast(uniform(index) < probability, tf.float32)

    jitter = chosen(2, augment.jitter_probability)

    def factor(index, strength):
        return 1.0 + jitter * uniform(index, -strength, strength)

    order = tf.zeros([batch, 1], tf.int32) + tf.range(len(JITTER_OPS))
    if augment.random_jitter_order:
        # The ranks of 4 uniforms: a uniformly random permutation.
        shuffled = tf.argsort(uniform(11, shape=[batch, len(JITTER_OPS)]), axis=1)
        order = tf.where(jitter[:, None] > 0, shuffled, order)
    blur = chosen(8, augment.blur_probability)
    heights, widths = image_sizes[:, 0], image_sizes[:, 1]
    boxes = crop_boxes(batch, seeds[0], heights, widths, augment.crop_scale, augment.crop_ratio)
    return {
        "crop_box": boxes,
        "flip": chosen(1, augment.flip_probability),
        "jitter": jitter,
        "brightness": factor(3, augment.brightness),
        "contrast": factor(4, augment.contrast),
        "saturation": factor(5, augment.saturation),
        "hue": jitter * uniform(6, -augment.hue, augment.hue),
        "jitter_order": tf.cast(order, tf.float32),
        "grayscale": chosen(7, augment.grayscale_probability),
        "blur": blur,
        "blur_sigma": blur * uniform(9, *augment.blur_sigma),
        "solarize": chosen(10, augment.solarize_probability),
    }


def crop_boxes(
    batch: int | tf.Tensor,
    seed: tf.Tensor,
    heights: tf.Tensor,
    widths: tf.Tensor,
    scale: tuple[float, float],
    ratio: tuple[float, float],
) -> tf.Tensor:
    """`[B, 4]` boxes `y1, x1, y2, x2` in [0, 1], as torchvision's `RandomResizedCrop` draws.

    Example:

    >>> boxes = crop_boxes(2, stateless_seed(0), tf.ones([2]), tf.ones([2]), (1.0, 1.0),
    ...                    (1.0, 1.0))
    >>> boxes.numpy().tolist()
    [[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]]
    """
    seeds = tf.random.experimental.stateless_split(seed, 4)
    shape = [batch, CROP_ATTEMPTS]
    area = tf.random.stateless_uniform(shape, seeds[0], *scale)
    log_ratio = tf.random.stateless_uniform(shape, seeds[1], math.log(ratio[0]), math.log(ratio[1]))
    # A box w x h (fractions) of a W x H image spans w W / (h H) = ratio and
    # w h = area.
    ratio_in_pixels = tf.exp(log_ratio) * (heights / widths)[:, None]
    width, height = tf.sqrt(area * ratio_in_pixels), tf.sqrt(area / ratio_in_pixels)
    fits = (width <= 1.0) & (height <= 1.0)
    first = tf.argmax(tf.cast(fits, tf.int32), axis=1)
    any_fits = tf.reduce_any(fits, axis=1)
    aspect = widths / heights
    fallback_width = tf.minimum(1.0, ratio[1] / aspect)
    fallback_height = tf.minimum(1.0, aspect / ratio[0])
    width = tf.where(any_fits, tf.gather(width, first, batch_dims=1), fallback_width)
    height = tf.where(any_fits, tf.gather(height, first, batch_dims=1), fallback_height)
    where = tf.where(any_fits[:, None], tf.random.stateless_uniform([batch, 2], seeds[2]), 0.5)
    top, left = where[:, 0] * (1.0 - height), where[:, 1] * (1.0 - width)
    return tf.stack([top, left, top + height, left + width], axis=1)


__all__ = [
    "CROP_ATTEMPTS",
    "PARAMETERS",
    "ViewSettings",
    "crop_boxes",
    "draw_parameters",
    "stateless_seed",
]
