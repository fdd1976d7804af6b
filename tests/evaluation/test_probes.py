"""Frozen-feature probes: class accuracy, kNN, the augmentation readout and the
stratified probe sets."""

import keras
import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info

from aninfonce_tf import ContrastiveModel, DiagonalScaling, projection_head
from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.probe_sets import stratified_order
from aninfonce_tf.evaluation import probes
from aninfonce_tf.evaluation.callbacks import scalar_items
from aninfonce_tf.evaluation.features import LEVELS, level_features
from aninfonce_tf.evaluation.probes import (
    C_GRID,
    FOLDS,
    SOURCE_FRAME,
    ImageProbeEvaluator,
    augmentation_readout,
    balanced_accuracy,
    knn_accuracy,
    linear_probe_accuracy,
    logistic_probe,
    readout_targets,
)

RNG = np.random.default_rng(0)


def test_class_probes_separate_separable_classes_and_not_noise():
    labels = RNG.integers(0, 3, 600)
    features = np.eye(3)[labels] * 3 + RNG.normal(size=(600, 3))
    halves = features[:300], labels[:300], features[300:], labels[300:]
    assert linear_probe_accuracy(*halves) > 0.9
    assert knn_accuracy(*halves, k=20) > 0.9 and knn_accuracy(*halves, k=200) > 0.9
    noise = RNG.normal(size=(600, 3))
    assert linear_probe_accuracy(noise[:300], labels[:300], noise[300:], labels[300:]) < 0.5


def _knn_reference(train, train_labels, test, test_labels, k, temperature, weighted=True):
    """InstDisc's / solo-learn's weighted kNN vote in float64 NumPy."""
    unit = [x / np.linalg.norm(x, axis=1, keepdims=True) for x in (train, test)]
    similarity = unit[1] @ unit[0].T
    nearest = np.argsort(-similarity, axis=1)[:, :k]
    weights = np.exp(np.take_along_axis(similarity, nearest, 1) / temperature)
    votes = np.zeros((len(test), train_labels.max() + 1))
    np.add.at(votes, (np.arange(len(test))[:, None], train_labels[nearest]), weights**weighted)
    return np.mean(votes.argmax(1) == test_labels)


def test_the_knn_monitor_is_the_vote_weighted_by_exp_similarity_over_temperature():
    # Class 0 is spread wide and outnumbers the tight class 1 among the 200 nearest of
    # a class-1 test point: a plain majority says 0, the weighted vote says 1.
    direction = np.eye(8)[1]
    wide = RNG.normal(size=(300, 8)) + 2 * direction
    tight = direction + 0.05 * RNG.normal(size=(40, 8))
    train, labels = np.concatenate([wide, tight]), np.repeat([0, 1], [300, 40])
    test = np.concatenate([direction + 0.05 * RNG.normal(size=(30, 8)), RNG.normal(size=(30, 8))])
    test_labels = np.repeat([1, 0], 30)
    for k in (20, 200):
        expected = _knn_reference(train, labels, test, test_labels, k, 0.07)
        assert knn_accuracy(train, labels, test, test_labels, k=k) == pytest.approx(expected)
    majority = _knn_reference(train, labels, test, test_labels, 200, 0.07, weighted=False)
    assert knn_accuracy(train, labels, test, test_labels, k=200) > majority + 0.2


def test_the_logistic_probes_choose_their_penalty_by_cross_validation():
    # One informative feature among 200 of noise, 150 examples: the best C is inside
    # the grid, and the probe picks the one of the best 3-fold balanced accuracy.
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 150)
    features = np.concatenate(
        [labels[:, None] + 0.5 * rng.normal(size=(150, 1)), rng.normal(size=(150, 200))], 1
    )
    probe = logistic_probe(features, labels, balanced_accuracy)
    standardised = StandardScaler().fit_transform(features)
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=0)
    curve = [
        cross_val_score(
            LogisticRegression(C=c, max_iter=2000),
            standardised,
            labels,
            cv=folds,
            scoring="balanced_accuracy",
        ).mean()
        for c in C_GRID
    ]
    assert 0 < np.argmax(curve) < len(C_GRID) - 1
    assert float(np.ravel(probe[-1].C_)[0]) == C_GRID[np.argmax(curve)]
    predicted = probe.predict(features)
    assert balanced_accuracy(probe, features, labels) == balanced_accuracy_score(labels, predicted)


