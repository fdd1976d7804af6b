"""SimCLR augmentations that also return what they did: for each image the crop box,
the flip, the colour jitter factors, grayscale, blur sigma and solarisation, so that a
probe can later read these parameters back from the learned features.

Every draw is stateless from an explicit seed (the same seed gives the same views,
also under a parallel `Dataset.map`). Each op is written here rather than taken from
Keras' preprocessing layers: those draw from a stateful `SeedGenerator`, and three
of the parameters (a per-image crop box, per-image blur sigma, jitter factors in a
fixed order) have no Keras layer that returns them.

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

import tensorflow as tf

# Attempts per image at a crop box within the image before falling back to the
# whole image (torchvision's RandomResizedCrop tries 10 times too).
CROP_ATTEMPTS = 10
PARAMETERS = (
    "crop_box",
    "flip",
    "jitter",
    "brightness",
    "contrast",
    "saturation",
    "hue",
    "grayscale",
    "blur",
    "blur_sigma",
    "solarize",
)


def grayscale(images):
    """ITU-R 601 luma, kept as 3 equal channels."""
    luma = tf.reduce_sum(images * tf.constant([0.299, 0.587, 0.114]), axis=-1, keepdims=True)
    return tf.broadcast_to(luma, tf.shape(images))


def color_jitter(images, brightness, contrast, saturation, hue):
    """Applies per-image factors in this order, clipping to [0, 1] after each:
    brightness `x * b`; contrast `(x - mean luma) * c + mean luma`; saturation
    `luma + s * (x - luma)`; hue: `h` added to the HSV hue (mod 1).

    Args:
        images: `[B, H, W, 3]` floats in [0, 1].
        brightness, contrast, saturation, hue: `[B]` factors; 1, 1, 1, 0 leave
            an image as it is.
    """

    def per_image(factor):
        return factor[:, None, None, None]

    images = tf.clip_by_value(images * per_image(brightness), 0.0, 1.0)
    mean = tf.reduce_mean(grayscale(images), axis=[1, 2, 3], keepdims=True)
    images = tf.clip_by_value((images - mean) * per_image(contrast) + mean, 0.0, 1.0)
    luma = grayscale(images)
    images = tf.clip_by_value(luma + per_image(saturation) * (images - luma), 0.0, 1.0)
    hsv = tf.image.rgb_to_hsv(images)
    shifted = tf.math.floormod(hsv[..., :1] + per_image(hue), 1.0)
    return tf.clip_by_value(tf.image.hsv_to_rgb(tf.concat([shifted, hsv[..., 1:]], -1)), 0, 1)


def gaussian_blur(images, sigma, kernel_size: int):
    """Per-image Gaussian blur (separable, reflect padding); `sigma`: `[B]`."""
    batch, height, width = tf.shape(images)[0], tf.shape(images)[1], tf.shape(images)[2]
    radius = kernel_size // 2
    offsets = tf.range(-radius, radius + 1, dtype=tf.float32)
    kernels = tf.exp(-0.5 * tf.square(offsets[None, :] / sigma[:, None]))
    kernels /= tf.reduce_sum(kernels, axis=1, keepdims=True)  # [B, K]
    # Fold the batch into channels: one depthwise convolution blurs every image
    # with its own kernel.
    channels = images.shape[-1]
    folded = tf.reshape(tf.transpose(images, [1, 2, 0, 3]), [1, height, width, -1])
    depthwise = tf.repeat(kernels, channels, axis=0)  # [B * C, K]
    pad = [[0, 0], [radius, radius], [radius, radius], [0, 0]]
    folded = tf.pad(folded, pad, mode="REFLECT")
    vertical = tf.transpose(depthwise)[:, None, :, None]
    horizontal = tf.transpose(depthwise)[None, :, :, None]
    folded = tf.nn.depthwise_conv2d(folded, vertical, [1, 1, 1, 1], "VALID")
    folded = tf.nn.depthwise_conv2d(folded, horizontal, [1, 1, 1, 1], "VALID")
    unfolded = tf.reshape(folded, [height, width, batch, channels])
    return tf.transpose(unfolded, [2, 0, 1, 3])


@tf.function(jit_compile=True, reduce_retracing=True)
def _pixel_ops(views, params, blur_kernel_size: int):
    """Everything after the crop, per image: flip, colour jitter, grayscale, blur
    (`blur_kernel_size` 0: none) and solarisation, fused by XLA into a few passes
    over the pixels (crop_and_resize has no XLA kernel)."""
    flip, brightness, contrast, saturation, hue, gray, blur, sigma, solarize = params

    def where(flags, changed, unchanged):
        return tf.where(flags[:, None, None, None] > 0, changed, unchanged)

    views = where(flip, views[:, :, ::-1], views)
    views = color_jitter(views, brightness, contrast, saturation, hue)
    views = where(gray, grayscale(views), views)
    if blur_kernel_size:
        blurred = gaussian_blur(views, tf.maximum(sigma, 1e-3), blur_kernel_size)
        views = where(blur, blurred, views)
    return where(solarize, tf.where(views >= 0.5, 1.0 - views, views), views)


@dataclasses.dataclass(frozen=True)
class SimCLRAugment:
    """The SimCLR view: random resized crop, flip, colour jitter, grayscale, blur,
    solarisation, each per image with its own probability.

    Call it on `[B, H, W, 3]` or `[H, W, 3]` images (uint8 in [0, 255] or floats
    in [0, 1]) with a stateless seed of shape `[2]`; it returns float32 views of
    `image_size` in [0, 1] and a dict of float32 parameters, `[B]` each (the crop
    box `[B, 4]`: `y1, x1, y2, x2` as fractions of the image).

    Args:
        image_size: side of the square output views.
        crop_scale: range of the crop's area as a fraction of the image.
        crop_ratio: range of the crop's aspect ratio (width / height).
        flip_probability: of a horizontal flip.
        jitter_probability: of colour jitter.
        brightness, contrast, saturation: jitter strengths s: factors ~ U(1-s, 1+s).
        hue: hue shift ~ U(-hue, hue), in turns.
        grayscale_probability: of grayscale (after jitter).
        blur_probability: of Gaussian blur.
        blur_sigma: range of the blur's sigma, in pixels of the output.
        solarize_probability: of solarisation (x -> 1 - x where x >= 0.5).

    Example:

    >>> augment = SimCLRAugment(image_size=8, blur_probability=1.0)
    >>> views, params = augment(np.ones((8, 8, 3), "float32") / 2, seed=[0, 0])
    >>> tuple(views.shape), float(params["blur"])
    ((8, 8, 3), 1.0)
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
    grayscale_probability: float = 0.2
    blur_probability: float = 0.0
    blur_sigma: tuple[float, float] = (0.1, 2.0)
    solarize_probability: float = 0.0

    @classmethod
    def preset(cls, name: str) -> SimCLRAugment:
        """`simclr_cifar10` (32x32, no blur: SimCLR's CIFAR setting) or
        `simclr_imagenet` (224x224, blur with probability 0.5)."""
        if name not in PRESETS:
            raise ValueError(
                f"Unknown augmentation preset {name!r}; expected one of {list(PRESETS)}."
            )
        return PRESETS[name]

    @property
    def blur_kernel_size(self) -> int:
        """10 % of the image side, odd (SimCLR's kernel)."""
        return 2 * max(1, int(0.1 * self.image_size) // 2) + 1

    def __call__(self, images, seed) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        images = tf.convert_to_tensor(images)
        unbatched = images.shape.rank == 3
        if unbatched:
            images = images[None]
        if images.shape.rank != 4 or images.shape[-1] != 3:
            raise ValueError(
                f"`images` must be [batch, height, width, 3] or [height, width, 3]; got "
                f"shape {images.shape}."
            )
        if images.dtype == tf.uint8:
            images = tf.cast(images, tf.float32) / 255.0
        elif images.dtype.is_floating:
            images = tf.cast(images, tf.float32)
        else:
            raise TypeError(f"`images` must be uint8 or float; got {images.dtype.name}.")
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 12)
        batch = images.shape[0] or tf.shape(images)[0]  # static where known (TPUs)

        def uniform(index, low=0.0, high=1.0, shape=None):
            return tf.random.stateless_uniform(
                shape if shape is not None else [batch], seeds[index], low, high
            )

        def chosen(index, probability):
            return tf.cast(uniform(index) < probability, tf.float32)

        boxes = self._crop_boxes(batch, seeds[0])
        views = tf.image.crop_and_resize(
            images, boxes, tf.range(batch), [self.image_size, self.image_size]
        )
        flip = chosen(1, self.flip_probability)
        jitter = chosen(2, self.jitter_probability)

        def factor(index, strength):
            return 1.0 + jitter * uniform(index, -strength, strength)

        brightness = factor(3, self.brightness)
        contrast = factor(4, self.contrast)
        saturation = factor(5, self.saturation)
        hue = jitter * uniform(6, -self.hue, self.hue)
        gray = chosen(7, self.grayscale_probability)
        blur = chosen(8, self.blur_probability)
        sigma = blur * uniform(9, *self.blur_sigma)
        solarize = chosen(10, self.solarize_probability)
        views = _pixel_ops(
            views,
            (flip, brightness, contrast, saturation, hue, gray, blur, sigma, solarize),
            self.blur_kernel_size if self.blur_probability > 0 else 0,
        )
        params = {
            "crop_box": boxes,
            "flip": flip,
            "jitter": jitter,
            "brightness": brightness,
            "contrast": contrast,
            "saturation": saturation,
            "hue": hue,
            "grayscale": gray,
            "blur": blur,
            "blur_sigma": sigma,
            "solarize": solarize,
        }
        if unbatched:
            return views[0], {name: value[0] for name, value in params.items()}
        return views, params

    def _crop_boxes(self, batch, seed):
        """`[B, 4]` boxes `y1, x1, y2, x2` in [0, 1]: of the first of `CROP_ATTEMPTS`
        draws that fits in the image, else the whole image (as torchvision does
        for square images)."""
        seeds = tf.random.experimental.stateless_split(seed, 4)
        shape = [batch, CROP_ATTEMPTS]
        area = tf.random.stateless_uniform(shape, seeds[0], *self.crop_scale)
        log_ratio = tf.random.stateless_uniform(
            shape, seeds[1], math.log(self.crop_ratio[0]), math.log(self.crop_ratio[1])
        )
        ratio = tf.exp(log_ratio)
        width, height = tf.sqrt(area * ratio), tf.sqrt(area / ratio)
        fits = (width <= 1.0) & (height <= 1.0)
        first = tf.argmax(tf.cast(fits, tf.int32), axis=1)
        any_fits = tf.reduce_any(fits, axis=1)
        width = tf.where(any_fits, tf.gather(width, first, batch_dims=1), 1.0)
        height = tf.where(any_fits, tf.gather(height, first, batch_dims=1), 1.0)
        top = tf.random.stateless_uniform([batch], seeds[2]) * (1.0 - height)
        left = tf.random.stateless_uniform([batch], seeds[3]) * (1.0 - width)
        return tf.stack([top, left, top + height, left + width], axis=1)


