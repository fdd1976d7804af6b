"""SimCLR augmentations that also return what they did: for each image the crop box,
the flip, the colour jitter factors and their order, grayscale, blur sigma and
solarisation, so that a probe can later read these parameters back from the learned
features.

Every draw is stateless from an explicit seed (the same seed gives the same views,
also under a parallel `Dataset.map`). Each op is written here rather than taken from
Keras' preprocessing layers: those draw from a stateful `SeedGenerator`, and several
of the parameters (a per-image crop box, per-image blur sigma, the jitter factors and
their order) have no Keras layer that returns them. All pixel work after the draws
runs as one XLA computation.

Example:

>>> augment = SimCLRAugment.preset("simclr_cifar10")
>>> images = np.random.default_rng(0).integers(0, 256, (4, 40, 40, 3), dtype="uint8")
>>> views, params = augment(images, seed=[0, 1])
>>> tuple(views.shape), sorted(params)[:4]
((4, 32, 32, 3), ['blur', 'blur_sigma', 'brightness', 'contrast'])
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import tensorflow as tf

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
# The colour jitter's operations, as `jitter_order` numbers them.
JITTER_OPS = ("brightness", "contrast", "saturation", "hue")
# How far outside [0, 1] float images may reach (as resizing leaves them; clipped on
# the way): images in [0, 255] or [-1, 1] would give views clipped to white or black.
FLOAT_SLACK = 0.25


def grayscale(images):
    """ITU-R 601 luma, kept as 3 equal channels."""
    luma = tf.reduce_sum(images * tf.constant([0.299, 0.587, 0.114]), axis=-1, keepdims=True)
    return tf.broadcast_to(luma, tf.shape(images))


def color_jitter(images, brightness, contrast, saturation, hue, order=None):
    """Applies per-image factors, clipping to [0, 1] after each operation:
    brightness `x * b`; contrast `(x - mean luma) * c + mean luma`; saturation
    `luma + s * (x - luma)`; hue: `h` added to the HSV hue (mod 1).

    Args:
        images: `[B, H, W, 3]` floats in [0, 1].
        brightness, contrast, saturation, hue: `[B]` factors; 1, 1, 1, 0 leave
            an image as it is.
        order: `[B, 4]` integers, the operations (numbered as in `JITTER_OPS`)
            in the order each image gets them; default: `JITTER_OPS`' order.
    """

    def per_image(value):
        return value[:, None, None, None]

    factors = tf.stack([brightness, contrast, saturation], axis=1)
    if order is None:
        for op in range(3):
            images = _blend(images, op, per_image(factors[:, op]))
        return _shift_hue(images, per_image(hue))
    # The hue shift, the costly operation, runs once for the batch: each image's
    # operations before it go through three slots before, those after it through
    # three slots after, and the slots an image does not need leave it as it is.
    order = tf.cast(order, tf.int32)
    position = tf.argmax(tf.cast(order == 3, tf.int32), axis=1, output_type=tf.int32)

    def blend_slot(images, index, used):
        op = tf.where(used, tf.gather(order, tf.minimum(index, 3), batch_dims=1), 0)
        factor = tf.where(used, tf.gather(factors, op, batch_dims=1), 1.0)
        return _blend(images, per_image(op), per_image(factor))

    for slot in range(3):
        images = blend_slot(images, tf.zeros_like(position) + slot, slot < position)
    images = _shift_hue(images, per_image(hue))
    for slot in range(3):
        images = blend_slot(images, position + 1 + slot, position + 1 + slot <= 3)
    return images


def _blend(images, op, factor):
    """Brightness (`op` 0), contrast (1) or saturation (2): a blend with black, the
    mean luma or the pixel's luma, clipped. `op`: an int, or `[B, 1, 1, 1]`."""
    luma = grayscale(images)
    targets = (0.0, tf.reduce_mean(luma, axis=[1, 2, 3], keepdims=True), luma)
    if isinstance(op, int):
        target = targets[op]
    else:
        target = tf.where(op == 1, targets[1], tf.where(op == 2, targets[2], 0.0))
    return tf.clip_by_value(factor * images + (1.0 - factor) * target, 0.0, 1.0)


def _shift_hue(images, shift):
    """`shift` (turns) added to the HSV hue."""
    hsv = tf.image.rgb_to_hsv(images)
    shifted = tf.math.floormod(hsv[..., :1] + shift, 1.0)
    return tf.image.hsv_to_rgb(tf.concat([shifted, hsv[..., 1:]], -1))


