"""Frozen-feature image probes: class accuracy (linear probe, kNN) and the augmentation
readout. Details: docs/method.md#image-probes"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegressionCV
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from aninfonce_tf.data.image_ops import JITTER_OPS
from aninfonce_tf.evaluation.features import LEVELS, level_features, ridge_r2
from aninfonce_tf.evaluation.protocol import concentration_scores, level_stages

# The logistic probes' inverse L2 penalties, chosen by FOLDS-fold cross-validation.
C_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
FOLDS = 3
# scikit-learn 1.8 and 1.9 warn unless given these (their defaults from 1.10 on);
# earlier versions warn when given them.
_LOGISTIC_CV_ARGS = {
    name: value
    for name, value in {"l1_ratios": (0.0,), "use_legacy_attributes": False}.items()
    if LogisticRegressionCV().get_params().get(name) == "warn"
}
# The kNN monitor's temperature (InstDisc, solo-learn) and the two k it is reported at.
KNN_TEMPERATURE = 0.07
KNN_K = (20, 200)
# Readout targets that one view cannot determine (docs/method.md#image-probes).
SOURCE_FRAME = ("crop_center_x_source", "flip")
# Scores of which neither higher nor lower is better (an evaluator's
# `undirected_scores`): how much of the augmentation the features keep is the side of
# the trade-off AnInfoNCE takes against InfoNCE, not a quality.
UNDIRECTED_SCORES = frozenset(f"{level}/augmentation_readout" for level in LEVELS)
# Readout targets that a one-channel view does not show: saturation, hue and grayscale
# keep it as it is, and its brightness and contrast commute (`image_ops.color_jitter`).
COLOUR_ONLY = (
    "saturation",
    "hue",
    "grayscale",
    *(f"jitter_order_{op}" for op in JITTER_OPS),
)
# Parameters defined only on the views whose operation ran.
APPLIED_BY = {
    **{op: "jitter" for op in JITTER_OPS},
    "blur_sigma": "blur",
}


def logistic_probe(
    features, labels, scoring: str | Callable = "accuracy", seed: int = 0
) -> Pipeline:
    """A logistic regression on standardised features, C by cross-validation (`C_GRID`).

    Example:

    >>> rng = np.random.default_rng(0)
    >>> labels = np.arange(90) % 3
    >>> features = np.eye(3)[labels] + 0.1 * rng.normal(size=(90, 3))
    >>> float(logistic_probe(features, labels).score(features, labels))
    1.0
    """
    labels = np.asarray(labels)
    fewest = np.unique(labels, return_counts=True)[1].min()
    folds = (StratifiedKFold if fewest >= FOLDS else KFold)(FOLDS, shuffle=True, random_state=seed)
    probe = LogisticRegressionCV(
        Cs=C_GRID, cv=folds, scoring=scoring, max_iter=2000, **_LOGISTIC_CV_ARGS
    )
    return make_pipeline(StandardScaler(), probe).fit(np.asarray(features, "float64"), labels)


def balanced_accuracy(probe, features, labels) -> float:
    """`balanced_accuracy_score` of `probe`'s predictions, without scikit-learn's checks."""
    predicted = probe.predict(features)
    return float(
        np.mean([np.mean(predicted[labels == label] == label) for label in np.unique(labels)])
    )


def linear_probe_accuracy(train_features, train_labels, test_features, test_labels) -> float:
    """Test accuracy of `logistic_probe` fitted on the train features."""
    probe = logistic_probe(train_features, train_labels)
    return float(accuracy_score(test_labels, probe.predict(np.asarray(test_features, "float64"))))


def knn_accuracy(
    train_features,
    train_labels,
    test_features,
    test_labels,
    k: int = 200,
    temperature: float = KNN_TEMPERATURE,
) -> float:
    """Test accuracy of InstDisc's weighted kNN vote (docs/method.md#image-probes)."""
    vote = KNeighborsClassifier(
        n_neighbors=min(k, len(train_labels)),
        metric="cosine",
        weights=lambda distance: np.exp((1.0 - distance) / temperature),
    )
    vote.fit(np.asarray(train_features, "float64"), np.asarray(train_labels))
    return float(vote.score(np.asarray(test_features, "float64"), np.asarray(test_labels)))


