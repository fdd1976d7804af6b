"""Where the image experiment's examples come from (photos, tfds, `mock_data`).
Details: docs/api.md#data-pipelines

Example:

>>> photos = ImageSource(dataset="photos", patches_per_photo=2)
>>> source = training_source(photos)
>>> source["image"].shape, worker_shard(photos, source, 1, 2)["label"].shape
((18, 48, 48, 3), (9,))
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping

import numpy as np
import tensorflow as tf

from aninfonce_tf.configs.linear_eval_settings import LinearEvaluationConfig, linear_evaluator
from aninfonce_tf.data.datasets import (
    IMAGENET_10PCT,
    PHOTO_NAMES,
    photo_patches,
    tfds_file_pieces,
    tfds_images,
)
from aninfonce_tf.data.epochs import FilePieces, held_in_memory
from aninfonce_tf.evaluation.linear_evaluation import LinearEvaluator

# The classes of each dataset (the final linear evaluation's classifier's outputs).
CLASSES = {"photos": len(PHOTO_NAMES), "cifar10": 10, "imagenet2012": 1000}
# The datasets whose training images are read from their files, too many to hold.
READ_FROM_FILES = ("imagenet2012",)
# The split each tfds dataset's probes and final evaluation score on.
TEST_SPLITS = {"cifar10": "test", "imagenet2012": "validation"}


@dataclasses.dataclass(frozen=True)
class ImageSource:
    """The fields of an image config that say where its examples come from.

    Args:
        dataset: "photos", "cifar10" or "imagenet2012".
        data_dir: tfds' data directory ("": its default).
        mock_data: random tfds examples instead of the dataset.
        batch_size: the training batch.
        seed: seed of the photos' patches.
        test_size: test examples the probes draw from.
        patches_per_photo: training patches cut from each photo.
        linear_eval_split: "train" or "10pct", the final linear evaluation's examples.

    Example:

    >>> ImageSource(dataset="cifar10").dataset
    'cifar10'
    """

    dataset: str = "photos"
    data_dir: str = ""
    mock_data: bool = False
    batch_size: int = 256
    seed: int = 0
    test_size: int = 2000
    patches_per_photo: int = 400
    linear_eval_split: str = "train"


@contextlib.contextmanager
def data_source(config: ImageSource):
    """Within it, tfds gives random examples when `config.mock_data` (tfds' mock)."""
    if config.mock_data:
        import tensorflow_datasets as tfds

        with tfds.testing.mock_data(num_examples=max(64, config.batch_size)):
            yield
    else:
        yield


def examples(config: ImageSource, split: str, decode: bool = True) -> tf.data.Dataset:
    """`{image, label}` examples of the split ("train" or "test"), tfds' images encoded."""
    if config.dataset == "photos":
        test_per_photo = config.test_size // len(PHOTO_NAMES) + 1
        per_photo = config.patches_per_photo if split == "train" else test_per_photo
        images, labels = photo_patches(per_photo, 48, split, seed=config.seed)
        return tf.data.Dataset.from_tensor_slices({"image": images, "label": labels})
    tfds_split = "train" if split == "train" else TEST_SPLITS[config.dataset]
    return tfds_images(config.dataset, tfds_split, config.data_dir or None, decode=decode)


def training_source(config: ImageSource) -> Mapping[str, np.ndarray] | FilePieces:
    """One pass over the training examples for `pair_batches` (within `data_source`)."""
    if config.dataset in READ_FROM_FILES and not config.mock_data:
        return tfds_file_pieces(config.dataset, "train", config.data_dir or None)
    return held_in_memory(examples(config, "train", decode=False))


def worker_shard(
    config: ImageSource, source: Mapping[str, np.ndarray] | FilePieces, index: int, count: int
) -> Mapping[str, np.ndarray] | FilePieces:
    """The `index`-th of `count` disjoint parts of `training_source(config)`."""
    if isinstance(source, FilePieces):
        return tfds_file_pieces(config.dataset, "train", config.data_dir or None, (index, count))
    return {key: values[index::count] for key, values in source.items()}


def final_examples(config: ImageSource) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """The final linear evaluation's train and test examples (within `data_source`)."""
    if config.dataset == "photos":
        return examples(config, "train"), examples(config, "test")
    data_dir = config.data_dir or None
    name = IMAGENET_10PCT if config.linear_eval_split == "10pct" else config.dataset
    train = tfds_images(name, "train", data_dir, decode=False)
    test = tfds_images(config.dataset, TEST_SPLITS[config.dataset], data_dir, decode=False)
    if config.mock_data:
        return tuple(
            tf.data.Dataset.from_tensor_slices(held_in_memory(split)) for split in (train, test)
        )
    return train, test


def final_evaluators(
    config: LinearEvaluationConfig,
    source: ImageSource,
    image_size: int,
    decode: Callable[[dict], dict] | None,
) -> list[LinearEvaluator]:
    """The final linear evaluation on `final_examples(source)`, in a list (maybe empty)."""
    if not config.linear_eval_epochs:
        return []
    train, test = final_examples(source)
    classes = CLASSES[source.dataset]
    return [linear_evaluator(config, train, test, image_size, classes, decode)]


__all__ = [
    "CLASSES",
    "ImageSource",
    "READ_FROM_FILES",
    "TEST_SPLITS",
    "data_source",
    "examples",
    "final_evaluators",
    "final_examples",
    "training_source",
    "worker_shard",
]
