"""SimCLR views of JPEG files: only each view's crop window is decoded, and the view is
what the fully decoded image gives with the returned box; uint8 views sent to the model
train it as the float32 ones do, to within their rounding."""

import dataclasses

import keras
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from sklearn.datasets import load_sample_images

from aninfonce_tf.data import image_ops
from aninfonce_tf.data.augment import SimCLRAugment, augment_pairs
from aninfonce_tf.data.datasets import jpeg_encoded, on_canvas, pair_batches, tfds_images
from aninfonce_tf.data.image_ops import pixel_windows
from aninfonce_tf.data.pairs import unit_views
from aninfonce_tf.models import ContrastiveModel

# ImageNet-like files: two 375 x 500 crops of scikit-learn's photos, a 500 x 333 one,
# at JPEG quality 90 (subsampled chroma, as most ImageNet files).
PHOTOS = load_sample_images().images
PIXELS = [PHOTOS[0][:375, :500], PHOTOS[1][20:395, 100:600], PHOTOS[1][:333, 40:540]]
FILES = [tf.io.encode_jpeg(image, quality=90).numpy() for image in PIXELS]
# The crop and resize alone: every other op off.
CROP_ONLY = SimCLRAugment(
    image_size=64, flip_probability=0.0, jitter_probability=0.0, grayscale_probability=0.0
)


def _decoded(file: bytes) -> np.ndarray:
    return tf.io.decode_jpeg(file, channels=3).numpy()


def _crop_then_resize(file: bytes, box: np.ndarray, size: int) -> np.ndarray:
    """The fully decoded image cropped to `box` (fractions, snapped to whole pixels)
    and resized as the views are: the reference."""
    image = _decoded(file)
    top, left, height, width = _window(box, image.shape)
    crop = image[top : top + height, left : left + width]
    return tf.image.resize(crop, [size, size], antialias=True).numpy() / 255


def _window(box: np.ndarray, shape) -> list[int]:
    """`top, left, height, width` of a snapped box (fractions) of an image `shape`."""
    height, width = shape[:2]
    top, left, bottom, right = np.rint(box * [height, width, height, width]).astype(int)
    return [top, left, bottom - top, right - left]


def test_a_view_of_a_jpeg_is_the_decoded_image_cropped_to_the_returned_box_and_resized():
    views, params = CROP_ONLY(tf.constant(FILES), seed=[4, 2])
    assert views.shape == (3, 64, 64, 3) and views.dtype == tf.float32
    boxes = params["crop_box"].numpy()
    for file, pixels, box, view in zip(FILES, PIXELS, boxes, views.numpy(), strict=True):
        # The returned box is the window decoded, exactly.
        window = tf.image.decode_and_crop_jpeg(file, _window(box, pixels.shape), channels=3)
        resized = tf.image.resize(window, [64, 64], antialias=True).numpy() / 255
        np.testing.assert_allclose(view, resized, atol=1e-6)
        # Against the fully decoded image cropped to that box: equal but where the
        # window's first and last columns reach (libjpeg's chroma upsampling there
        # lacks the neighbouring column: `image_ops.jpeg_crops`).
        reference = _crop_then_resize(file, box, 64)
        difference = np.abs(view - reference)
        assert np.max(difference[:, 2:-2]) < 1e-5
        assert np.max(difference) < 16 / 255 and np.mean(difference) < 0.1 / 255


def test_decode_and_crop_returns_the_pixels_of_the_full_decode_but_in_its_edge_columns():
    rng = np.random.default_rng(0)
    for file, pixels in zip(FILES, PIXELS, strict=True):
        image = _decoded(file)
        height, width = pixels.shape[:2]
        for _ in range(10):
            rows, columns = rng.integers(8, height), rng.integers(8, width)
            top, left = rng.integers(0, height - rows + 1), rng.integers(0, width - columns + 1)
            window = tf.image.decode_and_crop_jpeg(
                file, [top, left, rows, columns], channels=3
            ).numpy()
            expected = image[top : top + rows, left : left + columns]
            np.testing.assert_array_equal(window[:, 1:-1], expected[:, 1:-1])
            assert np.max(np.abs(window.astype(int) - expected)) <= 16