def readout_targets(params: dict) -> dict[str, np.ndarray]:
    """One `[N]` readout target per name from `SimCLRAugment`'s parameters (NaN where
    undefined). Details: docs/method.md#which-targets-one-view-determines"""
    params = {name: np.asarray(value, "float64") for name, value in params.items()}
    targets = {}
    for name, value in params.items():
        if name == "crop_box":
            flip = params.get("flip", np.zeros(len(value)))
            top, left, bottom, right = value.T
            center_x = (left + right) / 2
            targets["crop_area"] = (bottom - top) * (right - left)
            targets["crop_aspect"] = (right - left) / (bottom - top)
            targets["crop_center_y"] = (top + bottom) / 2
            targets["crop_center_x_view"] = np.where(flip > 0, 1.0 - center_x, center_x)
            targets["crop_center_x_source"] = center_x
        elif name == "jitter_order":
            step = np.argsort(value, axis=1).astype("float64")  # step[i, op]
            if "jitter" in params:
                step[params["jitter"] == 0] = np.nan
            for op, op_name in enumerate(JITTER_OPS):
                targets[f"jitter_order_{op_name}"] = step[:, op]
        elif value.ndim == 1:
            flag = params.get(APPLIED_BY.get(name))
            targets[name] = value if flag is None else np.where(flag > 0, value, np.nan)
        else:
            raise ValueError(
                f"`params[{name!r}]` must be [N] (or a crop box [N, 4], a jitter order "
                f"[N, 4]); got shape {value.shape}."
            )
    return targets


