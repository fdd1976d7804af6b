"""Pure functions of the InfoNCE family (similarities, candidate sets, the loss) in
float32 or wider. Details: docs/method.md#the-loss-family"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Sequence

import tensorflow as tf
from keras import ops

from aninfonce_tf import logsumexp
from aninfonce_tf.errors import is_integer, is_number
from aninfonce_tf.logsumexp import MASKED_LOGIT

SIMILARITIES = ("euclidean", "cosine")
CANDIDATE_SETS = ("nt_xent", "one_directional")
# The smallest temperature accepted: unit-vector logits up to 1e4 stay finite in float32.
MIN_TEMPERATURE = 1e-4
# The largest finite float32: a larger option overflows in the loss.
FLOAT32_MAX = float(tf.float32.max)


def _as_float(x):
    x = ops.convert_to_tensor(x)
    if x.dtype not in ("float32", "float64"):
        x = ops.cast(x, "float32")
    return x


def validate_pair(z1, z2, min_batch: int = 2) -> None:
    """Raises ValueError unless `[B, d]` `z1` and `z2` can form positive pairs.

    Args:
        z1: `[B, d]` first views.
        z2: `[B, d]` second views.
        min_batch: the smallest batch size (a graph assertion when it is unknown).
    """
    for name, z in (("z1", z1), ("z2", z2)):
        if len(z.shape) != 2:
            raise ValueError(
                f"`{name}` must have rank 2 ([batch, dim]); got shape {tuple(z.shape)}."
            )
    if tuple(z1.shape) != tuple(z2.shape) and None not in (*z1.shape, *z2.shape):
        raise ValueError(
            "`z1` and `z2` must have the same shape (row i is a positive pair); "
            f"got {tuple(z1.shape)} and {tuple(z2.shape)}."
        )
    batch = z1.shape[0]
    message = f"The batch size must be at least {min_batch} to have negatives"
    if batch is not None and batch < min_batch:
        raise ValueError(f"{message}; got {batch}.")
    if batch is None and not tf.executing_eagerly() and not _ROWS_CHECKED.get():
        # A last partial batch of one row has no negatives. Checked in graph mode;
        # XLA drops assertions, so batch with drop_remainder=True there.
        tf.debugging.assert_greater_equal(tf.shape(z1)[0], min_batch, message=message)


# Set while a caller whose input pipeline checks every batch's rows (`ContrastiveModel`'s
# step: `data.pairs.fit_input`) traces the loss: no assertion in its graph, which XLA
# would only drop with a warning.
_ROWS_CHECKED = contextvars.ContextVar("rows_checked", default=False)


@contextlib.contextmanager
def rows_checked_upstream():
    """Within it, `validate_pair` adds no graph assertion for an unknown batch size."""
    token = _ROWS_CHECKED.set(True)
    try:
        yield
    finally:
        _ROWS_CHECKED.reset(token)


def check_similarity(similarity: str) -> str:
    if similarity not in SIMILARITIES:
        raise ValueError(f"Unknown `similarity` {similarity!r}; expected one of {SIMILARITIES}.")
    return similarity


def check_candidates(candidates: str) -> str:
    if candidates not in CANDIDATE_SETS:
        raise ValueError(f"Unknown `candidates` {candidates!r}; expected one of {CANDIDATE_SETS}.")
    return candidates


def l2_normalize(x, epsilon: float = 1e-12):
    """Projects rows onto the unit sphere; a zero row stays zero (finite gradient)."""
    x = _as_float(x)
    squared_norm = ops.sum(ops.square(x), axis=-1, keepdims=True)
    return x * ops.rsqrt(ops.maximum(squared_norm, epsilon))


def pairwise_similarity(a, b, similarity: str = "euclidean", temperature: float = 1.0):
    """`[N, M]` float32 similarity of every row of `a` with every row of `b` over
    `temperature`: `euclidean` -1/2 ||a_i - b_j||^2, `cosine` of L2-normalised rows.

    Args:
        a: `[N, d]` embeddings.
        b: `[M, d]` embeddings.
        similarity: `"euclidean"` or `"cosine"`.
        temperature: positive divisor of the similarity.

    Example:

    >>> s = pairwise_similarity([[0.0, 0.0]], [[3.0, 4.0]])
    >>> float(s[0, 0])
    -12.5
    """
    return _similarity(_as_float(a), _as_float(b), check_similarity(similarity), temperature)


def _similarity(a, b, similarity: str, temperature: float):
    if similarity == "cosine":
        return logsumexp.similarity_logits(l2_normalize(a), l2_normalize(b), "dot", temperature)
    return logsumexp.similarity_logits(a, b, "euclidean", temperature)


def contrastive_logits(
    z1,
    z2,
    similarity: str = "euclidean",
    temperature: float = 1.0,
    candidates: str = "nt_xent",
    z1_all=None,
    z2_all=None,
    row_offset=0,
):
    """`(logits, positive_index, self_mask)` of each anchor row against its candidates
    (`[R, C]`, `[R]` int32, `[R, C]` 1 on candidates that count); arguments as `info_nce`."""
    check_similarity(similarity)
    check_candidates(candidates)
    return _contrastive_logits(
        z1, z2, similarity, temperature, candidates, z1_all, z2_all, row_offset
    )


def _contrastive_logits(z1, z2, similarity, temperature, candidates, z1_all, z2_all, row_offset):
    rows, columns, positive_index, self_index = _candidate_sets(
        z1, z2, candidates, z1_all, z2_all, row_offset
    )
    logits = _similarity(rows, columns, similarity, temperature)
    if self_index is None:
        return logits, positive_index, ops.ones_like(logits)
    not_self = 1.0 - ops.one_hot(self_index, ops.shape(columns)[0], dtype=logits.dtype)
    return logits, positive_index, not_self


def _candidate_sets(z1, z2, candidates, z1_all, z2_all, row_offset):
    """`(rows, columns, positive_index, self_index)`; `self_index` None for one-directional."""
    z1, z2 = _as_float(z1), _as_float(z2)
    z1_all = z1 if z1_all is None else _as_float(z1_all)
    z2_all = z2 if z2_all is None else _as_float(z2_all)
    local = ops.shape(z1)[0]
    total = ops.shape(z1_all)[0]
    local_index = ops.arange(local, dtype="int32") + ops.cast(row_offset, "int32")
    if candidates == "one_directional":
        return z1, z2_all, local_index, None
    rows = ops.concatenate([z1, z2], axis=0)
    columns = ops.concatenate([z1_all, z2_all], axis=0)
    self_index = ops.concatenate([local_index, local_index + total], axis=0)
    positive_index = ops.concatenate([local_index + total, local_index], axis=0)
    return rows, columns, positive_index, self_index


def _positive_mask_and_logit(logits, positive_index):
    """`[R, C]` one-hot mask of each row's positive, and the `[R]` positive logits."""
    positive_mask = ops.one_hot(positive_index, ops.shape(logits)[1], dtype=logits.dtype)
    return positive_mask, ops.sum(logits * positive_mask, axis=-1)


