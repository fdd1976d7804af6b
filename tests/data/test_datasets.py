"""Image pair pipelines: tfds datasets (mocked, never downloaded), the missing-data
error, and the packaged photos."""

import time

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from aninfonce_tf.data import datasets
from aninfonce_tf.data.augment import PARAMETERS, SimCLRAugment
from aninfonce_tf.data.datasets import (
    PHOTO_NAMES,
    on_canvas,
    pair_batches,
    photo_patches,
    tfds_image_decoder,
    tfds_images,
)


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


def test_tfds_images_are_decoded_after_the_skip_and_shuffle_into_the_same_batches():
    augment = SimCLRAugment.preset("simclr_cifar10")
    decodes = []

    def counted(decode):
        def decode_and_count(example):
            tf.py_function(lambda: decodes.append(1) or 0, [], tf.int32)
            return decode(example)

        return decode_and_count

    with tfds.testing.mock_data(num_examples=64):
        decoded = tfds_images("cifar10", "train")
        encoded = tfds_images("cifar10", "train", decode=False)
        decode = counted(tfds_image_decoder("cifar10"))
        # A run resumed at step 30 (30 x 8 examples skipped, ~4 passes over the split).
        first, second = (
            list(pair_batches(examples, augment, 8, seed=2, shuffle=32, start=30, decode=f).take(2))
            for examples, f in ((decoded, None), (encoded, decode))
        )
        # The shuffle buffer and the skip see encoded images: strings.
        assert encoded.element_spec["image"].dtype == tf.string
        batches = pair_batches(encoded, augment, 8, decode=decode)
    assert batches.element_spec["view1"].shape == (8, 32, 32, 3)
    # The same batches (PNG is lossless), and the skipped examples never decoded.
    for expected, batch in zip(first, second, strict=True):
        np.testing.assert_array_equal(batch["label"], expected["label"])
        np.testing.assert_array_equal(batch["view1"], expected["view1"])
    assert 16 <= len(decodes) < 30 * 8
    # The augmentations' map runs a few batches at once, not one per core.
    assert _parallel_calls(batches)[0] == 4


def _parallel_calls(dataset) -> list[int]:
    """The `num_parallel_calls` of each parallel map of `dataset`, last first (read
    from tf.data's private attributes)."""
    calls = []
    while dataset is not None:
        if hasattr(dataset, "_num_parallel_calls"):
            calls.append(int(dataset._num_parallel_calls))
        dataset = getattr(dataset, "_input_dataset", None)
    return calls


def test_imagenet_images_of_any_size_batch_on_a_canvas_with_static_shapes():
    with tfds.testing.mock_data(num_examples=8):
        examples = tfds_images("imagenet2012", "validation")
        assert examples.element_spec["image"].shape.as_list() == [None, None, 3]
        augment = SimCLRAugment(image_size=64, blur_probability=0.5)
        # JPEGs kept encoded decode to images of the same spec.
        encoded = tfds_images("imagenet2012", "validation", decode=False)
        decode = tfds_image_decoder("imagenet2012")
        from_jpeg = encoded.map(decode)
        assert from_jpeg.element_spec == examples.element_spec
        assert next(iter(from_jpeg))["image"].shape[2] == 3
        batches = pair_batches(encoded, augment, 4, canvas=72, decode=decode)
        batch = next(iter(batches))
        # Decoded images of different shapes cannot be held in memory: the error says so.
        with pytest.raises(ValueError, match="keep them encoded"):
            pair_batches(examples, augment, 4, canvas=72)
    assert batches.element_spec["view1"].shape == (4, 64, 64, 3)
    assert batch["view1"].shape == (4, 64, 64, 3)


# Views of a 24 x 40 image whose only operation is the crop.
ONLY_CROPS = dict(
    image_size=8,
    flip_probability=0.0,
    jitter_probability=0.0,
    grayscale_probability=0.0,
    blur_probability=0.0,
    solarize_probability=0.0,
)


def _ramps(height=24, width=40):
    """Red rises from left to right, green from top to bottom, blue is 255: a pixel
    of a view says where in the image it comes from, and padding (0) shows in blue."""
    y, x = np.mgrid[:height, :width]
    blue = np.full((height, width), 255)
    return np.stack([x * 6, y * 10, blue], axis=-1).astype(np.uint8)


def _views(image, augment, canvas, batch=128):
    examples = tf.data.Dataset.from_tensors({"image": image, "label": 0}).repeat(batch)
    # The image's shape unknown, as tfds' ImageNet gives it.
    examples = examples.map(
        lambda e: {**e, "image": tf.ensure_shape(tf.identity(e["image"]), [None, None, 3])}
    )
    batches = pair_batches(examples, augment, batch, shuffle=0, canvas=canvas)
    assert batches.element_spec["view1"].shape == (batch, 8, 8, 3)
    pairs = next(iter(batches))
    views = np.concatenate([pairs["view1"].numpy(), pairs["view2"].numpy()])
    boxes = np.concatenate([pairs["params1"]["crop_box"], pairs["params2"]["crop_box"]])
    return views, boxes