def _reflect(index: np.ndarray, length: int) -> np.ndarray:
    """Indices outside `[0, length)` mirrored at the edges (NumPy's `reflect`)."""
    index = np.abs(index)
    return np.where(index > length - 1, 2 * (length - 1) - index, index)


def gaussian_blur(images, sigma, kernel_size: int):
    """Per-image Gaussian blur with reflect padding, separable: one 1-D kernel along
    each axis, written as a product with a banded `[B, n, n]` matrix per axis (the
    padding folded into it). Two batched matrix products are fast with and without
    XLA, where a depthwise convolution with one kernel per image is ~100x slower
    under XLA on CPU.

    Args:
        images: `[B, H, W, C]` floats, with static `H` and `W` above `kernel_size // 2`.
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


def _resampling_taps(start, extent, length, canvas: int, size: int):
    """For each image and output pixel along one axis: the source pixels and the
    weights of an antialiased bilinear resampling (`tf.image.resize`'s triangle
    kernel, widened by the scale when shrinking) of `[start, start + extent)`, in
    pixels of an image `length` pixels long at the start of a `canvas` axis.

    Returns:
        `(indices [B, size, K] int32, weights [B, size, K])`.
    """
    scale = (extent / size)[:, None, None]
    radius = tf.maximum(scale, 1.0)
    taps = math.ceil(2 * max(1.0, canvas / size))  # the most pixels within a radius
    centre = start[:, None, None] + (tf.range(size, dtype=tf.float32)[:, None] + 0.5) * scale - 0.5
    index = tf.floor(centre - radius) + 1.0 + tf.range(taps, dtype=tf.float32)
    inside = (index >= 0.0) & (index < length[:, None, None])
    weights = tf.where(inside, tf.nn.relu(1.0 - tf.abs(index - centre) / radius), 0.0)
    weights /= tf.reduce_sum(weights, axis=-1, keepdims=True)
    return tf.cast(tf.clip_by_value(index, 0.0, canvas - 1.0), tf.int32), weights


def resized_crop(images, boxes, size: int, image_sizes=None):
    """The crop `boxes` of `images`, each resized to `size x size` with an
    antialiased bilinear kernel (as `tf.image.resize(..., antialias=True)`); batched,
    one box per image, XLA-compilable.

    Args:
        images: `[B, H, W, C]` floats.
        boxes: `[B, 4]` boxes `y1, x1, y2, x2` as fractions of each image's height
            and width (`0, 0, 1, 1`: the whole image, edge to edge).
        size: side of the output.
        image_sizes: `[B, 2]` height and width of each image, placed at the top
            left of the `H x W` canvas (default: every image fills it).

    Returns:
        `[B, size, size, C]` floats.
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


@tf.function(jit_compile=True)
def _views(images, image_sizes, params, image_size: int, random_order: bool, blur_kernel_size: int):
    """Every pixel op, per image, fused by XLA into a few passes: the resized crop,
    flip, colour jitter (in the returned order, or the fixed one), grayscale, blur
    (`blur_kernel_size` 0: none) and solarisation. uint8 images are scaled to
    [0, 1] after the crop. (The draws stay outside: XLA takes seconds longer to
    compile them than they take to run.)"""
    views = resized_crop(images, params["crop_box"], image_size, image_sizes)
    if images.dtype == tf.uint8:
        views /= 255.0

    def where(name, changed, unchanged):
        return tf.where(params[name][:, None, None, None] > 0, changed, unchanged)

    views = where("flip", views[:, :, ::-1], views)
    factors = (params[name] for name in JITTER_OPS)
    views = color_jitter(views, *factors, params["jitter_order"] if random_order else None)
    views = where("grayscale", grayscale(views), views)
    if blur_kernel_size:
        sigma = tf.maximum(params["blur_sigma"], 1e-3)
        views = where("blur", gaussian_blur(views, sigma, blur_kernel_size), views)
    return where("solarize", tf.where(views >= 0.5, 1.0 - views, views), views)


