"""Image datasets as pair pipelines: tfds' CIFAR10 and ImageNet, and the photos that
ship with scikit-learn and scikit-image. Details: docs/api.md#data-pipelines"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.augment import SimCLRAugment, augment_pairs
from aninfonce_tf.data.epochs import FilePieces, epoch_examples, held_in_memory
from aninfonce_tf.data.options import without_autotune
from aninfonce_tf.errors import is_integer

# The tfds datasets read: CIFAR10, ImageNet and SimCLR's 10 % subset of ImageNet's
# training images (its linear evaluation's option; the validation split is ImageNet's).
IMAGENET_10PCT = "imagenet2012_subset/10pct"
TFDS_DATASETS = ("cifar10", "imagenet2012", IMAGENET_10PCT)
# The shuffle buffer of examples read from files, in batches (SimCLR's above 32 pixels).
SHUFFLE_BATCHES = 10
# The most examples `pair_batches` reads into memory from a `tf.data.Dataset`.
MAX_HELD_EXAMPLES = 200_000
# Colour photos shipped inside the wheels (no download): scikit-learn's two sample
# images and seven of scikit-image's.
PHOTO_NAMES = (
    "china",
    "flower",
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "hubble_deep_field",
    "immunohistochemistry",
    "retina",
)
# The left part of each photo gives the training patches, the rest the test ones,
# so that no test patch overlaps a training patch.
TRAIN_FRACTION = 0.7


def packaged_photos() -> list[np.ndarray]:
    """The `PHOTO_NAMES` photos as uint8 `[H, W, 3]` arrays."""
    import skimage.data
    from sklearn.datasets import load_sample_images

    china, flower = load_sample_images().images
    photos = [china, flower] + [getattr(skimage.data, name)() for name in PHOTO_NAMES[2:]]
    return [np.ascontiguousarray(photo[..., :3]) for photo in photos]


def photo_patches(
    per_photo: int = 400, size: int = 48, split: str = "train", seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """`(images [N, size, size, 3] uint8, labels [N] int64)`: random square patches of the
    packaged photos, a patch's class its photo. Details: docs/api.md#data-pipelines

    Example:

    >>> images, labels = photo_patches(per_photo=4, size=40, split="train")
    >>> images.shape, images.dtype.name, sorted(set(labels.tolist())) == list(range(9))
    ((36, 40, 40, 3), 'uint8', True)
    """
    if split not in ("train", "test"):
        raise ValueError(f"`split` must be 'train' or 'test'; got {split!r}.")
    rng = np.random.default_rng([seed, split == "test"])
    images, labels = [], []
    for label, photo in enumerate(packaged_photos()):
        scale = 256 / min(photo.shape[:2])
        shape = [round(photo.shape[0] * scale), round(photo.shape[1] * scale)]
        photo = tf.cast(tf.image.resize(photo, shape, antialias=True), tf.uint8).numpy()
        cut = int(TRAIN_FRACTION * photo.shape[1])
        region = photo[:, :cut] if split == "train" else photo[:, cut:]
        ys = rng.integers(0, region.shape[0] - size + 1, per_photo)
        xs = rng.integers(0, region.shape[1] - size + 1, per_photo)
        images += [region[y : y + size, x : x + size] for y, x in zip(ys, xs, strict=True)]
        labels += [label] * per_photo
    order = rng.permutation(len(labels))
    return np.stack(images)[order], np.asarray(labels, "int64")[order]


def tfds_images(
    name: str,
    split: str,
    data_dir: str | None = None,
    shard: tuple[int, int] | None = None,
    decode: bool = True,
) -> tf.data.Dataset:
    """`{image, label}` examples of a tfds dataset prepared in `data_dir` (else a
    ValueError); `shard`: an even part; `decode=False`: images stay encoded."""
    builder = _tfds_builder(name, data_dir)
    import tensorflow_datasets as tfds

    try:
        # Reads prepared files only (tfds' mock_data patches this in tests).
        if shard is not None:
            split = tfds.even_splits(split, n=shard[1])[shard[0]]
        decoders = None if decode else {"image": tfds.decode.SkipDecoding()}
        dataset = builder.as_dataset(split=split, shuffle_files=False, decoders=decoders)
    except AssertionError as missing:  # tfds' "could not find data in ..."
        raise _not_prepared(builder, name) from missing
    return dataset.map(_image_and_label)


def tfds_file_pieces(
    name: str, split: str, data_dir: str | None = None, shard: tuple[int, int] | None = None
) -> FilePieces:
    """A prepared tfds split's files as `FilePieces` (`shard=(index, count)`: an even part)."""
    builder = require_prepared(name, data_dir)
    import tensorflow_datasets as tfds

    if shard is not None:
        split = tfds.even_splits(split, n=shard[1])[shard[0]]
    instructions = builder.info.splits[split].file_instructions
    features = builder.info.features
    decoders = {"image": tfds.decode.SkipDecoding()}
    return FilePieces(
        paths=tuple(str(piece.filename) for piece in instructions),
        skips=tuple(piece.skip for piece in instructions),
        takes=tuple(piece.take for piece in instructions),
        parse=lambda record: _image_and_label(
            features.deserialize_example(record, decoders=decoders)
        ),
    )


