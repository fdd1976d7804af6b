"""The VAE-decoder generator: images, training, caching (a damaged cache named with its fix,
runs sharing the cache), the offline error, and the whole image experiment at tiny size."""

import dataclasses
import io
import json
import time
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import runner
from aninfonce_tf.configs import mnist_vae
from aninfonce_tf.data import vae
from tests.support import check_run


def test_digits_are_upsampled_to_28_by_28_in_the_unit_range():
    images = vae.digit_images("digits")
    assert images.shape == (1797, 28, 28, 1)
    assert images.min() == 0.0 and images.max() == 1.0
    # Upsampling keeps the digit: the 8x8 original is the 28x28 image downsampled.
    from sklearn.datasets import load_digits

    original = load_digits().images[:20].reshape(20, -1)
    back = tf.image.resize(images[:20], (8, 8), method="area").numpy().reshape(20, -1)
    correlations = [np.corrcoef(a, b)[0, 1] for a, b in zip(original, back, strict=True)]
    assert min(correlations) > 0.9


def test_a_missing_mnist_says_how_to_prepare_it_within_seconds(tmp_path):
    start = time.perf_counter()
    with pytest.raises(ValueError, match="not prepared.*download_and_prepare.*digits"):
        vae.digit_images("mnist", data_dir=str(tmp_path))
    assert time.perf_counter() - start < 10
    with pytest.raises(ValueError, match="source"):
        vae.digit_images("svhn")


def test_the_vae_learns_and_is_cached(tmp_path, capsys):
    decoder, directory = mnist_vae.trained_decoder(6, steps=300, cache_dir=tmp_path)
    assert "training the VAE" in capsys.readouterr().out
    assert not decoder.trainable
    assert (directory / "reconstructions.png").stat().st_size > 1000
    assert json.loads((directory / "settings.json").read_text())["steps"] == 300
    cached, same = mnist_vae.trained_decoder(6, steps=300, cache_dir=tmp_path)
    assert same == directory and "training the VAE" not in capsys.readouterr().out
    z = np.random.default_rng(0).normal(size=(64, 6)).astype("float32")
    np.testing.assert_allclose(cached(z), decoder(z), rtol=1e-6)
    # Prior samples decode to digit-like images: as bright as the digits on average,
    # and different latents give different images (an untrained decoder gives ~0.5
    # grey for every latent).
    decoded, untrained = np.asarray(decoder(z)), np.asarray(vae.vae_decoder(6)(z))
    assert abs(decoded.mean() - vae.digit_images("digits").mean()) < 0.1
    assert decoded.std(axis=0).mean() > 0.05 > 10 * untrained.std(axis=0).mean()


def test_a_decoder_save_cut_short_leaves_no_cache_to_load(tmp_path, monkeypatch):
    def killed_while_saving(model, path, *args, **kwargs):
        Path(path).write_bytes(b"PK\x03\x04 the first bytes of a .keras zip")
        raise OSError("killed while saving")

    monkeypatch.setattr(keras.Model, "save", killed_while_saving)
    # Its training is not at stake.
    monkeypatch.setattr(vae.VAE, "fit", lambda *args, **kwargs: None)
    with pytest.raises(OSError, match="killed while saving"):
        mnist_vae.trained_decoder(2, steps=1, cache_dir=tmp_path)
    # The next call trains again instead of failing to load a torn decoder.keras; the
    # write's own temporary, which no later write replaces, is gone.
    assert list(tmp_path.glob("*/decoder.keras")) == list(tmp_path.glob("*/.partial-*")) == []
    assert json.loads(next(tmp_path.glob("*/settings.json")).read_text())["steps"] == 1


def _wrong_config(whole: bytes) -> bytes:
    """The whole .keras zip with a `config.json` that is JSON but not a model's."""
    source, damaged = zipfile.ZipFile(io.BytesIO(whole)), io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as target:
        for member in source.infolist():
            wrong = b'{"module": 3, "class_name": "Functional", "config": 7}'
            target.writestr(
                member, wrong if member.filename == "config.json" else source.read(member)
            )
    return damaged.getvalue()


