"""SimCLR augmentations on real photos (scikit-learn's sample images): the returned
parameters reproduce the views (float64 NumPy reference), eagerly and inside
`Dataset.map`, reproducibly."""

import dataclasses
import itertools
import time

import numpy as np
import pytest
import scipy.ndimage
import scipy.stats
import tensorflow as tf
from matplotlib.colors import hsv_to_rgb, rgb_to_hsv
from sklearn.datasets import load_sample_images

from aninfonce_tf.data.augment import (
    AUGMENTATION_PRESETS,
    PARAMETERS,
    SimCLRAugment,
    augment_pairs,
)
from aninfonce_tf.data.image_ops import JITTER_OPS, gaussian_blur, resized_crop

PHOTOS = np.stack([image[:384, :384] for image in load_sample_images().images])  # uint8
NOTHING = SimCLRAugment(
    image_size=64,
    crop_scale=(1.0, 1.0),
    crop_ratio=(1.0, 1.0),
    flip_probability=0.0,
    jitter_probability=0.0,
    grayscale_probability=0.0,
)
LUMA = np.array([0.299, 0.587, 0.114])
# Many draws on non-square images, shared by the tests that count (one XLA compilation).
BLANK = np.zeros((2000, 48, 96, 3), "uint8")


def _resized():
    """The photos at 64x64 as the probes resize them (antialiased)."""
    return tf.image.resize(PHOTOS / 255, [64, 64], antialias=True).numpy()


# A float64 NumPy reference of every op, from the formulas in the module's docstrings.


def _resampling(start, stop, length, size):
    """`[size, length]` antialiased bilinear weights of the pixels `[start, stop)`."""
    scale = (stop - start) / size
    centres = start + (np.arange(size) + 0.5) * scale - 0.5
    weights = np.maximum(0, 1 - np.abs(np.arange(length) - centres[:, None]) / max(scale, 1))
    return weights / weights.sum(axis=1, keepdims=True)


def _jitter_reference(image, brightness, contrast, saturation, hue, order=(0, 1, 2, 3)):
    def luma(x):
        return (x @ LUMA)[..., None]

    def shift_hue(x):
        hsv = rgb_to_hsv(x)
        hsv[..., 0] = np.mod(hsv[..., 0] + hue, 1.0)
        return hsv_to_rgb(hsv)

    ops = (
        lambda x: x * brightness,
        lambda x: (x - luma(x).mean()) * contrast + luma(x).mean(),
        lambda x: luma(x) + saturation * (x - luma(x)),
        shift_hue,
    )
    for op in order:
        image = np.clip(ops[op](image), 0, 1)
    return image


def _blur_reference(image, sigma, kernel_size):
    """The 2-D blur: one `K x K` kernel, reflect padding (SciPy's `mirror`)."""
    offsets = np.arange(kernel_size) - kernel_size // 2
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2)
    kernel = np.outer(kernel, kernel) / kernel.sum() ** 2
    channels = [scipy.ndimage.correlate(image[..., c], kernel, mode="mirror") for c in range(3)]
    return np.stack(channels, axis=-1)


def _reference_views(images, params, augment, image_sizes=None):
    views = []
    for index, image in enumerate(np.asarray(images, "float64") / 255):
        p = {name: np.asarray(value)[index] for name, value in params.items()}
        height, width = image.shape[:2] if image_sizes is None else image_sizes[index]
        y1, x1, y2, x2 = p["crop_box"] * [height, width, height, width]
        rows = _resampling(y1, y2, height, augment.image_size)
        columns = _resampling(x1, x2, width, augment.image_size)
        view = np.einsum("oi,ijc,pj->opc", rows, image[:height, :width], columns, optimize=True)
        view = view[:, ::-1] if p["flip"] else view
        factors = [p[name] for name in JITTER_OPS]
        view = _jitter_reference(view, *factors, p["jitter_order"].astype(int))
        view = np.repeat(view @ LUMA, 3).reshape(view.shape) if p["grayscale"] else view
        if p["blur"]:
            view = _blur_reference(view, p["blur_sigma"], augment.blur_kernel_size)
        views.append(np.where(view >= 0.5, 1 - view, view) if p["solarize"] else view)
    return np.stack(views)


