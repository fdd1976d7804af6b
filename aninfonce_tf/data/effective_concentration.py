"""How much a pair source changes each rendered latent part (Lambda_eff), and the content
and style blocks it gives. Details: docs/results.md#what-a-pair-keeps-effective-concentrations"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.renderer import (
    DERIVED_FROM,
    DERIVED_PARTS,
    HUES,
    LATENTS,
    PARTS,
    Latent,
    derived_parts,
    latent_coordinates,
    part_names,
    sample_latents,
)
from aninfonce_tf.errors import is_integer

# Estimates are capped here: a part that no pair changes has an infinite Lambda_eff.
MAX_EFFECTIVE_CONCENTRATION = 1e4
# The radius of a circular latent's parts (see the module's docstring).
CIRCLE_RADIUS = math.sqrt(2) / math.pi
# A part whose correlation between a pair's views is below this is unshared: a pair
# says (almost) nothing of it, so no identifiability claim covers it.
UNSHARED_CORRELATION = 0.1
# Content and style must lie at least this factor apart in 1 / (1 - rho), between the
# closest parts across the split; else no split is made.
MIN_BLOCK_GAP = 1.25


def latent_parts(
    latents: Mapping, erased=None, specs: Mapping[str, Latent] = LATENTS
) -> dict[str, np.ndarray]:
    """`{part: [N]}` of the continuous `latents` in units and `DERIVED_PARTS` (`erased`: hues 0).

    Example:

    >>> from aninfonce_tf.data.renderer import CONTINUOUS, LATENTS
    >>> latents = {name: [LATENTS[name].low] for name in CONTINUOUS}
    >>> parts = latent_parts(latents)
    >>> float(parts["x"][0]), round(float(parts["rotation_cos"][0]), 3)
    (-1.0, 0.45)
    """
    parts = latent_coordinates(latents, specs, radius=CIRCLE_RADIUS)
    parts.update(derived_parts(parts))
    if erased is not None:
        for part in part_names(HUES):
            parts[part] = np.where(erased, 0.0, parts[part])
    return parts


def view_latents(latents: Mapping, params: Mapping) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The continuous latents as a view with `params` shows them, and which views are gray."""
    top, left, bottom, right = np.asarray(params["crop_box"], "float64").T
    x = (np.asarray(latents["x"], "float64") - left) / (right - left)
    y = (np.asarray(latents["y"], "float64") - top) / (bottom - top)
    flip = np.asarray(params["flip"]) > 0
    rotation = np.asarray(latents["rotation"], "float64")
    shift = np.asarray(params["hue"], "float64")
    view = {
        "x": np.where(flip, 1 - x, x),
        "y": y,
        "scale": np.asarray(latents["scale"], "float64") / np.sqrt((right - left) * (bottom - top)),
        "rotation": np.where(flip, np.mod(-rotation, 2 * math.pi), rotation),
    }
    for name in HUES:
        view[name] = np.mod(np.asarray(latents[name], "float64") + shift, 1.0)
    return view, np.asarray(params["grayscale"]) > 0