@pytest.mark.parametrize("canvas", [48, 32], ids=["within", "shrunk"])
def test_views_on_a_canvas_never_show_its_padding_and_reach_all_four_sides(canvas):
    augment = SimCLRAugment(crop_scale=(0.02, 0.05), **ONLY_CROPS)
    views, boxes = _views(_ramps(), augment, canvas)
    # No padding: blue is 255 in every pixel of every view.
    assert views[..., 2].min() > 1 - 1e-5
    # The crops reach every side of the image, and show it: the views' red (x) and
    # green (y) span the image's, 0 to 234 / 255 and 230 / 255.
    assert boxes[:, :2].min() < 0.05 and boxes[:, 2:].max() > 0.95
    for channel, high in ((0, 234 / 255), (1, 230 / 255)):
        assert views[..., channel].min() < 0.1 and views[..., channel].max() > high - 0.1


def test_an_image_within_the_canvas_is_cropped_at_its_full_resolution():
    # A view of the whole image is the image resized once to the view: not resized to
    # the canvas first (which the views of ImageNet's 500 x 375 photos would lose).
    image = np.random.default_rng(0).integers(0, 256, (24, 40, 3), dtype=np.uint8)
    placed = on_canvas({"image": image}, 48)
    np.testing.assert_array_equal(placed["image"][:24, :40], image)
    assert not placed["image"].numpy()[24:].any() and not placed["image"].numpy()[:, 40:].any()
    augment = SimCLRAugment(crop_scale=(1.0, 1.0), crop_ratio=(40 / 24, 40 / 24), **ONLY_CROPS)
    views, boxes = _views(image, augment, 48, batch=2)
    np.testing.assert_allclose(boxes, [[0, 0, 1, 1]] * 4, atol=1e-5)
    expected = tf.image.resize(image / 255, [8, 8], antialias=True).numpy()
    np.testing.assert_allclose(views, [expected] * 4, atol=1e-4)


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
        def as_dataset(self, split, shuffle_files, decoders=None):
            asked.append(split)
            images = np.zeros((2, 8, 8, 3), "uint8")
            return tf.data.Dataset.from_tensor_slices({"image": images, "label": [0, 1]})

    monkeypatch.setattr(tfds, "builder", lambda name, data_dir=None: Builder())
    for index in range(3):
        tfds_images("cifar10", "train", shard=(index, 3))
    assert asked == tfds.even_splits("train", n=3)
    assert len(set(asked)) == 3


def test_pair_batches_refuse_a_dataset_too_long_to_hold_and_name_the_files_path(monkeypatch):
    monkeypatch.setattr(datasets, "MAX_HELD_EXAMPLES", 8)
    examples = tf.data.Dataset.from_tensor_slices(
        {"image": np.zeros((16, 8, 8, 3), "uint8"), "label": np.arange(16)}
    )
    augment = SimCLRAugment(image_size=8)
    for dataset, length in (
        (examples, "holds 16 examples, more than the 8"),
        (examples.take(8).repeat(), "is endless"),
        (examples.take(8).filter(lambda example: True), "has an unknown length"),
    ):
        with pytest.raises(ValueError, match=f"{length}.*`tfds_file_pieces\\(name, split"):
            pair_batches(dataset, augment, 4)
    assert next(iter(pair_batches(examples.take(8), augment, 4)))["label"].shape == (4,)


@pytest.mark.parametrize(
    "setting",
    [
        dict(batch_size=0),
        dict(batch_size=2.5),
        dict(batch_size=True),
        dict(seed=True),
        dict(seed=-1),
        dict(start=-1),
        dict(start=2.5),
        dict(stream=True),
        dict(canvas=True),
        dict(canvas=0),
        dict(shuffle=2.5),
    ],
)
def test_counts_that_are_not_whole_numbers_in_range_are_refused_when_built(setting):
    # Before, 0 and 2.5 failed deep in tf.data, and True was read as 1 (a 1 px canvas).
    examples = {"image": np.zeros((8, 6, 6, 3), "uint8"), "label": np.arange(8)}
    name, value = next(iter(setting.items()))
    arguments = {"batch_size": 4, **setting}
    with pytest.raises(
        ValueError, match=f"`{name}` must be an integer of at least .*; got {value!r}"
    ):
        pair_batches(examples, SimCLRAugment(image_size=4), **arguments)
