"""Per-latent held-out R^2 and class accuracy of rendered images' features.
Details: docs/method.md#latents-of-rendered-images"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from aninfonce_tf.data.renderer import (
    DERIVED_FROM,
    LATENTS,
    Latent,
    derived_parts,
    latent_coordinates,
    part_names,
)
from aninfonce_tf.evaluation.features import LEVELS, level_features, ridge_r2
from aninfonce_tf.evaluation.identifiability import (
    match_dimensions,
    mean_correlation_coefficient,
    rotation_floor,
)
from aninfonce_tf.evaluation.probes import (
    UNDIRECTED_SCORES,
    augmentation_readout,
    linear_probe_accuracy,
)
from aninfonce_tf.evaluation.protocol import concentration_scores, level_stages

# Fractions of the renders that fit the probes, choose the kernel's hyperparameters and
# score.
SPLIT = (0.5, 0.25, 0.25)
KERNEL_ALPHAS = (1.0, 0.1, 0.01, 0.001)
# RBF widths as multiples of 1 / features: standardised features lie ~sqrt(2 d) apart,
# so these put a typical pair's kernel value between exp(-0.02) and exp(-20).
KERNEL_GAMMAS = (0.01, 0.1, 1.0, 10.0)


def latent_targets(latents: Mapping, specs: Mapping[str, Latent] = LATENTS) -> dict:
    """`{name: [N, 1]}` targets of the continuous latents, `[N, 2]` (cos, sin) if circular.

    Example:

    >>> targets = latent_targets({"x": [0.3, 0.7], "rotation": [0.0, np.pi]})
    >>> targets["x"].tolist(), targets["rotation"].round(6).tolist()
    ([[0.3], [0.7]], [[1.0, 0.0], [-1.0, 0.0]])
    """
    # As they are, not in units of a range 2 wide: the kernel ridge has no intercept,
    # so its R^2 depends on where the targets lie.
    parts = latent_coordinates(latents, specs, units=False)
    names = [name for name, spec in specs.items() if not spec.classes and name in latents]
    return {name: np.stack([parts[p] for p in part_names([name], specs)], 1) for name in names}


def split_indices(count: int, seed: int = 0, fractions=SPLIT) -> tuple[np.ndarray, ...]:
    """Disjoint `(fit, validation, test)` indices of `count` rows in `fractions`."""
    if count < 12:
        raise ValueError(f"Too few samples ({count}) for three held-out splits.")
    order = np.random.default_rng(seed).permutation(count)
    first = int(fractions[0] * count)
    second = first + int(fractions[1] * count)
    return order[:first], order[first:second], order[second:]


def kernel_ridge_r2(
    features,
    targets,
    fit_rows,
    validation_rows,
    test_rows,
    alphas: Sequence[float] = KERNEL_ALPHAS,
    gammas: Sequence[float] = KERNEL_GAMMAS,
) -> np.ndarray:
    """Per-column test R^2 of RBF kernel ridge, `alphas` and `gammas` chosen by validation."""
    features = np.asarray(features, "float64")
    features = StandardScaler().fit(features[fit_rows]).transform(features)
    best = np.full(targets.shape[1], -np.inf)
    scores = np.zeros(targets.shape[1])
    for alpha, gamma in itertools.product(alphas, gammas):
        model = KernelRidge(kernel="rbf", alpha=alpha, gamma=gamma / features.shape[1])
        model.fit(features[fit_rows], targets[fit_rows])
        predicted = model.predict(features[np.concatenate([validation_rows, test_rows])])
        split = len(validation_rows)
        validation = r2_score(targets[validation_rows], predicted[:split], multioutput="raw_values")
        test = r2_score(targets[test_rows], predicted[split:], multioutput="raw_values")
        better = validation > best
        best[better], scores[better] = validation[better], test[better]
    return scores


def latent_scores(
    features,
    latents: Mapping,
    blocks: Mapping[str, Sequence[str]] | None = None,
    nonlinear: bool = True,
    seed: int = 0,
    specs: Mapping[str, Latent] = LATENTS,
    max_kernel_fit: int = 1000,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Every latent's score from one set of features, on a held-out third of the rows.

    Args:
        features: `[N, d]`.
        latents: `{name: [N]}` true latents (names of `specs`).
        blocks: `{block: latent or part names}`, e.g. content and style, for block means.
        nonlinear: also fit the kernel ridge.
        seed: of the three-way split.
        specs: each latent's range (`renderer.LATENTS`).
        max_kernel_fit: rows the kernel ridge fits on at most.
        progress: called with each stage's name as it begins.

    Returns:
        `linear_r2` `{latent: R^2}`, `linear_r2_mean`, `part_linear_r2`, class accuracies,
        `block_linear_r2`, `nonlinear_...`, `mcc`, `mcc_floor(_sd)`, `subspace_r2`.

    Example:

    >>> rng = np.random.default_rng(0)
    >>> latents = {"x": rng.uniform(size=800), "rotation": rng.uniform(0, 2 * np.pi, 800)}
    >>> features = np.stack([latents["x"], np.cos(latents["rotation"])], 1)
    >>> scores = latent_scores(features, latents, nonlinear=False)
    >>> round(scores["linear_r2"]["x"], 3), round(scores["linear_r2"]["rotation"], 1)
    (1.0, 0.5)
    """
    features = np.asarray(features, "float64")
    unknown = sorted(set(latents) - set(specs))
    if features.ndim != 2 or unknown:
        raise ValueError(
            f"`features` must be [N, d] and `latents` named in `specs`; got shape "
            f"{features.shape} and unknown latents {unknown}."
        )
    if any(len(np.asarray(value)) != len(features) for value in latents.values()):
        raise ValueError(f"Every latent needs one value per row of `features` ({len(features)}).")
    fit_rows, validation_rows, test_rows = split_indices(len(features), seed)
    targets = latent_targets(latents, specs)
    names = list(targets)
    columns = np.cumsum([0] + [targets[name].shape[1] for name in names])
    matrix = np.concatenate([targets[name] for name in names], axis=1)

    parts = list(part_names(names, specs))
    derived = derived_parts(latent_coordinates(latents, specs))
    known = {*names, *parts, *derived}
    unknown = sorted({m for ms in (blocks or {}).values() for m in ms} - known)
    if unknown:
        raise ValueError(f"`blocks` name {unknown}, neither latents nor parts {parts}.")

    def per_latent(per_column) -> dict[str, float]:
        return {
            name: float(np.mean(per_column[columns[i] : columns[i + 1]]))
            for i, name in enumerate(names)
        }

    stage = progress or (lambda text: None)
    fitted = np.concatenate([fit_rows, validation_rows])
    # The derived parts are scored as further columns, after the parts.
    scored = np.concatenate([matrix, *(value[:, None] for value in derived.values())], axis=1)
    stage("linear probes")
    per_columns = {"linear": ridge_r2(features, scored, fitted, test_rows)}
    if nonlinear:
        stage("kernel ridge")
        kernel_rows = fit_rows[:max_kernel_fit]
        per_columns["nonlinear"] = kernel_ridge_r2(
            features, scored, kernel_rows, validation_rows, test_rows
        )
    scores = orientation_scores(features, matrix, parts, blocks, names, specs, fitted, test_rows)
    for kind, per_column in per_columns.items():
        r2 = per_latent(per_column)
        part_r2 = {
            part: float(value) for part, value in zip([*parts, *derived], per_column, strict=True)
        }
        scores[f"{kind}_r2"] = r2
        scores[f"{kind}_r2_mean"] = float(np.mean(list(r2.values())))
        scores[f"part_{kind}_r2"] = part_r2
        if blocks:
            scores[f"block_{kind}_r2"] = {
                block: float(np.mean([r2.get(name, part_r2.get(name)) for name in members]))
                for block, members in blocks.items()
                if len(members)
            }
    for name, spec in specs.items():
        if spec.classes and name in latents:
            stage("class probes")
            labels = np.asarray(latents[name])
            scores[f"{name}_accuracy"] = linear_probe_accuracy(
                features[fitted], labels[fitted], features[test_rows], labels[test_rows]
            )
    return scores