def test_the_returned_boxes_are_whole_pixel_windows_within_half_a_pixel_of_the_decoded_draw():
    # The same seed draws the same parameters from a file as from its decoded pixels
    # (on a canvas, the decoded path), but the box is snapped to the window decoded.
    augment = dataclasses.replace(SimCLRAugment.preset("simclr_imagenet"), image_size=32)
    _, from_files = augment(tf.constant(FILES[:2]), seed=[1, 5])
    placed = [on_canvas({"image": image}, 512) for image in (_decoded(f) for f in FILES[:2])]
    canvases = tf.stack([p["image"] for p in placed])
    sizes = tf.stack([p["image_size"] for p in placed])
    _, from_pixels = augment(canvases, seed=[1, 5], image_sizes=sizes)
    for name in from_pixels:
        if name != "crop_box":
            np.testing.assert_array_equal(from_files[name], from_pixels[name], err_msg=name)
    shapes = np.array([_decoded(f).shape[:2] for f in FILES[:2]], "float32")
    scale = np.concatenate([shapes, shapes], axis=1)
    snapped = from_files["crop_box"].numpy() * scale
    np.testing.assert_allclose(snapped, np.rint(snapped), atol=1e-3)
    # Start and extent each round to the nearest pixel: every edge moves at most 1.
    assert np.max(np.abs(snapped - from_pixels["crop_box"].numpy() * scale)) <= 1.0 + 1e-3
    assert np.all(snapped[:, 2:] - snapped[:, :2] >= 1)


def test_pixel_windows_keep_every_window_inside_its_image_and_at_least_one_pixel():
    boxes = tf.constant([[0.0, 0.0, 1e-4, 1.0], [0.9995, 0.5, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]])
    sizes = tf.constant([[10.0, 7.0], [10.0, 7.0], [3.0, 5.0]])
    snapped, windows = pixel_windows(boxes, sizes)
    top, left, height, width = windows.numpy().T
    assert np.all(height >= 1) and np.all(width >= 1)
    assert np.all(top + height <= sizes.numpy()[:, 0]) and np.all(left + width <= sizes[:, 1])
    assert windows.numpy()[2].tolist() == [0, 0, 3, 5]
    np.testing.assert_allclose(snapped[2], [0, 0, 1, 1])


def test_jpeg_views_are_static_and_the_same_eagerly_and_in_a_parallel_map_per_seed():
    augment = dataclasses.replace(SimCLRAugment.preset("simclr_imagenet"), image_size=48)
    eager, eager_params = augment(tf.constant(FILES), seed=[3, 1])
    files = tf.data.Dataset.from_tensors(tf.constant(FILES)).repeat(3)
    mapped = files.map(lambda batch: augment(batch, seed=[3, 1]), num_parallel_calls=3)
    assert mapped.element_spec[0].shape == (3, 48, 48, 3)
    for views, params in mapped:
        np.testing.assert_allclose(views, eager, atol=1e-6)
        for name in params:
            np.testing.assert_array_equal(params[name], eager_params[name])
    other, _ = augment(tf.constant(FILES), seed=[3, 2])
    assert not np.allclose(other, eager)
    one, one_params = augment(FILES[1], seed=[3, 1])  # a scalar string: one view
    assert one.shape == (48, 48, 3) and one_params["crop_box"].shape == (4,)
    # A TPU host's pipeline, without XLA, gives the same views.
    no_xla, _ = dataclasses.replace(augment, jit_compile=False)(tf.constant(FILES), seed=[3, 1])
    np.testing.assert_allclose(no_xla, eager, atol=1e-5)


def test_jpeg_pairs_of_tfds_imagenet_have_static_shapes_and_a_grayscale_file_gives_colour():
    gray = tf.io.encode_jpeg(np.full((40, 60, 1), 90, "uint8")).numpy()
    pairs = pair_batches(
        {"image": np.array([*FILES, gray], object), "label": np.arange(4)},
        CROP_ONLY,
        batch_size=4,
        shuffle=0,
    )
    spec = pairs.element_spec
    assert spec["view1"].shape == (4, 64, 64, 3) and spec["params1"]["crop_box"].shape == (4, 4)
    batch = next(iter(pairs))
    np.testing.assert_allclose(batch["view1"][3], 90 / 255, atol=1.01 / 255)
    assert jpeg_encoded("imagenet2012") and not jpeg_encoded("cifar10")
    with tfds.testing.mock_data(num_examples=4):
        example = next(iter(tfds_images("imagenet2012", "train", decode=False)))
    view, _ = CROP_ONLY(example["image"], seed=0)
    assert view.shape == (64, 64, 3)


def _pairs(view_dtype: str) -> tf.data.Dataset:
    batches = tf.data.Dataset.from_tensors(tf.constant(FILES * 2)).repeat(2)
    augment = dataclasses.replace(SimCLRAugment.preset("simclr_imagenet"), image_size=32)
    return augment_pairs(batches, augment, seed=7, view_dtype=view_dtype)


