"""How much a pair source changes each rendered latent: its effective concentration
Lambda_eff = 1 / E[(z1 - z2)^2], estimated from simulated pairs, with each latent in
the frame of the view that shows it and each circular latent split into parts that a
view can change apart; and the content and style blocks that follow from it.

A latent's units are those where its range is 2 wide (the conditional's units of
`RenderedPairs`), so a normal conditional of concentration Lambda gives
Lambda_eff = Lambda. A circular latent's parts are the cos and sin of its angle,
times sqrt(2) / pi: a small turn by d of those units then moves each part by d in
the mean square. A flip maps a rotation theta to -theta: it changes the sin part and
never the cos part. Grayscale erases both hues: an erased part takes its mean over the
latent's range (0), the best any encoder can say of it.

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

Lambda_eff depends on a part's units and type; the blocks do not: they follow each
part's correlation between the two views of a pair (`effective_blocks`, the rule in
docs/results.md, "Content and style, measured").
"""

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
    """`{part: [N]}` of the continuous `latents` (`{name: [N]}`) in units where each
    latent's range (in `specs`) is 2 wide, and `renderer.DERIVED_PARTS`; the hues' parts
    of rows where `erased` (`[N]` bool) are 0.

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
    """The continuous latents as a view of `SimCLRAugment` with `params` shows them,
    and which views erase the hues (grayscale).

    The crop box (`y1, x1, y2, x2` of the image) moves and stretches the object: its
    centre lies at `(x - x1) / (x2 - x1)` of the view, its area-equivalent radius is
    `scale / sqrt(box area)`; a flip maps `x` to `1 - x` and `rotation` to `-rotation`;
    the hue jitter shifts both hues by the same fraction of the circle.
    """
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
    """Each part's Lambda_eff under `source`'s pairs (a `RenderedPairs`), from `count`
    simulated pairs; `"augment"` pairs in each view's frame (`view_latents`), the
    others as the conditional draws them. No image is rendered.

    Returns:
        `{"parts": {part: Lambda_eff}, "mean_squared_change": {part: E[(z1 - z2)^2]},
        "correlation": {part: rho}, "unshared": [part], "sample_size": count}`:
        Lambda_eff (at most `MAX_EFFECTIVE_CONCENTRATION`) of `renderer.PARTS`; rho,
        the Pearson correlation of a part between the two views (1 for a part no pair
        changes), also of `renderer.DERIVED_PARTS`; the parts with rho below
        `UNSHARED_CORRELATION`.
    """
    if not isinstance(count, (int, np.integer)) or count < 2:
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
    """Pearson's rho of a part in the two views: 1 where no pair changes a part that
    varies, NaN where a view never shows it varying (e.g. erased in every view)."""
    if min(np.var(first), np.var(second)) < 1e-18:
        return float("nan")
    if np.allclose(first, second, rtol=0, atol=1e-9):
        return 1.0
    return float(np.corrcoef(first, second)[0, 1])


def _shared(rho: float) -> bool:
    """Whether a pair shares a part of correlation `rho`: |rho| at least
    `UNSHARED_CORRELATION` (a part reversed between views is shared too); NaN is not."""
    return bool(abs(rho) >= UNSHARED_CORRELATION)


def effective_blocks(correlation: Mapping[str, float]) -> dict[str, tuple[str, ...]]:
    """Shared parts split into `"content"`, what a pair keeps most, and `"style"`, by
    their correlation rho between a pair's two views (`effective_concentration`'s
    `"correlation"`), a rule free of units.

    Unshared parts (|rho| below `UNSHARED_CORRELATION`, or NaN: no view shows them
    varying) are in neither block; a derived part (`renderer.DERIVED_FROM`) enters only
    in place of an unshared part it stands for. A part no pair changes (rho 1) is
    content. The others are placed on s = log(1 / (1 - rho))
    (for a stationary pair, log of Lambda_eff times twice the part's variance) and
    split where the two groups' variance between them is largest (Otsu's rule in one
    dimension), the parts above content; no split (all content) unless the closest
    parts across it lie at least `MIN_BLOCK_GAP` apart in 1 / (1 - rho), so that
    near-equal parts are not cut apart.

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
    """The index k (1 <= k < n) that splits sorted scores into [:k] and [k:] with the
    largest variance between the two groups; 0 for fewer than two scores."""
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
