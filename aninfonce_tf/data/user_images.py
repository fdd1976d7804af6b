"""A user's images for `aninfonce-tf train` (a folder, `.npy`/`.npz` arrays, or a
prepared tfds dataset), read into memory. Details: docs/backbones.md#data---data"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.datasets import quiet_tfds_builder

# The files an image folder's images are read from.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif")
# The prefix of a tfds dataset (`tfds:cifar10` or `tfds:cifar10:train`).
TFDS_PREFIX = "tfds:"
# How far above 1 a float image in [0, 1] may reach before it is read as [0, 255].
FLOAT_SLACK = 0.25
# The keys of a `.npz` file's images and labels, first found first.
NPZ_IMAGES = ("images", "image", "x", "x_train")
NPZ_LABELS = ("labels", "label", "y", "y_train")


def source_kind(data: str) -> str:
    """`"tfds"`, `"arrays"` (`.npy`, `.npz`) or `"folder"`."""
    if data.startswith(TFDS_PREFIX):
        return "tfds"
    return "arrays" if Path(data).suffix in (".npy", ".npz") else "folder"


def image_files(folder: Path) -> tuple[list[Path], list[int] | None, list[str]]:
    """The image files below `folder` (sorted), their labels and the class names."""
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    parts = [p.relative_to(folder).parts for p in files]
    classes = sorted({part[0] for part in parts if len(part) > 1})
    if len(classes) < 2 or any(len(part) == 1 for part in parts):
        return files, None, []
    index = {name: i for i, name in enumerate(classes)}
    return files, [index[part[0]] for part in parts], classes


def check_images_source(
    data: str, data_dir: str = "", value_range: str = "auto"
) -> tuple[int, bool]:
    """The number of images of `data` and whether they have labels (else a ValueError)."""
    if not data:
        raise ValueError(
            "`data` is empty: pass --data with an image folder, a .npy/.npz file or "
            "tfds:NAME[:SPLIT] (prepared with `tfds build NAME --data_dir DIR`)."
        )
    kind = source_kind(data)
    if kind == "tfds":
        builder, split = _tfds_builder(data, data_dir)
        labelled = "label" in builder.info.features
        return int(builder.info.splits[split].num_examples), labelled
    path = Path(data).expanduser()
    if not path.exists():
        raise ValueError(f"--data {data}: no such file or folder.")
    if kind == "folder":
        if not path.is_dir():
            raise ValueError(f"--data {data} is a file, not an image folder or a .npy/.npz file.")
        files, labels, _ = image_files(path)
        if not files:
            raise ValueError(
                f"--data {data} holds no images ({', '.join(IMAGE_SUFFIXES)}), also in its "
                "subfolders."
            )
        return len(files), labels is not None
    images, labels = _array_images(path)  # reads the file: refuses what it cannot use
    _as_uint8(images[:1024], value_range, data)  # the range, on a sample
    return len(labels), bool(np.any(labels >= 0))


def read_images(data: str, size: int, data_dir: str = "", value_range: str = "auto") -> dict:
    """`{"image": uint8 [N, size, size, 3], "label": int64 [N] (-1: none), "classes": names}`.

    Args:
        data: an image folder, a `.npy`/`.npz` file or `tfds:NAME[:SPLIT]`.
        size: the side every image is resized to.
        data_dir: tfds' data directory.
        value_range: of float arrays: `"1"`, `"255"` or `"auto"` ([0, 1], checked).

    Example:

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for label in ("cats", "dogs"):
    ...     (folder / label).mkdir()
    ...     for i in range(2):
    ...         image = np.full((20, 30, 3), 60 * i, "uint8")
    ...         _ = tf.io.write_file(str(folder / label / f"{i}.png"), tf.io.encode_png(image))
    >>> images = read_images(str(folder), size=16)
    >>> images["image"].shape, images["label"].tolist(), images["classes"]
    ((4, 16, 16, 3), [0, 0, 1, 1], ['cats', 'dogs'])
    """
    kind = source_kind(data)
    if kind == "tfds":
        builder, split = _tfds_builder(data, data_dir)

        def resized(example):  # before batching: a dataset's images may differ in size
            image = tf.image.resize(example["image"], (size, size), antialias=True)
            label = tf.cast(example.get("label", -1), tf.int64)
            return tf.cast(tf.clip_by_value(tf.round(image), 0, 255), tf.uint8), label

        dataset = builder.as_dataset(split=split).map(resized)
        images, labels = [], []
        for image, label in dataset.batch(256).as_numpy_iterator():
            images.append(_resized(image, size))
            labels.append(label)
        label_feature = (
            builder.info.features.get("label") if hasattr(builder.info.features, "get") else None
        )
        classes = list(getattr(label_feature, "names", []) or [])
        return _record(np.concatenate(images), np.concatenate(labels), classes)
    path = Path(data).expanduser()
    if kind == "folder":
        files, labels, classes = image_files(path)
        images = np.stack([_resized(_decoded(file)[None], size)[0] for file in files])
        return _record(images, labels if labels is not None else np.full(len(files), -1), classes)
    images, labels = _array_images(path)
    images = _as_uint8(images, value_range, data)
    return _record(_resized(images, size), labels, [])


def _record(images, labels, classes) -> dict:
    return {"image": images, "label": np.asarray(labels, "int64"), "classes": list(classes)}


def _decoded(file: Path) -> np.ndarray:
    try:
        image = tf.io.decode_image(tf.io.read_file(str(file)), channels=3, expand_animations=False)
    except (tf.errors.InvalidArgumentError, tf.errors.NotFoundError):
        raise ValueError(
            f"{file} is not a readable image (JPEG, PNG, GIF or BMP): remove it or fix it."
        ) from None
    return image.numpy()


def _resized(images: np.ndarray, size: int) -> np.ndarray:
    images = np.asarray(images)
    if images.ndim == 3:
        images = images[..., None]
    if images.shape[-1] == 1:
        images = np.repeat(images, 3, axis=-1)
    if images.shape[1:3] == (size, size):
        return images.astype("uint8")
    resized = tf.image.resize(images, (size, size), antialias=True)
    return tf.cast(tf.clip_by_value(tf.round(resized), 0, 255), tf.uint8).numpy()


def _array_images(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise ValueError(f"--data {path} is not a readable .npy/.npz file: {error}") from None
    if isinstance(loaded, np.ndarray):
        images, labels = loaded, None
    else:
        images = next((loaded[k] for k in NPZ_IMAGES if k in loaded.files), None)
        labels = next((loaded[k] for k in NPZ_LABELS if k in loaded.files), None)
        if images is None:
            raise ValueError(
                f"--data {path} has no images: name them one of {NPZ_IMAGES} "
                f"(it has {loaded.files})."
            )
    if images.ndim not in (3, 4) or (images.ndim == 4 and images.shape[-1] not in (1, 3)):
        raise ValueError(
            f"--data {path}: images must be [N, H, W] or [N, H, W, 1 or 3]; got {images.shape}."
        )
    if labels is None:
        return images, np.full(len(images), -1)
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[1] > 1 and set(np.unique(labels)) <= {0, 1}:
        labels = labels.argmax(1)  # one-hot
    elif labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if (
        labels.ndim != 1
        or len(labels) != len(images)
        or not np.issubdtype(labels.dtype, np.integer)
    ):
        raise ValueError(
            f"--data {path}: labels must be {len(images)} integers (or one-hot rows), one per "
            f"image; got {labels.dtype} of shape {labels.shape}."
        )
    return images, labels


def _as_uint8(images: np.ndarray, value_range: str, data: str) -> np.ndarray:
    if images.dtype == np.uint8:
        return images
    if not np.issubdtype(images.dtype, np.floating):
        raise ValueError(
            f"--data {data}: images must be uint8 (pixel values) or float; got {images.dtype}: "
            "convert them with `.astype('uint8')` if they are pixel values."
        )
    low = float(np.min(images)) if images.size else 0.0
    high = float(np.max(images)) if images.size else 0.0
    if low < -FLOAT_SLACK:
        raise ValueError(
            f"--data {data}: float images reach {low:.4g}, below 0 (normalised images?): give "
            "pixel values in [0, 1] or [0, 255]."
        )
    if value_range == "auto":
        value_range = "1"
        if high > 1 + FLOAT_SLACK:
            raise ValueError(
                f"--data {data}: float images reach {high:.4g}, beyond [0, 1]: pass "
                "--value-range 255 for pixel values in [0, 255], or divide them by 255."
            )
    if value_range == "1" and high > 1 + FLOAT_SLACK:
        raise ValueError(f"--data {data}: --value-range 1, but float images reach {high:.4g}.")
    if value_range == "255" and high <= 1 + FLOAT_SLACK:
        raise ValueError(
            f"--data {data}: --value-range 255, but float images reach only {high:.4g}: "
            "they look like [0, 1]; pass --value-range 1."
        )
    scale = 255.0 if value_range == "1" else 1.0
    return np.clip(np.round(images * scale), 0, 255).astype("uint8")


def _tfds_builder(data: str, data_dir: str):
    name, _, split = data[len(TFDS_PREFIX) :].partition(":")
    split = split or "train"
    where = data_dir or "tfds' default data directory"
    try:
        builder = quiet_tfds_builder(name, data_dir or None)
    except Exception as error:  # an unknown name: tfds' own error, in one line
        raise ValueError(f"--data {data}: {str(error).splitlines()[0]}") from None
    if not builder.is_prepared():
        raise ValueError(
            f"--data {data}: {name} is not prepared in {where}: prepare it first with "
            f"`tfds build {name}{' --data_dir ' + data_dir if data_dir else ''}` (nothing is "
            "downloaded at run time), or pass --mock-data for random examples."
        )
    if split.split("[")[0] not in builder.info.splits:
        raise ValueError(
            f"--data {data}: {name} has no split {split!r}; it has {list(builder.info.splits)}."
        )
    if "image" not in builder.info.features:
        raise ValueError(f"--data {data}: {name} has no 'image' feature.")
    return builder, split


__all__ = [
    "IMAGE_SUFFIXES",
    "TFDS_PREFIX",
    "check_images_source",
    "image_files",
    "read_images",
    "source_kind",
]