def info_nce_from_logits(logits, positive_index, candidate_mask, hard_negative_beta: float = 0.0):
    """`[R]` float32 InfoNCE losses: -logit of the positive + logsumexp of the candidates.

    Args:
        logits: `[R, C]` logits.
        positive_index: `[R]` column of each row's positive.
        candidate_mask: `[R, C]`, 1 where a column is a candidate of the row.
        hard_negative_beta: weights each negative by exp(beta * logit) (mean 1,
            no gradient; Robinson et al., 2021); 0 gives the plain loss.
    """
    positive_mask, positive_logit = _positive_mask_and_logit(logits, positive_index)
    log_weights = ops.zeros_like(logits)
    if hard_negative_beta:
        negative_mask = candidate_mask * (1.0 - positive_mask)
        scaled = hard_negative_beta * ops.stop_gradient(logits)
        scaled = ops.where(negative_mask > 0, scaled, MASKED_LOGIT)
        num_negatives = ops.sum(negative_mask, axis=-1, keepdims=True)
        log_weights = ops.log(num_negatives) + ops.log_softmax(scaled, axis=-1)
        log_weights = ops.where(negative_mask > 0, log_weights, 0.0)
    masked = ops.where(candidate_mask > 0, logits + log_weights, MASKED_LOGIT)
    return ops.logsumexp(masked, axis=-1) - positive_logit


