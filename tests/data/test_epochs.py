"""The order of the training examples: each epoch its own, seeded by the epoch, for
examples held in memory and for files; a resumed run reads what an uninterrupted one
reads; a prepared tfds split as file pieces."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from aninfonce_tf.data import datasets
from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.datasets import pair_batches, tfds_file_pieces, tfds_image_decoder
from aninfonce_tf.data.epochs import FilePieces, epoch_examples, held_in_memory


def _files(directory, files: int, per_file: int) -> FilePieces:
    """`files` TFRecord files of `per_file` examples each: example k's label is k and
    its 8 x 8 image is k everywhere."""
    paths = []
    for file in range(files):
        path = str(directory / f"part-{file:03d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for label in range(file * per_file, (file + 1) * per_file):
                image = np.full((8, 8, 3), label % 256, np.uint8).tobytes()
                feature = {
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                }
                writer.write(
                    tf.train.Example(
                        features=tf.train.Features(feature=feature)
                    ).SerializeToString()
                )
        paths.append(path)

    def parse(record):
        spec = {
            "image": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
        }
        example = tf.io.parse_single_example(record, spec)
        image = tf.reshape(tf.io.decode_raw(example["image"], tf.uint8), [8, 8, 3])
        return {"image": image, "label": example["label"]}

    return FilePieces(tuple(paths), (0,) * files, (per_file,) * files, parse)


def _labels(examples: tf.data.Dataset, count: int) -> list[int]:
    return [int(example["label"]) for example in examples.take(count)]


def _files_in_order(labels: list[int], per_file: int) -> list[int]:
    """The files in the order their first example comes."""
    return list(dict.fromkeys(label // per_file for label in labels))


def test_two_epochs_read_the_files_in_different_orders(tmp_path):
    pieces = _files(tmp_path, files=64, per_file=4)
    size = pieces.size
    labels = _labels(epoch_examples(pieces, seed=0), 2 * size)
    first, second = labels[:size], labels[size:]
    # Each epoch reads every example once, its files in its own order.
    assert sorted(first) == sorted(second) == list(range(size))
    assert _files_in_order(first, 4) != _files_in_order(second, 4)
    # With a shuffle buffer too, an example's place in one epoch is nearly uncorrelated
    # with its place in the next.
    shuffled = _labels(epoch_examples(pieces, seed=0, shuffle=16), 2 * size)
    places = [np.argsort(shuffled[:size]), np.argsort(shuffled[size:])]
    assert abs(np.corrcoef(*places)[0, 1]) < 0.5
    # Another seed, another order.
    assert _labels(epoch_examples(pieces, seed=1), size) != first


def test_two_epochs_of_examples_held_in_memory_are_two_permutations():
    labels = _labels(epoch_examples({"label": np.arange(100)}, seed=0), 200)
    assert sorted(labels[:100]) == sorted(labels[100:]) == list(range(100))
    assert labels[:100] != labels[100:]
    assert abs(np.corrcoef(np.argsort(labels[:100]), np.argsort(labels[100:]))[0, 1]) < 0.5


@pytest.mark.parametrize("kind", ["files", "memory"])
def test_a_resumed_run_reads_what_an_uninterrupted_one_reads(kind, tmp_path):
    source = (
        _files(tmp_path, files=16, per_file=8) if kind == "files" else {"label": np.arange(128)}
    )
    full = _labels(epoch_examples(source, seed=3, shuffle=7), 300)
    # Within the first epoch, at the second's start, within the second and the third.
    for start in (37, 128, 150, 270):
        resumed = _labels(epoch_examples(source, seed=3, start=start, shuffle=7), 30)
        assert resumed == full[start : start + 30], start


def test_the_batches_of_a_resumed_run_are_those_of_an_uninterrupted_one(tmp_path):
    pieces = _files(tmp_path, files=8, per_file=10)
    augment = SimCLRAugment.preset("simclr_cifar10")
    full = list(pair_batches(pieces, augment, 8, seed=3, shuffle=20).take(14))
    resumed = list(pair_batches(pieces, augment, 8, seed=3, shuffle=20, start=11).take(3))
    for expected, batch in zip(full[11:], resumed, strict=True):  # across the second epoch's end
        np.testing.assert_array_equal(batch["label"], expected["label"])
        np.testing.assert_array_equal(batch["view1"], expected["view1"])
        np.testing.assert_array_equal(batch["params2"]["crop_box"], expected["params2"]["crop_box"])


def test_pair_batches_shuffle_file_examples_in_simclrs_buffer_of_ten_batches(monkeypatch):
    buffers = []

    def recording(source, seed, start=0, shuffle=0, in_order=False):
        buffers.append(shuffle)
        return epoch_examples(source, seed, start, shuffle, in_order)

    monkeypatch.setattr(datasets, "epoch_examples", recording)
    examples = {"image": np.zeros((40, 8, 8, 3), "uint8"), "label": np.arange(40)}
    pair_batches(examples, SimCLRAugment(image_size=8), 4)
    assert buffers == [datasets.SHUFFLE_BATCHES * 4] == [40]


def test_pair_batches_read_examples_held_in_memory_in_order_without_shuffle():
    examples = {"image": np.zeros((16, 8, 8, 3), "uint8"), "label": np.arange(16)}

    def labels(**kwargs):
        batches = pair_batches(examples, SimCLRAugment(image_size=8), 4, **kwargs).take(8)
        return [int(label) for batch in batches for label in batch["label"]]

    assert labels(shuffle=0) == list(range(16)) * 2
    permuted = labels()
    assert sorted(permuted[:16]) == list(range(16)) and permuted[:16] != list(range(16))


def test_held_in_memory_keeps_every_example():
    held = held_in_memory(tf.data.Dataset.from_tensor_slices({"label": np.arange(5000)}))
    assert held["label"].tolist() == list(range(5000))
    with pytest.raises(ValueError, match="empty"):
        held_in_memory(tf.data.Dataset.from_tensor_slices({"label": np.zeros(0, "int64")}))


class _Tiny(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """40 PNG images of 4 x 4 pixels, image k of value k and label k."""

    VERSION = tfds.core.Version("1.0.0")
    # Nothing to download: no checksums for tfds to look for beside this file.
    url_infos = None

    def _info(self):
        features = {
            "image": tfds.features.Image(shape=(4, 4, 3)),
            "label": tfds.features.ClassLabel(num_classes=40),
        }
        return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict(features))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        for label in range(40):
            yield label, {"image": np.full((4, 4, 3), label, np.uint8), "label": label}


def test_tfds_file_pieces_cover_the_split_and_each_worker_reads_its_own_part(tmp_path, monkeypatch):
    builder = _Tiny(data_dir=str(tmp_path))
    config = tfds.download.DownloadConfig(num_shards=4, try_download_gcs=False)
    builder.download_and_prepare(download_config=config)
    monkeypatch.setattr(tfds, "builder", lambda name, data_dir=None: builder)
    pieces = tfds_file_pieces("cifar10", "train")
    assert (len(pieces.paths), pieces.size) == (4, 40)
    examples = list(epoch_examples(pieces, seed=0).take(40))
    assert sorted(int(e["label"]) for e in examples) == list(range(40))
    # Encoded, as `tfds_images(..., decode=False)` gives them, and decoded as tfds would.
    assert examples[0]["image"].dtype == tf.string
    decoded = tfds_image_decoder("cifar10")(examples[0])
    assert np.all(decoded["image"].numpy() == int(examples[0]["label"]))
    labels = [
        set(_labels(epoch_examples(tfds_file_pieces("cifar10", "train", shard=(i, 3)), 0), 40))
        for i in range(3)
    ]
    sizes = [tfds_file_pieces("cifar10", "train", shard=(i, 3)).size for i in range(3)]
    assert [len(part) for part in labels] == sizes and sum(sizes) == 40
    assert set.union(*labels) == set(range(40))


def test_tfds_file_pieces_of_a_missing_dataset_say_how_to_prepare_it(tmp_path):
    with pytest.raises(ValueError, match="'cifar10' is not prepared.*tfds build cifar10"):
        tfds_file_pieces("cifar10", "train", data_dir=str(tmp_path))