def test_views_and_parameters_have_the_documented_shapes_and_ranges():
    views, params = SimCLRAugment.preset("simclr_cifar10")(PHOTOS, seed=[1, 2])
    assert views.shape == (2, 32, 32, 3) and views.dtype == tf.float32
    assert float(tf.reduce_min(views)) >= 0.0 and float(tf.reduce_max(views)) <= 1.0
    assert set(params) == set(PARAMETERS)
    assert params["crop_box"].shape == (2, 4) and params["jitter_order"].shape == (2, 4)
    assert all(params[name].shape == (2,) for name in PARAMETERS if params[name].shape.rank == 1)
    assert all(params[name].dtype == tf.float32 for name in PARAMETERS)


def test_the_returned_parameters_reproduce_every_view():
    # Every op on, jitter in a random order per image: the float64 reference made
    # from the returned parameters alone gives the same views.
    augment = dataclasses.replace(
        NOTHING,
        crop_scale=(0.05, 1.0),
        crop_ratio=(0.5, 2.0),
        flip_probability=0.5,
        jitter_probability=1.0,
        brightness=0.8,
        contrast=0.8,
        saturation=0.8,
        hue=0.2,
        grayscale_probability=0.25,
        blur_probability=0.5,
        solarize_probability=0.25,
    )
    draws = [augment(PHOTOS, seed=[0, index]) for index in range(6)]
    views = np.concatenate([views for views, _ in draws])
    params = {name: np.concatenate([p[name] for _, p in draws]) for name in PARAMETERS}
    images = np.concatenate([PHOTOS] * len(draws))
    expected = _reference_views(images, params, augment)
    np.testing.assert_allclose(views, expected, atol=2e-4)
    for name in ("flip", "grayscale", "blur", "solarize"):  # each was exercised both ways
        assert 0 < params[name].sum() < len(images), name
    # The order matters and is the returned one: in the fixed order, most views miss.
    assert len({tuple(order) for order in params["jitter_order"]}) >= 6
    fixed = {**params, "jitter_order": np.tile(range(4), (len(images), 1))}
    misses = np.abs(_reference_views(images, fixed, augment) - expected).max(axis=(1, 2, 3))
    assert np.mean(misses > 2e-3) > 0.5


def test_the_crop_is_tf_image_resize_with_antialiasing_of_the_box():
    # The whole image: exactly what the probes get from `tf.image.resize(antialias=True)`.
    views, _ = NOTHING(PHOTOS, seed=[0, 0])
    np.testing.assert_allclose(views, _resized(), atol=1e-5)
    # Any box: TensorFlow's antialiased resampler, scaled and translated onto it.
    images = tf.constant(PHOTOS[:1, :300], tf.float32)
    for box in ([0.1, 0.2, 0.7, 0.9], [0.0, 0.0, 0.1, 0.3], [0.5, 0.62, 1.0, 1.0]):
        y1, x1, y2, x2 = np.array(box) * [300, 384, 300, 384]
        scale = [32 / (y2 - y1), 32 / (x2 - x1)]
        expected = tf.raw_ops.ScaleAndTranslate(
            images=images,
            size=[32, 32],
            scale=scale,
            translation=[-y1 * scale[0], -x1 * scale[1]],
            kernel_type="triangle",
            antialias=True,
        )
        np.testing.assert_allclose(resized_crop(images, [box], 32), expected, atol=1e-3)