def test_the_readout_reads_encoded_parameters_and_not_others():
    n = 1000
    params = {
        "flip": RNG.integers(0, 2, n).astype("float32"),
        "brightness": RNG.uniform(0.6, 1.4, n),
        "grayscale": RNG.integers(0, 2, n).astype("float32"),  # not in the features
        "solarize": np.zeros(n),  # never applied: skipped
    }
    features = np.stack([params["flip"], params["brightness"], RNG.normal(size=n)], axis=1)
    scores = augmentation_readout(features, params)
    assert set(scores["readout"]) == {"brightness", "grayscale"}
    assert set(scores["readout_source_frame"]) == {"flip"}
    assert scores["readout_source_frame"]["flip"] > 0.98 and scores["readout"]["brightness"] > 0.95
    assert abs(scores["readout"]["grayscale"] - 0.5) < 0.08
    assert scores["readout_r2"] == {"brightness": pytest.approx(1.0, abs=0.01)}
    expected = np.mean([scores["readout"][k] for k in ("brightness", "grayscale")])
    assert scores["augmentation_readout"] == pytest.approx(expected)


def test_a_continuous_targets_threshold_is_the_median_of_the_fitting_half(monkeypatch):
    # The readout's halves (its seed's permutation): the test half's contrasts drawn
    # higher, so that the median of both halves would split the fitting half unevenly.
    n = 200
    rows = np.random.default_rng(0).permutation(n)
    fit, test = rows[: n // 2], rows[n // 2 :]
    contrast = np.empty(n)
    contrast[fit], contrast[test] = RNG.uniform(0.0, 1.0, n // 2), RNG.uniform(0.3, 3.0, n // 2)
    features = np.stack([contrast, RNG.normal(size=n)], axis=1)
    fitted = []

    def recording(features, labels, *args):
        fitted.append((features[:, 0], labels))
        return logistic_probe(features, labels, *args)

    monkeypatch.setattr(probes, "logistic_probe", recording)
    scores = augmentation_readout(features, {"contrast": contrast}, seed=0)
    ((values, labels),) = fitted
    np.testing.assert_array_equal(np.sort(values), np.sort(contrast[fit]))
    np.testing.assert_array_equal(labels, values > np.median(values))
    assert labels.mean() == 0.5
    # Scored on the test half against the same threshold.
    assert scores["readout"]["contrast"] > 0.95


def test_factors_of_an_operation_that_did_not_run_are_no_targets():
    # Jitter off leaves brightness at 1 and blur off leaves sigma at 0: counted as
    # targets, "above the median" would read "was the op applied", a second copy of
    # the flag. Only the views where the op ran define them.
    jitter = np.array([1.0, 0.0, 1.0, 0.0])
    blur = np.array([0.0, 1.0, 1.0, 0.0])
    targets = probes.readout_targets(
        {
            "jitter": jitter,
            "brightness": np.array([1.3, 1.0, 0.7, 1.0]),
            "blur": blur,
            "blur_sigma": np.array([0.0, 1.5, 0.4, 0.0]),
        }
    )
    np.testing.assert_array_equal(targets["brightness"], [1.3, np.nan, 0.7, np.nan])
    np.testing.assert_array_equal(targets["blur_sigma"], [np.nan, 1.5, 0.4, np.nan])
    np.testing.assert_array_equal(targets["jitter"], jitter)


def test_the_readout_r2_is_a_ridge_regression_with_a_chosen_penalty():
    # 100 fitting views, 80 noise features: least squares overfits, ridge keeps much
    # of the one informative feature (0.79 of the variance at best).
    rng = np.random.default_rng(0)
    brightness = rng.uniform(0.6, 1.4, 200)
    signal = (brightness - 1) / 0.4 + 0.3 * rng.normal(size=200)
    features = np.concatenate([signal[:, None], rng.normal(size=(200, 80))], 1)
    r2 = augmentation_readout(features, {"brightness": brightness})["readout_r2"]["brightness"]
    least_squares = LinearRegression().fit(features[:100], brightness[:100])
    assert least_squares.score(features[100:], brightness[100:]) < 0.1 < 0.3 < r2


def test_the_crop_box_is_read_in_the_views_frame_and_in_the_sources():
    boxes = np.array([[0.0, 0.0, 0.5, 0.6], [0.0, 0.0, 0.5, 0.6]])
    targets = readout_targets({"crop_box": boxes, "flip": np.array([0.0, 1.0])})
    assert {k: v.tolist() for k, v in targets.items()} == {
        "crop_area": [0.3, 0.3],
        "crop_aspect": [1.2, 1.2],
        "crop_center_y": [0.25, 0.25],
        "crop_center_x_view": [0.3, 0.7],  # mirrored with the view
        "crop_center_x_source": [0.3, 0.3],
        "flip": [0.0, 1.0],
    }


def test_the_jitter_order_is_read_as_each_operations_step_where_the_jitter_ran():
    order = np.array([[2, 0, 3, 1], [0, 1, 2, 3]], "float32")
    targets = readout_targets({"jitter_order": order, "jitter": np.array([1.0, 0.0])})
    steps = [
        targets[f"jitter_order_{op}"] for op in ("brightness", "contrast", "saturation", "hue")
    ]
    np.testing.assert_array_equal(np.stack(steps, 1), [[1, 3, 0, 2], [np.nan] * 4])
    with pytest.raises(ValueError, match="params\\['blur'\\]"):
        readout_targets({"blur": np.zeros((2, 3))})


def test_on_flip_symmetric_data_one_view_gives_its_own_frames_crop_centre_not_the_sources():
    # Each source image is a ramp (red rising left to right, green top to bottom) or
    # its mirror image, equally often: the data are symmetric under mirroring.
    n, ramp = 800, np.linspace(0.0, 1.0, 32)
    pattern = np.stack(np.broadcast_arrays(ramp[None, :], ramp[:, None], 0.5), -1)
    mirrored = RNG.integers(0, 2, n)[:, None, None, None] > 0
    images = np.where(mirrored, pattern[:, ::-1], pattern).astype("float32")
    augment = SimCLRAugment(
        image_size=16, jitter_probability=0.0, random_jitter_order=False, grayscale_probability=0.0
    )
    views, params = augment(images, seed=[0, 1])
    red = views.numpy()[..., 0]
    # What a view shows of where it lies: the red at its centre (the mean of a ramp),
    # whether red rises left to right in it, their product, and the green.
    centre, rising = red.mean(axis=(1, 2)), (red[:, :, -1] > red[:, :, 0]).mean(axis=1)
    green = views.numpy()[..., 1].mean(axis=(1, 2))
    features = np.stack([centre, rising, centre * rising, green], 1)
    scores = augmentation_readout(features, params)
    assert scores["readout"]["crop_center_x_view"] > 0.9
    assert scores["readout"]["crop_center_y"] > 0.9
    assert scores["readout_r2"]["crop_center_x_view"] > 0.9
    assert set(scores["readout_source_frame"]) == set(SOURCE_FRAME)
    for name in SOURCE_FRAME:  # chance, whatever the features
        assert abs(scores["readout_source_frame"][name] - 0.5) < 0.08
    assert "flip" not in scores["readout"] and "crop_center_x_source" not in scores["readout"]


def test_every_prefix_of_a_stratified_order_holds_the_classes_in_proportion():
    labels = RNG.permutation(np.repeat([0, 1, 2, 3], [500, 250, 200, 50]))
    order = stratified_order(labels, seed=1)
    assert sorted(order.tolist()) == list(range(len(labels)))
    counts = np.cumsum(np.eye(4)[labels[order]], axis=0)
    expected = np.arange(1, len(labels) + 1)[:, None] * np.bincount(labels) / len(labels)
    assert np.abs(counts - expected).max() <= 1.0
    # Seeded; each class's members in a random order.
    np.testing.assert_array_equal(order, stratified_order(labels, seed=1))
    assert not np.array_equal(order, stratified_order(labels, seed=2))
    assert not np.all(np.diff(order[labels[order] == 0]) > 0)
    with pytest.raises(ValueError, match="labels"):
        stratified_order(np.zeros((2, 2)))


def test_features_of_uint8_images_and_float16_views_are_those_of_float32_ones():
    # Probe images kept as uint8 and views as float16 (a quarter and half of float32's
    # memory) give the features of the float32 images in [0, 1].
    images = RNG.uniform(size=(12, 8, 8, 3)).astype("float32")
    as_uint8 = np.round(images * 255).astype("uint8")
    encoder = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Conv2D(8, 3), keras.layers.GlobalAveragePooling2D()]
    )
    model = ContrastiveModel(encoder, projector=projection_head([16], 4))
    for level in LEVELS:
        reference = level_features(model, images, level, batch_size=5)
        np.testing.assert_array_equal(
            level_features(model, as_uint8, level, batch_size=5),
            level_features(model, as_uint8.astype("float32") / 255, level, batch_size=5),
        )
        for stored in (as_uint8, images.astype("float16")):
            features = level_features(model, stored, level, batch_size=5)
            assert features.dtype == np.float32
            np.testing.assert_allclose(features, reference, rtol=0.02, atol=0.01)