# What a cached decoder.keras may become: `bytes -> bytes`.
DAMAGES = {
    "truncated": lambda whole: whole[: len(whole) // 2],
    "garbage": lambda whole: b"x" * 100,
    "empty": lambda whole: b"",
    "wrong config.json": _wrong_config,
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_cached_decoder_is_named_with_its_fix(tmp_path, monkeypatch, capsys, damage):
    # Its training is not at stake.
    monkeypatch.setattr(vae.VAE, "fit", lambda *args, **kwargs: None)
    config = dataclasses.replace(mnist_vae.PRESETS["digits"], **mnist_vae.SMOKE)
    cache = tmp_path / "vae"
    settings = (config.dim, config.vae_source, config.vae_steps, config.vae_beta, config.seed)
    _, directory = mnist_vae.trained_decoder(*settings, cache_dir=cache)
    path = directory / "decoder.keras"
    path.write_bytes(DAMAGES[damage](path.read_bytes()))
    message = f"the cached VAE decoder {path} does not load .*: delete it"
    with pytest.raises(ValueError, match=message):
        mnist_vae.trained_decoder(*settings, cache_dir=cache)
    # The recipe: one line, no traceback.
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        runner.main(
            mnist_vae, ["--smoke", "--out", str(tmp_path / "run"), "--vae-cache-dir", str(cache)]
        )
    error = capsys.readouterr().err
    assert stop.value.code == 2 and error.count("\n") == 1, error
    assert f"error: the cached VAE decoder {path} does not load" in error
    assert "Traceback" not in error and "File not found" not in error


def test_runs_saving_the_same_vae_at_once_each_put_a_whole_decoder_in_place(tmp_path, monkeypatch):
    # Its training is not at stake.
    monkeypatch.setattr(vae.VAE, "fit", lambda *args, **kwargs: None)
    save, temporaries = keras.Model.save, []

    def save_while_another_run_saves(model, path, *args, **kwargs):
        temporaries.append(Path(path))
        save(model, path, *args, **kwargs)
        if len(temporaries) == 1:  # the first run's file written, not yet renamed
            mnist_vae.trained_decoder(2, steps=1, cache_dir=tmp_path)

    monkeypatch.setattr(keras.Model, "save", save_while_another_run_saves)
    _, directory = mnist_vae.trained_decoder(2, steps=1, cache_dir=tmp_path)
    first, second = temporaries
    assert first != second and first.parent == second.parent == directory
    keras.saving.load_model(directory / "decoder.keras")
    assert sorted(path.name for path in directory.iterdir()) == [
        "decoder.keras",
        "reconstructions.png",
        "settings.json",
    ]


@pytest.mark.slow
def test_the_image_experiment_runs_end_to_end(tmp_path):
    argv = ["--smoke", "--out", str(tmp_path / "run"), "--vae-cache-dir", str(tmp_path / "vae")]
    results = runner.main(mnist_vae, argv)
    for name in ("aninfonce", "infonce"):
        assert results[name]["steps"] == 20
        assert {"linear_r2", "mcc", "block_r2"} <= set(results[name])
    assert len(results["aninfonce"]["lambda_hat"]) == 4
    figures = ["positive_pairs", "per_latent_r2", "curves", "lambda_aninfonce"]
    saved = check_run(tmp_path / "run", figures)  # its schema, its TensorBoard logs
    assert len(saved["run"]["true_concentration"]) == 4
    for png in figures:
        assert (tmp_path / "run" / f"{png}.png").stat().st_size > 1000
    assert list((tmp_path / "vae").glob("*/reconstructions.png"))


def test_mnist_images_come_from_tfds_when_prepared():
    import tensorflow_datasets as tfds

    with tfds.testing.mock_data(num_examples=12):
        images = vae.digit_images("mnist")
    assert images.shape == (12, 28, 28, 1) and images.min() >= 0.0 and images.max() <= 1.0
