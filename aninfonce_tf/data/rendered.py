"""Images rendered in the `tf.data` graph from known latents: one two-tone polygon on a
plain background, anti-aliased by its signed distance, and three ways to make a
positive pair from the same latents (SimCLR views of one render, or two renders of
latents drawn from a conditional).

The renderer is TensorFlow ops only: batched, stateless-seeded and XLA-compilable,
so pairs are drawn fresh every step with nothing pre-rendered.

Example:

>>> latents = sample_latents(4, seed=0)
>>> images = render(latents, size=32)
>>> tuple(images.shape), sorted(latents)[:3]
((4, 32, 32, 3), ['background_hue', 'object_hue', 'rotation'])
>>> pairs = RenderedPairs(mode="latent", size=32)
>>> batch = next(iter(pairs.dataset(batch_size=8, seed=0)))
>>> sorted(batch), tuple(batch["z1"].shape)
(['view1', 'view2', 'z1', 'z2'], (8, 7))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.synthetic import concentration_blocks, indexed_batches, sample_positive


@dataclasses.dataclass(frozen=True)
class Latent:
    """One latent's range: a float in `[low, high]`, a circular float in `[low, high)`
    (`high` is `low` again) or, when `classes`, an integer class in `[0, classes)`."""

    low: float
    high: float
    circular: bool = False
    classes: int = 0

    @property
    def width(self) -> float:
        return self.high - self.low


def _polygon(points) -> np.ndarray:
    """Vertices moved so that the polygon's area centroid is the origin (the object's
    pixel centroid is then its centre at any rotation) and scaled to the area of the
    unit disk (an object of `scale` r covers pi r^2 of the image, whatever its shape)."""
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
# The farthest any vertex lies from its centroid, in units of `scale` (the triangle's
# apex: 1.95).
EXTENT = max(float(np.linalg.norm(v, axis=1).max()) for v in SHAPES.values())
_VERTICES = max(len(v) for v in SHAPES.values())
# Every polygon padded to the same vertex count by repeating its last vertex: the
# zero-length edges this adds change neither the distance nor the winding number.
_TABLE = np.stack(
    [np.concatenate([v, np.repeat(v[-1:], _VERTICES - len(v), 0)]) for v in SHAPES.values()]
).astype("float32")

# With the centre in [0.3, 0.7] and `scale` at most 0.14 (EXTENT x 0.14 = 0.273), every
# object stays 0.027 of the side inside the image: more than the half-pixel of its
# anti-aliased edge at 19 pixels or more.
LATENTS = {
    "shape": Latent(0, len(SHAPES), classes=len(SHAPES)),
    "x": Latent(0.3, 0.7),
    "y": Latent(0.3, 0.7),
    "scale": Latent(0.09, 0.14),
    "rotation": Latent(0.0, 2 * math.pi, circular=True),
    "object_hue": Latent(0.0, 1.0, circular=True),
    "background_hue": Latent(0.0, 1.0, circular=True),
}
LATENT_NAMES = tuple(LATENTS)
CONTINUOUS = tuple(name for name, latent in LATENTS.items() if not latent.classes)
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


def sample_latents(n: int, seed) -> dict[str, tf.Tensor]:
    """`n` latents drawn uniformly from `LATENTS`' ranges.

    Args:
        n: how many.
        seed: an int or a stateless seed of shape `[2]`.

    Returns:
        `{name: [n] tensor}`: `shape` int32, the others float32.
    """
    seeds = tf.unstack(tf.random.experimental.stateless_split(_seed(seed), len(LATENTS)))
    latents = {}
    for (name, latent), seed_i in zip(LATENTS.items(), seeds, strict=True):
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
    """Exact signed distance from points `(u, v)` `[N, S, S, 1]` to each image's polygon
    `[N, 1, 1, V, 2]`: negative inside (the parity of edge crossings of a ray)."""
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
    """Images of the objects that `latents` describe.

    Pixel centres sit at `(i + 0.5) / size`; `x` runs along columns and `y` down rows,
    as fractions of the side; `rotation` turns the object counter-clockwise on screen
    (at 0 every shape points up, its saturated front half above its centroid); `scale`
    is the radius of the disk of the object's area, as a fraction of the side. Wrap in
    `tf.function(jit_compile=True)` for speed (the pair sources do).

    Args:
        latents: `{name: [N] tensor}` with every name of `LATENTS` (others are ignored).
        size: side of the square images in pixels (from 19 on, the object and its
            anti-aliased edge lie inside the image at every latent).

    Returns:
        `[N, size, size, 3]` float32 in [0, 1].
    """
    missing = [name for name in LATENTS if name not in latents]
    if missing:
        raise ValueError(f"`latents` lacks {missing}; it needs every name in LATENTS.")
    if not isinstance(size, (int, np.integer)) or size < 8:
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


# One compiled renderer for every pipeline (a trace per image side).
_render_compiled = tf.function(render, jit_compile=True, reduce_retracing=True)


def latent_matrix(latents: Mapping[str, tf.Tensor]) -> tf.Tensor:
    """`[N, len(LATENT_NAMES)]` float32: the latents as columns in `LATENT_NAMES` order
    (`shape` as its class index)."""
    return tf.stack([tf.cast(latents[name], tf.float32) for name in LATENT_NAMES], axis=1)


PAIR_MODES = ("augment", "latent", "spike-slab")
# The package's conditionals that need no sphere (see `synthetic.sample_positive`).
PAIR_CONDITIONALS = ("normal", "laplace", "heteroscedastic", "mixture")
# Per continuous latent, in units where its range is 2 wide: position and size move
# little (std 0.1, 5 % of the range), rotation and both hues a lot (std 0.45).
DEFAULT_CONCENTRATION = {
    "x": 100.0,
    "y": 100.0,
    "scale": 100.0,
    "rotation": 5.0,
    "object_hue": 5.0,
    "background_hue": 5.0,
}


def _per_latent(values, name: str, default: float | None = None) -> np.ndarray:
    """`[len(CONTINUOUS)]` float64 from a number, a sequence in `CONTINUOUS` order or a
    `{latent: value}` mapping (latents it leaves out take `default`)."""
    if isinstance(values, Mapping):
        unknown = sorted(set(values) - set(CONTINUOUS))
        if unknown:
            raise ValueError(f"`{name}` names {unknown}; the continuous latents are {CONTINUOUS}.")
        if default is None and set(values) != set(CONTINUOUS):
            raise ValueError(f"`{name}` must give every continuous latent {CONTINUOUS}.")
        return np.array([values.get(latent, default) for latent in CONTINUOUS], "float64")
    values = np.asarray(values, "float64")
    if values.ndim > 1 or values.size not in (1, len(CONTINUOUS)):
        raise ValueError(
            f"`{name}` must be one number or {len(CONTINUOUS)} in the order {CONTINUOUS}; "
            f"got {values.tolist()}."
        )
    return np.broadcast_to(values, [len(CONTINUOUS)]).copy()


@dataclasses.dataclass
class RenderedPairs:
    """Positive pairs of rendered images, made one of three ways (`mode`):

    - `"augment"`: latents z rendered once, two views by `augment` (SimCLR's
      practice). The views change x, y and scale (crop), x and rotation (flip) and
      both hues (colour jitter, grayscale); `shape` is kept, but the flip mirrors
      the chiral L into a shape the renderer never draws, and crops of other aspect
      ratios and the brightness, contrast and saturation jitter leave its range too.
    - `"latent"`: z and z+ drawn from the package's `conditional` around z with a
      concentration per continuous latent (`shape` kept), each rendered (the
      theory's setting).
    - `"spike-slab"`: as `"latent"`, but each continuous latent changes only with
      its `change_probability` (else z+ keeps it exactly), as SimCLR's colour
      jitter, applied to 80 % of views, leaves the hue of the rest alone.

    The conditional acts in units where each continuous latent's range is 2 wide
    ([-1, 1]): interval latents reflect at their ends, circular ones wrap, so the
    marginal of z+ stays uniform.

    Args:
        mode: one of `PAIR_MODES`.
        size: side of the rendered images.
        augment: the views of `"augment"` (default `SimCLRAugment(image_size=size)`);
            their side is `view_size`.
        concentration: per continuous latent (`{name: value}`, or values in
            `CONTINUOUS` order): Lambda of the conditional.
        conditional: one of `PAIR_CONDITIONALS`.
        change_probability: `"spike-slab"`'s probability that a latent changes, one
            number or `{name: value}` (latents left out always change).

    Example:

    >>> pairs = RenderedPairs(mode="spike-slab", size=32, change_probability=0.0)
    >>> batch = pairs.sample_pairs(4, seed=[0, 0])
    >>> bool(tf.reduce_all(batch["z1"] == batch["z2"]))
    True
    """

    mode: str = "augment"
    size: int = 64
    augment: SimCLRAugment | None = None
    concentration: Mapping[str, float] | Sequence[float] | float = dataclasses.field(
        default_factory=lambda: dict(DEFAULT_CONCENTRATION)
    )
    conditional: str = "normal"
    change_probability: float | Mapping[str, float] = 0.5

    def __post_init__(self):
        if self.mode not in PAIR_MODES:
            raise ValueError(f"Unknown `mode` {self.mode!r}; expected one of {PAIR_MODES}.")
        if not isinstance(self.size, (int, np.integer)) or self.size < 8:
            raise ValueError(f"`size` must be an int of at least 8; got {self.size!r}.")
        if self.conditional not in PAIR_CONDITIONALS:
            raise ValueError(
                f"Unknown `conditional` {self.conditional!r}; expected one of {PAIR_CONDITIONALS}."
            )
        # Not written back to `augment`: `dataclasses.replace(pairs, size=...)` then
        # gets views of the new size.
        self.augmentation = self.augment or SimCLRAugment(image_size=self.size)
        self.concentration_values = _per_latent(self.concentration, "concentration")
        if np.any(self.concentration_values <= 0):
            raise ValueError(f"`concentration` must be positive; got {self.concentration}.")
        self.change_values = _per_latent(self.change_probability, "change_probability", 1.0)
        if np.any((self.change_values < 0) | (self.change_values > 1)):
            raise ValueError(
                f"`change_probability` must lie in [0, 1]; got {self.change_probability}."
            )

    @property
    def view_size(self) -> int:
        """Side of the views: the augmentation's in `"augment"` mode, else `size`."""
        return self.augmentation.image_size if self.mode == "augment" else self.size

    def blocks(self) -> dict[str, tuple[str, ...]]:
        """Continuous latents split into `"content"` (what a positive pair shares
        most) and `"style"`. `"latent"`, `"spike-slab"`: by concentration, below the
        median is style (`synthetic.concentration_blocks`); `"augment"`: every
        continuous latent is style (the views change them all; `shape` is content)."""
        if self.mode == "augment":
            return {"content": (), "style": CONTINUOUS}
        split = concentration_blocks(self.concentration_values)
        return {
            "content": tuple(CONTINUOUS[i] for i in split["high"]),
            "style": tuple(CONTINUOUS[i] for i in split["low"]),
        }

    def positive_latents(self, latents: Mapping[str, tf.Tensor], seed) -> dict[str, tf.Tensor]:
        """z+ around `latents` by the conditional (`"latent"`) or its spike and slab
        (`"spike-slab"`); `shape` is kept."""
        lows = tf.constant([LATENTS[n].low for n in CONTINUOUS], tf.float32)
        widths = tf.constant([LATENTS[n].width for n in CONTINUOUS], tf.float32)
        circular = tf.constant([LATENTS[n].circular for n in CONTINUOUS])
        z = tf.stack([tf.cast(latents[n], tf.float32) for n in CONTINUOUS], axis=1)
        unit = 2.0 * (z - lows) / widths - 1.0
        positive_seed, change_seed = tf.unstack(
            tf.random.experimental.stateless_split(_seed(seed), 2)
        )
        moved = sample_positive(
            unit, self.conditional, self.concentration_values, positive_seed, space="euclidean"
        )
        wrapped = tf.math.floormod(moved + 1.0, 2.0) - 1.0
        reflected = 1.0 - tf.abs(tf.math.floormod(moved + 1.0, 4.0) - 2.0)
        moved = tf.where(circular, wrapped, reflected)
        if self.mode == "spike-slab":
            change = tf.random.stateless_uniform(tf.shape(unit), change_seed) < tf.constant(
                self.change_values, tf.float32
            )
            moved = tf.where(change, moved, unit)
        values = (moved + 1.0) / 2.0 * widths + lows
        # A circular latent that wrapped to exactly `high` is `low`.
        values = tf.where(circular & (values >= lows + widths), lows, values)
        positive = dict(latents)
        positive.update({name: values[:, i] for i, name in enumerate(CONTINUOUS)})
        return positive

    def sample_pairs(self, batch_size: int, seed) -> dict[str, tf.Tensor]:
        """One batch: `{view1, view2, z1, z2}` (`z`: `latent_matrix` of each view's
        latents; in `"augment"` mode both are z's) and, in `"augment"` mode, the
        views' parameters `params1`, `params2`."""
        latent_seed, pair_seed = tf.unstack(tf.random.experimental.stateless_split(_seed(seed), 2))
        latents = sample_latents(batch_size, latent_seed)
        if self.mode == "augment":
            images = _render_compiled(latents, self.size)
            first, second = tf.unstack(tf.random.experimental.stateless_split(pair_seed, 2))
            view1, params1 = self.augmentation(images, first)
            view2, params2 = self.augmentation(images, second)
            z = latent_matrix(latents)
            return {
                "view1": view1,
                "view2": view2,
                "z1": z,
                "z2": z,
                "params1": params1,
                "params2": params2,
            }
        positive = self.positive_latents(latents, pair_seed)
        both = {name: tf.concat([latents[name], positive[name]], 0) for name in LATENT_NAMES}
        views = _render_compiled(both, self.size)
        return {
            "view1": views[:batch_size],
            "view2": views[batch_size:],
            "z1": latent_matrix(latents),
            "z2": latent_matrix(positive),
        }

    def dataset(
        self, batch_size: int, seed: int = 0, steps: int | None = None, start: int = 0
    ) -> tf.data.Dataset:
        """Endless (or `steps`-long) dataset of pair batches, batch i seeded by (seed, i),
        with static shapes (`synthetic.indexed_batches`: `start` skips the first
        batches without drawing them)."""
        return indexed_batches(self.sample_pairs, batch_size, seed, steps, start)

    def evaluation_set(self, count: int, seed: int = 10_000) -> tuple[np.ndarray, dict]:
        """`(images, latents)`: `count` un-augmented renders of fresh latents at
        `view_size`, as NumPy arrays (`latents`: `{name: [count]}`)."""
        latents = sample_latents(count, tf.constant([seed, 1], tf.int64))
        images = _render_compiled(latents, self.view_size)
        return images.numpy(), {name: value.numpy() for name, value in latents.items()}

    def readout_set(self, count: int, seed: int = 10_001) -> tuple[np.ndarray, dict]:
        """`(views, params)`: one augmented view of each of `count` fresh renders, for
        the augmentation readout (`"augment"` mode's augmentation)."""
        latents = sample_latents(count, tf.constant([seed, 1], tf.int64))
        views, params = self.augmentation(
            _render_compiled(latents, self.size), tf.constant([seed, 2], tf.int64)
        )
        return views.numpy(), {name: value.numpy() for name, value in params.items()}


__all__ = [
    "CONTINUOUS",
    "DEFAULT_CONCENTRATION",
    "EXTENT",
    "LATENTS",
    "LATENT_NAMES",
    "PAIR_CONDITIONALS",
    "PAIR_MODES",
    "SHAPES",
    "Latent",
    "RenderedPairs",
    "latent_matrix",
    "render",
    "sample_latents",
]