def augmentation_readout(features, params: dict, seed: int = 0, channels: int = 3) -> dict:
    """The readout of every varying target (docs/method.md#the-augmentation-readout).

    Args:
        features: `[N, d]` features of the views.
        params: the views' parameters, as the augmentation returned them.
        seed: of the split into the fitting and the scoring half.
        channels: of the views; with 1, the `COLOUR_ONLY` targets are left out.

    Returns:
        `{"augmentation_readout": mean balanced accuracy over "readout", "readout":
        {target one view determines: balanced accuracy}, "readout_r2": {continuous
        one: R^2}, "readout_source_frame": {flip, crop_center_x_source: balanced
        accuracy}, "readout_source_frame_r2": {crop_center_x_source: R^2}}`.

    Example:

    >>> rng = np.random.default_rng(0)
    >>> gray = rng.integers(0, 2, 400).astype("float32")
    >>> features = np.stack([gray + 0.1 * rng.normal(size=400), rng.normal(size=400)], 1)
    >>> scores = augmentation_readout(features, {"grayscale": gray})
    >>> round(scores["readout"]["grayscale"], 2), round(scores["augmentation_readout"], 2)
    (1.0, 1.0)
    """
    features = np.asarray(features, "float64")
    rows = np.random.default_rng(seed).permutation(len(features))
    halves = rows[: len(rows) // 2], rows[len(rows) // 2 :]
    scores = {group: {} for group in ("readout", "readout_source_frame")}
    targets, regressions = readout_targets(params), {}
    for name, target in targets.items():
        if channels == 1 and name in COLOUR_ONLY:
            continue
        defined = ~np.isnan(target)
        fit, test = (half[defined[half]] for half in halves)
        if not len(fit) or np.ptp(target[defined]) == 0:
            continue
        binary = set(np.unique(target[defined])) <= {0.0, 1.0}
        # The threshold from the fitting half alone: nothing of the test half is seen.
        labels = target if binary else (target > np.median(target[fit])).astype("float64")
        fit_counts = np.unique(labels[fit], return_counts=True)[1]
        if len(fit_counts) < 2 or fit_counts.min() < FOLDS or len(np.unique(labels[test])) < 2:
            continue
        probe = logistic_probe(features[fit], labels[fit], balanced_accuracy, seed)
        group = "readout_source_frame" if name in SOURCE_FRAME else "readout"
        scores[group][name] = float(
            balanced_accuracy_score(labels[test], probe.predict(features[test]))
        )
        if not binary:  # one ridge fit per set of rows
            regressions.setdefault(defined.tobytes(), (fit, test, []))[2].append(name)
    r2 = {}
    for fit, test, names in regressions.values():
        values = ridge_r2(features, np.stack([targets[n] for n in names], 1), fit, test)
        r2.update(zip(names, map(float, values), strict=True))
    for group in ("readout", "readout_source_frame"):
        scores[f"{group}_r2"] = {name: r2[name] for name in scores[group] if name in r2}
    readout = list(scores["readout"].values())
    return {"augmentation_readout": float(np.mean(readout)) if readout else float("nan"), **scores}


class ImageProbeEvaluator:
    """Class accuracy (linear probe, kNN) and augmentation readout at each of `LEVELS`.

    Args:
        train_images, train_labels: what the class probes fit on.
        test_images, test_labels: what they are scored on.
        views: `[N, ...]` augmented views for the readout (images: uint8 or [0, 1]).
        view_params: their parameters, as the augmentation returned them.
        batch_size: images per forward pass.
        blas_threads: threads of the probes' linear algebra (None: every core).

    Example:

    >>> import keras
    >>> from aninfonce_tf import ContrastiveModel, projection_head
    >>> rng = np.random.default_rng(0)
    >>> images = rng.uniform(size=(60, 8, 8, 3)).astype("float32")
    >>> labels = np.arange(60) % 2
    >>> # Views and their parameters as `SimCLRAugment` returns them; here one flag.
    >>> views, params = images, {"grayscale": rng.integers(0, 2, 60).astype("float32")}
    >>> encoder = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.GlobalAveragePooling2D()])
    >>> model = ContrastiveModel(encoder, projector=projection_head([], 4))
    >>> evaluator = ImageProbeEvaluator(
    ...     images[:30], labels[:30], images[30:], labels[30:], views, params
    ... )
    >>> sorted(evaluator.evaluate(model))
    ['backbone', 'projector']
    """

    # Every score but the readout is higher-is-better (`--stop-at`'s direction).
    lower_is_better = frozenset()
    undirected_scores = UNDIRECTED_SCORES
    # The scalar scores of each level.
    SCORES = (
        "class_accuracy",
        *(f"knn_k{k}_accuracy" for k in KNN_K),
        "augmentation_readout",
    )

    def __init__(
        self,
        train_images,
        train_labels,
        test_images,
        test_labels,
        views,
        view_params: dict,
        batch_size: int = 512,
        blas_threads: int | None = 1,
    ):
        self.train_images, self.train_labels = np.asarray(train_images), np.asarray(train_labels)
        self.test_images, self.test_labels = np.asarray(test_images), np.asarray(test_labels)
        self.views = np.asarray(views)
        self.view_params = {k: np.asarray(v) for k, v in view_params.items()}
        self.batch_size = batch_size
        self.blas_threads = blas_threads

    def score_names(self, anisotropic: bool) -> set[str]:
        """`<level>/<score>` for each of `SCORES`, and Lambda_hat's shape if `anisotropic`."""
        names = {f"{level}/{name}" for level in LEVELS for name in self.SCORES}
        return names | ({"lambda_hat_low_dimensions"} if anisotropic else set())

    @property
    def summary_scores(self) -> frozenset[str]:
        """The scores TensorBoard shows by default: `SCORES` at each level."""
        return frozenset(self.score_names(anisotropic=False))

    @property
    def classes(self) -> int:
        """The number of classes the class probes tell apart."""
        return len(np.union1d(self.train_labels, self.test_labels))

    def evaluate(self, model, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
        """`{level: {score: value}}` per `LEVELS`, and a model's `lambda_hat`."""
        scores = {}
        for level in LEVELS:
            stage = level_stages(progress, level)
            stage("features")
            train = level_features(model, self.train_images, level, self.batch_size)
            test = level_features(model, self.test_images, level, self.batch_size)
            views = level_features(model, self.views, level, self.batch_size)
            labelled = (train, self.train_labels, test, self.test_labels)
            with threadpool_limits(self.blas_threads, user_api="blas"):
                stage("linear probe")
                scores[level] = {"class_accuracy": linear_probe_accuracy(*labelled)}
                stage("kNN")
                for k in KNN_K:
                    scores[level][f"knn_k{k}_accuracy"] = knn_accuracy(*labelled, k=k)
                stage("readout")
                channels = self.views.shape[-1]
                scores[level].update(
                    augmentation_readout(views, self.view_params, channels=channels)
                )
        scores.update(concentration_scores(model))
        return scores


__all__ = [
    "COLOUR_ONLY",
    "C_GRID",
    "FOLDS",
    "ImageProbeEvaluator",
    "KNN_K",
    "SOURCE_FRAME",
    "UNDIRECTED_SCORES",
    "augmentation_readout",
    "knn_accuracy",
    "linear_probe_accuracy",
    "logistic_probe",
    "readout_targets",
]
