"""Slow-feature alignment: the linear map that maps an embedding's axes onto the latents,
fitted from positive pairs alone (no labels).

When an embedding is an invertible linear map A of the latents (linear R^2 near 1) and a
pair's latents differ with a covariance that is diagonal in the latents, as under the
theory's conditionals, the directions v that change least across a pair at unit variance
(minimising E[(v.(h - h+))^2] subject to E[(v.h)^2] = 1: slow feature analysis, the
generalised eigenvectors of the pairs' difference covariance against the features'
covariance) are the rows of A's inverse up to order, sign and scale, provided the
latents' concentrations differ. AnInfoNCE's loss reaches the same turn by gradient
descent, slowly for latents of close concentration (docs/speed.md); this finds it in one
eigendecomposition, from more pairs the closer the concentrations (on the paper's
Lambda 5..25, steps of 2.2: MCC 0.975-0.99 from 8192 pairs, 0.99 from 16384 on exact
linear mixtures; tests/evaluation/test_alignment.py). Latents of equal concentration
stay mixed among themselves, and the aligned MCC can then be below the unaligned one.
Linear R^2 does not change (an invertible linear map). It uses the data's anisotropy
alone, so it maps any embedding that reads the latents linearly, whichever loss
trained it.

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
        Columns v_k, slowest first (the latent a pair changes least), each of unit
        variance over the pairs' embeddings: `embeddings @ alignment` has one latent
        per column.

    Raises:
        ValueError: when the two sides' shapes differ, there are fewer pairs than
            twice the dimensions, or the embedding's dimensions are linearly dependent
            (its covariance is singular: an embedding wider than the layer before it).
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
