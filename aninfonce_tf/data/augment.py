"""SimCLR augmentations that also return what they did: for each image the crop box,
the flip, the colour jitter factors and their order, grayscale, blur sigma and
solarisation, so that a probe can later read these parameters back from the learned
features.

Every draw is stateless from an explicit seed (`view_parameters`: the same seed gives
the same views, also under a parallel `Dataset.map`). The ops (`image_ops`) are this
package's own rather than Keras' preprocessing layers: those draw from a stateful
`SeedGenerator`, and several of the parameters (a per-image crop box, per-image blur
sigma, the jitter factors and their order) have no Keras layer that returns them. All
pixel work after the draws runs as one XLA computation
(`image_ops.views_from_parameters`).

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

from aninfonce_tf.data.image_ops import (
    checked_unit_range,
    jpeg_crops,
    jpeg_sizes,
    pixel_windows,
    views_from_crops,
    views_from_parameters,
)
from aninfonce_tf.data.view_parameters import PARAMETERS, draw_parameters, stateless_seed


@dataclasses.dataclass(frozen=True)
class SimCLRAugment:
    """The SimCLR view: random resized crop, flip, colour jitter, grayscale, blur,
    solarisation, each per image with its own probability.

    Call it on `[B, H, W, C]` or `[H, W, C]` images with C = 3 (colour) or 1
    (grayscale; the views keep one channel, and saturation, hue and grayscale
    change nothing, though their parameters are drawn and returned), uint8 in
    [0, 255] or floats in [0, 1] (floats further than `image_ops.FLOAT_SLACK` outside are
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

    JPEG files may be given instead of pixels: `images` a string (one file) or `[B]`
    strings, without `image_sizes`. Then each view's crop box is drawn from the size
    in the file's header, snapped to whole pixels (the returned `crop_box` is the
    window decoded), and only that window is decoded (`tf.image.decode_and_crop_jpeg`,
    as SimCLR's input pipeline), at the image's full resolution, and resized to
    `image_size`; the views are colour (grayscale files give 3 equal channels). The
    same seed draws the same parameters as for the decoded images (the crop box
    within half a pixel of its unsnapped draw). Which to give: JPEG files where the
    source holds them (tfds' ImageNet read with `decode=False`), at a fraction of the
    decoding's cost; pixels for everything else (arrays, PNGs, tfds' decoded
    datasets), images of different shapes padded to one with their `image_sizes`
    (`datasets.on_canvas`).

    The colour jitter follows torchvision's `ColorJitter` formulas (see
    `image_ops.color_jitter`: brightness, contrast and saturation blend with black,
    the image's mean luma and each pixel's luma; hue shifts the HSV hue), in a random
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
        value_range: the range of float images, (0, 1) or (0, 255) (as
            `keras.utils.image_dataset_from_directory` gives them); uint8 images are
            always read as [0, 255]. The views are in [0, 1] either way.
        jit_compile: the pixel work as one XLA computation on the host
            (`image_ops.views_from_parameters`); False where the host has no
            XLA:CPU (TPU VMs), for the same views.

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
        if tuple(self.value_range) not in VALUE_RANGES:
            raise ValueError(
                f"`value_range` must be (0, 1) or (0, 255), the range of float images; got "
                f"{self.value_range!r}."
            )
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
        """A named setting of `AUGMENTATION_PRESETS`: `simclr_cifar10`, `simsiam_cifar10`,
        `simclr_imagenet`, `mocov2_imagenet`."""
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
        """The views of JPEG files: each crop window decoded alone (`image_ops.jpeg_crops`),
        the box drawn from the header's size and snapped to whole pixels."""
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
        """What `__call__` draws with `seed` for `batch` square images, without the
        images (e.g. to follow latents into each view's frame)."""
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
    """Views in [0, 1] as uint8 `round(255 x views)`, which `pairs.unit_views` reads
    back to within 1/510.

    Example:

    >>> quantized(tf.constant([0.0, 0.5, 1.0])).numpy().tolist()
    [0, 128, 255]
    """
    return tf.cast(tf.clip_by_value(tf.round(views * 255.0), 0.0, 255.0), tf.uint8)


def check_first_batch(dataset: tf.data.Dataset, augment: SimCLRAugment) -> None:
    """Raises ValueError, before any training, when the first batch of a dataset of
    float images lies outside `augment.value_range` (`image_ops.checked_unit_range`):
    the commonest mistake, [0, 255] floats read as [0, 1]. Eagerly only; a dataset of
    uint8 images, or one built inside a graph, is not read."""
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
    """Two views of each batch of `{"image", ...}`, of images, or of `(images, labels)`
    (as tfds' `as_supervised=True` gives, read as `{"image", "label"}`): batch i is
    augmented with seeds (seed, start + i) folded with 2 stream and 2 stream + 1. An
    `"image_size"` entry (`[B, 2]`) gives each image's height and width in a
    padded batch (see `SimCLRAugment`); the images may be JPEG files (`[B]` strings:
    only each view's crop window is decoded). Yields `{view1, view2, params1,
    params2}` and the batch's other keys (e.g. `label`).

    `view_dtype` "uint8" gives the views as `round(255 x view)`, a quarter of
    float32's bytes to send to the accelerator; `ContrastiveModel` divides uint8 views
    by 255 on the device, so that it trains on the views to within 1/510 (their
    rounding to 8 bits, the source images' own precision).

    Raises:
        TypeError: for a dataset of any other structure.
        ValueError: for a `view_dtype` other than "float32" and "uint8".

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

    # Batches augmented at once, a fixed few: AUTOTUNE without autotuning
    # (`without_autotune`) is one per core, on a 96-core TPU host ~96 batches of
    # ImageNet canvases and views in flight (tens of GB).
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