def test_on_a_non_square_image_the_crop_ratio_and_area_are_drawn_in_pixels():
    # 48 x 96 pixels: the ratio width / height is log-uniform over crop_ratio in
    # pixels (drawn in fractions of the sides, it would be twice that).
    augment = dataclasses.replace(
        NOTHING, image_size=8, crop_scale=(0.05, 0.3), crop_ratio=(3 / 4, 4 / 3)
    )
    _, params = augment(BLANK, seed=[3, 1])
    y1, x1, y2, x2 = params["crop_box"].numpy().T
    log_ratio = np.log((x2 - x1) * 96 / ((y2 - y1) * 48))
    low, high = np.log(augment.crop_ratio)
    assert np.all((log_ratio >= low - 1e-5) & (log_ratio <= high + 1e-5))
    assert scipy.stats.kstest((log_ratio - low) / (high - low), "uniform").pvalue > 0.01
    area = (x2 - x1) * (y2 - y1)
    assert np.all((area >= 0.05 - 1e-6) & (area <= 0.3 + 1e-6))
    # Where no draw fits, torchvision's fallback: the centre part within crop_ratio.
    whole = dataclasses.replace(augment, crop_scale=(1.0, 1.0), crop_ratio=(1.0, 1.0))
    _, params = whole(BLANK, seed=[3, 1])
    np.testing.assert_allclose(params["crop_box"], [[0, 0.25, 1, 0.75]] * len(BLANK), atol=1e-6)


def test_crops_reach_every_side_of_the_image():
    augment = dataclasses.replace(NOTHING, image_size=8, crop_scale=(0.08, 1.0))
    _, params = augment(BLANK, seed=[3, 2])
    y1, x1, y2, x2 = params["crop_box"].numpy().T
    assert y1.min() < 0.005 and x1.min() < 0.005 and y2.max() > 0.995 and x2.max() > 0.995
    # In pixels: a white border row or column is seen by some views on each side.
    for side in (np.s_[:, :1], np.s_[:, -1:], np.s_[:, :, :1], np.s_[:, :, -1:]):
        images = BLANK.copy()
        images[side] = 255
        views, _ = augment(images, seed=[3, 2])
        assert 0 < np.mean(views.numpy().max(axis=(1, 2, 3)) > 0.2) < 1


def test_images_padded_into_a_batch_give_the_views_they_give_alone():
    augment = AUGMENTATION_PRESETS["simclr_cifar10"]
    alone, params = augment(PHOTOS[:, :200, :300], seed=[5, 0])
    canvas = np.zeros((2, 320, 320, 3), "uint8")
    canvas[:, :200, :300] = PHOTOS[:, :200, :300]
    padded, padded_params = augment(canvas, seed=[5, 0], image_sizes=[[200, 300]] * 2)
    np.testing.assert_allclose(padded, alone, atol=1e-5)
    np.testing.assert_allclose(padded_params["crop_box"], params["crop_box"], atol=1e-6)
    expected = _reference_views(canvas, params, augment, image_sizes=[(200, 300)] * 2)
    np.testing.assert_allclose(padded, expected, atol=2e-4)
    # The same through `augment_pairs`, which reads each image's size from "image_size".
    dataset = tf.data.Dataset.from_tensor_slices({"image": canvas, "image_size": [[200, 300]] * 2})
    batch = next(iter(augment_pairs(dataset.batch(2), augment, seed=5)))
    assert "image_size" not in batch
    seed = tf.random.experimental.stateless_fold_in(tf.constant([5, 0], tf.int64), 0)
    np.testing.assert_allclose(batch["view1"], augment(PHOTOS[:, :200, :300], seed)[0], atol=1e-5)


def test_the_returned_flip_and_grayscale_flags_match_the_pixels():
    augment = dataclasses.replace(NOTHING, flip_probability=0.5, grayscale_probability=0.5)
    draws = [augment(PHOTOS, seed=[3, index]) for index in range(8)]
    flips = np.concatenate([params["flip"] for _, params in draws])
    grays = np.concatenate([params["grayscale"] for _, params in draws])
    assert 0 < flips.sum() < 16 and 0 < grays.sum() < 16
    views = np.concatenate([views for views, _ in draws])
    expected = np.concatenate([_resized()] * 8)
    for view, image, flip, gray in zip(views, expected, flips, grays, strict=True):
        image = image[:, ::-1] if flip else image
        if gray:
            np.testing.assert_allclose(view, np.repeat(image @ LUMA, 3).reshape(view.shape), 1e-5)
        else:
            np.testing.assert_allclose(view, image, atol=1e-5)