def _checked_range(images):
    """Float `images`, checked to lie in [0, 1] up to `FLOAT_SLACK`: a `ValueError`
    eagerly, an assertion in a graph (`Dataset.map`)."""
    inside = tf.reduce_all((images >= -FLOAT_SLACK) & (images <= 1.0 + FLOAT_SLACK))
    message = "float `images` must lie in [0, 1] (for [0, 255] pass uint8, or divide by 255)"
    if tf.executing_eagerly():
        if not inside:
            low, high = float(tf.reduce_min(images)), float(tf.reduce_max(images))
            raise ValueError(f"{message}; got values in [{low:.4g}, {high:.4g}].")
        return images
    low, high = tf.reduce_min(images), tf.reduce_max(images)
    check = tf.debugging.Assert(inside, [f"{message}; got values in", low, high])
    with tf.control_dependencies([check]):
        return tf.identity(images)


def stateless_seed(seed) -> tf.Tensor:
    """The `[2]` int64 seed of TensorFlow's stateless random ops from an int `s`
    (`[s, 0]`), a pair of ints, or None: a fresh seed from the stateful RNG (which
    `tf.random.set_seed` makes repeatable).

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


@dataclasses.dataclass(frozen=True)
class SimCLRAugment:
    """The SimCLR view: random resized crop, flip, colour jitter, grayscale, blur,
    solarisation, each per image with its own probability.

    Call it on `[B, H, W, C]` or `[H, W, C]` images with C = 3 (colour) or 1
    (grayscale; the views keep one channel, and saturation, hue and grayscale
    change nothing, though their parameters are drawn and returned), uint8 in
    [0, 255] or floats in [0, 1] (floats further than `FLOAT_SLACK` outside are
    refused: images in [0, 255] or [-1, 1] would give views clipped to white or
    black); with a `seed`: an int, a stateless seed of shape
    `[2]` (the same seed, the same views; an int `s` is `[s, 0]`), or None for fresh
    randomness (from TensorFlow's global seed, `tf.random.set_seed`); and optionally
    `image_sizes` (`[B, 2]`: each image's height and width at the top left of a
    padded batch, so that images of different shapes batch together and every crop
    can reach their sides). It returns float32 views of `image_size` in [0, 1] and a
    dict of float32
    parameters, `[B]` each except the crop box `[B, 4]`: `y1, x1, y2, x2` as
    fractions of the image's height and width, edge to edge; and `jitter_order`
    `[B, 4]`: the jitter's operations (0 brightness, 1 contrast, 2 saturation,
    3 hue) in the order applied, `0, 1, 2, 3` where the jitter is off.

    The crop's area and aspect ratio (width / height, log-uniform) are drawn in
    pixels, as torchvision's `RandomResizedCrop` does, also on non-square images;
    the crop is resized with antialiasing.

    The colour jitter follows torchvision's `ColorJitter` formulas (see
    `color_jitter`: brightness, contrast and saturation blend with black, the
    image's mean luma and each pixel's luma; hue shifts the HSV hue), in a random
    order as SimCLR's `color_jitter_rand` and torchvision. SimCLR's TF code agrees
    on brightness (its default `simclrv2` form, multiplicative) and hue; its
    contrast (`tf.image.adjust_contrast`) blends with each channel's mean, and its
    saturation (`tf.image.adjust_saturation`) scales the HSV saturation. The blur
    pads by reflection (as torchvision's `GaussianBlur`) where SimCLR's TF code
    pads with zeros (`depthwise_conv2d` with `SAME` padding), which darkens its
    views' borders.

    Args:
        image_size: side of the square output views.
        crop_scale: range of the crop's area as a fraction of the image.
        crop_ratio: range of the crop's aspect ratio (width / height in pixels).
        flip_probability: of a horizontal flip.
        jitter_probability: of colour jitter.
        brightness, contrast, saturation: jitter strengths s in [0, 1]: factors
            ~ U(1-s, 1+s).
        hue: hue shift ~ U(-hue, hue), in turns (at most 0.5).
        random_jitter_order: apply the four jitter operations in a random order
            per image (SimCLR, torchvision's `ColorJitter`); else brightness,
            contrast, saturation, hue.
        grayscale_probability: of grayscale (after jitter).
        blur_probability: of Gaussian blur.
        blur_sigma: range of the blur's sigma, in pixels of the output.
        solarize_probability: of solarisation (x -> 1 - x where x >= 0.5).

    Example:

    >>> augment = SimCLRAugment(image_size=8, blur_probability=1.0)
    >>> views, params = augment(np.ones((8, 8, 3), "float32") / 2, seed=[0, 0])
    >>> tuple(views.shape), float(params["blur"]), params["jitter_order"].shape
    ((8, 8, 3), 1.0, TensorShape([4]))
    >>> digits, _ = augment(np.zeros((5, 12, 12, 1), "uint8"), seed=3)  # grayscale
    >>> tuple(digits.shape)
    (5, 8, 8, 1)
    """

    image_size: int = 32
    crop_scale: tuple[float, float] = (0.08, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip_probability: float = 0.5
    jitter_probability: float = 0.8
    brightness: float = 0.4
    contrast: float = 0.4
    saturation: float = 0.4
    hue: float = 0.1
    random_jitter_order: bool = True
    grayscale_probability: float = 0.2
    blur_probability: float = 0.0
    blur_sigma: tuple[float, float] = (0.1, 2.0)
    solarize_probability: float = 0.0

    def __post_init__(self):
        if not (isinstance(self.image_size, (int, np.integer)) and self.image_size > 0):
            raise ValueError(f"`image_size` must be a positive int; got {self.image_size!r}.")
        for name, low_bound, high_bound in (
            ("crop_scale", 0, 1),
            ("crop_ratio", 0, math.inf),
            ("blur_sigma", 0, math.inf),
        ):
            low, high = getattr(self, name)
            if not low_bound < low <= high <= high_bound:
                raise ValueError(
                    f"`{name}` must be (low, high) with {low_bound} < low <= high <= "
                    f"{high_bound}; got {getattr(self, name)!r}."
                )
        for name, high in (
            ("flip_probability", 1),
            ("jitter_probability", 1),
            ("brightness", 1),
            ("contrast", 1),
            ("saturation", 1),
            ("hue", 0.5),
            ("grayscale_probability", 1),
            ("blur_probability", 1),
            ("solarize_probability", 1),
        ):
            if not 0 <= getattr(self, name) <= high:
                raise ValueError(f"`{name}` must lie in [0, {high}]; got {getattr(self, name)!r}.")

    @classmethod
    def preset(cls, name: str) -> SimCLRAugment:
        """A named setting of `PRESETS`: `simclr_cifar10`, `simsiam_cifar10`,
        `simclr_imagenet`, `mocov2_imagenet`."""
        if name not in PRESETS:
            raise ValueError(
                f"Unknown augmentation preset {name!r}; expected one of {list(PRESETS)}."
            )
        return PRESETS[name]

    @property
    def blur_kernel_size(self) -> int:
        """10 % of the image side, odd (SimCLR's kernel)."""
        return 2 * max(1, int(0.1 * self.image_size) // 2) + 1

    def __call__(
        self, images, seed=None, image_sizes=None
    ) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        images = tf.convert_to_tensor(images)
        shape = images.shape
        if shape.rank not in (3, 4) or shape[-1] not in (1, 3):
            hint = ""
            if shape.rank == 3:
                hint = " (a batch of grayscale images needs a channel axis: `images[..., None]`)"
            elif shape.rank == 4 and shape[-1] == 4:
                hint = " (RGBA? drop the alpha channel: `images[..., :3]`)"
            raise ValueError(
                "`images` must be [batch, height, width, channels] or [height, width, "
                f"channels] with 3 or 1 channels; got shape {shape}{hint}."
            )
        unbatched = shape.rank == 3
        if unbatched:
            images = images[None]
            image_sizes = None if image_sizes is None else tf.convert_to_tensor(image_sizes)[None]
        if images.dtype.is_floating:
            images = _checked_range(tf.cast(images, tf.float32))
        elif images.dtype != tf.uint8:
            raise TypeError(f"`images` must be uint8 or float; got {images.dtype.name}.")
        if images.shape[1] is None or images.shape[2] is None:
            raise ValueError(
                "`images` must have a static height and width (pad images of different "
                f"shapes to one and give `image_sizes`); got shape {images.shape}."
            )
        batch = images.shape[0] or tf.shape(images)[0]  # static where known (TPUs)
        if image_sizes is None:
            sizes = tf.zeros([batch, 2]) + [[images.shape[1], images.shape[2]]]
        else:
            sizes = self._checked_sizes(image_sizes, images.shape)
        params = self._parameters(batch, sizes, stateless_seed(seed))
        blur_kernel_size = self.blur_kernel_size if self.blur_probability > 0 else 0
        gray = images.shape[-1] == 1
        if gray:  # the colour ops on three equal channels, which they keep equal
            images = tf.image.grayscale_to_rgb(images)
        views = _views(
            images, sizes, params, self.image_size, self.random_jitter_order, blur_kernel_size
        )
        if gray:
            views = views[..., :1]
        if unbatched:
            return views[0], {name: value[0] for name, value in params.items()}
        return views, params

    def _parameters(self, batch, image_sizes, seed) -> dict[str, tf.Tensor]:
        seeds = tf.random.experimental.stateless_split(seed, 12)

        def uniform(index, low=0.0, high=1.0, shape=None):
            return tf.random.stateless_uniform(
                shape if shape is not None else [batch], seeds[index], low, high
            )

        def chosen(index, probability):
            return tf.cast(uniform(index) < probability, tf.float32)

        jitter = chosen(2, self.jitter_probability)

        def factor(index, strength):
            return 1.0 + jitter * uniform(index, -strength, strength)

        order = tf.zeros([batch, 1], tf.int32) + tf.range(len(JITTER_OPS))
        if self.random_jitter_order:
            # The ranks of 4 uniforms: a uniformly random permutation.
            shuffled = tf.argsort(uniform(11, shape=[batch, len(JITTER_OPS)]), axis=1)
            order = tf.where(jitter[:, None] > 0, shuffled, order)
        blur = chosen(8, self.blur_probability)
        return {
            "crop_box": self._crop_boxes(batch, seeds[0], image_sizes[:, 0], image_sizes[:, 1]),
            "flip": chosen(1, self.flip_probability),
            "jitter": jitter,
            "brightness": factor(3, self.brightness),
            "contrast": factor(4, self.contrast),
            "saturation": factor(5, self.saturation),
            "hue": jitter * uniform(6, -self.hue, self.hue),
            "jitter_order": tf.cast(order, tf.float32),
            "grayscale": chosen(7, self.grayscale_probability),
            "blur": blur,
            "blur_sigma": blur * uniform(9, *self.blur_sigma),
            "solarize": chosen(10, self.solarize_probability),
        }

    @staticmethod
    def _checked_sizes(image_sizes, shape):
        sizes = tf.convert_to_tensor(image_sizes)
        if sizes.shape.rank != 2 or sizes.shape[1] != 2:
            raise ValueError(f"`image_sizes` must be [batch, 2]; got shape {sizes.shape}.")
        sizes = tf.cast(sizes, tf.float32)
        message = f"`image_sizes` must lie in [1, {shape[1]}] x [1, {shape[2]}] (the images)"
        with tf.control_dependencies(
            [
                tf.debugging.assert_greater_equal(sizes, 1.0, message=message),
                tf.debugging.assert_less_equal(
                    sizes, tf.constant([shape[1], shape[2]], tf.float32), message=message
                ),
            ]
        ):
            return tf.identity(sizes)

    def _crop_boxes(self, batch, seed, heights, widths):
        """`[B, 4]` boxes `y1, x1, y2, x2` in [0, 1] of images `heights x widths`
        pixels (`[B]` each): the first of `CROP_ATTEMPTS` draws of area and aspect
        ratio (in pixels) that fits in the image, else a central crop of the
        image, or of its largest part within `crop_ratio` (as torchvision)."""
        seeds = tf.random.experimental.stateless_split(seed, 4)
        shape = [batch, CROP_ATTEMPTS]
        area = tf.random.stateless_uniform(shape, seeds[0], *self.crop_scale)
        log_ratio = tf.random.stateless_uniform(
            shape, seeds[1], math.log(self.crop_ratio[0]), math.log(self.crop_ratio[1])
        )
        # A box w x h (fractions) of a W x H image spans w W / (h H) = ratio and
        # w h = area.
        ratio = tf.exp(log_ratio) * (heights / widths)[:, None]
        width, height = tf.sqrt(area * ratio), tf.sqrt(area / ratio)
        fits = (width <= 1.0) & (height <= 1.0)
        first = tf.argmax(tf.cast(fits, tf.int32), axis=1)
        any_fits = tf.reduce_any(fits, axis=1)
        aspect = widths / heights
        fallback_width = tf.minimum(1.0, self.crop_ratio[1] / aspect)
        fallback_height = tf.minimum(1.0, aspect / self.crop_ratio[0])
        width = tf.where(any_fits, tf.gather(width, first, batch_dims=1), fallback_width)
        height = tf.where(any_fits, tf.gather(height, first, batch_dims=1), fallback_height)
        where = tf.where(any_fits[:, None], tf.random.stateless_uniform([batch, 2], seeds[2]), 0.5)
        top, left = where[:, 0] * (1.0 - height), where[:, 1] * (1.0 - width)
        return tf.stack([top, left, top + height, left + width], axis=1)


PRESETS = {
    # SimCLR's CIFAR10 views: jitter strength s = 0.5, no blur.
    "simclr_cifar10": SimCLRAugment(image_size=32),
    # SimSiam's CIFAR10 views: SimCLR's with crops of at least 20 % of the image.
    "simsiam_cifar10": SimCLRAugment(image_size=32, crop_scale=(0.2, 1.0)),
    # SimCLR's ImageNet views: s = 1.0, blur with probability 0.5.
    "simclr_imagenet": SimCLRAugment(
        image_size=224, brightness=0.8, contrast=0.8, saturation=0.8, hue=0.2, blur_probability=0.5
    ),
    # MoCo v2's ImageNet views: crops of at least 20 %, s = 0.5, blur with probability 0.5.
    "mocov2_imagenet": SimCLRAugment(image_size=224, crop_scale=(0.2, 1.0), blur_probability=0.5),
}


def augment_pairs(
    dataset: tf.data.Dataset,
    augment: SimCLRAugment,
    seed: int = 0,
    start: int = 0,
    stream: int = 0,
):
    """Two views of each batch of `{"image", ...}`, of images, or of `(images, labels)`
    (as tfds' `as_supervised=True` gives, read as `{"image", "label"}`): batch i is
    augmented with seeds (seed, start + i) folded with 2 stream and 2 stream + 1. An
    `"image_size"` entry (`[B, 2]`) gives each image's height and width in a
    padded batch (see `SimCLRAugment`). Yields `{view1, view2, params1, params2}`
    and the batch's other keys (e.g. `label`).

    Raises:
        TypeError: for a dataset of any other structure.

    Example:

    >>> images = tf.data.Dataset.from_tensor_slices(np.zeros((4, 12, 12, 3), "uint8"))
    >>> pairs = augment_pairs(images.batch(2), SimCLRAugment(image_size=8), seed=0)
    >>> batch = next(iter(pairs))
    >>> tuple(batch["view1"].shape), sorted(batch)
    ((2, 8, 8, 3), ['params1', 'params2', 'view1', 'view2'])
    """

    spec = dataset.element_spec
    if not (
        isinstance(spec, tf.TensorSpec)
        or (isinstance(spec, dict) and "image" in spec)
        or (isinstance(spec, tuple) and len(spec) == 2)
    ):
        raise TypeError(
            "`dataset` must yield images, `(images, labels)` or dicts with an 'image' key; "
            f"got {spec}."
        )

    def pair(index, batch):
        if isinstance(batch, tuple):
            batch = dict(zip(("image", "label"), batch, strict=True))
        batch = dict(batch) if isinstance(batch, dict) else {"image": batch}
        images = batch.pop("image")
        sizes = batch.pop("image_size", None)
        base = tf.stack([tf.constant(seed, tf.int64), index])
        first = tf.random.experimental.stateless_fold_in(base, 2 * stream)
        second = tf.random.experimental.stateless_fold_in(base, 2 * stream + 1)
        view1, params1 = augment(images, first, sizes)
        view2, params2 = augment(images, second, sizes)
        return {**batch, "view1": view1, "view2": view2, "params1": params1, "params2": params2}

    # Batches augmented at once, a fixed few: AUTOTUNE without autotuning
    # (`without_autotune`) is one per core, on a 96-core TPU host ~96 batches of
    # ImageNet canvases and views in flight (tens of GB).
    parallel_batches = 4
    return dataset.enumerate(start).map(pair, num_parallel_calls=parallel_batches)


__all__ = [
    "JITTER_OPS",
    "PARAMETERS",
    "PRESETS",
    "SimCLRAugment",
    "augment_pairs",
    "color_jitter",
    "gaussian_blur",
    "grayscale",
    "resized_crop",
    "stateless_seed",
]