def _derived_names(continuous) -> tuple[str, ...]:
    """The `renderer.DERIVED_PARTS` that latents named `continuous` give."""
    return tuple(part for part, source in DERIVED_FROM.items() if source in continuous)


def orientation_scores(features, targets, parts, blocks, names, specs, fit_rows, test_rows):
    """`latent_scores`' orientation scores of `features` against the part columns `targets`."""
    mean, sd = rotation_floor(targets, features.shape[1])
    scores = {"mcc": mean_correlation_coefficient(targets, features), "mcc_floor": mean}
    scores["mcc_floor_sd"] = sd
    if blocks:
        rows, columns, _ = match_dimensions(targets, features)
        matched = dict(zip(rows.tolist(), columns.tolist(), strict=True))
        column = {part: i for i, part in enumerate(parts)}
        subspace = {}
        for block, members in blocks.items():
            members = [p for m in members for p in (part_names([m], specs) if m in names else [m])]
            index = [column[p] for p in members if p in column]
            dimensions = [matched[i] for i in index if i in matched]
            if dimensions:  # with fewer dimensions than parts, a block may have none
                r2 = ridge_r2(features[:, dimensions], targets[:, index], fit_rows, test_rows)
                subspace[block] = float(np.mean(r2))
            elif index:
                subspace[block] = 0.0
        scores["subspace_r2"] = subspace
    return scores