def test_the_jitter_order_is_a_uniform_random_permutation_and_fixed_without_jitter():
    _, params = dataclasses.replace(NOTHING, image_size=8, jitter_probability=0.8)(BLANK, [0, 3])
    orders, jitter = params["jitter_order"].numpy().astype(int), params["jitter"].numpy()
    assert all(sorted(order) == [0, 1, 2, 3] for order in orders)
    assert np.all(orders[jitter == 0] == [0, 1, 2, 3])
    counts = [
        np.sum(np.all(orders[jitter == 1] == order, axis=1))
        for order in itertools.permutations(range(4))
    ]
    assert scipy.stats.chisquare(counts).pvalue > 0.01


def test_the_returned_jitter_factors_reproduce_the_colours_in_the_fixed_order():
    augment = dataclasses.replace(NOTHING, jitter_probability=1.0, random_jitter_order=False)
    views, params = augment(PHOTOS, seed=[7, 0])
    factors = [params[name].numpy() for name in JITTER_OPS]
    assert np.all(params["jitter"].numpy() == 1.0) and not np.allclose(factors[0], 1.0)
    assert np.all(params["jitter_order"].numpy() == [0, 1, 2, 3])
    for index, (view, image) in enumerate(zip(views.numpy(), _resized(), strict=True)):
        expected = _jitter_reference(image, *(factor[index] for factor in factors))
        np.testing.assert_allclose(view, expected, atol=2e-4)
    # Without jitter the factors are the identity.
    _, params = NOTHING(PHOTOS, seed=[7, 0])
    assert params["brightness"].numpy().tolist() == [1.0, 1.0]
    assert params["hue"].numpy().tolist() == [0, 0]


def test_blur_smooths_with_the_returned_sigma_and_solarize_inverts_bright_pixels():
    blur = dataclasses.replace(NOTHING, blur_probability=1.0, blur_sigma=(1.5, 2.0))
    views, params = blur(PHOTOS, seed=[0, 0])
    assert np.all((params["blur_sigma"].numpy() >= 1.5) & (params["blur_sigma"].numpy() <= 2.0))
    sharp = _resized()
    for view, image, sigma in zip(views.numpy(), sharp, params["blur_sigma"].numpy(), strict=True):
        np.testing.assert_allclose(
            view, _blur_reference(image, sigma, blur.blur_kernel_size), atol=1e-5
        )
    solarize = dataclasses.replace(NOTHING, solarize_probability=1.0)
    views, params = solarize(PHOTOS, seed=[0, 0])
    np.testing.assert_allclose(views, np.where(sharp >= 0.5, 1 - sharp, sharp), atol=1e-5)
    assert params["solarize"].numpy().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("kernel_size", [9, 23])
def test_the_separable_blur_is_the_2d_blur_eagerly_in_a_dataset_map_and_under_xla(kernel_size):
    images = np.random.default_rng(0).uniform(size=(3, 40, 56, 3)).astype("float32")
    sigma = np.array([0.1, 1.0, 2.0], "float32")
    expected = [_blur_reference(i, s, kernel_size) for i, s in zip(images, sigma, strict=True)]

    def blur(images, sigma):
        return gaussian_blur(images, sigma, kernel_size)

    dataset = tf.data.Dataset.from_tensors((images, sigma)).map(blur)
    xla = tf.function(blur, jit_compile=True)
    for blurred in (blur(images, sigma), next(iter(dataset)), xla(images, sigma)):
        np.testing.assert_allclose(blurred, expected, atol=1e-5)


def test_the_blur_is_about_as_fast_under_xla_as_without_at_224_pixels():
    # A depthwise convolution with one kernel per image took ~100x longer under XLA.
    images, sigma = tf.random.uniform([8, 224, 224, 3]), tf.fill([8], 1.5)
    timings = []
    for jit_compile in (False, True):
        blur = tf.function(lambda x, s: gaussian_blur(x, s, 23), jit_compile=jit_compile)
        blur(images, sigma)
        seconds = []
        for _ in range(3):
            start = time.perf_counter()
            blur(images, sigma).numpy()
            seconds.append(time.perf_counter() - start)
        timings.append(min(seconds))
    assert timings[1] < 4 * timings[0], timings