PRESETS = {
    "simclr_cifar10": SimCLRAugment(image_size=32),
    "simclr_imagenet": SimCLRAugment(image_size=224, blur_probability=0.5),
}


def augment_pairs(
    dataset: tf.data.Dataset,
    augment: SimCLRAugment,
    seed: int = 0,
    start: int = 0,
    stream: int = 0,
):
    """Two views of each batch of `{"image", ...}` (or images): batch i is augmented
    with seeds (seed, start + i) folded with 2 stream and 2 stream + 1. Yields
    `{view1, view2, params1, params2}` and the batch's other keys (e.g. `label`)."""

    def pair(index, batch):
        batch = dict(batch) if isinstance(batch, dict) else {"image": batch}
        images = batch.pop("image")
        base = tf.stack([tf.constant(seed, tf.int64), index])
        first = tf.random.experimental.stateless_fold_in(base, 2 * stream)
        second = tf.random.experimental.stateless_fold_in(base, 2 * stream + 1)
        view1, params1 = augment(images, first)
        view2, params2 = augment(images, second)
        return {**batch, "view1": view1, "view2": view2, "params1": params1, "params2": params2}

    return dataset.enumerate(start).map(pair, num_parallel_calls=tf.data.AUTOTUNE)


__all__ = [
    "PARAMETERS",
    "PRESETS",
    "SimCLRAugment",
    "augment_pairs",
    "color_jitter",
    "gaussian_blur",
    "grayscale",
]
