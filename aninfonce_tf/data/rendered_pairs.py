"""Positive pairs of images rendered in the `tf.data` graph from known latents, drawn
fresh every step. Details: docs/api.md#rendered-pairs"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.effective_concentration import effective_blocks, effective_concentration
from aninfonce_tf.data.latent_distributions import sample_positive
from aninfonce_tf.data.renderer import (
    CONTINUOUS,
    LATENT_NAMES,
    LATENTS,
    _seed,
    latent_matrix,
    latent_units,
    object_latents,
    render,
    sample_latents,
)
from aninfonce_tf.data.synthetic import indexed_batches
from aninfonce_tf.errors import is_integer

# One compiled renderer for every pipeline (a trace per image side).
_render_compiled = tf.function(render, jit_compile=True, reduce_retracing=True)


PAIR_MODES = ("augment", "latent", "spike-slab")
# The package's conditionals that need no sphere (see
# `latent_distributions.sample_positive`).
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
    """`[len(CONTINUOUS)]` float64 from a number, a sequence or a `{latent: value}` mapping."""
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
    """Positive pairs of rendered images, by `mode`. Details: docs/api.md#rendered-pairs

    Args:
        mode: one of `PAIR_MODES`.
        size: side of the rendered images.
        augment: the views of `"augment"` (default `SimCLRAugment(image_size=size)`).
        concentration: Lambda per continuous latent (`{name: value}` or `CONTINUOUS` order).
        conditional: one of `PAIR_CONDITIONALS`.
        change_probability: `"spike-slab"`'s probability that a latent changes.
        object_scale: the range `(low, high)` of the objects' `scale`.

    Example:

    >>> pairs = RenderedPairs(mode="latent", size=32)
    >>> batch = next(iter(pairs.dataset(batch_size=8, seed=0)))
    >>> sorted(batch), tuple(batch["z1"].shape)
    (['view1', 'view2', 'z1', 'z2'], (8, 7))
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
    object_scale: tuple[float, float] = (LATENTS["scale"].low, LATENTS["scale"].high)

    def __post_init__(self):
        if self.mode not in PAIR_MODES:
            raise ValueError(f"Unknown `mode` {self.mode!r}; expected one of {PAIR_MODES}.")
        if not (is_integer(self.size) and self.size >= 8):
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
        self.latents = object_latents(self.object_scale)
        self.change_values = _per_latent(self.change_probability, "change_probability", 1.0)
        if np.any((self.change_values < 0) | (self.change_values > 1)):
            raise ValueError(
                f"`change_probability` must lie in [0, 1]; got {self.change_probability}."
            )

    @property
    def view_size(self) -> int:
        """Side of the views: the augmentation's in `"augment"` mode, else `size`."""
        return self.augmentation.image_size if self.mode == "augment" else self.size

    def effective_concentration(self, count: int = 8192, seed: int = 0) -> dict:
        """Each latent part's Lambda_eff under these pairs, from `count` simulated pairs."""
        return effective_concentration(self, count, seed)

    def blocks(self, count: int = 8192) -> dict[str, tuple[str, ...]]:
        """Shared latent parts split into `"content"` and `"style"` (`effective_blocks`)."""
        return effective_blocks(self.effective_concentration(count)["correlation"])

    def positive_latents(self, latents: Mapping[str, tf.Tensor], seed) -> dict[str, tf.Tensor]:
        """z+ around `latents` by the conditional or its spike and slab; `shape` is kept."""
        specs = self.latents
        lows = tf.constant([specs[n].low for n in CONTINUOUS], tf.float32)
        widths = tf.constant([specs[n].width for n in CONTINUOUS], tf.float32)
        circular = tf.constant([specs[n].circular for n in CONTINUOUS])
        unit = tf.stack(
            [latent_units(tf.cast(latents[n], tf.float32), specs[n]) for n in CONTINUOUS], axis=1
        )
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
        """One batch `{view1, view2, z1, z2}` (`"augment"`: with `params1`, `params2`)."""
        latent_seed, pair_seed = tf.unstack(tf.random.experimental.stateless_split(_seed(seed), 2))
        latents = sample_latents(batch_size, latent_seed, self.latents)
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
        """Endless (or `steps`-long) dataset of pair batches (`indexed_batches`)."""
        return indexed_batches(self.sample_pairs, batch_size, seed, steps, start)

    def evaluation_set(self, count: int, seed: int = 10_000) -> tuple[np.ndarray, dict]:
        """`(images, latents)`: `count` un-augmented renders at `view_size`."""
        latents = sample_latents(count, tf.constant([seed, 1], tf.int64), self.latents)
        images = _render_compiled(latents, self.view_size)
        return images.numpy(), {name: value.numpy() for name, value in latents.items()}

    def readout_set(self, count: int, seed: int = 10_001) -> tuple[np.ndarray, dict]:
        """`(views, params)`: one augmented view of each of `count` fresh renders."""
        latents = sample_latents(count, tf.constant([seed, 1], tf.int64), self.latents)
        views, params = self.augmentation(
            _render_compiled(latents, self.size), tf.constant([seed, 2], tf.int64)
        )
        return views.numpy(), {name: value.numpy() for name, value in params.items()}


__all__ = [
    "DEFAULT_CONCENTRATION",
    "PAIR_CONDITIONALS",
    "PAIR_MODES",
    "RenderedPairs",
]