def effective_concentration(source, count: int = 8192, seed: int = 0) -> dict:
    """Each part's Lambda_eff under `source`'s pairs, from `count` simulated pairs.

    Returns:
        `{"parts": {part: Lambda_eff}, "mean_squared_change": {part: E[(z1 - z2)^2]},
        "correlation": {part: rho}, "unshared": [part], "sample_size": count}`.

    Example:

    >>> from aninfonce_tf.data.rendered_pairs import RenderedPairs
    >>> pairs = RenderedPairs(mode="latent", concentration=[100, 100, 100, 5, 5, 5])
    >>> estimate = effective_concentration(pairs, count=20_000)
    >>> round(estimate["parts"]["x"]), round(estimate["parts"]["rotation_cos"])
    (105, 8)
    >>> round(estimate["correlation"]["x"], 2), round(estimate["correlation"]["rotation_cos"], 2)
    (0.99, 0.36)
    >>> effective_blocks(estimate["correlation"])["content"]
    ('x', 'y', 'scale')
    """
    if not (is_integer(count) and count >= 2):
        raise ValueError(f"`count` must be an int of at least 2; got {count!r}.")
    latent_seed, pair_seed = tf.unstack(
        tf.random.experimental.stateless_split(tf.constant([seed, 3], tf.int64), 2)
    )
    specs = source.latents
    latents = sample_latents(count, latent_seed, specs)
    if source.mode == "augment":
        first, second = tf.unstack(tf.random.experimental.stateless_split(pair_seed, 2))
        augmentation = source.augmentation
        parts1 = latent_parts(*view_latents(latents, augmentation.parameters(count, first)), specs)
        parts2 = latent_parts(*view_latents(latents, augmentation.parameters(count, second)), specs)
    else:
        parts1 = latent_parts(latents, specs=specs)
        parts2 = latent_parts(source.positive_latents(latents, pair_seed), specs=specs)
    change = {part: float(np.mean((parts1[part] - parts2[part]) ** 2)) for part in PARTS}
    correlation = {
        part: _correlation(parts1[part], parts2[part]) for part in (*PARTS, *DERIVED_PARTS)
    }
    return {
        "parts": {
            part: 1 / max(value, 1 / MAX_EFFECTIVE_CONCENTRATION) for part, value in change.items()
        },
        "mean_squared_change": change,
        "correlation": correlation,
        "unshared": [part for part, rho in correlation.items() if not _shared(rho)],
        "sample_size": int(count),
    }


def _correlation(first: np.ndarray, second: np.ndarray) -> float:
    """Pearson's rho of a part in the two views (1: no pair changes it; NaN: constant)."""
    if min(np.var(first), np.var(second)) < 1e-18:
        return float("nan")
    if np.allclose(first, second, rtol=0, atol=1e-9):
        return 1.0
    return float(np.corrcoef(first, second)[0, 1])


def _shared(rho: float) -> bool:
    """Whether |rho| is at least `UNSHARED_CORRELATION` (NaN: no)."""
    return bool(abs(rho) >= UNSHARED_CORRELATION)


def effective_blocks(correlation: Mapping[str, float]) -> dict[str, tuple[str, ...]]:
    """Shared parts split into `"content"` and `"style"` by their correlation rho between
    a pair's views. Details: docs/results.md#what-a-pair-keeps-effective-concentrations

    Example:

    >>> effective_blocks({"x": 0.02, "y": 0.69, "scale": 0.54, "rotation_cos": 1.0})
    {'content': ('y', 'rotation_cos'), 'style': ('scale',)}
    >>> effective_blocks({"x": 0.5, "y": 0.52, "x_offset": 0.9})
    {'content': ('x', 'y'), 'style': ()}
    """
    shared = {p for p, rho in correlation.items() if _shared(rho)}
    shared -= {d for d, part in DERIVED_FROM.items() if part in shared}
    strength = {part: abs(correlation[part]) for part in shared}
    content = {p for p in shared if strength[p] >= 1}
    changed = sorted(shared - content, key=strength.get)
    scores = -np.log1p(-np.array([strength[part] for part in changed]))
    cut = _otsu_cut(scores)
    if cut and np.exp(scores[cut] - scores[cut - 1]) >= MIN_BLOCK_GAP:
        content |= set(changed[cut:])
    else:
        content |= set(changed)
    order = [*PARTS, *DERIVED_PARTS]
    return {
        "content": tuple(p for p in order if p in content),
        "style": tuple(p for p in order if p in shared and p not in content),
    }


def _otsu_cut(sorted_scores: np.ndarray) -> int:
    """The index k splitting sorted scores with the largest between-group variance."""
    n = len(sorted_scores)
    if n < 2:
        return 0
    between = [
        k * (n - k) * (sorted_scores[:k].mean() - sorted_scores[k:].mean()) ** 2
        for k in range(1, n)
    ]
    return int(np.argmax(between)) + 1


__all__ = [
    "MAX_EFFECTIVE_CONCENTRATION",
    "MIN_BLOCK_GAP",
    "UNSHARED_CORRELATION",
    "effective_blocks",
    "effective_concentration",
    "latent_parts",
    "view_latents",
]
