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

>>> from aninfonce_tf.data.rendered import RenderedPairs
>>> pairs = RenderedPairs(mode="latent", concentration=[100, 100, 100, 5, 5, 5])
>>> estimate = effective_concentration(pairs, count=20_000)
>>> round(estimate["parts"]["x"]), round(estimate["parts"]["rotation_cos"])
(105, 8)
>>> effective_blocks(estimate["parts"])["content"]
('x', 'y', 'scale')
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.renderer import (
    HUES,
    LATENTS,
    PARTS,
    Latent,
    latent_coordinates,
    part_names,
    sample_latents,
)

# Estimates are capped here: a part that no pair changes has an infinite Lambda_eff.
MAX_EFFECTIVE_CONCENTRATION = 1e4
# The radius of a circular latent's parts (see the module's docstring).
CIRCLE_RADIUS = math.sqrt(2) / math.pi


def latent_parts(
    latents: Mapping, erased=None, specs: Mapping[str, Latent] = LATENTS
) -> dict[str, np.ndarray]:
    """`{part: [N]}` of the continuous `latents` (`{name: [N]}`) in units where each
    latent's range (in `specs`) is 2 wide; the hues' parts of rows where `erased` (`[N]`
    bool) are 0.

    Example:

    >>> from aninfonce_tf.data.renderer import CONTINUOUS, LATENTS
    >>> latents = {name: [LATENTS[name].low] for name in CONTINUOUS}
    >>> parts = latent_parts(latents)
    >>> float(parts["x"][0]), round(float(parts["rotation_cos"][0]), 3)
    (-1.0, 0.45)
    """
    parts = latent_coordinates(latents, specs, radius=CIRCLE_RADIUS)
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
        "sample_size": count}`, Lambda_eff at most `MAX_EFFECTIVE_CONCENTRATION`.
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
    return {
        "parts": {
            part: 1 / max(value, 1 / MAX_EFFECTIVE_CONCENTRATION) for part, value in change.items()
        },
        "mean_squared_change": change,
        "sample_size": int(count),
    }


def effective_blocks(concentration: Mapping[str, float]) -> dict[str, tuple[str, ...]]:
    """Parts split into `"content"`, what a pair changes least, and `"style"`: a part
    no pair changes (Lambda_eff at `MAX_EFFECTIVE_CONCENTRATION`) is content; the
    others split at the widest gap between their sorted log Lambda_eff, the parts
    above it content (all content when they are equal)."""
    changed = [p for p in concentration if concentration[p] < MAX_EFFECTIVE_CONCENTRATION]
    content = set(concentration) - set(changed)
    names = sorted(changed, key=lambda part: concentration[part])
    logs = np.log([concentration[part] for part in names])
    if len(names) < 2 or np.ptp(logs) == 0:
        content |= set(names)
    else:
        content |= set(names[int(np.argmax(np.diff(logs))) + 1 :])
    return {
        "content": tuple(p for p in PARTS if p in content),
        "style": tuple(p for p in PARTS if p in concentration and p not in content),
    }


__all__ = [
    "MAX_EFFECTIVE_CONCENTRATION",
    "effective_blocks",
    "effective_concentration",
    "latent_parts",
    "view_latents",
]