def info_nce(
    z1,
    z2,
    similarity: str = "euclidean",
    temperature: float | Sequence[float] = 1.0,
    candidates: str = "nt_xent",
    hard_negative_beta: float = 0.0,
    ensemble_weights: Sequence[float] | None = None,
    z1_all=None,
    z2_all=None,
    row_offset=0,
    block_size: int | None = None,
    return_stats: bool = False,
):
    """Per-row InfoNCE losses of the pairs `(z1[i], z2[i])`. Details: docs/method.md#the-loss-family

    Args:
        z1: `[B, d]` first views.
        z2: `[B, d]` second views.
        similarity: `"euclidean"` or `"cosine"`.
        temperature: positive float, or a sequence of them for an ensemble.
        candidates: `"nt_xent"` (both views as anchors) or `"one_directional"`.
        hard_negative_beta: hard-negative reweighting strength; 0 is plain.
        ensemble_weights: weights of an ensemble's temperatures (default uniform,
            normalised to sum 1).
        z1_all: gathered global first views (distributed training).
        z2_all: gathered global second views.
        row_offset: index of the first local row in the global batch.
        block_size: the log-sum-exp over blocks of this many candidates (same value
            and gradients, memory rows x block); None: dense.
        return_stats: also return the first temperature's top-1 `accuracy` and
            mean `candidates` per row.

    Returns:
        `[R]` float32 losses (R = 2B for NT-Xent, B for one-directional); with
        `return_stats`, `(losses, stats)`.

    Example:

    >>> z = [[1.0, 0.0], [0.0, 1.0]]
    >>> losses = info_nce(z, z, similarity="cosine", candidates="one_directional")
    >>> [round(float(v), 4) for v in losses]
    [0.3133, 0.3133]
    """
    z1, z2 = _as_float(z1), _as_float(z2)
    validate_pair(z1, z2)
    options = (
        similarity,
        temperature,
        candidates,
        hard_negative_beta,
        ensemble_weights,
        block_size,
    )
    check_info_nce_options(*options)
    losses, stats = info_nce_unchecked(z1, z2, *options, z1_all, z2_all, row_offset)
    return (losses, stats) if return_stats else losses


def check_info_nce_options(
    similarity: str = "euclidean",
    temperature: float | Sequence[float] = 1.0,
    candidates: str = "nt_xent",
    hard_negative_beta: float = 0.0,
    ensemble_weights: Sequence[float] | None = None,
    block_size: int | None = None,
) -> None:
    """Raises `ValueError` naming the first of `info_nce`'s options it cannot use."""
    check_similarity(similarity)
    check_candidates(candidates)
    temperatures = check_temperature(temperature)
    if ensemble_weights is not None:
        if len(ensemble_weights) != len(temperatures):
            raise ValueError(
                f"`ensemble_weights` has {len(ensemble_weights)} entries for "
                f"{len(temperatures)} temperatures."
            )
        numbers = all(is_number(w) and w >= 0 for w in ensemble_weights)
        if not (numbers and 0 < float(sum(ensemble_weights)) <= FLOAT32_MAX):
            raise ValueError(
                "`ensemble_weights` must be finite, non-negative numbers of a positive sum "
                f"that float32 holds; got {ensemble_weights}."
            )
    if not (is_number(hard_negative_beta) and abs(hard_negative_beta) <= FLOAT32_MAX):
        raise ValueError(
            "`hard_negative_beta` must be a finite number that float32 holds; got "
            f"{hard_negative_beta!r}."
        )
    check_block_size(block_size, hard_negative_beta)


def info_nce_unchecked(
    z1,
    z2,
    similarity: str,
    temperature: float | Sequence[float],
    candidates: str,
    hard_negative_beta: float,
    ensemble_weights: Sequence[float] | None,
    block_size: int | None,
    z1_all=None,
    z2_all=None,
    row_offset=0,
):
    """`info_nce(..., return_stats=True)` without checking the options or the pair."""
    temperatures = list(temperature) if isinstance(temperature, (list, tuple)) else [temperature]
    weights = [1.0] * len(temperatures) if ensemble_weights is None else ensemble_weights
    total_weight = float(sum(weights))
    block_size = None if block_size is None else int(block_size)
    losses, stats = 0.0, None
    for weight, temp in zip(weights, temperatures, strict=True):
        temp = float(temp)
        if hard_negative_beta:
            logits = _contrastive_logits(
                z1, z2, similarity, temp, candidates, z1_all, z2_all, row_offset
            )
            row_losses = info_nce_from_logits(*logits, hard_negative_beta)
            if stats is None:  # the first temperature's
                stats = {
                    "accuracy": positive_accuracy(*logits),
                    "candidates": ops.mean(ops.sum(logits[2], axis=-1)),
                }
        else:
            row_losses, row_stats = _info_nce_by_kernel(
                z1, z2, similarity, temp, candidates, z1_all, z2_all, row_offset, block_size
            )
            stats = stats or row_stats
        losses = losses + (float(weight) / total_weight) * row_losses
    return losses, stats


