"""Held-out identifiability scores of features against true latents, and
`IdentifiabilityEvaluator`. Details: docs/method.md#held-out-scores"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.stats import ortho_group, rankdata, spearmanr
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler

from aninfonce_tf.data.synthetic import SyntheticSetup, concentration_blocks
from aninfonce_tf.errors import check_flag, is_integer
from aninfonce_tf.evaluation.alignment import slow_feature_alignment
from aninfonce_tf.evaluation.features import level_features
from aninfonce_tf.evaluation.protocol import concentration_scores


def _split(latents, features, train_fraction: float, seed: int):
    latents = np.asarray(latents, dtype="float64")
    features = np.asarray(features, dtype="float64")
    if latents.ndim != 2 or features.ndim != 2:
        raise ValueError(
            f"`latents` and `features` must be 2-D; got {latents.shape} and {features.shape}."
        )
    if len(latents) != len(features):
        raise ValueError(f"`latents` has {len(latents)} rows, `features` {len(features)}.")
    if not 0 < train_fraction < 1:
        raise ValueError(f"`train_fraction` must be in (0, 1); got {train_fraction}.")
    order = np.random.default_rng(seed).permutation(len(latents))
    cut = int(train_fraction * len(latents))
    if cut < 2 or len(latents) - cut < 2:
        raise ValueError(f"Too few samples ({len(latents)}) to split for a held-out score.")
    train, test = order[:cut], order[cut:]
    return features[train], latents[train], features[test], latents[test]


def _held_out_r2(regressor, latents, features, train_fraction, seed):
    x_train, z_train, x_test, z_test = _split(latents, features, train_fraction, seed)
    scaler = StandardScaler().fit(x_train)
    regressor.fit(scaler.transform(x_train), z_train)
    predicted = regressor.predict(scaler.transform(x_test))
    return r2_score(z_test, predicted, multioutput="raw_values")


def linear_r2(latents, features, train_fraction: float = 0.5, seed: int = 0) -> np.ndarray:
    """Per-latent held-out R^2 (`[n_latents]`) of a linear regression from features."""
    return _held_out_r2(LinearRegression(), latents, features, train_fraction, seed)


def nonlinear_r2(
    latents, features, train_fraction: float = 0.5, seed: int = 0, max_train: int = 2000
) -> np.ndarray:
    """Per-latent held-out R^2 of an RBF kernel ridge regression (at most `max_train` fits)."""
    latents, features = np.asarray(latents), np.asarray(features)
    if len(latents) > 2 * max_train:
        keep = np.random.default_rng(seed).permutation(len(latents))[: 2 * max_train]
        latents, features = latents[keep], features[keep]
    regressor = KernelRidge(kernel="rbf", alpha=1e-3, gamma=1.0 / features.shape[1])
    return _held_out_r2(regressor, latents, features, train_fraction, seed)


def _correlations(latents, features, method: str) -> np.ndarray:
    latents = np.asarray(latents, dtype="float64")
    features = np.asarray(features, dtype="float64")
    if method == "spearman":
        # Tied values share their mean rank.
        latents, features = rankdata(latents, axis=0), rankdata(features, axis=0)
    elif method != "pearson":
        raise ValueError(f"Unknown `method` {method!r}; expected 'pearson' or 'spearman'.")
    n = latents.shape[1]
    matrix = np.corrcoef(latents.T, features.T)[:n, n:]
    return np.nan_to_num(np.abs(matrix))


def match_dimensions(latents, features, method: str = "pearson") -> tuple[np.ndarray, np.ndarray]:
    """`(latent_index, feature_index, correlation)` matched one-to-one by |correlation|."""
    correlations = _correlations(latents, features, method)
    rows, columns = linear_sum_assignment(correlations, maximize=True)
    return rows, columns, correlations[rows, columns]


def mean_correlation_coefficient(latents, features, method: str = "pearson") -> float:
    """MCC: mean |correlation| of latents and features after Hungarian matching."""
    return float(np.sum(match_dimensions(latents, features, method)[2]) / np.shape(latents)[1])


def rotation_floor(latents, width: int | None = None, draws: int = 20, seed: int = 0):
    """`(mean, sd)` of the MCC of perfectly recovered latents seen through Haar-random
    rotations.

    Args:
        latents: `[N, n]` true latents (or latent parts).
        width: the features' dimensions d (default n).
        draws: rotations averaged over (at least 2).
        seed: of the rotations.

    Example:

    >>> z = np.random.default_rng(0).uniform(size=(2000, 6))
    >>> mean, sd = rotation_floor(z)
    >>> 0.55 < mean < 0.8, sd < 0.1
    (True, True)
    """
    latents = np.asarray(latents, dtype="float64")
    count, parts = latents.shape
    width = parts if width is None else int(width)
    if width < 1:
        raise ValueError(f"`width` must be at least 1; got {width}.")
    size = max(width, parts)
    padded = np.zeros((count, size))
    padded[:, :parts] = latents - latents.mean(0)
    if draws < 2:
        raise ValueError(f"`draws` must be at least 2, for the sd; got {draws}.")
    rng = np.random.default_rng(seed)
    # Every 1 x 1 rotation is a sign, which the MCC does not see.
    rotations = [
        ortho_group.rvs(size, random_state=rng) if size > 1 else np.ones((1, 1))
        for _ in range(draws)
    ]
    values = [
        mean_correlation_coefficient(latents, (padded @ rotation)[:, :width])
        for rotation in rotations
    ]
    return float(np.mean(values)), float(np.std(values, ddof=1))


def subspace_r2(latents, features, blocks: dict[str, np.ndarray], seed: int = 0) -> dict:
    """Per block, the held-out linear R^2 of its latents from its matched dimensions only.

    Example:

    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 4))
    >>> blocks = {"high": np.array([0, 1]), "low": np.array([2, 3])}
    >>> {k: round(v, 3) for k, v in subspace_r2(z, z[:, [1, 0, 3, 2]], blocks).items()}
    {'high': 1.0, 'low': 1.0}
    """
    latents = np.asarray(latents, dtype="float64")
    features = np.asarray(features, dtype="float64")
    rows, columns, _ = match_dimensions(latents, features)
    matched = dict(zip(rows.tolist(), columns.tolist(), strict=True))
    scores = {}
    for name, index in blocks.items():
        index = np.asarray(index, dtype=int)
        dimensions = [matched[i] for i in index.tolist() if i in matched]
        if dimensions:  # with fewer dimensions than latents, a block may have none
            r2 = linear_r2(latents[:, index], features[:, dimensions], seed=seed)
            scores[name] = float(np.mean(r2))
        elif len(index):
            scores[name] = 0.0
    return scores


def block_r2(per_latent_r2, blocks: dict[str, np.ndarray]) -> dict[str, float]:
    """Mean R^2 of each named block of latent indices."""
    per_latent_r2 = np.asarray(per_latent_r2)
    return {
        name: float(np.mean(per_latent_r2[index])) for name, index in blocks.items() if len(index)
    }


def concentration_agreement(
    learned, true, latents, features, normalize: bool = False
) -> dict[str, float]:
    """Learned Lambda_hat against the true Lambda, dimensions matched by MCC.

    Args:
        learned: `[d]` Lambda_hat, one per feature dimension.
        true: `[n]` ground-truth Lambda, one per latent.
        latents: `[N, n]` true latents, to match feature dimensions to latents.
        features: `[N, d]` features (before the scaling).
        normalize: divide both by their mean first (Euclidean losses).

    Returns:
        `lambda_spearman`, `lambda_relative_error` and `lambda_hat_matched`.
    """
    learned = np.asarray(learned, dtype="float64")
    true = np.asarray(true, dtype="float64")
    rows, columns, _ = match_dimensions(latents, features)
    matched = np.empty_like(true)
    matched[rows] = learned[columns]
    if normalize:
        matched, true = matched / matched.mean(), true / true.mean()
    # Equal up to round-off (a geometric Lambda of spread 1): no order to compare.
    distinct = np.ptp(true) > 1e-9 * np.max(np.abs(true))
    spearman = spearmanr(matched, true).statistic if distinct else float("nan")
    return {
        "lambda_spearman": float(spearman),
        "lambda_relative_error": float(np.mean(np.abs(matched - true) / true)),
        "lambda_hat_matched": matched.tolist(),
    }


def identifiability_scores(
    latents,
    features,
    blocks: dict[str, np.ndarray] | None = None,
    nonlinear: bool = False,
    seed: int = 0,
) -> dict:
    """Every score of the paper's tables for one set of features.

    Returns:
        `linear_r2`, `min_linear_r2`, `linear_r2_per_latent`, `mcc`, `mcc_spearman`;
        with `blocks` `block_r2` and `subspace_r2`; with `nonlinear` `nonlinear_r2`.

    Example:

    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 3))
    >>> scores = identifiability_scores(z, -z[:, ::-1] * 2.0)
    >>> round(scores["linear_r2"], 3), round(scores["mcc"], 3)
    (1.0, 1.0)
    """
    per_latent = linear_r2(latents, features, seed=seed)
    scores = {
        "linear_r2": float(np.mean(per_latent)),
        "min_linear_r2": float(np.min(per_latent)),
        "linear_r2_per_latent": per_latent.tolist(),
        "mcc": mean_correlation_coefficient(latents, features, "pearson"),
        "mcc_spearman": mean_correlation_coefficient(latents, features, "spearman"),
    }
    if blocks is not None:
        scores["block_r2"] = block_r2(per_latent, blocks)
        scores["subspace_r2"] = subspace_r2(latents, features, blocks, seed=seed)
    if nonlinear:
        scores["nonlinear_r2"] = float(np.mean(nonlinear_r2(latents, features, seed=seed)))
    return scores


# The scores a synthetic or VAE preset's conclusions rest on, read at its final step:
# the paper's MCC and linear R^2, and the R^2 of the high- and low-concentration blocks.
PRIMARY_SCORES = ("mcc", "linear_r2", "block_r2/high", "block_r2/low")


class IdentifiabilityEvaluator:
    """Scores a `ContrastiveModel`'s unscaled embeddings against true latents.

    Args:
        observations: `[N, ...]` held-out inputs.
        latents: `[N, n]` their true latents.
        blocks: named latent index blocks for per-block R^2.
        true_concentration: `[n]` ground-truth Lambda, to compare Lambda_hat with.
        normalize_concentration: compare Lambda_hat up to a common factor (Euclidean).
        nonlinear: also fit the kernel-ridge R^2 (slower).
        batch_size: observations per embedding call.
        alignment_pairs: `(first, second)` inputs of M positive pairs, for the alignment.

    Example:

    >>> from aninfonce_tf import IdentifiabilityEvaluator
    >>> z = np.random.default_rng(0).normal(size=(500, 2))
    >>> class Identity:
    ...     scaling = None
    ...     def embed(self, x, training=False, scaled=True):
    ...         return x
    >>> round(IdentifiabilityEvaluator(z, z).evaluate(Identity())["linear_r2"], 3)
    1.0
    """

    # The scores of which lower is better (`--stop-at`'s direction); higher for the others.
    lower_is_better = frozenset({"lambda_relative_error"})
    # The fewest observations it scores: two to fit the linear readout, two to score it.
    FEWEST_SAMPLES = 4

    def __init__(
        self,
        observations,
        latents,
        blocks: dict[str, np.ndarray] | None = None,
        true_concentration=None,
        normalize_concentration: bool = False,
        nonlinear: bool = False,
        batch_size: int = 4096,
        alignment_pairs: tuple | None = None,
    ):
        self.observations = np.asarray(observations)
        self.latents = np.asarray(latents)
        if self.latents.ndim != 2 or not np.all(np.isfinite(self.latents)):
            raise ValueError(
                f"`latents` must be a finite [N, d] array; got shape {self.latents.shape}."
            )
        if self.observations.ndim == 0 or len(self.observations) != len(self.latents):
            raise ValueError(
                f"`observations` ({len(np.atleast_1d(self.observations))} rows) and `latents` "
                f"({len(self.latents)}) must hold one row per sample."
            )
        dim = self.latents.shape[1]
        for block, index in (blocks or {}).items():
            index = np.asarray(index)
            if index.ndim != 1 or not all(is_integer(i) and 0 <= i < dim for i in index):
                raise ValueError(
                    f"`blocks[{block!r}]` must list latent indices from 0 to {dim - 1}; got "
                    f"{index.tolist()!r}."
                )
        if true_concentration is not None:
            values = np.asarray(true_concentration, dtype="float64")
            if values.shape != (dim,) or not np.all(np.isfinite(values) & (values > 0)):
                raise ValueError(
                    f"`true_concentration` must hold {dim} positive, finite values, one per "
                    f"latent; got {true_concentration!r}."
                )
        if not (is_integer(batch_size) and batch_size >= 1):
            raise ValueError(f"`batch_size` must be a positive int; got {batch_size!r}.")
        self.blocks = blocks
        self.true_concentration = true_concentration
        self.normalize_concentration = check_flag(
            "normalize_concentration", normalize_concentration
        )
        self.nonlinear = check_flag("nonlinear", nonlinear)
        self.batch_size = int(batch_size)
        if alignment_pairs is not None:
            first, second = (np.asarray(side) for side in alignment_pairs)
            if first.shape != second.shape:
                raise ValueError(
                    "`alignment_pairs` must be two arrays of the same shape, the inputs of "
                    f"both sides of the pairs; got {first.shape} and {second.shape}."
                )
            alignment_pairs = first, second
        self.alignment_pairs = alignment_pairs
        self._floors: dict[int, tuple[float, float]] = {}

    @classmethod
    def for_setup(
        cls,
        setup: SyntheticSetup,
        observations,
        latents,
        nonlinear: bool = False,
        alignment_pairs: tuple | None = None,
    ) -> IdentifiabilityEvaluator:
        """The evaluator of `setup`'s latents, with its blocks and its Lambda.

        Args:
            setup: the `SyntheticSetup` the latents come from.
            observations, latents, nonlinear, alignment_pairs: as `IdentifiabilityEvaluator`.
        """
        return cls(
            observations,
            latents,
            concentration_blocks(setup.concentration),
            setup.concentration,
            normalize_concentration=setup.space != "sphere",
            nonlinear=nonlinear,
            alignment_pairs=alignment_pairs,
        )

    def score_names(self, anisotropic: bool) -> set[str]:
        """The scalar scores `evaluate` returns (block scores as `block_r2/NAME`)."""
        names = {"linear_r2", "min_linear_r2", "mcc", "mcc_spearman", "mcc_floor", "mcc_floor_sd"}
        for block, index in (self.blocks or {}).items():
            if len(index):
                names |= {f"block_r2/{block}", f"subspace_r2/{block}"}
        if self.nonlinear:
            names.add("nonlinear_r2")
        if self.alignment_pairs is not None:
            names.add("aligned_mcc")
        if anisotropic:
            names.add("lambda_hat_low_dimensions")
            if self.true_concentration is not None:
                names |= {"lambda_spearman", "lambda_relative_error"}
        return names

    @property
    def summary_scores(self) -> frozenset[str]:
        """The scores TensorBoard shows by default."""
        names = self.score_names(anisotropic=True)
        return frozenset({"linear_r2", "mcc", "aligned_mcc", "lambda_spearman"} & names) | {
            name for name in names if name.startswith(("block_r2/", "subspace_r2/"))
        }

    def rotation_floor(self, width: int) -> tuple[float, float]:
        """`rotation_floor` of the held-out latents at `width` dimensions (cached)."""
        if width not in self._floors:
            self._floors[width] = rotation_floor(self.latents, width)
        return self._floors[width]

    def features(self, model) -> np.ndarray:
        """`[N, d]` unscaled embeddings of the observations."""
        return level_features(model, self.observations, "projector", self.batch_size)

    def pair_features(self, model) -> tuple[np.ndarray, np.ndarray]:
        """`([M, d], [M, d])` unscaled embeddings of both sides of `alignment_pairs`."""
        if self.alignment_pairs is None:
            raise ValueError(
                "`pair_features` needs `alignment_pairs`: make the evaluator with "
                "`alignment_pairs=(first, second)`."
            )
        first, second = (
            level_features(model, side, "projector", self.batch_size)
            for side in self.alignment_pairs
        )
        return first, second

    def evaluate(self, model) -> dict[str, Any]:
        """`identifiability_scores`, `concentration_agreement` and the `rotation_floor`."""
        features = self.features(model)
        scores = identifiability_scores(self.latents, features, self.blocks, self.nonlinear)
        scores["mcc_floor"], scores["mcc_floor_sd"] = self.rotation_floor(features.shape[1])
        if self.alignment_pairs is not None:
            alignment = slow_feature_alignment(*self.pair_features(model))
            scores["aligned_mcc"] = mean_correlation_coefficient(self.latents, features @ alignment)
            if getattr(model, "alignment", None) is not None:
                model.alignment.set_matrix(alignment)
        if getattr(model, "scaling", None) is not None:
            scores.update(concentration_scores(model))
            # A tied Lambda_hat (one learned temperature) has no order to compare.
            if self.true_concentration is not None and not getattr(model.scaling, "tied", False):
                scores.update(
                    concentration_agreement(
                        np.asarray(scores["lambda_hat"]),
                        self.true_concentration,
                        self.latents,
                        features,
                        self.normalize_concentration,
                    )
                )
        return scores
