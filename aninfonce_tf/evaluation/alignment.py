"""Slow-feature alignment: the linear map that turns an embedding's axes onto the
latents, fitted from positive pairs alone. Details: docs/method.md#slow-feature-alignment"""

from __future__ import annotations

import numpy as np
import scipy.linalg

# Dimensions count as dependent when the embedding's least variance is below this
# fraction of its largest.
DEPENDENT = 1e-10


def slow_feature_alignment(first, second) -> np.ndarray:
    """The `[d, d]` alignment of an embedding, from its values on positive pairs.

    Args:
        first: `[N, d]` embeddings of one side of N positive pairs.
        second: `[N, d]` embeddings of the other side.

    Returns:
        Columns v_k, slowest first, of unit variance (one latent per column).

    Raises:
        ValueError: for sides of other shapes, fewer than 2d pairs, a singular covariance.

    Example:

    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(4000, 3))
    >>> z_positive = z + rng.normal(size=(4000, 3)) * np.array([0.1, 0.2, 0.3])
    >>> mixing = rng.normal(size=(3, 3))
    >>> alignment = slow_feature_alignment(z @ mixing, z_positive @ mixing)
    >>> aligned = z @ mixing @ alignment
    >>> np.round(np.abs(np.corrcoef(aligned.T, z.T)[:3, 3:]), 1)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    """
    first = np.asarray(first, dtype="float64")
    second = np.asarray(second, dtype="float64")
    if first.ndim != 2 or first.shape != second.shape:
        raise ValueError(
            "`first` and `second` must be [N, d] embeddings of the two sides of the same "
            f"pairs; got shapes {first.shape} and {second.shape}."
        )
    pairs, dim = first.shape
    if pairs < 2 * dim:
        raise ValueError(
            f"Too few pairs ({pairs}) for a {dim}-dimensional embedding: pass at least "
            f"{2 * dim} (thousands for a stable alignment)."
        )
    features = np.concatenate([first, second])
    features -= features.mean(axis=0)
    covariance = features.T @ features / len(features)
    variances = np.linalg.eigvalsh(covariance) if np.isfinite(covariance).all() else [0.0]
    if variances[0] <= DEPENDENT * variances[-1]:
        raise ValueError(
            f"The embedding's {dim} dimensions are linearly dependent (or not finite), so "
            "no alignment exists: use an embedding no wider than the layer before it."
        )
    difference = first - second
    _, vectors = scipy.linalg.eigh(difference.T @ difference / pairs, covariance)
    return vectors


__all__ = ["slow_feature_alignment"]
