"""`aninfonce-tf train` on a user's images: an image folder end to end with the
package's CNN and a keras.applications backbone, resume, refusals in one line before a
run directory, the input range kept from the views to the export, and the package's
`--help` and `--version` without TensorFlow."""

import json
import re
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import recipes
from aninfonce_tf.backbones import backbone, expects_pixel_values, for_unit_images
from aninfonce_tf.configs.train import TrainConfig
from aninfonce_tf.data.augment import SimCLRAugment, augment_pairs
from aninfonce_tf.data.user_images import check_images_source, read_images


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """36 PNGs of two classes (reddish and bluish noise), of two sizes."""
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    for name, colour in (("red", (220, 40, 40)), ("blue", (40, 40, 220))):
        (root / name).mkdir()
        for i in range(18):
            side = 40 if i % 2 else 28
            image = (rng.uniform(0.4, 1.0, (side, side, 1)) * np.array(colour)).astype("uint8")
            tf.io.write_file(str(root / name / f"{i}.png"), tf.io.encode_png(image))
    return root


def _train(argv):
    return recipes.run("train", argv, prog="aninfonce-tf train")


FAST = ["--steps", "20", "--eval-every", "10", "--batch-size", "16", "--probe-size", "6"]
FAST += ["--features", "16", "--projector-units", "16,8"]


def test_an_image_folder_trains_scores_exports_and_resumes(folder, tmp_path, capsys):
    out = tmp_path / "run"
    _train(["--data", str(folder), "--backbone", "small_cnn", "--out", str(out), *FAST])
    results = json.loads((out / "results.json").read_text())
    variant = results["variants"]["aninfonce"]
    assert variant["steps"] == 20
    assert {"class_accuracy", "augmentation_readout"} <= set(variant["backbone"])
    assert results["run"]["images"] == 36 and results["run"]["classes"] == ["blue", "red"]
    assert any((out / "tensorboard" / "aninfonce").iterdir())
    loaded = tf.saved_model.load(str(out / "aninfonce" / "encoder"))
    views = np.random.default_rng(1).uniform(size=(3, 32, 32, 3)).astype("float32")
    assert tuple(loaded.serve(views).shape) == (3, 16)
    capsys.readouterr()
    _train(["--data", str(folder), "--backbone", "small_cnn", "--out", str(out), *FAST])
    assert "not trained again" in capsys.readouterr().out


def test_a_keras_applications_backbone_trains_on_unit_views(folder, tmp_path):
    out = tmp_path / "run"
    flags = ["--data", str(folder), "--backbone", "MobileNetV3Small", "--out", str(out)]
    assert _train([*flags, *FAST, "--export", "false"])["aninfonce"]["steps"] == 20
    model = keras.saving.load_model(out / "aninfonce" / "model.keras")
    assert not expects_pixel_values(model.encoder)  # the Rescaling(255) comes first


def test_a_rescaling_first_backbone_sees_pixel_values():
    mobilenet = keras.applications.MobileNetV3Small(
        input_shape=(32, 32, 3), weights=None, include_top=False, pooling="avg"
    )
    assert expects_pixel_values(mobilenet)
    views = np.random.default_rng(0).uniform(size=(2, 32, 32, 3)).astype("float32")
    wrapped = for_unit_images(mobilenet)
    np.testing.assert_allclose(wrapped(views), mobilenet(views * 255.0), rtol=1e-5, atol=1e-5)
    with pytest.warns(UserWarning, match=r"for_unit_images"):
        from aninfonce_tf import ContrastiveModel

        ContrastiveModel(mobilenet)
    resnet = backbone("ResNet50", (32, 32, 3))  # no preprocessing of its own: caffe's
    expected = keras.applications.resnet.preprocess_input(views * 255.0)
    np.testing.assert_allclose(resnet.layers[1](views), expected, rtol=1e-5, atol=1e-4)


def test_a_probe_set_smaller_than_its_folds_is_refused_and_zero_means_no_probes():
    with pytest.raises(ValueError, match="`probe_size` must be 0 or at least 3 .*; got 2"):
        TrainConfig(probe_size=2).validate()
    for size in (0, 3):
        TrainConfig(probe_size=size).validate()


@pytest.mark.parametrize(
    "data, message",
    [
        ("{missing}", "no such file or folder"),
        ("tfds:mnist", "mnist is not prepared in .*tfds build mnist"),
        ("{empty}", "holds no images"),
    ],
)
def test_data_that_cannot_be_read_is_one_line_and_no_run_directory(tmp_path, data, message):
    (tmp_path / "empty").mkdir()
    data = data.format(missing=tmp_path / "missing", empty=tmp_path / "empty")
    out = tmp_path / "run"
    argv = ["-m", "aninfonce_tf", "train", "--data", data, "--out", str(out)]
    argv += ["--data-dir", str(tmp_path / "tfds")]
    result = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m aninfonce_tf train: error:")
    assert re.search(message, lines[0]), lines[0]
    assert not out.exists() and result.stdout == ""


def test_arrays_and_their_value_range(tmp_path):
    images = np.random.default_rng(0).uniform(0, 255, (30, 20, 20, 3)).astype("float32")
    path = tmp_path / "images.npz"
    np.savez(path, images=images, labels=np.arange(30) % 3)
    assert check_images_source(str(path), value_range="255") == (30, True)
    with pytest.raises(ValueError, match="--value-range 255"):
        read_images(str(path), 16)
    read = read_images(str(path), 16, value_range="255")
    assert read["image"].dtype == np.uint8 and read["image"].shape == (30, 16, 16, 3)
    np.save(tmp_path / "bad.npy", np.zeros((4, 5)))
    with pytest.raises(ValueError, match=r"\[N, H, W\]"):
        check_images_source(str(tmp_path / "bad.npy"))