def test_the_image_evaluator_scores_backbone_and_projector(monkeypatch):
    images = RNG.uniform(size=(120, 8, 8, 3)).astype("float32")
    labels = (images[:, :4].mean(axis=(1, 2, 3)) > images[:, 4:].mean(axis=(1, 2, 3))).astype(int)
    gray = RNG.integers(0, 2, 120).astype("float32")
    views = np.where(gray[:, None, None, None] > 0, images.mean(-1, keepdims=True), images)
    encoder = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(16)]
    )
    model = ContrastiveModel(
        encoder, projector=projection_head([16], 4), scaling=DiagonalScaling(2.0)
    )
    evaluator = ImageProbeEvaluator(
        images[:60], labels[:60], images[60:], labels[60:], views, {"grayscale": gray}
    )
    threads = []  # of BLAS while the class probe fits: one, as asked

    def recording(*args):
        threads.extend(
            pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"
        )
        return linear_probe_accuracy(*args)

    monkeypatch.setattr(probes, "linear_probe_accuracy", recording)
    stages = []
    scores = evaluator.evaluate(model, progress=stages.append)
    assert threads and set(threads) == {1}
    assert stages == [
        f"{level}: {stage}"
        for level in ("backbone", "projector")
        for stage in ("features", "linear probe", "kNN", "readout")
    ]
    assert set(scores) == {"backbone", "projector", "lambda_hat", "lambda_hat_low_dimensions"}
    assert len(scores["lambda_hat"]) == 4 and scores["lambda_hat_low_dimensions"] == 0
    assert set(scores["backbone"]) == {
        "class_accuracy",
        "knn_k20_accuracy",
        "knn_k200_accuracy",
        "augmentation_readout",
        "readout",
        "readout_r2",
        "readout_source_frame",
        "readout_source_frame_r2",
    }
    assert evaluator.score_names(True) <= set(scalar_items(scores))
    assert 0 <= scores["projector"]["class_accuracy"] <= 1
    assert scores["backbone"]["augmentation_readout"] == scores["backbone"]["readout"]["grayscale"]