def require_prepared(name: str, data_dir: str | None = None):
    """The tfds builder of `name`, else a ValueError saying how to prepare it."""
    builder = _tfds_builder(name, data_dir)
    if not builder.is_prepared():
        raise _not_prepared(builder, name)
    return builder


def _image_and_label(example: dict) -> dict:
    return {"image": example["image"], "label": example["label"]}


def _tfds_builder(name: str, data_dir: str | None):
    if name not in TFDS_DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; expected one of {TFDS_DATASETS}.")
    return quiet_tfds_builder(name, data_dir)


def quiet_tfds_builder(name: str, data_dir: str | None):
    """`tfds.builder(name, data_dir=data_dir)` whose `is_prepared()` logs no absl warning."""
    import tensorflow_datasets as tfds

    with _absl_errors_only():
        builder = tfds.builder(name, data_dir=data_dir)
    is_prepared = getattr(builder, "is_prepared", None)
    if is_prepared is None:  # tfds' mock builder
        return builder

    def quietly_prepared() -> bool:
        with _absl_errors_only():
            return is_prepared()

    builder.is_prepared = quietly_prepared
    return builder


@contextlib.contextmanager
def _absl_errors_only():
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        yield
    finally:
        absl.setLevel(level)


def _not_prepared(builder, name: str) -> ValueError:
    """The error of a tfds dataset missing from its data directory: how to prepare it."""
    root = builder.data_dir_root
    if name.startswith("imagenet2012"):
        manual = f"{root}/downloads/manual"
        how = (
            "download ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar from "
            f"image-net.org into {manual}, then run `tfds build {name} --data_dir {root} "
            f"--manual_dir {manual}`"
        )
    else:
        how = (
            f"run `tfds build {name} --data_dir {root}` (on a machine with internet, then "
            f"copy {root} here)"
        )
    return ValueError(
        f"The tfds dataset {name!r} is not prepared in {builder.data_dir!r}: {how}, and "
        f"pass --data-dir {root}. Without data, `recipes/photos.py` runs the same "
        "experiment on photos shipped inside scikit-learn and scikit-image."
    )


def tfds_image_decoder(name: str, data_dir: str | None = None) -> Callable[[dict], dict]:
    """Decodes an example of `tfds_images(name, ..., decode=False)` as tfds would.

    Example:

    >>> import tensorflow_datasets as tfds
    >>> with tfds.testing.mock_data(num_examples=2):
    ...     example = next(iter(tfds_images("cifar10", "test", decode=False)))
    ...     image = tfds_image_decoder("cifar10")(example)["image"]
    >>> example["image"].dtype.name, image.dtype.name, image.shape
    ('string', 'uint8', TensorShape([32, 32, 3]))
    """
    import tensorflow_datasets as tfds

    feature = tfds.builder(name, data_dir=data_dir).info.features["image"]
    return lambda example: {**example, "image": feature.decode_example(example["image"])}


def jpeg_encoded(name: str, data_dir: str | None = None) -> bool:
    """Whether the tfds dataset `name` stores JPEG files (`pair_batches` keeps them encoded).

    Example:

    >>> jpeg_encoded("imagenet2012"), jpeg_encoded("cifar10")
    (True, False)
    """
    feature = quiet_tfds_builder(name, data_dir).info.features["image"]
    return feature.encoding_format == "jpeg"


def on_canvas(example: dict, canvas: int) -> dict:
    """`example` with its image on a `canvas x canvas` one and its size under `"image_size"`.

    Example:

    >>> image = np.full((20, 30, 3), 7, "uint8")
    >>> placed = on_canvas({"image": image, "label": 1}, 40)
    >>> placed["image"].shape, placed["image_size"].numpy().tolist()
    (TensorShape([40, 40, 3]), [20, 30])
    >>> on_canvas({"image": image}, 15)["image_size"].numpy().tolist()
    [10, 15]
    """
    image = tf.convert_to_tensor(example["image"])
    shape = tf.shape(image)[:2]
    scale = tf.minimum(1.0, canvas / tf.cast(tf.reduce_max(shape), tf.float32))
    size = tf.clip_by_value(
        tf.cast(tf.round(tf.cast(shape, tf.float32) * scale), tf.int32), 1, canvas
    )

    def shrunk():
        resized = tf.image.resize(image, size, antialias=True)
        if image.dtype == tf.uint8:
            resized = tf.clip_by_value(tf.round(resized), 0, 255)
        return tf.cast(resized, image.dtype)

    image = tf.cond(scale < 1.0, shrunk, lambda: image)
    image = tf.image.pad_to_bounding_box(image, 0, 0, canvas, canvas)
    return {**example, "image": image, "image_size": size}


