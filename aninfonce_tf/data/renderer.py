"""The renderer: one two-tone polygon on a plain background drawn from its latents
(`LATENTS`, `sample_latents`, `render`) in TensorFlow ops, XLA-compilable."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
import tensorflow as tf

from aninfonce_tf.errors import is_integer


@dataclasses.dataclass(frozen=True)
class Latent:
    """One latent's range: a float in `[low, high]` (circular: `[low, high)`), or an
    integer class in `[0, classes)`; `hue`: a colour's hue.

    Example:

    >>> rotation = Latent(0.0, 2 * math.pi, circular=True)
    >>> round(rotation.width, 4), LATENTS["shape"].classes, LATENTS["object_hue"].hue
    (6.2832, 5, True)
    """

    low: float
    high: float
    circular: bool = False
    classes: int = 0
    hue: bool = False

    @property
    def width(self) -> float:
        return self.high - self.low


def _polygon(points) -> np.ndarray:
    """Vertices centred on the area centroid and scaled to the unit disk's area."""
    points = np.asarray(points, "float64")
    following = np.roll(points, -1, axis=0)
    cross = points[:, 0] * following[:, 1] - following[:, 0] * points[:, 1]
    area = cross.sum() / 2
    centroid = ((points + following) * cross[:, None]).sum(0) / (6 * area)
    return (points - centroid) * math.sqrt(math.pi / abs(area))


_ARC = [(math.cos(a), math.sin(a)) for a in np.linspace(0, math.pi, 7)]
# Object-frame vertices (y up). None has a rotational symmetry: each looks different
# at every rotation in [0, 2 pi).
SHAPES = {
    "triangle": _polygon([(0, 1), (-0.8, -0.6), (0.8, -0.6)]),
    "kite": _polygon([(0, 1), (-0.5, 0.3), (0, -1), (0.5, 0.3)]),
    "half_disk": _polygon(_ARC),
    "arrow": _polygon(
        [(0, 1), (-0.75, 0.1), (-0.28, 0.1), (-0.28, -1), (0.28, -1), (0.28, 0.1), (0.75, 0.1)]
    ),
    "ell": _polygon([(-0.6, -0.9), (0.6, -0.9), (0.6, -0.3), (0, -0.3), (0, 0.9), (-0.6, 0.9)]),
}
# The farthest any vertex lies from its centroid, in units of `scale` (the kite's
# bottom vertex: 1.95).
EXTENT = max(float(np.linalg.norm(v, axis=1).max()) for v in SHAPES.values())
_VERTICES = max(len(v) for v in SHAPES.values())
# Every polygon padded to the same vertex count by repeating its last vertex: the
# zero-length edges this adds change neither the distance nor the winding number.
_TABLE = np.stack(
    [np.concatenate([v, np.repeat(v[-1:], _VERTICES - len(v), 0)]) for v in SHAPES.values()]
).astype("float32")

# With the centre in [0.3, 0.7] and `scale` at most 0.14 (EXTENT x 0.14 = 0.273), every
# object stays INSIDE (0.027) of the side inside the image: more than the half-pixel of
# its anti-aliased edge at 19 pixels or more.
INSIDE = 0.027
# The range of `scale` `object_latents` takes: at most 0.2, where the centre still moves
# over 0.17 of the side (an object's area is pi scale^2 of the image: 12.6 % at 0.2), and
# at least 0.05, a radius of one pixel at the smallest side, 19.
MIN_SCALE, MAX_SCALE = 0.05, 0.2
LATENTS = {
    "shape": Latent(0, len(SHAPES), classes=len(SHAPES)),
    "x": Latent(0.3, 0.7),
    "y": Latent(0.3, 0.7),
    "scale": Latent(0.09, 0.14),
    "rotation": Latent(0.0, 2 * math.pi, circular=True),
    "object_hue": Latent(0.0, 1.0, circular=True, hue=True),
    "background_hue": Latent(0.0, 1.0, circular=True, hue=True),
}
LATENT_NAMES = tuple(LATENTS)


def object_latents(object_scale: tuple[float, float] = (0.09, 0.14)) -> dict[str, Latent]:
    """`LATENTS` with `scale` in `object_scale`, the centre narrowed to keep objects inside.

    Example:

    >>> object_latents() == LATENTS
    True
    >>> latents = object_latents((0.16, 0.2))
    >>> round(latents["x"].low, 3), round(latents["x"].high, 3)
    (0.417, 0.583)
    """
    message = (
        f"`object_scale` must be two numbers {MIN_SCALE} <= low < high <= {MAX_SCALE} (the "
        "radius of the disk of the object's area, as a fraction of the side; the area is pi "
        f"scale^2); got {object_scale!r}."
    )
    try:
        values = np.asarray(object_scale, dtype="float64")
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if values.shape != (2,) or not MIN_SCALE <= values[0] < values[1] <= MAX_SCALE:
        raise ValueError(message)
    low, high = (float(value) for value in values)
    margin = max(LATENTS["x"].low, EXTENT * high + INSIDE)
    return {
        **LATENTS,
        "x": Latent(margin, 1 - margin),
        "y": Latent(margin, 1 - margin),
        "scale": Latent(low, high),
    }