def test_on_one_channel_views_the_colour_targets_are_not_averaged_into_the_readout():
    n = 600
    params = {
        "brightness": RNG.uniform(0.6, 1.4, n),
        "saturation": RNG.uniform(0.6, 1.4, n),
        "hue": RNG.uniform(-0.1, 0.1, n),
        "grayscale": RNG.integers(0, 2, n).astype("float32"),
        "jitter_order": np.argsort(RNG.uniform(size=(n, 4)), axis=1).astype("float32"),
    }
    features = np.stack([params["brightness"], RNG.normal(size=n)], axis=1)
    colour = augmentation_readout(features, params)
    assert set(probes.COLOUR_ONLY) <= set(colour["readout"])  # scored on colour views
    gray = augmentation_readout(features, params, channels=1)
    assert set(gray["readout"]) == {"brightness"}
    assert gray["augmentation_readout"] == gray["readout"]["brightness"] > 0.95
    assert colour["augmentation_readout"] < 0.7  # chance targets pull the mean down


def test_the_image_evaluator_leaves_the_colour_targets_out_on_grayscale_views():
    images = RNG.uniform(size=(80, 8, 8, 1)).astype("float32")
    labels = np.arange(80) % 2
    views, params = SimCLRAugment(image_size=8)(images, seed=0)
    encoder = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten()])
    model = ContrastiveModel(encoder, projector=projection_head([], 4))
    evaluator = ImageProbeEvaluator(
        images[:40], labels[:40], images[40:], labels[40:], views, params
    )
    readout = evaluator.evaluate(model)["backbone"]["readout"]
    assert readout and not set(readout) & set(probes.COLOUR_ONLY)