def test_float_images_in_0_255_are_refused_when_the_dataset_is_built_or_read_in_their_range():
    images = np.random.default_rng(0).uniform(0, 255, (8, 24, 24, 3)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices(images).batch(4)
    with pytest.raises(ValueError, match=r"value_range=\(0, 255\)"):
        augment_pairs(dataset, SimCLRAugment(image_size=16))
    pairs = augment_pairs(dataset, SimCLRAugment(image_size=16, value_range=(0, 255)))
    view = next(iter(pairs))["view1"].numpy()
    assert view.min() >= 0.0 and view.max() <= 1.0 and view.std() > 0.05
    with pytest.raises(ValueError, match="`value_range` must be"):
        SimCLRAugment(value_range=(-1, 1))


def test_the_export_refuses_or_converts_images_outside_its_range(tmp_path):
    from aninfonce_tf import ContrastiveModel, export_encoder, small_cnn

    model = ContrastiveModel(small_cnn((16, 16, 3), 8))
    unit = tf.saved_model.load(str(export_encoder(model, tmp_path / "unit")))
    pixels = export_encoder(model, tmp_path / "pixels", value_range=(0, 255))
    converting = tf.saved_model.load(str(pixels))
    images = np.random.default_rng(0).uniform(size=(4, 16, 16, 3)).astype("float32")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"must lie in \[0, 1\]"):
        unit.serve(images * 255.0)  # [0, 255] read as [0, 1]: refused, never embedded
    np.testing.assert_allclose(converting.serve(images * 255.0), unit.serve(images), atol=1e-5)
    record = json.loads((pixels / "inputs.json").read_text())
    assert record["value_range"] == [0.0, 255.0]


def test_the_export_converts_to_tflite(tmp_path):
    from aninfonce_tf import ContrastiveModel, export_encoder, small_cnn

    model = ContrastiveModel(small_cnn((16, 16, 3), 8))
    path = export_encoder(model, tmp_path / "encoder")
    converter = tf.lite.TFLiteConverter.from_saved_model(str(path), signature_keys=["serve"])
    interpreter = tf.lite.Interpreter(model_content=converter.convert())
    runner = interpreter.get_signature_runner("serve")
    images = np.random.default_rng(0).uniform(size=(2, 16, 16, 3)).astype("float32")
    (output,) = runner(observations=images).values()
    np.testing.assert_allclose(output, model(images), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_the_package_command_answers_help_and_version_without_tensorflow(flag):
    code = (
        "import sys, time; start = time.perf_counter(); sys.argv = ['aninfonce-tf', "
        f"{flag!r}]; from aninfonce_tf.__main__ import main; main(); "
        "print(time.perf_counter() - start, 'tensorflow' in sys.modules)"
    )
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    seconds, imported = result.stdout.split()[-2:]
    assert imported == "False" and float(seconds) < 1.0
    assert time.perf_counter() - started < 5.0  # the interpreter's start included
    assert ("aninfonce-tf 0.1.0" in result.stdout) == (flag == "--version")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--smoke"], "--mock-data \\(which --smoke sets\\) trains on tfds' random mock"),
        ([], "'cifar10' is not prepared in .*tfds build cifar10"),
    ],
)
def test_a_tfds_recipe_never_trains_on_mock_data_beside_a_data_dir(tmp_path, flags, message):
    out = tmp_path / "run"
    argv = ["-m", "aninfonce_tf", "cifar10", *flags, "--data-dir", str(tmp_path), "--out", str(out)]
    result = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(message, lines[0]), lines
    assert not out.exists()


def test_arrays_out_of_their_range_and_odd_labels_are_refused_or_read_right(tmp_path):
    unit = np.random.default_rng(0).uniform(size=(20, 8, 8, 3)).astype("float32")
    np.save(tmp_path / "signed.npy", unit * 2 - 1)
    with pytest.raises(ValueError, match="below 0"):
        check_images_source(str(tmp_path / "signed.npy"))
    np.save(tmp_path / "unit.npy", unit)
    with pytest.raises(ValueError, match="they look like \\[0, 1\\]; pass --value-range 1"):
        check_images_source(str(tmp_path / "unit.npy"), value_range="255")
    one_hot = np.eye(3, dtype="int64")[np.arange(20) % 3]
    np.savez(tmp_path / "one_hot.npz", images=unit, labels=one_hot)
    assert read_images(str(tmp_path / "one_hot.npz"), 8)["label"].tolist() == [
        i % 3 for i in range(20)
    ]
    np.savez(tmp_path / "strings.npz", images=unit, labels=np.array(["a"] * 20))
    with pytest.raises(ValueError, match="labels must be 20 integers"):
        check_images_source(str(tmp_path / "strings.npz"))


def test_a_backbone_that_cannot_take_the_images_or_mock_data_beside_data_is_one_line(tmp_path):
    with pytest.raises(ValueError, match="--backbone InceptionV3 cannot be built for"):
        TrainConfig(mock_data=True, backbone="InceptionV3").check_inputs()
    with pytest.raises(ValueError, match="--data .* would be ignored"):
        TrainConfig(mock_data=True, data=str(tmp_path)).check_inputs()


def test_a_per_channel_rescaling_is_read_as_pixel_values():
    scaled = keras.Sequential(
        [keras.Input((4, 4, 3)), keras.layers.Rescaling([1 / 58.4, 1 / 57.1, 1 / 57.4])]
    )
    assert expects_pixel_values(scaled)