class LatentEvaluator:
    """`latent_scores` at each of `LEVELS`, and the readout when views are given.

    Args:
        images: `[N, S, S, 3]` held-out un-augmented renders.
        latents: `{name: [N]}` their latents.
        blocks: `{block: latent or part names}` for block means.
        views, view_params: augmented views and their parameters, for the readout.
        nonlinear: also fit the kernel ridge.
        batch_size: images per forward pass.
        specs: each latent's range.
        blas_threads: threads of the fits' linear algebra (None: every core).

    Example:

    >>> from aninfonce_tf.data.rendered_pairs import RenderedPairs
    >>> images, latents = RenderedPairs(size=16).evaluation_set(64)
    >>> class Flat:
    ...     scaling = None
    ...     def __call__(self, x):
    ...         return np.reshape(x, (len(x), -1))[:, :32]
    ...     def embed(self, x, scaled=True):
    ...         return self(x)
    >>> scores = LatentEvaluator(images, latents, nonlinear=False).evaluate(Flat())
    >>> sorted(scores), sorted(scores["backbone"])
    (['backbone', 'projector'], ['linear_r2', 'linear_r2_mean', 'mcc', 'mcc_floor', 'mcc_floor_sd', \
'part_linear_r2', 'shape_accuracy'])
    """

    # Every score but the readout is higher-is-better (`--stop-at`'s direction).
    lower_is_better = frozenset()
    undirected_scores = UNDIRECTED_SCORES

    def __init__(
        self,
        images,
        latents: Mapping,
        blocks: Mapping[str, Sequence[str]] | None = None,
        views=None,
        view_params: Mapping | None = None,
        nonlinear: bool = True,
        batch_size: int = 512,
        specs: Mapping[str, Latent] = LATENTS,
        blas_threads: int | None = 1,
    ):
        self.images = np.asarray(images)
        self.latents = {name: np.asarray(value) for name, value in latents.items()}
        self.blocks = {name: tuple(members) for name, members in (blocks or {}).items()}
        continuous = [n for n, spec in specs.items() if not spec.classes and n in latents]
        known = {*continuous, *part_names(continuous, specs), *_derived_names(continuous)}
        unknown = sorted({m for ms in self.blocks.values() for m in ms} - known)
        if unknown:
            raise ValueError(f"`blocks` name {unknown}, neither latents nor parts {sorted(known)}.")
        if (views is None) != (view_params is None):
            raise ValueError("Give both `views` and `view_params` for the readout, or neither.")
        self.views = None if views is None else np.asarray(views)
        self.view_params = {k: np.asarray(v) for k, v in (view_params or {}).items()}
        self.nonlinear = nonlinear
        self.batch_size = batch_size
        self.specs = specs
        self.blas_threads = blas_threads

    def score_names(self, anisotropic: bool) -> set[str]:
        """The scalar scores `evaluate` returns, `<level>/...` (see `latent_scores`)."""
        continuous = [n for n, s in self.specs.items() if not s.classes and n in self.latents]
        classes = [n for n, s in self.specs.items() if s.classes and n in self.latents]
        kinds = ("linear", "nonlinear") if self.nonlinear else ("linear",)
        names = set()
        for level, kind in itertools.product(LEVELS, kinds):
            names |= {f"{level}/{kind}_r2/{latent}" for latent in continuous}
            parts = (*part_names(continuous, self.specs), *_derived_names(continuous))
            names |= {f"{level}/part_{kind}_r2/{p}" for p in parts}
            names.add(f"{level}/{kind}_r2_mean")
            names |= {f"{level}/block_{kind}_r2/{b}" for b, m in self.blocks.items() if len(m)}
        for level in LEVELS:
            names |= {f"{level}/mcc", f"{level}/mcc_floor", f"{level}/mcc_floor_sd"}
            # A block of derived parts only has no matched dimension: no subspace score.
            derived = set(_derived_names(continuous))
            names |= {
                f"{level}/subspace_r2/{b}" for b, m in self.blocks.items() if set(m) - derived
            }
            names |= {f"{level}/{latent}_accuracy" for latent in classes}
            if self.views is not None:
                names.add(f"{level}/augmentation_readout")
        if anisotropic:
            names.add("lambda_hat_low_dimensions")
        return names

    @property
    def summary_scores(self) -> frozenset[str]:
        """The scores TensorBoard shows by default, at each level."""
        blocks = "block_linear_r2/.+" if set(self.blocks) <= {"content", "style"} else "mcc"
        summary = re.compile(rf"[^/]+/({blocks}|[^/]+_accuracy|augmentation_readout)")
        return frozenset(filter(summary.fullmatch, self.score_names(anisotropic=True)))

    def evaluate(self, model, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
        """`{level: latent_scores (and the readout)}` per `LEVELS`, and a model's `lambda_hat`."""
        scores = {}
        for level in LEVELS:
            stage = level_stages(progress, level)
            stage("features")
            features = level_features(model, self.images, level, self.batch_size)
            view_features = None
            if self.views is not None:
                view_features = level_features(model, self.views, level, self.batch_size)
            with threadpool_limits(self.blas_threads, user_api="blas"):
                scores[level] = latent_scores(
                    features,
                    self.latents,
                    self.blocks,
                    self.nonlinear,
                    specs=self.specs,
                    progress=stage,
                )
                if view_features is not None:
                    stage("readout")
                    readout = augmentation_readout(
                        view_features, self.view_params, channels=self.views.shape[-1]
                    )
                    scores[level].update(readout)
        scores.update(concentration_scores(model))
        return scores


__all__ = [
    "LatentEvaluator",
    "kernel_ridge_r2",
    "latent_scores",
    "latent_targets",
    "split_indices",
]
