"""The SimCLR views' pixel work as pure TensorFlow functions, one XLA computation in
`views_from_parameters`. Details: docs/speed.md#how-the-pixel-ops-are-written"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf
from numpy.typing import ArrayLike

# The colour jitter's operations, as `jitter_order` numbers them.
JITTER_OPS = ("brightness", "contrast", "saturation", "hue")
# How far outside [0, 1] float images may reach (as resizing leaves them).
FLOAT_SLACK = 0.25


def grayscale(images: tf.Tensor) -> tf.Tensor:
    """ITU-R 601 luma of `[..., 3]` RGB `images`, kept as 3 equal channels."""
    return tf.broadcast_to(_luma(images), tf.shape(images))


def _luma(images: tf.Tensor) -> tf.Tensor:
    """`[..., 1]` ITU-R 601 luma as a sum of channel slices."""
    return images[..., :1] * 0.299 + images[..., 1:2] * 0.587 + images[..., 2:] * 0.114


def color_jitter(
    images: tf.Tensor,
    brightness: tf.Tensor,
    contrast: tf.Tensor,
    saturation: tf.Tensor,
    hue: tf.Tensor,
    order: tf.Tensor | None = None,
    jit_compile: bool = False,
) -> tf.Tensor:
    """`[B, H, W, 3]` images after per-image brightness, contrast, saturation and hue shift,
    clipped to [0, 1] after each. Details: docs/api.md#simclraugments-views

    Args:
        images: `[B, H, W, 3]` floats in [0, 1].
        brightness, contrast, saturation, hue: `[B]` factors (1, 1, 1, 0: unchanged).
        order: `[B, 4]` each image's operations, numbered as in `JITTER_OPS`.
        jit_compile: the ops are to be compiled by XLA (a batched hue shift).

    Example:

    >>> images = tf.fill([2, 4, 4, 3], 0.5)
    >>> ones, zeros = tf.ones([2]), tf.zeros([2])
    >>> bool(tf.reduce_all(color_jitter(images, ones, ones, ones, zeros) == images))
    True
    """
    factors = tf.stack([brightness, contrast, saturation], axis=1)
    if order is None:
        for op in range(3):
            images = _blend(images, tf.fill(tf.shape(hue), op), factors[:, op])
        return _shift_hue(images, hue, jit_compile)
    # Three blend slots, the hue shift, three blend slots; an unneeded slot has factor 1.
    order = tf.cast(order, tf.int32)
    position = tf.argmax(tf.cast(order == 3, tf.int32), axis=1, output_type=tf.int32)

    def blend_slot(images, index, used):
        op = tf.where(used, tf.gather(order, tf.minimum(index, 3), batch_dims=1), 0)
        factor = tf.where(used, tf.gather(factors, op, batch_dims=1), 1.0)
        return _blend(images, op, factor)

    for slot in range(3):
        images = blend_slot(images, tf.zeros_like(position) + slot, slot < position)
    images = _shift_hue(images, hue, jit_compile)
    for slot in range(3):
        images = blend_slot(images, position + 1 + slot, position + 1 + slot <= 3)
    return images


def _blend(images: tf.Tensor, op: tf.Tensor, factor: tf.Tensor) -> tf.Tensor:
    """Per image, brightness (`op` 0), contrast (1) or saturation (2) blend, clipped."""

    def per_image(value):
        return value[:, None, None, None]

    luma = _luma(images)
    mean = tf.reduce_mean(luma, axis=[1, 2, 3], keepdims=True)
    rest = 1.0 - factor
    target = per_image(tf.where(op == 1, rest, 0.0)) * mean
    target += per_image(tf.where(op == 2, rest, 0.0)) * luma
    return tf.clip_by_value(per_image(factor) * images + target, 0.0, 1.0)


def _select(flags: tf.Tensor, changed: tf.Tensor, unchanged: tf.Tensor) -> tf.Tensor:
    """`changed` where the `[B]` flags are positive, else `unchanged`, as a 0/1 product."""
    chosen = tf.cast(flags > 0, changed.dtype)[:, None, None, None]
    return chosen * changed + (1.0 - chosen) * unchanged


def _shift_hue(images: tf.Tensor, shift: tf.Tensor, jit_compile: bool) -> tf.Tensor:
    """`[B]` `shift` (turns) added to the HSV hue: batched for XLA, else per image."""
    if jit_compile:
        hsv = tf.image.rgb_to_hsv(images)
        shifted = tf.math.floormod(hsv[..., :1] + shift[:, None, None, None], 1.0)
        return tf.image.hsv_to_rgb(tf.concat([shifted, hsv[..., 1:]], -1))

    def one(args):
        image, delta = args
        return tf.cond(delta != 0.0, lambda: tf.image.adjust_hue(image, delta), lambda: image)

    return tf.map_fn(one, (images, shift), fn_output_signature=images.dtype)


def _reflect(index: np.ndarray, length: int) -> np.ndarray:
    """Indices outside `[0, length)` mirrored at the edges (NumPy's `reflect`)."""
    index = np.abs(index)
    return np.where(index > length - 1, 2 * (length - 1) - index, index)


def gaussian_blur(images: tf.Tensor, sigma: tf.Tensor, kernel_size: int) -> tf.Tensor:
    """The `[B, H, W, C]` images blurred per image by a separable Gaussian, reflect-padded.

    Args:
        images: `[B, H, W, C]` floats, static `H` and `W` above `kernel_size // 2`.
        sigma: `[B]` standard deviations in pixels.
        kernel_size: taps of the kernel (odd).
    """
    radius = kernel_size // 2
    offsets = np.arange(-radius, radius + 1)
    kernels = tf.exp(-0.5 * tf.square(offsets.astype("float32")[None, :] / sigma[:, None]))
    kernels /= tf.reduce_sum(kernels, axis=1, keepdims=True)  # [B, K]

    def banded(length):
        taps = _reflect(np.arange(length)[:, None] + offsets, length)  # [n, K]
        return tf.einsum("bk,ikj->bij", kernels, tf.one_hot(taps, length))

    height, width = images.shape[1], images.shape[2]
    if height is None or width is None or radius >= min(height, width):
        raise ValueError(
            f"`images` must have static height and width above kernel_size // 2 = {radius}; "
            f"got shape {images.shape}."
        )
    images = tf.einsum("bij,bjwc->biwc", banded(height), images)
    return tf.einsum("bij,bhjc->bhic", banded(width), images)


def _resampling_taps(
    start: tf.Tensor, extent: tf.Tensor, length: tf.Tensor, canvas: int, size: int
) -> tuple[tf.Tensor, tf.Tensor]:
    """`(indices, weights)` `[B, size, K]` of an antialiased bilinear resampling along one axis."""
    scale = (extent / size)[:, None, None]
    radius = tf.maximum(scale, 1.0)
    taps = math.ceil(2 * max(1.0, canvas / size))  # the most pixels within a radius
    centre = start[:, None, None] + (tf.range(size, dtype=tf.float32)[:, None] + 0.5) * scale - 0.5
    index = tf.floor(centre - radius) + 1.0 + tf.range(taps, dtype=tf.float32)
    inside = (index >= 0.0) & (index < length[:, None, None])
    weights = tf.where(inside, tf.nn.relu(1.0 - tf.abs(index - centre) / radius), 0.0)
    weights /= tf.reduce_sum(weights, axis=-1, keepdims=True)
    return tf.cast(tf.clip_by_value(index, 0.0, canvas - 1.0), tf.int32), weights


def resized_crop(
    images: tf.Tensor, boxes: ArrayLike, size: int, image_sizes: ArrayLike | None = None
) -> tf.Tensor:
    """`[B, size, size, C]` floats: the crop `boxes` of `images`, resized with antialiasing.

    Args:
        images: `[B, H, W, C]` floats.
        boxes: `[B, 4]` boxes `y1, x1, y2, x2` as fractions of each image's sides.
        size: side of the output.
        image_sizes: `[B, 2]` each image's size at the canvas' top left (default: all of it).
    """
    canvas_height, canvas_width = images.shape[1], images.shape[2]
    boxes = tf.convert_to_tensor(boxes, tf.float32)
    if image_sizes is None:
        image_sizes = tf.zeros_like(boxes[:, :2]) + [[canvas_height, canvas_width]]
    image_sizes = tf.cast(image_sizes, tf.float32)
    images = tf.cast(images, tf.float32)
    batch = tf.shape(images)[0]
    for axis, canvas in ((1, canvas_height), (2, canvas_width)):
        length = image_sizes[:, axis - 1]
        start, end = boxes[:, axis - 1] * length, boxes[:, axis + 1] * length
        index, weights = _resampling_taps(start, end - start, length, canvas, size)
        gathered = tf.gather(images, tf.reshape(index, [batch, -1]), axis=axis, batch_dims=1)
        if axis == 1:  # [B, size * K, W, C]
            gathered = tf.reshape(gathered, [batch, size, -1, *gathered.shape[2:]])
            images = tf.einsum("bskwc,bsk->bswc", gathered, weights)
        else:  # [B, size, size * K, C]
            gathered = tf.reshape(gathered, [batch, gathered.shape[1], size, -1, images.shape[3]])
            images = tf.einsum("bhskc,bsk->bhsc", gathered, weights)
    return images


def views_from_parameters(
    images: tf.Tensor,
    image_sizes: tf.Tensor,
    params: dict[str, tf.Tensor],
    image_size: int,
    random_order: bool,
    blur_kernel_size: int,
    jit_compile: bool = True,
) -> tf.Tensor:
    """`[B, image_size, image_size, 3]` float32 views in [0, 1] by every pixel op per image.

    Args:
        images: `[B, H, W, 3]` uint8 or floats in [0, 1].
        image_sizes: `[B, 2]` height and width of each image on the canvas.
        params: the per-image parameters `SimCLRAugment` draws (flags apply where positive).
        image_size: side of the square views.
        random_order: jitter each image in its `jitter_order`, else in `JITTER_OPS`' order.
        blur_kernel_size: taps of the blur's kernel; 0: no blur.
        jit_compile: run them as one XLA computation.
    """
    function = _VIEWS_XLA if jit_compile else _VIEWS
    return function(
        images, image_sizes, params, image_size, random_order, blur_kernel_size, jit_compile
    )


def views_from_crops(
    crops: tf.Tensor,
    params: dict[str, tf.Tensor],
    random_order: bool,
    blur_kernel_size: int,
    jit_compile: bool = True,
) -> tf.Tensor:
    """`views_from_parameters` after its resized crop, on `[B, S, S, 3]` float `crops`.

    Example:

    >>> params = {name: tf.zeros([2]) for name in ("flip", "grayscale", "blur", "solarize")}
    >>> params.update({name: tf.ones([2]) for name in JITTER_OPS[:3]}, hue=tf.zeros([2]))
    >>> crops = tf.fill([2, 4, 4, 3], 0.5)
    >>> bool(tf.reduce_all(views_from_crops(crops, params, False, 0) == crops))
    True
    """
    function = _PIXEL_OPS_XLA if jit_compile else _PIXEL_OPS
    return function(crops, params, random_order, blur_kernel_size, jit_compile)


def _views(images, image_sizes, params, image_size, random_order, blur_kernel_size, jit_compile):
    views = resized_crop(images, params["crop_box"], image_size, image_sizes)
    if images.dtype == tf.uint8:
        views /= 255.0
    return _pixel_ops(views, params, random_order, blur_kernel_size, jit_compile)


def _pixel_ops(views, params, random_order, blur_kernel_size, jit_compile):
    views = _select(params["flip"], tf.reverse(views, [2]), views)
    factors = (params[name] for name in JITTER_OPS)
    order = params["jitter_order"] if random_order else None
    views = color_jitter(views, *factors, order, jit_compile)
    # Grayscale: a saturation blend of factor 0.
    gray = tf.cast(params["grayscale"] > 0, tf.float32)
    views = _blend(views, tf.fill(tf.shape(gray), 2), 1.0 - gray)
    if blur_kernel_size:
        sigma = tf.maximum(params["blur_sigma"], 1e-3)
        views = _select(params["blur"], gaussian_blur(views, sigma, blur_kernel_size), views)
    solarize = params["solarize"]

    def solarized():
        return _select(solarize, tf.where(views >= 0.5, 1.0 - views, views), views)

    return tf.cond(tf.reduce_any(solarize > 0), solarized, lambda: views)


_VIEWS_XLA = tf.function(_views, jit_compile=True)
_VIEWS = tf.function(_views)
_PIXEL_OPS_XLA = tf.function(_pixel_ops, jit_compile=True)
_PIXEL_OPS = tf.function(_pixel_ops)


def jpeg_sizes(encoded: tf.Tensor) -> tf.Tensor:
    """`[B, 2]` float32 heights and widths of `[B]` JPEG-encoded images, from their headers.

    Example:

    >>> encoded = tf.io.encode_jpeg(tf.zeros([6, 10, 3], tf.uint8))
    >>> jpeg_sizes(encoded[None]).numpy().tolist()
    [[6.0, 10.0]]
    """
    shapes = tf.map_fn(
        lambda one: tf.image.extract_jpeg_shape(one)[:2],
        encoded,
        fn_output_signature=tf.TensorSpec([2], tf.int32),
    )
    return tf.cast(shapes, tf.float32)


def pixel_windows(boxes: tf.Tensor, sizes: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """`(boxes, windows)`: crop `boxes` of images `sizes` snapped to whole pixels within
    the image, and `decode_and_crop_jpeg`'s windows in pixels.

    Example:

    >>> boxes, windows = pixel_windows(tf.constant([[0.1, 0.0, 0.52, 1.0]]),
    ...                                tf.constant([[10.0, 4.0]]))
    >>> windows.numpy().tolist(), boxes.numpy().round(2).tolist()
    ([[1, 0, 4, 4]], [[0.1, 0.0, 0.5, 1.0]])
    """
    heights_widths = tf.concat([sizes, sizes], axis=1)  # [H, W, H, W]
    pixels = boxes * heights_widths
    extent = tf.clip_by_value(tf.round(pixels[:, 2:] - pixels[:, :2]), 1.0, sizes)
    start = tf.clip_by_value(tf.round(pixels[:, :2]), 0.0, sizes - extent)
    snapped = tf.concat([start, start + extent], axis=1) / heights_widths
    return snapped, tf.cast(tf.concat([start, extent], axis=1), tf.int32)


def jpeg_crops(encoded: tf.Tensor, windows: tf.Tensor, size: int) -> tf.Tensor:
    """`[B, size, size, 3]` float32 crops in [0, 1]: each JPEG's pixel `windows` decoded
    alone as RGB and resized. Details: docs/speed.md#how-the-pixel-ops-are-written

    Args:
        encoded: `[B]` strings, JPEG files.
        windows: `[B, 4]` int32 `top, left, height, width` (`pixel_windows`).
        size: side of the output.

    Example:

    >>> encoded = tf.io.encode_jpeg(tf.fill([8, 8, 3], tf.constant(255, tf.uint8)))
    >>> crops = jpeg_crops(encoded[None], tf.constant([[0, 0, 4, 8]]), 2)
    >>> crops.shape, float(tf.reduce_min(crops))
    (TensorShape([1, 2, 2, 3]), 1.0)
    """

    def crop(args):
        one, window = args
        pixels = tf.image.decode_and_crop_jpeg(one, window, channels=3)
        return tf.image.resize(pixels, [size, size], antialias=True) / 255.0

    return tf.map_fn(
        crop, (encoded, windows), fn_output_signature=tf.TensorSpec([size, size, 3], tf.float32)
    )


def checked_unit_range(images: tf.Tensor, value_range=(0.0, 1.0)) -> tf.Tensor:
    """Float `images` (over `value_range`'s top) checked to lie in [0, 1] up to `FLOAT_SLACK`
    (else ValueError; in a graph `InvalidArgumentError`)."""
    inside = tf.reduce_all((images >= -FLOAT_SLACK) & (images <= 1.0 + FLOAT_SLACK))
    top = value_range[1]
    message = (
        f"float `images` must lie in [0, {top:g}] (`value_range`); for images in [0, 255] "
        "pass `value_range=(0, 255)`, uint8 images, or divide them by 255"
    )
    if tf.executing_eagerly():
        if not inside:
            low, high = (float(f(images)) * top for f in (tf.reduce_min, tf.reduce_max))
            raise ValueError(f"{message}; got values in [{low:.4g}, {high:.4g}].")
        return images
    low, high = tf.reduce_min(images), tf.reduce_max(images)
    check = tf.debugging.Assert(inside, [f"{message}; got values in", low, high])
    with tf.control_dependencies([check]):
        return tf.identity(images)


__all__ = [
    "FLOAT_SLACK",
    "JITTER_OPS",
    "checked_unit_range",
    "color_jitter",
    "gaussian_blur",
    "grayscale",
    "jpeg_crops",
    "jpeg_sizes",
    "pixel_windows",
    "resized_crop",
    "views_from_crops",
    "views_from_parameters",
]