CONTINUOUS = tuple(name for name, latent in LATENTS.items() if not latent.classes)
HUES = tuple(name for name in CONTINUOUS if LATENTS[name].hue)


def part_names(names, specs: Mapping[str, Latent] = LATENTS) -> tuple[str, ...]:
    """The scored parts of the continuous latents `names` (a circular one's `_cos`, `_sin`).

    Example:

    >>> part_names(["x", "rotation"])
    ('x', 'rotation_cos', 'rotation_sin')
    """
    return tuple(
        part
        for name in names
        for part in ((f"{name}_cos", f"{name}_sin") if specs[name].circular else (name,))
    )


PARTS = part_names(CONTINUOUS)
# Functions of the latents scored beside the parts (not in the MCC: not latents of
# their own): the centre's distance from the vertical midline, which a flip keeps.
DERIVED_PARTS = ("x_offset",)
# The part each derived part stands in for where a pair does not share that part.
DERIVED_FROM = {"x_offset": "x"}


def derived_parts(coordinates: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`DERIVED_PARTS` (`{part: [N]}`) of `latent_coordinates` in units: `x_offset` = |x|.

    Example:

    >>> derived_parts({"x": np.array([-1.0, 0.5])})["x_offset"].tolist()
    [1.0, 0.5]
    """
    return {
        part: np.abs(np.asarray(coordinates[source], "float64"))
        for part, source in DERIVED_FROM.items()
        if source in coordinates
    }


def latent_units(value, spec: Latent):
    """`value` of the latent `spec` in units where `low` is -1 and `high` 1.

    Example:

    >>> latent_units(np.array([0.3, 0.5, 0.7]), LATENTS["x"]).round(6).tolist()
    [-1.0, 0.0, 1.0]
    """
    return 2 * (value - spec.low) / spec.width - 1


def latent_coordinates(
    latents: Mapping,
    specs: Mapping[str, Latent] = LATENTS,
    *,
    units: bool = True,
    radius: float = 1.0,
) -> dict[str, np.ndarray]:
    """`{part: [N] float64}` of the continuous latents: an interval one in `latent_units`
    (as it is without `units`), a circular one as `radius` times its cos and sin.

    Example:

    >>> latents = {"x": [0.3, 0.7], "rotation": [0.0, math.pi / 2], "shape": [0, 1]}
    >>> coordinates = latent_coordinates(latents)
    >>> sorted(coordinates), coordinates["x"].tolist()
    (['rotation_cos', 'rotation_sin', 'x'], [-1.0, 1.0])
    >>> latent_coordinates(latents, units=False)["rotation_sin"].round(6).tolist()
    [0.0, 1.0]
    """
    coordinates = {}
    for name, spec in specs.items():
        if spec.classes or name not in latents:
            continue
        value = np.asarray(latents[name], "float64")
        if spec.circular:
            angle = 2 * math.pi * (value - spec.low) / spec.width
            coordinates[f"{name}_cos"] = radius * np.cos(angle)
            coordinates[f"{name}_sin"] = radius * np.sin(angle)
        else:
            coordinates[name] = latent_units(value, spec) if units else value
    return coordinates


# The object has value 1, the background BACKGROUND_SATURATION_VALUE: whatever the
# hues, the brightest channel tells object from background.
BACKGROUND_SATURATION_VALUE = (0.6, 0.45)
# A marker of the object's front: its back half (below the centroid in the object's
# frame) has saturation 1 - MARKER, its front half 1. With it a small CNN reads rotation
# in a few thousand steps (rotation is otherwise a different feature of each shape).
MARKER = 0.6
# Width of the anti-aliased edge in pixels: coverage ramps linearly from 1 to 0 as the
# signed distance goes from -EDGE/2 to EDGE/2.
EDGE = 1.0


def _seed(seed) -> tf.Tensor:
    """A stateless seed `[2]` from an int or a `[2]` tensor."""
    seed = tf.convert_to_tensor(seed)
    if seed.shape.rank == 0:
        return tf.stack([tf.cast(seed, tf.int64), tf.constant(0, tf.int64)])
    return tf.cast(seed, tf.int64)


def sample_latents(n: int, seed, specs: Mapping[str, Latent] = LATENTS) -> dict[str, tf.Tensor]:
    """`{name: [n] tensor}` (`shape` int32, the others float32): `n` latents drawn
    uniformly from `specs`' ranges.

    Args:
        n: how many.
        seed: an int or a stateless seed of shape `[2]`.
        specs: each latent's range (`LATENTS`, or `object_latents(...)`).
    """
    seeds = tf.unstack(tf.random.experimental.stateless_split(_seed(seed), len(specs)))
    latents = {}
    for (name, latent), seed_i in zip(specs.items(), seeds, strict=True):
        if latent.classes:
            latents[name] = tf.random.stateless_uniform(
                [n], seed_i, 0, latent.classes, dtype=tf.int32
            )
        else:
            latents[name] = tf.random.stateless_uniform([n], seed_i, latent.low, latent.high)
    return latents


def _colours(hue, saturation_value):
    saturation, value = saturation_value
    hsv = tf.stack([hue, tf.fill(tf.shape(hue), saturation), tf.fill(tf.shape(hue), value)], -1)
    return tf.image.hsv_to_rgb(hsv)[:, None, None, :]


def _signed_distance(u, v, vertices):
    """Exact signed distance from points `(u, v)` to each image's polygon, negative inside."""
    start = vertices
    end = tf.roll(vertices, 1, axis=-2)
    ex, ey = end[..., 0] - start[..., 0], end[..., 1] - start[..., 1]
    inverse_length = 1.0 / tf.maximum(ex * ex + ey * ey, 1e-12)
    wx, wy = u - start[..., 0], v - start[..., 1]
    t = tf.clip_by_value((wx * ex + wy * ey) * inverse_length, 0.0, 1.0)
    bx, by = wx - ex * t, wy - ey * t
    squared = tf.reduce_min(bx * bx + by * by, axis=-1)
    above_start = v >= start[..., 1]
    below_end = v < end[..., 1]
    left = ex * wy > ey * wx
    crosses = tf.equal(above_start, below_end) & tf.equal(below_end, left)
    inside = tf.equal(tf.math.floormod(tf.reduce_sum(tf.cast(crosses, tf.int32), -1), 2), 1)
    return tf.where(inside, -1.0, 1.0) * tf.sqrt(squared)


def render(latents: Mapping[str, tf.Tensor], size: int = 64) -> tf.Tensor:
    """`[N, size, size, 3]` float32 images in [0, 1] of the objects `latents` describe.
    Details: docs/api.md#rendered-pairs

    Args:
        latents: `{name: [N] tensor}` with every name of `LATENTS` (others are ignored).
        size: side of the square images in pixels (19 or more).

    Example:

    >>> latents = sample_latents(4, seed=0)
    >>> images = render(latents, size=32)
    >>> tuple(images.shape), sorted(latents)[:3]
    ((4, 32, 32, 3), ['background_hue', 'object_hue', 'rotation'])
    """
    missing = [name for name in LATENTS if name not in latents]
    if missing:
        raise ValueError(f"`latents` lacks {missing}; it needs every name in LATENTS.")
    if not (is_integer(size) and size >= 8):
        raise ValueError(f"`size` must be an int of at least 8; got {size!r}.")

    def column(name):
        return tf.cast(latents[name], tf.float32)[:, None, None, None]

    centres = (tf.range(size, dtype=tf.float32) + 0.5) / size
    # Screen offsets from the object's centre, y up, in units of `scale`.
    scale = column("scale")
    du = (centres[None, None, :, None] - column("x")) / scale
    dv = (column("y") - centres[None, :, None, None]) / scale
    cosine, sine = tf.cos(column("rotation")), tf.sin(column("rotation"))
    # Into the object's frame: rotate the offsets clockwise by the rotation.
    u = cosine * du + sine * dv
    v = cosine * dv - sine * du
    shape = tf.cast(latents["shape"], tf.int32)
    vertices = tf.gather(tf.constant(_TABLE), shape)[:, None, None]
    distance = _signed_distance(u, v, vertices) * (scale[..., 0] * size)  # in pixels
    coverage = tf.clip_by_value(0.5 - distance / EDGE, 0.0, 1.0)[..., None]
    background = _colours(
        tf.cast(latents["background_hue"], tf.float32), BACKGROUND_SATURATION_VALUE
    )
    pure = _colours(tf.cast(latents["object_hue"], tf.float32), (1.0, 1.0))
    # The marker, with an anti-aliased edge of its own.
    front = tf.clip_by_value(0.5 + v * (scale * size) / EDGE, 0.0, 1.0)
    saturation = 1.0 - MARKER * (1.0 - front)
    foreground = 1.0 - saturation * (1.0 - pure)
    return background + coverage * (foreground - background)


def latent_matrix(latents: Mapping[str, tf.Tensor]) -> tf.Tensor:
    """`[N, len(LATENT_NAMES)]` float32: the latents as columns in `LATENT_NAMES` order."""
    return tf.stack([tf.cast(latents[name], tf.float32) for name in LATENT_NAMES], axis=1)


__all__ = [
    "CONTINUOUS",
    "DERIVED_FROM",
    "DERIVED_PARTS",
    "EXTENT",
    "HUES",
    "LATENTS",
    "LATENT_NAMES",
    "MAX_SCALE",
    "MIN_SCALE",
    "PARTS",
    "SHAPES",
    "Latent",
    "latent_coordinates",
    "latent_matrix",
    "latent_units",
    "object_latents",
    "derived_parts",
    "part_names",
    "render",
    "sample_latents",
]
