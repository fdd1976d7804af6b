"""Frozen-feature probes for images: class accuracy (linear probe, kNN) and the
augmentation readout, a linear probe from the features of an augmented view to
the parameters of its augmentation.

The readout's definition (the paper's exact protocol is not public): each
parameter is read from the features by a logistic regression fitted on one half of
the views and scored on the other. A flag (flip, grayscale, ...) scores the
balanced accuracy of predicting it; a continuous parameter (a jitter factor, the
crop's area, centre and aspect, the blur sigma) the balanced accuracy of predicting
whether it lies above its median, and also the R^2 of a linear regression.
Parameters that do not vary are skipped. `augmentation_readout` is the mean
balanced accuracy over parameters: chance is 0.5.

Example:

>>> rng = np.random.default_rng(0)
>>> flip = rng.integers(0, 2, 400).astype("float32")
>>> features = np.stack([flip + 0.1 * rng.normal(size=400), rng.normal(size=400)], 1)
>>> scores = augmentation_readout(features, {"flip": flip})
>>> round(scores["readout"]["flip"], 2), round(scores["augmentation_readout"], 2)
(1.0, 1.0)
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import balanced_accuracy_score, r2_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from aninfonce_tf.evaluation.features import batched_features


def _classifier():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def linear_probe_accuracy(train_features, train_labels, test_features, test_labels) -> float:
    """Test accuracy of a logistic regression fitted on the train features."""
    probe = _classifier().fit(np.asarray(train_features), np.asarray(train_labels))
    return float(probe.score(np.asarray(test_features), np.asarray(test_labels)))


def knn_accuracy(train_features, train_labels, test_features, test_labels, k: int = 20) -> float:
    """Test accuracy of a k-nearest-neighbour vote by cosine similarity."""
    k = min(k, len(train_labels))
    vote = KNeighborsClassifier(n_neighbors=k, metric="cosine", weights="distance")
    vote.fit(np.asarray(train_features), np.asarray(train_labels))
    return float(vote.score(np.asarray(test_features), np.asarray(test_labels)))


def readout_targets(params: dict) -> dict[str, np.ndarray]:
    """One `[N]` target per parameter; the crop box `y1, x1, y2, x2` becomes its
    area, centre and aspect (width / height)."""
    targets = {}
    for name, value in params.items():
        value = np.asarray(value, "float64")
        if name == "crop_box":
            height, width = value[:, 2] - value[:, 0], value[:, 3] - value[:, 1]
            targets["crop_area"] = height * width
            targets["crop_center_y"] = (value[:, 0] + value[:, 2]) / 2
            targets["crop_center_x"] = (value[:, 1] + value[:, 3]) / 2
            targets["crop_aspect"] = width / height
        else:
            targets[name] = value
    return targets


def augmentation_readout(features, params: dict, seed: int = 0) -> dict:
    """The readout of every varying parameter (see the module's definition).

    Returns:
        `{"augmentation_readout": mean balanced accuracy, "readout": {parameter:
        balanced accuracy}, "readout_r2": {continuous parameter: R^2}}`.
    """
    features = np.asarray(features, "float64")
    order = np.random.default_rng(seed).permutation(len(features))
    train, test = order[: len(order) // 2], order[len(order) // 2 :]
    readout, readout_r2 = {}, {}
    for name, target in readout_targets(params).items():
        if np.ptp(target) == 0:
            continue
        binary = set(np.unique(target)) <= {0.0, 1.0}
        labels = target if binary else (target > np.median(target)).astype("float64")
        if len(np.unique(labels[train])) < 2 or len(np.unique(labels[test])) < 2:
            continue
        probe = _classifier().fit(features[train], labels[train])
        readout[name] = float(balanced_accuracy_score(labels[test], probe.predict(features[test])))
        if not binary:
            regression = make_pipeline(StandardScaler(), LinearRegression())
            regression.fit(features[train], target[train])
            readout_r2[name] = float(r2_score(target[test], regression.predict(features[test])))
    mean = float(np.mean(list(readout.values()))) if readout else float("nan")
    return {"augmentation_readout": mean, "readout": readout, "readout_r2": readout_r2}


class ImageProbeEvaluator:
    """Class accuracy (linear probe, kNN) and augmentation readout of a
    `ContrastiveModel`, at the backbone (encoder) output and at the projector
    output (normalised, before Lambda_hat), side by side.

    Args:
        train_images, train_labels: what the class probes fit on.
        test_images, test_labels: what they are scored on.
        views: `[N, ...]` augmented views for the readout.
        view_params: their parameters, as the augmentation returned them.
        batch_size: images per forward pass.
    """

    LEVELS = ("backbone", "projector")

    def __init__(
        self,
        train_images,
        train_labels,
        test_images,
        test_labels,
        views,
        view_params: dict,
        batch_size: int = 512,
    ):
        self.train_images, self.train_labels = np.asarray(train_images), np.asarray(train_labels)
        self.test_images, self.test_labels = np.asarray(test_images), np.asarray(test_labels)
        self.views = np.asarray(views)
        self.view_params = {k: np.asarray(v) for k, v in view_params.items()}
        self.batch_size = batch_size

    def _features(self, model, images, level: str) -> np.ndarray:
        if level == "backbone":
            return batched_features(model, images, self.batch_size)
        return batched_features(
            lambda batch: model.embed(batch, scaled=False), images, self.batch_size
        )

    def score_names(self, anisotropic: bool) -> set[str]:
        """Scalar scores: `<level>/class_accuracy`, `/knn_accuracy`,
        `/augmentation_readout` (per-parameter scores are lists, not scalars)."""
        del anisotropic
        return {
            f"{level}/{name}"
            for level in self.LEVELS
            for name in ("class_accuracy", "knn_accuracy", "augmentation_readout")
        }

    def evaluate(self, model) -> dict:
        scores = {}
        for level in self.LEVELS:
            train = self._features(model, self.train_images, level)
            test = self._features(model, self.test_images, level)
            readout = augmentation_readout(
                self._features(model, self.views, level), self.view_params
            )
            scores[level] = {
                "class_accuracy": linear_probe_accuracy(
                    train, self.train_labels, test, self.test_labels
                ),
                "knn_accuracy": knn_accuracy(train, self.train_labels, test, self.test_labels),
                "augmentation_readout": readout["augmentation_readout"],
                "readout": readout["readout"],
                "readout_r2": readout["readout_r2"],
            }
        if getattr(model, "scaling", None) is not None:
            scores["lambda_hat"] = np.asarray(model.scaling.concentration).tolist()
        return scores


__all__ = [
    "ImageProbeEvaluator",
    "augmentation_readout",
    "knn_accuracy",
    "linear_probe_accuracy",
    "readout_targets",
]
