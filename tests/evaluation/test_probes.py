"""Frozen-feature probes: class accuracy, kNN and the augmentation readout."""

import keras
import numpy as np
import pytest

from aninfonce_tf import ContrastiveModel, DiagonalScaling, projection_head
from aninfonce_tf.evaluation.callbacks import scalar_items
from aninfonce_tf.evaluation.probes import (
    ImageProbeEvaluator,
    augmentation_readout,
    knn_accuracy,
    linear_probe_accuracy,
    readout_targets,
)

RNG = np.random.default_rng(0)


def test_class_probes_separate_separable_classes_and_not_noise():
    labels = RNG.integers(0, 3, 600)
    features = np.eye(3)[labels] * 3 + RNG.normal(size=(600, 3))
    assert linear_probe_accuracy(features[:300], labels[:300], features[300:], labels[300:]) > 0.9
    assert knn_accuracy(features[:300], labels[:300], features[300:], labels[300:]) > 0.9
    noise = RNG.normal(size=(600, 3))
    assert linear_probe_accuracy(noise[:300], labels[:300], noise[300:], labels[300:]) < 0.5


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
    assert set(scores["readout"]) == {"flip", "brightness", "grayscale"}
    assert scores["readout"]["flip"] > 0.98 and scores["readout"]["brightness"] > 0.95
    assert abs(scores["readout"]["grayscale"] - 0.5) < 0.08
    assert scores["readout_r2"]["brightness"] > 0.99 and "flip" not in scores["readout_r2"]
    expected = np.mean([scores["readout"][k] for k in ("flip", "brightness", "grayscale")])
    assert scores["augmentation_readout"] == pytest.approx(expected)


def test_the_crop_box_is_read_as_area_centre_and_aspect():
    targets = readout_targets({"crop_box": np.array([[0.0, 0.0, 0.5, 1.0]])})
    assert {k: float(v[0]) for k, v in targets.items()} == {
        "crop_area": 0.5,
        "crop_center_y": 0.25,
        "crop_center_x": 0.5,
        "crop_aspect": 2.0,
    }


def test_the_image_evaluator_scores_backbone_and_projector():
    images = RNG.uniform(size=(120, 8, 8, 3)).astype("float32")
    labels = (images[:, :4].mean(axis=(1, 2, 3)) > images[:, 4:].mean(axis=(1, 2, 3))).astype(int)
    flip = RNG.integers(0, 2, 120).astype("float32")
    views = np.where(flip[:, None, None, None] > 0, images[:, :, ::-1], images)
    encoder = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(16)]
    )
    model = ContrastiveModel(
        encoder, projector=projection_head([16], 4), scaling=DiagonalScaling(2.0)
    )
    evaluator = ImageProbeEvaluator(
        images[:60], labels[:60], images[60:], labels[60:], views, {"flip": flip}
    )
    scores = evaluator.evaluate(model)
    assert set(scores) == {"backbone", "projector", "lambda_hat"} and len(scores["lambda_hat"]) == 4
    assert set(scores["backbone"]) == {
        "class_accuracy",
        "knn_accuracy",
        "augmentation_readout",
        "readout",
        "readout_r2",
    }
    assert evaluator.score_names(True) <= set(scalar_items(scores))
    assert 0 <= scores["projector"]["class_accuracy"] <= 1
