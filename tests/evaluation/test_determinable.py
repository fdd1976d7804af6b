"""The supervised check of which readout targets one view determines, the readout
averaged over those, and the check as the image configs run it."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import ContrastiveModel, projection_head
from aninfonce_tf.configs import images, photos, readout_check
from aninfonce_tf.evaluation import determinable
from aninfonce_tf.evaluation.determinable import (
    ALL_TARGETS,
    DeterminableProbeEvaluator,
    balanced_accuracy_interval,
    determinability,
    determinable_readout,
    label_thresholds,
    masked_binary_crossentropy,
)


def _coloured(rng, n):
    return rng.uniform(size=(n, 8, 8, 3)).astype("float32")


def _gray_or_not(rng, n):
    """Coloured views, a random half made gray (`grayscale`), and a flag no view shows
    (`solarize`, drawn apart)."""
    images = _coloured(rng, n)
    gray = rng.integers(0, 2, n).astype("float32")
    mono = np.repeat(images.mean(-1, keepdims=True), 3, axis=-1)
    views = np.where(gray[:, None, None, None] > 0, mono, images)
    return views, {"grayscale": gray, "solarize": rng.integers(0, 2, n).astype("float32")}


def _brightened(rng, n):
    """Views scaled by `brightness` where `jitter` ran; elsewhere the factor is 1
    (undefined: `readout_targets` makes it NaN)."""
    jitter = rng.integers(0, 2, n).astype("float32")
    brightness = np.where(jitter > 0, rng.uniform(0.6, 1.4, n), 1.0).astype("float32")
    views = _coloured(rng, n) * 0.7 * brightness[:, None, None, None]
    return views, {"jitter": jitter, "brightness": brightness}


def _pooled_cnn():
    layers = keras.layers
    return keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            layers.Conv2D(8, 1, activation="relu"),
            layers.GlobalAveragePooling2D(),
        ]
    )


def _check(draw, seed=0, steps=30):
    rng = np.random.default_rng(0)
    batches = [draw(rng, 64) for _ in range(steps)]
    test = draw(np.random.default_rng(1), 400)
    return determinability(_pooled_cnn, batches, *test, steps=steps, seed=seed, learning_rate=1e-2)


def test_a_flag_the_views_show_is_kept_and_one_they_do_not_is_dropped_with_a_reason():
    record = _check(_gray_or_not)
    gray, drawn_apart = record["targets"]["grayscale"], record["targets"]["solarize"]
    assert record["kept"] == ["grayscale"] and gray["kept"] and "reason" not in gray
    assert gray["balanced_accuracy"] > 0.9 and gray["lower_bound"] > 0.55
    assert gray["test_views"] == drawn_apart["test_views"] == 400
    assert not drawn_apart["kept"] and drawn_apart["lower_bound"] <= 0.55
    score = drawn_apart["balanced_accuracy"]
    assert abs(score - 0.5) < 0.1
    assert drawn_apart["reason"].startswith(
        f"read at {score:.3f} by a supervised network from one view (400 test views"
    )
    assert record["rule"] == determinable.RULE and record["steps"] == 30
    # The same seed, the same record; the network's initialisation follows the seed.
    assert _check(_gray_or_not) == record
    other = _check(_gray_or_not, seed=1)["targets"]["solarize"]["balanced_accuracy"]
    assert other != score


def test_a_target_undefined_on_a_view_is_left_out_of_its_loss_and_its_score():
    # Undefined labels add nothing to the loss, nor to its gradient.
    labels = tf.constant([[1.0, np.nan], [0.0, 1.0], [1.0, np.nan]])
    logits = tf.Variable([[0.3, 50.0], [-0.2, 0.4], [1.0, -50.0]])
    with tf.GradientTape() as tape:
        loss = masked_binary_crossentropy(labels, logits)
    gradient = tape.gradient(loss, logits).numpy()
    per_target = keras.ops.binary_crossentropy(
        tf.constant([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), logits, from_logits=True
    ).numpy()
    expected = per_target[:, 0].mean() + per_target[1, 1]
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)
    assert np.all(np.isfinite(gradient)) and gradient[0, 1] == gradient[2, 1] == 0
    # The median of a continuous target is that of the views where it is defined.
    views, params = _brightened(np.random.default_rng(0), 400)
    thresholds, _ = label_thresholds(params)
    assert thresholds["brightness"] == np.median(params["brightness"][params["jitter"] > 0])
    # Trained with the undefined factors masked, the network reads the defined ones,
    # and each is scored on the test views where it is defined.
    record = _check(_brightened, steps=60)
    brightness = record["targets"]["brightness"]
    jittered = int(_brightened(np.random.default_rng(1), 400)[1]["jitter"].sum())
    assert brightness["test_views"] == jittered < 400
    assert brightness["kept"] and brightness["balanced_accuracy"] > 0.75


def test_targets_that_cannot_be_learned_are_dropped_with_their_reason():
    rng = np.random.default_rng(0)
    views, params = _gray_or_not(rng, 64)
    params = {**params, "blur": np.zeros(64, "float32"), "blur_sigma": np.zeros(64, "float32")}
    thresholds, dropped = label_thresholds(params)
    assert set(thresholds) == {"grayscale", "solarize"}
    assert dropped == dict.fromkeys(
        ("blur", "blur_sigma"), "undefined or constant on the training views"
    )
    _, gray_dropped = label_thresholds(params, channels=1)
    assert "one-channel" in gray_dropped["grayscale"]


def test_the_readout_of_finished_runs_averages_the_kept_targets():
    record = {"kept": ["grayscale", "brightness"]}
    results = {  # one variant of results.json
        "backbone": {
            "augmentation_readout": 0.6,
            "readout": {"grayscale": 0.8, "brightness": 0.7, "crop_center_y": 0.5, "hue": None},
            "readout_r2": {"brightness": 0.3},
            "readout_source_frame": {"flip": 0.9},
        },
        "projector": {"readout": {"grayscale": 0.6, "crop_center_y": 0.4}},
        "steps": 20,
    }
    means = determinable_readout(results, record)
    assert means == pytest.approx(
        {
            "backbone/augmentation_readout": 0.75,
            f"backbone/{ALL_TARGETS}": 2.0 / 3,
            "projector/augmentation_readout": 0.6,
            f"projector/{ALL_TARGETS}": 0.5,
        }
    )
    summary = {  # one variant of summary.json: per score its mean over the seeds
        "backbone/readout/grayscale": {"mean": 0.8, "sd": 0.01, "n": 3},
        "backbone/readout/crop_center_y": {"mean": 0.5, "sd": 0.01, "n": 3},
        "backbone/readout_source_frame/flip": {"mean": 0.9, "sd": 0.01, "n": 3},
    }
    assert determinable_readout(summary, record) == pytest.approx(
        {"backbone/augmentation_readout": 0.8, f"backbone/{ALL_TARGETS}": 0.65}
    )
    nothing_kept = determinable_readout(summary, {"kept": []})
    assert np.isnan(nothing_kept["backbone/augmentation_readout"])
    with pytest.raises(ValueError, match="`record` must hold `kept`"):
        determinable_readout(summary, {"targets": {}})
    with pytest.raises(ValueError, match="`scores` hold no per-target readout"):
        determinable_readout({"backbone": {"class_accuracy": 0.9}}, record)


def test_the_evaluator_averages_the_kept_targets_and_keeps_every_ones_score():
    rng = np.random.default_rng(0)
    views, params = _gray_or_not(rng, 120)
    images, labels = _coloured(rng, 40), np.arange(40) % 2
    encoder = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Flatten()])
    model = ContrastiveModel(encoder, projector=projection_head([], 4))
    evaluator = DeterminableProbeEvaluator(
        images[:20], labels[:20], images[20:], labels[20:], views, params, kept=["grayscale"]
    )
    scores = evaluator.evaluate(model)
    for level in ("backbone", "projector"):
        readout = scores[level]["readout"]
        assert set(readout) == {"grayscale", "solarize"}
        assert scores[level]["augmentation_readout"] == readout["grayscale"]
        assert scores[level][ALL_TARGETS] == pytest.approx(np.mean(list(readout.values())))
    assert f"backbone/{ALL_TARGETS}" in evaluator.score_names(True)
    assert f"projector/{ALL_TARGETS}" in evaluator.undirected_scores
    # TensorBoard shows the kept targets' mean by default, every target's on request.
    assert f"backbone/{ALL_TARGETS}" not in evaluator.summary_scores
    assert "backbone/augmentation_readout" in evaluator.summary_scores


def test_bad_settings_and_inputs_of_the_check_are_refused_naming_them():
    preset = photos.PRESETS["photos"]
    for field, value in (("readout_check_steps", -1), ("readout_check_batch_size", 1)):
        with pytest.raises(ValueError, match=f"`{field}` must be at least"):
            dataclasses.replace(preset, **{field: value}).validate()
    dataclasses.replace(preset, readout_check_steps=0).validate()  # 0: no check
    with pytest.raises(ValueError, match="`readout_check_batch_size` must be even"):
        dataclasses.replace(preset, readout_check_batch_size=3).validate()
    with pytest.raises(ValueError, match="`labels` must hold both classes"):
        balanced_accuracy_interval(np.zeros(4), np.zeros(4))
    views, params = _gray_or_not(np.random.default_rng(0), 8)
    for steps in (0, True, 1.0):
        with pytest.raises(ValueError, match=f"`steps` must be an int of at least 1; got {steps}"):
            determinability(_pooled_cnn, [(views, params)], views, params, steps=steps)
    with pytest.raises(ValueError, match=r"`test_params` must hold a value per test view \(7\)"):
        determinability(_pooled_cnn, [(views, params)], views[:7], params, steps=1)
    constant = {name: np.zeros(8, "float32") for name in params}
    for batches in ([], [(views, constant)]):
        with pytest.raises(ValueError, match="No readout target varies on `train_batches`"):
            determinability(_pooled_cnn, batches, views, params, steps=1)


def test_the_photos_preset_checks_its_readout_and_its_smoke_briefly():
    assert photos.PRESETS["photos"].readout_check_steps >= 500
    assert 0 < photos.SMOKE["readout_check_steps"] <= 10


def test_an_image_config_with_the_check_records_it_and_averages_what_it_keeps(monkeypatch):
    checked = []

    def recording(encoder, batches, test_views, test_params, *args, **kwargs):
        checked.append((next(iter(batches)), test_views, test_params))
        return determinability(encoder, batches, test_views, test_params, *args, **kwargs)

    monkeypatch.setattr(readout_check, "determinability", recording)
    config = images.ImageConfig(
        dataset="photos",
        patches_per_photo=4,
        probe_size=18,
        readout_size=60,
        readout_check_steps=2,
        readout_check_batch_size=16,
        features=8,
    )
    built = images.build(config)
    (evaluator,) = built.evaluators
    record = built.metadata["readout_determinable"]
    assert isinstance(evaluator, DeterminableProbeEvaluator)
    assert list(evaluator.kept) == record["kept"] and record["batch_size"] == 16
    assert {"crop_area", "grayscale", "flip", "brightness"} <= set(record["targets"])
    assert all(t["test_views"] <= 60 for t in record["targets"].values())
    assert not any(record["targets"][name]["kept"] for name in ("flip", "crop_center_x_source"))
    # It trains on both views of 8 training patches a step, and is scored on fresh
    # views of the readout's images.
    (train_views, train_params), test_views, test_params = checked[0]
    assert train_views.shape == (16, 32, 32, 3) and train_params["crop_box"].shape == (16, 4)
    assert test_views.shape == evaluator.views.shape == (60, 32, 32, 3)
    assert not np.allclose(test_params["crop_box"], evaluator.view_params["crop_box"])
    # Without the check: every target in the mean, the readout's views as they were.
    unchecked = images.build(dataclasses.replace(config, readout_check_steps=0))
    (plain,) = unchecked.evaluators
    assert type(plain) is images.ImageProbeEvaluator
    assert "readout_determinable" not in unchecked.metadata
    np.testing.assert_array_equal(plain.views, evaluator.views)
    # The check is the preset's: another training seed reuses it, readout views of
    # its own beside it.
    other = images.build(dataclasses.replace(config, seed=3))
    assert len(checked) == 1 and other.metadata["readout_determinable"] == record
    assert list(other.evaluators[0].kept) == record["kept"]
    assert not np.allclose(other.evaluators[0].views, evaluator.views)
    # A new process runs it again, seeded, to the same record.
    monkeypatch.setattr(images, "_RECORDS", {})
    again = images.build(dataclasses.replace(config, seed=3)).metadata["readout_determinable"]
    assert len(checked) == 2 and again == record
    (_, seed_zero_views, _), (_, seed_three_views, _) = checked
    np.testing.assert_array_equal(seed_three_views, seed_zero_views)


def test_a_check_that_keeps_no_target_says_the_readout_will_be_nan(monkeypatch):
    monkeypatch.setattr(
        readout_check, "readout_check", lambda *args, **kwargs: {"kept": [], "targets": {}}
    )
    config = images.ImageConfig(
        dataset="photos", probe_size=18, readout_size=60, readout_check_steps=2, features=8
    )
    with pytest.warns(UserWarning, match="kept no target: augmentation_readout will be NaN"):
        images.build(config)