def test_probabilities_are_respected():
    _, params = SimCLRAugment(image_size=8)(BLANK, seed=[0, 9])
    for name, probability in (("flip", 0.5), ("jitter", 0.8), ("grayscale", 0.2), ("blur", 0.0)):
        assert abs(params[name].numpy().mean() - probability) < 0.04, name


def test_the_presets_follow_their_papers():
    simclr = AUGMENTATION_PRESETS["simclr_imagenet"]  # jitter strength 1.0
    assert (simclr.brightness, simclr.contrast, simclr.saturation, simclr.hue) == (0.8,) * 3 + (
        0.2,
    )
    assert simclr.blur_probability == 0.5 and simclr.blur_kernel_size == 23
    assert (
        AUGMENTATION_PRESETS["mocov2_imagenet"].crop_scale
        == AUGMENTATION_PRESETS["simsiam_cifar10"].crop_scale
        == (0.2, 1)
    )
    assert all(augment.random_jitter_order for augment in AUGMENTATION_PRESETS.values())


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
            for name in PARAMETERS:
                np.testing.assert_array_equal(batch[f"params{view}"][name], params[name])
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


def test_a_grayscale_image_gets_the_views_of_its_colour_copy_in_one_channel():
    augment = SimCLRAugment.preset("simclr_cifar10")
    gray = np.round(PHOTOS @ LUMA).astype("uint8")[..., None]
    views, params = augment(gray, seed=[4, 1])
    colour, colour_params = augment(np.repeat(gray, 3, axis=-1), seed=[4, 1])
    assert views.shape == (len(PHOTOS), 32, 32, 1)
    for name, value in params.items():
        np.testing.assert_array_equal(value, colour_params[name], err_msg=name)
    # Jitter, grayscale and solarisation keep the three channels of a gray image equal.
    np.testing.assert_allclose(colour, np.repeat(views, 3, axis=-1), atol=1e-5)
    assert np.ptp(views) > 0.5


def test_an_int_seed_is_a_pair_and_no_seed_draws_fresh_views():
    augment = SimCLRAugment.preset("simclr_cifar10")
    np.testing.assert_array_equal(augment(PHOTOS, 5)[0], augment(PHOTOS, seed=[5, 0])[0])
    assert not np.allclose(augment(PHOTOS)[0], augment(PHOTOS)[0])
    tf.random.set_seed(1)
    first = augment(PHOTOS)[0]
    tf.random.set_seed(1)
    np.testing.assert_array_equal(augment(PHOTOS)[0], first)
    fresh = tf.data.Dataset.from_tensors(PHOTOS).repeat(2).map(lambda x: augment(x)[0])
    assert not np.allclose(*list(fresh))
    for seed, error in (
        (True, TypeError),
        (1.5, TypeError),
        ("7", TypeError),
        ([1.0, 2.0], TypeError),
        ({"seed": 1}, TypeError),
        ([1, 2, 3], ValueError),
    ):
        with pytest.raises(error, match="`seed` must be an int, a pair of ints or None"):
            augment(PHOTOS, seed)


@pytest.mark.parametrize(
    "images, error, message",
    [
        (np.zeros((4, 4)), ValueError, "images"),
        (np.zeros((2, 4, 4, 2)), ValueError, "3 or 1 channels; got shape \\(2, 4, 4, 2\\)\\.$"),
        (np.zeros((2, 4, 4, 4)), ValueError, "drop the alpha channel"),
        (np.zeros((5, 4, 4), "uint8"), ValueError, "got shape \\(5, 4, 4\\) .*a channel axis"),
        (np.zeros((2, 4, 4, 3), "int32"), TypeError, "uint8 or float"),
    ],
)
def test_bad_images_raise(images, error, message):
    with pytest.raises(error, match=message):
        SimCLRAugment()(images, seed=[0, 0])