def _info_nce_by_kernel(
    z1, z2, similarity, temperature, candidates, z1_all, z2_all, row_offset, block_size
):
    """Per-row losses and stats without hard negatives, dense or blockwise."""
    rows, columns, positive_index, self_index = _candidate_sets(
        z1, z2, candidates, z1_all, z2_all, row_offset
    )
    if similarity == "cosine":
        rows, columns = l2_normalize(rows), l2_normalize(columns)
        kernel_similarity = "dot"
        positive_similarity = ops.sum(rows * ops.take(columns, positive_index, axis=0), axis=-1)
    else:
        kernel_similarity = "euclidean"
        positives = ops.take(columns, positive_index, axis=0)
        positive_similarity = -0.5 * ops.sum(ops.square(rows - positives), axis=-1)
    lse, margin = logsumexp.logsumexp_over_candidates(
        rows, columns, self_index, positive_index, kernel_similarity, temperature, block_size
    )
    count = ops.shape(columns)[0] - (0 if self_index is None else 1)
    stats = {
        "accuracy": ops.mean(ops.cast(ops.greater(margin, 0.0), "float32")),
        "candidates": ops.cast(count, "float32"),
    }
    return lse - positive_similarity / temperature, stats


def check_block_size(block_size, hard_negative_beta: float = 0.0) -> int | None:
    """`block_size` as an int (None: dense); the blockwise loss has no hard negatives."""
    if block_size is None:
        return None
    if not (is_integer(block_size) and block_size >= 1) or hard_negative_beta:
        raise ValueError(
            f"`block_size` must be a positive int, without `hard_negative_beta`; got "
            f"block_size={block_size!r}, hard_negative_beta={hard_negative_beta}."
        )
    return int(block_size)


def check_temperature(temperature, name: str = "temperature") -> list[float]:
    """`temperature` as a list of floats, each from `MIN_TEMPERATURE` to float32's largest
    (else ValueError)."""
    temperatures = list(temperature) if isinstance(temperature, (list, tuple)) else [temperature]
    if not temperatures or not all(
        is_number(t) and MIN_TEMPERATURE <= t <= FLOAT32_MAX for t in temperatures
    ):
        raise ValueError(
            f"`{name}` must be one or more positive, finite numbers (at least "
            f"{MIN_TEMPERATURE}) that float32 holds; got {temperature!r}."
        )
    return [float(t) for t in temperatures]


def positive_accuracy(logits, positive_index, candidate_mask):
    """Fraction of rows whose positive logit beats every negative's (a tie is a miss)."""
    positive_mask, positive_logit = _positive_mask_and_logit(logits, positive_index)
    negatives = ops.where(candidate_mask * (1.0 - positive_mask) > 0, logits, MASKED_LOGIT)
    hits = ops.greater(positive_logit, ops.max(negatives, axis=-1))
    return ops.mean(ops.cast(hits, "float32"))


def alignment(u, v):
    """Mean squared distance of positive pairs of unit vectors (Wang & Isola, 2020)."""
    return ops.mean(ops.sum(ops.square(_as_float(u) - _as_float(v)), axis=-1))


def uniformity(u, t: float = 2.0):
    """log E exp(-t ||u_i - u_j||^2) over distinct pairs of unit vectors (Wang & Isola, 2020)."""
    u = _as_float(u)
    n = ops.shape(u)[0]
    sq_dist = -2.0 * _similarity(u, u, "euclidean", 1.0)
    off_diagonal = 1.0 - ops.eye(n, dtype=u.dtype)
    masked = ops.where(off_diagonal > 0, -t * sq_dist, MASKED_LOGIT)
    count = ops.cast(n * (n - 1), u.dtype)
    return ops.logsumexp(ops.reshape(masked, [-1])) - ops.log(count)


__all__ = [
    "SIMILARITIES",
    "CANDIDATE_SETS",
    "alignment",
    "check_block_size",
    "check_info_nce_options",
    "contrastive_logits",
    "info_nce",
    "info_nce_from_logits",
    "info_nce_unchecked",
    "l2_normalize",
    "pairwise_similarity",
    "positive_accuracy",
    "uniformity",
    "rows_checked_upstream",
    "validate_pair",
]
