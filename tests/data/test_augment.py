"""SimCLR augmentations on real photos (scikit-learn's sample images): the returned
parameters are the ones applied, eagerly and inside `Dataset.map`, reproducibly."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
from matplotlib.colors import hsv_to_rgb, rgb_to_hsv
from sklearn.datasets import load_sample_images

from aninfonce_tf.data.augment import PARAMETERS, SimCLRAugment, augment_pairs

PHOTOS = np.stack([image[:384, :384] for image in load_sample_images().images])  # uint8
NOTHING = SimCLRAugment(
    image_size=64,
    crop_scale=(1.0, 1.0),
    crop_ratio=(1.0, 1.0),
    flip_probability=0.0,
    jitter_probability=0.0,
    grayscale_probability=0.0,
)


def _resized():
    """The photos at 64x64, sampled as a whole-image crop box samples them (corner to
    corner, bilinear)."""
    boxes = [[0.0, 0.0, 1.0, 1.0]] * len(PHOTOS)
    return tf.image.crop_and_resize(PHOTOS / 255.0, boxes, [0, 1], [64, 64]).numpy()


def test_views_and_parameters_have_the_documented_shapes_and_ranges():
    views, params = SimCLRAugment.preset("simclr_imagenet")(PHOTOS, seed=[1, 2])
    assert views.shape == (2, 224, 224, 3) and views.dtype == tf.float32
    assert float(tf.reduce_min(views)) >= 0.0 and float(tf.reduce_max(views)) <= 1.0
    assert set(params) == set(PARAMETERS)
    assert params["crop_box"].shape == (2, 4)
    assert all(params[name].shape == (2,) for name in PARAMETERS if name != "crop_box")


def test_the_returned_crop_box_reproduces_the_view():
    augment = dataclasses.replace(NOTHING, crop_scale=(0.2, 0.6), crop_ratio=(0.75, 1.33))
    views, params = augment(PHOTOS, seed=[0, 5])
    for image, view, box in zip(PHOTOS, views.numpy(), params["crop_box"].numpy(), strict=True):
        again = tf.image.crop_and_resize(image[None] / 255.0, box[None], [0], [64, 64])
        np.testing.assert_allclose(again[0], view, atol=1e-5)
        # Independently: slice the box out and resize it.
        y1, x1, y2, x2 = np.round(box * 383).astype(int)
        sliced = tf.image.resize(image[y1 : y2 + 1, x1 : x2 + 1] / 255.0, [64, 64]).numpy()
        # (0.93 measured: the two resamplings alias the photo differently.)
        assert np.corrcoef(sliced.ravel(), view.ravel())[0, 1] > 0.9
        area = (box[2] - box[0]) * (box[3] - box[1])
        assert 0.2 - 1e-6 <= area <= 0.6 + 1e-6


def test_flip_and_grayscale_flags_match_the_pixels():
    augment = dataclasses.replace(NOTHING, flip_probability=0.5, grayscale_probability=0.5)
    images = np.concatenate([PHOTOS] * 8)
    views, params = augment(images, seed=[3, 3])
    expected = np.concatenate([_resized()] * 8)
    flips, grays = params["flip"].numpy(), params["grayscale"].numpy()
    assert 0 < flips.sum() < 16 and 0 < grays.sum() < 16
    for view, image, flip, gray in zip(views.numpy(), expected, flips, grays, strict=True):
        image = image[:, ::-1] if flip else image
        if gray:
            assert np.allclose(view[..., 0], view[..., 1]) and np.allclose(
                view[..., 1], view[..., 2]
            )
            np.testing.assert_allclose(view[..., 0], image @ [0.299, 0.587, 0.114], atol=1e-5)
        else:
            np.testing.assert_allclose(view, image, atol=1e-5)


def _jitter_reference(image, brightness, contrast, saturation, hue):
    """The documented jitter in NumPy (matplotlib's HSV conversion)."""
    luma = lambda x: x @ [0.299, 0.587, 0.114]  # noqa: E731
    image = np.clip(image * brightness, 0, 1)
    image = np.clip((image - luma(image).mean()) * contrast + luma(image).mean(), 0, 1)
    image = np.clip(luma(image)[..., None] + saturation * (image - luma(image)[..., None]), 0, 1)
    hsv = rgb_to_hsv(image)
    hsv[..., 0] = np.mod(hsv[..., 0] + hue, 1.0)
    return np.clip(hsv_to_rgb(hsv), 0, 1)


def test_the_returned_jitter_factors_reproduce_the_colours():
    augment = dataclasses.replace(NOTHING, jitter_probability=1.0)
    views, params = augment(PHOTOS, seed=[7, 0])
    factors = {k: params[k].numpy() for k in ("brightness", "contrast", "saturation", "hue")}
    assert np.all(params["jitter"].numpy() == 1.0)
    assert not np.allclose(factors["brightness"], 1.0)
    for index, (view, image) in enumerate(zip(views.numpy(), _resized(), strict=True)):
        expected = _jitter_reference(image, *(factors[k][index] for k in factors))
        np.testing.assert_allclose(view, expected, atol=2e-3)
    # Without jitter the factors are the identity.
    _, params = NOTHING(PHOTOS, seed=[7, 0])
    assert params["brightness"].numpy().tolist() == [1.0, 1.0] and params[
        "hue"
    ].numpy().tolist() == [0, 0]


def test_blur_smooths_with_the_returned_sigma_and_solarize_inverts_bright_pixels():
    blur = dataclasses.replace(NOTHING, blur_probability=1.0, blur_sigma=(1.5, 2.0))
    views, params = blur(PHOTOS, seed=[0, 0])
    assert np.all((params["blur_sigma"].numpy() >= 1.5) & (params["blur_sigma"].numpy() <= 2.0))
    sharp = _resized()
    roughness = lambda x: np.abs(np.diff(x, axis=1)).mean()  # noqa: E731
    assert roughness(views.numpy()) < 0.8 * roughness(sharp)
    np.testing.assert_allclose(views.numpy().mean(), sharp.mean(), atol=0.01)  # kernels sum to 1
    solarize = dataclasses.replace(NOTHING, solarize_probability=1.0)
    views, params = solarize(PHOTOS, seed=[0, 0])
    np.testing.assert_allclose(views, np.where(sharp >= 0.5, 1 - sharp, sharp), atol=1e-6)
    assert params["solarize"].numpy().tolist() == [1.0, 1.0]


def test_probabilities_are_respected():
    augment = SimCLRAugment(image_size=8)
    _, params = augment(np.zeros((2000, 8, 8, 3), "float32"), seed=[0, 9])
    for name, probability in (("flip", 0.5), ("jitter", 0.8), ("grayscale", 0.2), ("blur", 0.0)):
        assert abs(params[name].numpy().mean() - probability) < 0.04, name


def test_the_same_seed_gives_the_same_views_eagerly_and_under_a_parallel_map():
    augment = SimCLRAugment.preset("simclr_cifar10")
    images = np.concatenate([PHOTOS] * 4)
    dataset = tf.data.Dataset.from_tensor_slices({"image": images, "label": np.arange(8)})
    parallel = list(augment_pairs(dataset.batch(2), augment, seed=4))  # AUTOTUNE threads
    again = list(augment_pairs(dataset.batch(2), augment, seed=4))
    assert len(parallel) == 4
    for index, batch in enumerate(parallel):
        base = tf.constant([4, index], tf.int64)
        for view in (1, 2):
            seed = tf.random.experimental.stateless_fold_in(base, view - 1)
            eager, params = augment(images[2 * index : 2 * index + 2], seed)
            np.testing.assert_array_equal(batch[f"view{view}"], eager)
            np.testing.assert_array_equal(batch[f"params{view}"]["crop_box"], params["crop_box"])
            np.testing.assert_array_equal(again[index][f"view{view}"], eager)
        assert batch["label"].numpy().tolist() == [2 * index, 2 * index + 1]
        assert not np.allclose(batch["view1"], batch["view2"])


def test_uint8_and_float_inputs_batched_or_not_give_the_same_views():
    augment = SimCLRAugment.preset("simclr_cifar10")
    from_uint8, _ = augment(PHOTOS, seed=[2, 2])
    from_float, _ = augment(PHOTOS / 255.0, seed=[2, 2])
    np.testing.assert_allclose(from_uint8, from_float, atol=1e-5)
    single, params = augment(PHOTOS[0], seed=[2, 2])
    assert single.shape == (32, 32, 3) and params["crop_box"].shape == (4,)
    np.testing.assert_allclose(single, augment(PHOTOS[:1], seed=[2, 2])[0][0], atol=1e-6)


@pytest.mark.parametrize(
    "images, error, message",
    [
        (np.zeros((4, 4)), ValueError, "images"),
        (np.zeros((2, 4, 4, 1)), ValueError, "images"),
        (np.zeros((2, 4, 4, 3), "int32"), TypeError, "uint8 or float"),
    ],
)
def test_bad_images_raise(images, error, message):
    with pytest.raises(error, match=message):
        SimCLRAugment()(images, seed=[0, 0])
    with pytest.raises(ValueError, match="preset"):
        SimCLRAugment.preset("byol")