@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(image_size=0), "image_size"),
        (dict(image_size=True), "image_size"),
        (dict(image_size=32.0), "image_size"),
        (dict(crop_scale=(0.5, 0.2)), "crop_scale"),
        (dict(crop_scale=(0.0, 1.0)), "crop_scale"),
        (dict(crop_ratio=(0.0, 1.0)), "crop_ratio"),
        (dict(blur_probability=1.5), "blur_probability"),
        (dict(blur_sigma=(0.0, 1.0)), "blur_sigma"),
        (dict(brightness=1.2), "brightness"),
        (dict(hue=0.6), "hue"),
        # A bool or text is not a probability or a bound.
        (dict(flip_probability=True), "flip_probability"),
        (dict(flip_probability="0.5"), "flip_probability"),
        (dict(crop_scale=(True, True)), "`crop_scale` must be two numbers"),
        (dict(crop_scale=(0.5,)), "`crop_scale` must be two numbers"),
        (dict(value_range=(0, True)), "`value_range` must be two numbers"),
        (dict(value_range=None), "`value_range` must be two numbers"),
    ],
)
def test_bad_settings_raise(setting, message):
    with pytest.raises(ValueError, match=message):
        SimCLRAugment(**setting)


def test_flags_given_as_text_raise_and_numpy_settings_are_taken():
    for name in ("random_jitter_order", "jit_compile"):
        with pytest.raises(TypeError, match=f"`{name}` must be True or False; got 'no'"):
            SimCLRAugment(**{name: "no"})
    SimCLRAugment(value_range=np.array([0.0, 255.0]), flip_probability=np.float32(0.3))


def test_an_unknown_preset_raises():
    with pytest.raises(ValueError, match="preset"):
        SimCLRAugment.preset("byol")


def test_bad_image_sizes_raise():
    augment, images = SimCLRAugment(image_size=8), np.zeros((2, 16, 16, 3), "uint8")
    with pytest.raises(ValueError, match="image_sizes"):
        augment(images, seed=[0, 0], image_sizes=[16, 16])
    with pytest.raises(tf.errors.InvalidArgumentError, match="image_sizes"):
        augment(images, seed=[0, 0], image_sizes=[[16, 16], [16, 17]])


def test_float_images_outside_0_1_are_refused_eagerly_and_in_a_dataset_map():
    augment = SimCLRAugment(image_size=8)
    for images, values in ((PHOTOS.astype("float32"), "0, 255"), (PHOTOS / 127.5 - 1, "-1, 1")):
        with pytest.raises(
            ValueError, match=f"float `images` must lie in .*got values in \\[{values}\\]"
        ):
            augment(images, seed=0)
    mapped = tf.data.Dataset.from_tensors(PHOTOS.astype("float32")).map(lambda x: augment(x, 0)[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="float `images` must lie in"):
        next(iter(mapped))
    # Overshoot within the slack, as a bicubic resize leaves, is accepted.
    overshoot = np.clip(PHOTOS / 255.0 * 1.2 - 0.1, -0.2, 1.2).astype("float32")
    assert np.ptp(augment(overshoot, seed=0)[0]) > 0.5


def test_pairs_of_images_and_labels_read_as_a_dict_and_other_structures_are_refused():
    labels = np.array([3, 7])
    supervised = tf.data.Dataset.from_tensor_slices((PHOTOS, labels)).batch(2)
    as_dict = tf.data.Dataset.from_tensor_slices({"image": PHOTOS, "label": labels}).batch(2)
    augment = SimCLRAugment(image_size=8)
    got, expected = (next(iter(augment_pairs(data, augment))) for data in (supervised, as_dict))
    assert sorted(got) == sorted(expected) == ["label", "params1", "params2", "view1", "view2"]
    for key in ("label", "view1", "view2"):
        np.testing.assert_array_equal(got[key], expected[key])
    for bad in ({"images": PHOTOS}, (PHOTOS, labels, labels)):
        with pytest.raises(TypeError, match="`dataset` must yield images, `\\(images, labels\\)`"):
            augment_pairs(tf.data.Dataset.from_tensor_slices(bad), augment)
