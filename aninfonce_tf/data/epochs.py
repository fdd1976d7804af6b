"""The training examples epoch after epoch, each in its own seeded order, from arrays in
memory or from a split's files (`FilePieces`). Details: docs/api.md#data-pipelines"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np
import tensorflow as tf

# The files read at a time, one example from each in turn: SimCLR's interleave of its
# tfds files (`interleave_cycle_length=32`, `interleave_block_length=1`).
CYCLE_LENGTH = 32


@dataclasses.dataclass(frozen=True)
class FilePieces:
    """Pieces of TFRecord files holding a split: piece i is the `takes[i]` records of
    `paths[i]` after its first `skips[i]`; `parse` makes an example of one.

    Example:

    >>> pieces = FilePieces(("a.tfrecord", "b.tfrecord"), (0, 5), (10, 3), parse=lambda r: r)
    >>> pieces.size
    13
    """

    paths: tuple[str, ...]
    skips: tuple[int, ...]
    takes: tuple[int, ...]
    parse: Callable[[tf.Tensor], dict]

    @property
    def size(self) -> int:
        """Examples in all the pieces."""
        return sum(self.takes)


def held_in_memory(examples: tf.data.Dataset) -> dict[str, np.ndarray]:
    """Every example of a finite, non-empty dataset of dicts as one NumPy array per key.

    Example:

    >>> held = held_in_memory(tf.data.Dataset.from_tensor_slices({"label": [3, 1, 2]}))
    >>> held["label"].tolist()
    [3, 1, 2]
    """
    try:
        batches = [
            tf.nest.map_structure(lambda tensor: tensor.numpy(), batch)
            for batch in examples.batch(4096)
        ]
    except tf.errors.InvalidArgumentError:
        raise ValueError(
            "Images of different shapes cannot be held in memory: keep them encoded "
            "(`tfds_images(..., decode=False)`) and decode them after the shuffle "
            "(`pair_batches(..., decode=tfds_image_decoder(name))`)."
        ) from None
    if not batches:
        raise ValueError("The examples to hold in memory are empty.")
    return {key: np.concatenate([batch[key] for batch in batches]) for key in batches[0]}


def epoch_examples(
    source: Mapping[str, np.ndarray] | FilePieces,
    seed: int,
    start: int = 0,
    shuffle: int = 0,
    in_order: bool = False,
) -> tf.data.Dataset:
    """Endless examples of `source` (arrays or `FilePieces`), from the `start`-th on,
    epoch e in an order seeded by (`seed`, e); `shuffle`: the buffer for `FilePieces`.

    Example:

    >>> examples = {"label": np.arange(5)}
    >>> [int(example["label"]) for example in epoch_examples(examples, seed=0).take(10)]
    [0, 2, 4, 3, 1, 4, 3, 1, 0, 2]
    >>> [int(example["label"]) for example in epoch_examples(examples, seed=0, start=7).take(3)]
    [1, 0, 2]
    """
    if isinstance(source, FilePieces):
        size, read = source.size, _read_pieces(source, seed, shuffle)
    else:
        size, read = len(next(iter(source.values()))), _read_arrays(source, in_order)
    if size < 1:
        raise ValueError("`source` holds no example.")
    first, offset = divmod(start, size)
    base = tf.constant(seed, tf.int64)
    epochs = tf.data.Dataset.counter(first).flat_map(lambda epoch: read(tf.stack([base, epoch])))
    return epochs.skip(offset)


def _read_arrays(
    arrays: Mapping[str, np.ndarray], in_order: bool
) -> Callable[[tf.Tensor], tf.data.Dataset]:
    tensors = {key: tf.constant(values) for key, values in arrays.items()}
    size = len(next(iter(arrays.values())))

    def read(seed: tf.Tensor) -> tf.data.Dataset:
        order = tf.range(size, dtype=tf.int64)
        if not in_order:
            order = tf.random.experimental.stateless_shuffle(order, seed)
        return tf.data.Dataset.from_tensor_slices(order).map(
            lambda index: {key: tf.gather(values, index) for key, values in tensors.items()}
        )

    return read


def _read_pieces(
    pieces: FilePieces, seed: int, shuffle: int
) -> Callable[[tf.Tensor], tf.data.Dataset]:
    paths = tf.constant(pieces.paths)
    skips, takes = (tf.constant(values, tf.int64) for values in (pieces.skips, pieces.takes))
    count = len(pieces.paths)

    def read(epoch_seed: tf.Tensor) -> tf.data.Dataset:
        order = tf.random.experimental.stateless_shuffle(tf.range(count), epoch_seed)
        chosen = tuple(tf.gather(values, order) for values in (paths, skips, takes))
        records = tf.data.Dataset.from_tensor_slices(chosen).interleave(
            lambda path, skip, take: tf.data.TFRecordDataset(path).skip(skip).take(take),
            cycle_length=min(CYCLE_LENGTH, count),
            block_length=1,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        examples = records.map(pieces.parse, num_parallel_calls=tf.data.AUTOTUNE)
        return examples.shuffle(shuffle, seed=seed) if shuffle else examples

    return read


__all__ = ["CYCLE_LENGTH", "FilePieces", "epoch_examples", "held_in_memory"]