def test_uint8_views_are_the_float_views_rounded_to_a_level_and_the_model_reads_them_back():
    floats, uint8s = (next(iter(_pairs(dtype))) for dtype in ("float32", "uint8"))
    assert uint8s["view1"].dtype == tf.uint8 and floats["view1"].dtype == tf.float32
    for key in ("view1", "view2"):
        np.testing.assert_array_equal(uint8s[key], np.rint(floats[key].numpy() * 255))
    encoder = keras.Sequential(
        [keras.Input((32, 32, 3)), keras.layers.Flatten(), keras.layers.Dense(4)]
    )
    model = ContrastiveModel(encoder)
    from_uint8 = model(uint8s["view1"]).numpy()  # the encoder's features
    quantised = np.rint(floats["view1"].numpy() * 255).astype("float32") / 255
    # The model's input from uint8 views is the float32 views to within 1/510: exactly
    # their rounding to 8 bits.
    np.testing.assert_allclose(model(quantised), from_uint8, atol=1e-5)
    assert np.max(np.abs(quantised - floats["view1"])) <= 0.5 / 255 + 1e-7


def test_training_on_uint8_views_follows_training_on_the_float_views():
    def trained(view_dtype):
        keras.utils.set_random_seed(0)
        encoder = keras.Sequential(
            [keras.Input((32, 32, 3)), keras.layers.Flatten(), keras.layers.Dense(8)]
        )
        start = encoder.get_weights()[0]
        model = ContrastiveModel(encoder)
        model.compile(keras.optimizers.SGD(0.1), jit_compile=False)
        history = model.fit(_pairs(view_dtype), epochs=1, verbose=0)
        return history.history["loss"][0], encoder.get_weights()[0] - start

    loss32, update32 = trained("float32")
    loss8, update8 = trained("uint8")
    # Inputs within 1/510 of each other: the loss within 1 % and the kernel's update
    # within 5 % (0.14 % and 1.9 % measured); uint8 views read as [0, 255] would move
    # both by far more.
    assert abs(loss8 - loss32) < 1e-2 * abs(loss32)
    assert np.linalg.norm(update8 - update32) < 0.05 * np.linalg.norm(update32)


def test_without_xla_the_views_are_the_xla_views_eagerly_and_in_a_parallel_map():
    augment = dataclasses.replace(
        SimCLRAugment.preset("simclr_imagenet"), image_size=48, solarize_probability=0.5
    )
    plain = dataclasses.replace(augment, jit_compile=False)
    files = tf.constant(FILES * 4)  # 12 views: every jitter order's hue position
    fused, params = augment(files, seed=[5, 1])
    assert len(set((params["jitter_order"].numpy() == 3).argmax(axis=1))) >= 3
    assert 0 < params["blur"].numpy().sum() < 12 and params["solarize"].numpy().sum() > 0
    np.testing.assert_allclose(plain(files, seed=[5, 1])[0], fused, atol=1e-5)
    batches = tf.data.Dataset.from_tensors(files).repeat(2)
    for views, _ in batches.map(lambda batch: plain(batch, seed=[5, 1]), num_parallel_calls=2):
        np.testing.assert_allclose(views, fused, atol=1e-5)


def test_without_xla_no_image_is_computed_only_to_be_discarded():
    # Each colour op runs once per slot with per-image factors; a per-image `tf.where`
    # over whole images (an op computed for every image, kept for some) is what made
    # the views without XLA 5x slower than with it.
    augment = SimCLRAugment.preset("simclr_imagenet")
    params = augment.parameters(4, seed=0)
    crops = tf.TensorSpec([4, 224, 224, 3], tf.float32)
    graph = image_ops._PIXEL_OPS.get_concrete_function(
        crops, params, True, augment.blur_kernel_size, False
    ).graph
    picks = [
        op.name
        for op in graph.get_operations()
        if op.type in ("Select", "SelectV2")
        and op.outputs[0].shape.rank == 4
        and op.inputs[0].shape.num_elements() != op.outputs[0].shape.num_elements()
    ]
    assert picks == []


def test_only_uint8_images_are_divided_by_255_not_uint8_tokens():
    # A model of byte tokens: uint8 `[B, L]`, read as they are.
    tokens = keras.Sequential(
        [keras.Input((5,), dtype="uint8"), keras.layers.Embedding(256, 2), keras.layers.Flatten()]
    )
    batch = np.array([[0, 1, 2, 254, 255]], "uint8")
    model = ContrastiveModel(tokens)
    np.testing.assert_array_equal(model(batch), tokens(batch))
    assert unit_views(tf.constant(batch)).dtype == tf.uint8
    images = np.full((1, 2, 2, 3), 51, "uint8")
    np.testing.assert_allclose(unit_views(tf.constant(images)), 0.2)