def pair_batches(
    examples: tf.data.Dataset | Mapping[str, np.ndarray] | FilePieces,
    augment: SimCLRAugment,
    batch_size: int,
    seed: int = 0,
    shuffle: int | None = None,
    canvas: int | None = None,
    start: int = 0,
    stream: int = 0,
    decode: Callable[[dict], dict] | None = None,
    view_dtype: str = "float32",
) -> tf.data.Dataset:
    """Endless batches of `{view1, view2, params1, params2, label}` from `{image, label}`
    examples, each epoch in its own seeded order. Details: docs/api.md#data-pipelines

    Args:
        examples: one pass over the images (arrays, a small `tf.data.Dataset`, or
            `FilePieces`); of one size, or give `canvas`.
        augment: draws the two views of every image.
        batch_size: pairs per batch; the last partial batch is dropped.
        seed: seeds the order of each epoch and the augmentations.
        shuffle: the buffer of `FilePieces` (None: `SHUFFLE_BATCHES` x `batch_size`; 0: none).
        canvas: put each image on a `canvas x canvas` one (`on_canvas`).
        start: batches to skip (a resumed run's step), nothing decoded for them.
        stream: which of independent augmentation streams (one per worker).
        decode: applied to each example after the shuffle and the skip.
        view_dtype: "float32", or "uint8" (`augment_pairs`).
    """
    counts = {  # each with its least value
        "batch_size": (batch_size, 1),
        "seed": (seed, 0),
        "shuffle": (0 if shuffle is None else shuffle, 0),
        "canvas": (1 if canvas is None else canvas, 1),
        "start": (start, 0),
        "stream": (stream, 0),
    }
    for name, (value, least) in counts.items():
        if not (is_integer(value) and value >= least):
            raise ValueError(f"`{name}` must be an integer of at least {least}; got {value!r}.")
    if isinstance(examples, tf.data.Dataset):
        examples = held_in_memory(_holdable(examples))
    if decode is None and tf.executing_eagerly():
        _check_jpeg(examples)
    buffer = SHUFFLE_BATCHES * batch_size if shuffle is None else shuffle
    # Skipping examples, not batches, skips them before they are decoded and put on
    # the canvas.
    examples = epoch_examples(examples, seed, start * batch_size, buffer, in_order=buffer == 0)

    def prepare(example):
        example = decode(example) if decode else example
        return on_canvas(example, canvas) if canvas else example

    if decode or canvas:
        examples = examples.map(prepare, num_parallel_calls=tf.data.AUTOTUNE)
    batches = examples.batch(batch_size, drop_remainder=True)
    pairs = augment_pairs(
        batches, augment, seed=seed, start=start, stream=stream, view_dtype=view_dtype
    )
    return without_autotune(pairs.prefetch(tf.data.AUTOTUNE))


def _check_jpeg(examples: Mapping[str, np.ndarray] | FilePieces) -> None:
    """A `ValueError` when the first example's image is encoded but not JPEG."""
    if isinstance(examples, FilePieces):
        records = tf.data.TFRecordDataset(examples.paths[0]).skip(examples.skips[0])
        image = examples.parse(next(iter(records.take(1))))["image"]
    else:
        image = tf.convert_to_tensor(examples["image"][0])
    if image.dtype == tf.string and not tf.io.is_jpeg(image):
        raise ValueError(
            "`examples` hold encoded images that are not JPEG files (PNGs?), which the "
            "views read only decoded: pass `decode` (e.g. `decode=tfds_image_decoder(name)`, "
            "and a `canvas` for images of different shapes)."
        )


def _holdable(examples: tf.data.Dataset) -> tf.data.Dataset:
    """`examples` if `pair_batches` may read them into memory, else a `ValueError`."""
    size = int(examples.cardinality())
    if 0 <= size <= MAX_HELD_EXAMPLES:
        return examples
    if size == tf.data.INFINITE_CARDINALITY:
        length = "is endless (one pass over the examples is read into memory)"
    elif size == tf.data.UNKNOWN_CARDINALITY:
        length = (
            "has an unknown length (if it is finite and small, give it: "
            "`.apply(tf.data.experimental.assert_cardinality(n))`)"
        )
    else:
        length = f"holds {size:,} examples, more than the {MAX_HELD_EXAMPLES:,} read into memory"
    raise ValueError(
        f"`examples`, a tf.data.Dataset, {length}: pass a tfds split as "
        "`tfds_file_pieces(name, split, data_dir)`, read from its files each epoch."
    )


__all__ = [
    "IMAGENET_10PCT",
    "MAX_HELD_EXAMPLES",
    "PHOTO_NAMES",
    "SHUFFLE_BATCHES",
    "TFDS_DATASETS",
    "jpeg_encoded",
    "on_canvas",
    "packaged_photos",
    "pair_batches",
    "photo_patches",
    "quiet_tfds_builder",
    "require_prepared",
    "tfds_file_pieces",
    "tfds_image_decoder",
    "tfds_images",
]
