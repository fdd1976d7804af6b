"""Image pair pipelines: tfds datasets (mocked, never downloaded), the missing-data
error, and the packaged photos."""

import time

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from aninfonce_tf.data.augment import PARAMETERS, SimCLRAugment
from aninfonce_tf.data.datasets import PHOTO_NAMES, pair_batches, photo_patches, tfds_images


def test_cifar10_pairs_have_static_shapes_labels_and_parameters():
    with tfds.testing.mock_data(num_examples=64):
        examples = tfds_images("cifar10", "train")
        batches = pair_batches(examples, SimCLRAugment.preset("simclr_cifar10"), 16, seed=1)
        spec = batches.element_spec
        batch = next(iter(batches))
    assert tuple(spec["view1"].shape) == (16, 32, 32, 3) == tuple(spec["view2"].shape)
    assert tuple(spec["params1"]["crop_box"].shape) == (16, 4)
    assert set(batch["params2"]) == set(PARAMETERS)
    assert batch["label"].shape == (16,)
    assert not np.allclose(batch["view1"], batch["view2"])
    assert batches.options().autotune.enabled is False  # see `without_autotune`


def test_imagenet_images_of_any_size_are_squared_before_batching():
    with tfds.testing.mock_data(num_examples=8):
        examples = tfds_images("imagenet2012", "validation")
        augment = SimCLRAugment(image_size=64, blur_probability=0.5)
        batch = next(iter(pair_batches(examples, augment, 4, crop_to=72)))
    assert batch["view1"].shape == (4, 64, 64, 3)


def test_crops_of_a_non_square_image_reach_all_four_of_its_sides():
    # A 40 x 80 image whose left half is black and right half white: padded at the top
    # left to 32 x 32 (not centre-cropped), every crop covers only the image, and over
    # many crops some views are all black and some all white (the sides are reached).
    image = np.zeros((40, 80, 3), np.uint8)
    image[:, 40:] = 255
    examples = tf.data.Dataset.from_tensors({"image": image, "label": 0}).repeat(64)
    augment = SimCLRAugment(
        image_size=8,
        crop_scale=(0.05, 0.1),
        flip_probability=0.0,
        jitter_probability=0.0,
        grayscale_probability=0.0,
        blur_probability=0.0,
        solarize_probability=0.0,
    )
    batch = next(iter(pair_batches(examples, augment, 64, shuffle=0, crop_to=32)))
    means = batch["view1"].numpy().mean(axis=(1, 2, 3))
    boxes = batch["params1"]["crop_box"].numpy()
    assert means.min() < 0.02 and means.max() > 0.98
    assert boxes[:, [1, 3]].min() < 0.25 and boxes[:, [1, 3]].max() > 0.75


@pytest.mark.parametrize("name", ["cifar10", "imagenet2012"])
def test_a_dataset_missing_offline_says_how_to_prepare_it_within_seconds(name, tmp_path):
    start = time.perf_counter()
    with pytest.raises(
        ValueError, match=f"'{name}' is not prepared.*tfds build.*photos.py"
    ) as error:
        tfds_images(name, "train", data_dir=str(tmp_path))
    assert time.perf_counter() - start < 10
    # The command builds where --data-dir points (ImageNet: from the manual download there).
    manual = f" --manual_dir {tmp_path}/downloads/manual" if name == "imagenet2012" else ""
    assert f"`tfds build {name} --data_dir {tmp_path}{manual}`" in str(error.value)
    with pytest.raises(ValueError, match="svhn"):
        tfds_images("svhn", "train")


def test_photo_patches_split_each_photo_into_disjoint_train_and_test_regions():
    train, train_labels = photo_patches(per_photo=20, size=32, split="train")
    test, test_labels = photo_patches(per_photo=10, size=32, split="test")
    assert train.shape == (20 * len(PHOTO_NAMES), 32, 32, 3) and train.dtype == np.uint8
    assert np.bincount(train_labels).tolist() == [20] * len(PHOTO_NAMES)
    assert np.bincount(test_labels).tolist() == [10] * len(PHOTO_NAMES)
    # In a random order, the photos mixed: each half holds every photo.
    assert all(set(half) == set(range(len(PHOTO_NAMES))) for half in np.split(test_labels, 2))
    # No test patch equals a train patch, and the photos differ in colour.
    assert not {t.tobytes() for t in test} & {t.tobytes() for t in train}
    means = [train[train_labels == c].mean(axis=(0, 1, 2)) for c in range(len(PHOTO_NAMES))]
    assert len({tuple(np.round(m)) for m in means}) == len(PHOTO_NAMES)
    again, _ = photo_patches(per_photo=20, size=32, split="train")
    np.testing.assert_array_equal(again, train)


def test_pair_batches_started_at_step_k_give_the_batches_a_full_run_gives_from_k():
    images, labels = photo_patches(per_photo=3, size=40, split="test")
    examples = tf.data.Dataset.from_tensor_slices({"image": images, "label": labels})
    augment = SimCLRAugment.preset("simclr_cifar10")
    full = list(pair_batches(examples, augment, 8, seed=3, shuffle=20).take(6))
    resumed = list(pair_batches(examples, augment, 8, seed=3, shuffle=20, start=4).take(2))
    for expected, batch in zip(full[4:], resumed, strict=True):
        np.testing.assert_array_equal(batch["label"], expected["label"])
        np.testing.assert_array_equal(batch["view1"], expected["view1"])
        np.testing.assert_array_equal(batch["params2"]["crop_box"], expected["params2"]["crop_box"])


def test_a_tfds_shard_reads_its_even_part_of_the_split(monkeypatch):
    asked = []

    class Builder:
        def as_dataset(self, split, shuffle_files):
            asked.append(split)
            images = np.zeros((2, 8, 8, 3), "uint8")
            return tf.data.Dataset.from_tensor_slices({"image": images, "label": [0, 1]})

    monkeypatch.setattr(tfds, "builder", lambda name, data_dir=None: Builder())
    for index in range(3):
        tfds_images("cifar10", "train", shard=(index, 3))
    assert asked == tfds.even_splits("train", n=3)
    assert len(set(asked)) == 3
