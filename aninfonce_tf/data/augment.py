"""SimCLR augmentations that also return what they did, drawn statelessly from a seed.
Details: docs/api.md#simclraugments-views"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.image_ops import (
    checked_unit_range,
    jpeg_crops,
    jpeg_sizes,
    pixel_windows,
    views_from_crops,
    views_from_parameters,
)
from aninfonce_tf.data.view_parameters import PARAMETERS, draw_parameters, stateless_seed
from aninfonce_tf.errors import check_flag, is_integer, is_number


@dataclasses.dataclass(frozen=True)
class SimCLRAugment:
    """The SimCLR view, returned with the parameters drawn: `augment(images, seed=None,
    image_sizes=None) -> (views, params)`. Details: docs/api.md#simclraugments-views

    Args:
        image_size: side of the square output views.
        crop_scale: range of the crop's area as a fraction of the image.
        crop_ratio: range of the crop's aspect ratio (width / height in pixels).
        flip_probability: of a horizontal flip.
        jitter_probability: of colour jitter.
        brightness, contrast, saturation: jitter strengths s: factors ~ U(1-s, 1+s).
        hue: hue shift ~ U(-hue, hue), in turns (at most 0.5).
        random_jitter_order: the jitter operations in a random order per image.
        grayscale_probability: of grayscale (after jitter).
        blur_probability: of Gaussian blur.
        blur_sigma: range of the blur's sigma, in pixels of the output.
        solarize_probability: of solarisation (x -> 1 - x where x >= 0.5).
        value_range: the range of float images, (0, 1) or (0, 255); uint8 is [0, 255].
        jit_compile: the pixel work as one XLA computation (False: no XLA:CPU).

    Example:

    >>> augment = SimCLRAugment(image_size=8, blur_probability=1.0)
    >>> views, params = augment(np.ones((8, 8, 3), "float32") / 2, seed=[0, 0])
    >>> tuple(views.shape), float(params["blur"]), params["jitter_order"].shape
    ((8, 8, 3), 1.0, TensorShape([4]))
    >>> digits, _ = augment(np.zeros((5, 12, 12, 1), "uint8"), seed=3)  # grayscale
    >>> tuple(digits.shape)
    (5, 8, 8, 1)
    >>> files = tf.stack([tf.io.encode_jpeg(np.zeros((9, 12, 3), "uint8"))] * 2)  # JPEG
    >>> views, params = augment(files, seed=3)
    >>> tuple(views.shape), bool(tf.reduce_all(params["crop_box"] * [9, 12, 9, 12] % 1 == 0))
    ((2, 8, 8, 3), True)
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
    value_range: tuple[float, float] = (0.0, 1.0)
    jit_compile: bool = True

    def __post_init__(self):
        pairs = ("value_range", "crop_scale", "crop_ratio", "blur_sigma")
        for name in pairs:
            value = getattr(self, name)
            if not (
                isinstance(value, (tuple, list, np.ndarray))
                and len(value) == 2
                and all(map(is_number, value))
            ):
                raise ValueError(f"`{name}` must be two numbers (low, high); got {value!r}.")
        check_flag("random_jitter_order", self.random_jitter_order)
        check_flag("jit_compile", self.jit_compile)
        if tuple(self.value_range) not in VALUE_RANGES:
            raise ValueError(
                f"`value_range` must be (0, 1) or (0, 255), the range of float images; got "
                f"{self.value_range!r}."
            )
        if not (is_integer(self.image_size) and self.image_size > 0):
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
            if not (is_number(getattr(self, name)) and 0 <= getattr(self, name) <= high):
                raise ValueError(f"`{name}` must lie in [0, {high}]; got {getattr(self, name)!r}.")

    @classmethod
    def preset(cls, name: str) -> SimCLRAugment:
        """The named setting of `AUGMENTATION_PRESETS` (e.g. `simclr_cifar10`)."""
        if name not in AUGMENTATION_PRESETS:
            raise ValueError(
                f"Unknown augmentation preset {name!r}; expected one of {list(AUGMENTATION_PRESETS)}."
            )
        return AUGMENTATION_PRESETS[name]

    @property
    def blur_kernel_size(self) -> int:
        """10 % of the image side, odd (SimCLR's kernel)."""
        return 2 * max(1, int(0.1 * self.image_size) // 2) + 1

    def __call__(
        self, images, seed=None, image_sizes=None
    ) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        images = tf.convert_to_tensor(images)
        if images.dtype == tf.string:
            return self._jpeg_views(images, seed, image_sizes)
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
            images = tf.cast(images, tf.float32) / float(self.value_range[1])
            images = checked_unit_range(images, self.value_range)
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
        params = draw_parameters(self, batch, sizes, stateless_seed(seed))
        blur_kernel_size = self.blur_kernel_size if self.blur_probability > 0 else 0
        gray = images.shape[-1] == 1
        if gray:  # the colour ops on three equal channels, which they keep equal
            images = tf.image.grayscale_to_rgb(images)
        views = views_from_parameters(
            images,
            sizes,
            params,
            self.image_size,
            self.random_jitter_order,
            blur_kernel_size,
            self.jit_compile,
        )
        if gray:
            views = views[..., :1]
        if unbatched:
            return views[0], {name: value[0] for name, value in params.items()}
        return views, params

    def _jpeg_views(self, encoded, seed, image_sizes):
        """The views of JPEG files, each crop window snapped to pixels and decoded alone."""
        if image_sizes is not None:
            raise ValueError(
                "`image_sizes` is for images padded to one shape; JPEG files give their own "
                "sizes (their headers): leave `image_sizes` out."
            )
        if encoded.shape.rank not in (0, 1):
            raise ValueError(
                "JPEG `images` must be one file (a scalar string) or a batch `[B]` of them; "
                f"got shape {encoded.shape}."
            )
        unbatched = encoded.shape.rank == 0
        if unbatched:
            encoded = encoded[None]
        batch = encoded.shape[0] or tf.shape(encoded)[0]  # static where known (TPUs)
        sizes = jpeg_sizes(encoded)
        params = draw_parameters(self, batch, sizes, stateless_seed(seed))
        params["crop_box"], windows = pixel_windows(params["crop_box"], sizes)
        crops = jpeg_crops(encoded, windows, self.image_size)
        blur_kernel_size = self.blur_kernel_size if self.blur_probability > 0 else 0
        views = views_from_crops(
            crops, params, self.random_jitter_order, blur_kernel_size, self.jit_compile
        )
        if unbatched:
            return views[0], {name: value[0] for name, value in params.items()}
        return views, params

    def parameters(self, batch: int, seed) -> dict[str, tf.Tensor]:
        """What `__call__` draws with `seed` for `batch` square images, without the images."""
        return draw_parameters(self, batch, tf.ones([batch, 2]), stateless_seed(seed))

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


# The ranges of float images `SimCLRAugment` reads.
VALUE_RANGES = ((0.0, 1.0), (0.0, 255.0))
# The dtypes `augment_pairs` gives the views in.
VIEW_DTYPES = ("float32", "uint8")


def quantized(views: tf.Tensor) -> tf.Tensor:
    """Views in [0, 1] as uint8 `round(255 x views)` (read back to within 1/510).

    Example:

    >>> quantized(tf.constant([0.0, 0.5, 1.0])).numpy().tolist()
    [0, 128, 255]
    """
    return tf.cast(tf.clip_by_value(tf.round(views * 255.0), 0.0, 255.0), tf.uint8)


def check_first_batch(dataset: tf.data.Dataset, augment: SimCLRAugment) -> None:
    """Raises ValueError when a float dataset's first batch lies outside `augment.value_range`."""
    spec = dataset.element_spec
    image_spec = (
        spec.get("image")
        if isinstance(spec, dict)
        else spec[0]
        if isinstance(spec, tuple)
        else spec
    )
    if not (tf.executing_eagerly() and isinstance(image_spec, tf.TensorSpec)):
        return
    if not image_spec.dtype.is_floating:
        return
    first = next(iter(dataset.take(1)), None)
    if first is None:
        return
    images = (
        first["image"]
        if isinstance(first, dict)
        else first[0]
        if isinstance(first, tuple)
        else first
    )
    scaled = tf.cast(images, tf.float32) / float(augment.value_range[1])
    checked_unit_range(scaled, augment.value_range)


AUGMENTATION_PRESETS = {
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
    view_dtype: str = "float32",
):
    """A dataset of `{view1, view2, params1, params2}` and the batch's other keys: two
    views of each batch of `{"image", ...}`, images, or `(images, labels)`.

    Args:
        dataset: batches (images may be JPEG strings; `"image_size"`: sizes on a canvas).
        augment: the views' `SimCLRAugment`.
        seed: the pipeline's seed.
        start: the index of the first batch (a resumed run's step).
        stream: which of independent augmentation streams (one per worker).
        view_dtype: "float32", or "uint8" (`quantized`, divided by 255 on the device).

    Example:

    >>> images = tf.data.Dataset.from_tensor_slices(np.zeros((4, 12, 12, 3), "uint8"))
    >>> pairs = augment_pairs(images.batch(2), SimCLRAugment(image_size=8), seed=0)
    >>> batch = next(iter(pairs))
    >>> tuple(batch["view1"].shape), sorted(batch)
    ((2, 8, 8, 3), ['params1', 'params2', 'view1', 'view2'])
    """

    if view_dtype not in VIEW_DTYPES:
        raise ValueError(f"`view_dtype` must be one of {VIEW_DTYPES}; got {view_dtype!r}.")
    spec = dataset.element_spec
    check_first_batch(dataset, augment)
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
        if view_dtype == "uint8":
            view1, view2 = quantized(view1), quantized(view2)
        return {**batch, "view1": view1, "view2": view2, "params1": params1, "params2": params2}

    # A fixed few batches in flight: AUTOTUNE under `without_autotune` is one per core.
    parallel_batches = 4
    return dataset.enumerate(start).map(pair, num_parallel_calls=parallel_batches)


__all__ = [
    "AUGMENTATION_PRESETS",
    "VALUE_RANGES",
    "VIEW_DTYPES",
    "check_first_batch",
    "PARAMETERS",
    "SimCLRAugment",
    "augment_pairs",
    "quantized",
    "stateless_seed",
]
