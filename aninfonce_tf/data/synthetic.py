"""The synthetic data-generating process of Rusak et al. (2025) as `tf.data`: latents
and positives with ground-truth Lambda, rendered by a frozen invertible MLP g.

Example:

>>> setup = SyntheticSetup(concentration=concentration_preset("linear"))
>>> batch = next(iter(setup.dataset(batch_size=8, seed=0)))
>>> sorted(batch), tuple(batch["view1"].shape)
(['view1', 'view2', 'z1', 'z2'], (8, 10))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.latent_distributions import (
    CONDITIONALS,
    LATENT_SPACES,
    _seeds,
    sample_marginal,
    sample_positive,
)
from aninfonce_tf.data.options import without_autotune

CONCENTRATION_PRESETS = ("linear", "geometric", "two_valued", "content_style")
# Training batches drawn at once: the sampler makes a batch of 1000 pairs in ~1 ms, so
# two keep ahead of any step (tf.data's autotuning is off: `without_autotune`).
PARALLEL_BATCHES = 2


def indexed_batches(
    sample_pairs: Callable[[int, tf.Tensor], dict[str, tf.Tensor]],
    batch_size: int,
    seed: int = 0,
    steps: int | None = None,
    start: int = 0,
) -> tf.data.Dataset:
    """Batches `sample_pairs(batch_size, [seed, i])` for i from `start` (endless, or `steps`).

    Example:

    >>> def seeds(batch_size, seed):
    ...     return {"seed": tf.repeat(seed[None], batch_size, axis=0)}
    >>> batches = indexed_batches(seeds, batch_size=2, seed=7, steps=2, start=3)
    >>> [batch["seed"][0].numpy().tolist() for batch in batches]
    [[7, 3], [7, 4]]
    """
    if batch_size < 2:
        raise ValueError(f"`batch_size` must be at least 2; got {batch_size}.")
    stop = start + steps if steps is not None else 2**62
    indices = tf.data.Dataset.range(start, stop)

    def batch_at(index):
        return sample_pairs(batch_size, tf.stack([tf.constant(seed, tf.int64), index]))

    batches = indices.map(batch_at, num_parallel_calls=PARALLEL_BATCHES)
    return without_autotune(batches.prefetch(PARALLEL_BATCHES))


def concentration_preset(
    name: str, dim: int = 10, high: float | None = None, low: float | None = None
) -> np.ndarray:
    """`[dim]` float64 ground-truth Lambda. Details: docs/method.md#the-synthetic-conditionals

    Args:
        name: `"linear"`, `"geometric"`, `"two_valued"` or `"content_style"`.
        dim: latent dimension.
        high: the largest concentration.
        low: the smallest concentration.

    Example:

    >>> concentration_preset("content_style", dim=6).round(1).tolist()
    [200.0, 282.8, 400.0, 10.0, 14.1, 20.0]
    """
    if name not in CONCENTRATION_PRESETS:
        raise ValueError(
            f"Unknown concentration preset {name!r}; expected one of {CONCENTRATION_PRESETS}."
        )
    if dim < 2:
        raise ValueError(f"`dim` must be at least 2; got {dim}.")
    content_style = name == "content_style"
    high = float(high if high is not None else 400.0 if content_style else 25.0)
    low = float(low if low is not None else 10.0 if content_style else 5.0)
    if not 0 < low <= high:
        raise ValueError(f"Need 0 < low <= high; got low={low}, high={high}.")
    if name == "linear":
        return np.linspace(low, high, dim)
    if name == "geometric":
        return np.geomspace(low, high, dim)
    first = (dim + 1) // 2
    if content_style:
        return np.concatenate(
            [np.geomspace(high / 2, high, first), np.geomspace(low, 2 * low, dim - first)]
        )
    return np.array([high] * first + [low] * (dim - first), dtype="float64")


def concentration_from_spec(
    spec: str, dim: int, high: float | None = None, low: float | None = None
) -> np.ndarray:
    """Lambda from a `concentration_preset` name or `dim` comma-separated values.

    Example:

    >>> concentration_from_spec(".5, 2", dim=2).tolist()
    [0.5, 2.0]
    """
    if spec in CONCENTRATION_PRESETS:
        return concentration_preset(spec, dim, high=high, low=low)
    try:
        values = np.array([float(v) for v in spec.split(",") if v.strip()])
    except ValueError:
        raise ValueError(
            f"`concentration` must be one of {CONCENTRATION_PRESETS} or comma-separated "
            f"numbers; got {spec!r}."
        ) from None
    if len(values) != dim:
        raise ValueError(f"`concentration` has {len(values)} values for dim={dim}.")
    if not np.all(np.isfinite(values) & (values > 0)):
        raise ValueError(f"`concentration` values must be positive and finite; got {spec!r}.")
    return values


def concentration_blocks(concentration) -> dict[str, np.ndarray]:
    """Latent indices split into `"high"` and `"low"` (Lambda below the median) blocks.

    Example:

    >>> {k: v.tolist() for k, v in concentration_blocks([25, 25, 5, 5]).items()}
    {'high': [0, 1], 'low': [2, 3]}
    """
    concentration = np.asarray(concentration, dtype="float64")
    low = concentration < np.median(concentration)
    return {"high": np.flatnonzero(~low), "low": np.flatnonzero(low)}


def well_conditioned_matrices(dim: int, layers: int, draws: int, seed: int) -> list[np.ndarray]:
    """Column-normalised Uniform(-1, 1) matrices, each the best-conditioned of `draws`."""
    rng = np.random.default_rng(seed)
    chosen = []
    for _ in range(layers):
        w = rng.uniform(-1.0, 1.0, size=(draws, dim, dim))
        w /= np.linalg.norm(w, axis=1, keepdims=True)
        chosen.append(w[np.argmin(np.linalg.cond(w))])
    return chosen


@dataclass
class InvertibleMLP:
    """The frozen generator g: bias-free square linear layers, LeakyReLU between them.

    Args:
        dim: latent (= observation) dimension.
        layers: number of linear layers (the authors use 3).
        negative_slope: LeakyReLU slope (0.2).
        draws: candidate matrices per layer; the best-conditioned is kept.
        seed: numpy seed of the weights.

    Example:

    >>> g = InvertibleMLP(dim=3, draws=10)
    >>> g(np.ones((2, 3))).shape, len(g.condition_numbers)
    (TensorShape([2, 3]), 3)
    """

    dim: int = 10
    layers: int = 3
    negative_slope: float = 0.2
    draws: int = 25_000
    seed: int = 0
    weights: list[np.ndarray] = field(init=False, repr=False)

    def __post_init__(self):
        self.weights = well_conditioned_matrices(self.dim, self.layers, self.draws, self.seed)
        self._tf_weights = [tf.constant(w, tf.float32) for w in self.weights]

    @property
    def condition_numbers(self) -> list[float]:
        return [float(np.linalg.cond(w)) for w in self.weights]

    def __call__(self, z):
        x = tf.convert_to_tensor(z, tf.float32)
        for i, w in enumerate(self._tf_weights):
            x = tf.matmul(x, w)
            if i < len(self._tf_weights) - 1:
                x = tf.nn.leaky_relu(x, self.negative_slope)
        return x


@dataclass
class SyntheticSetup:
    """A latent space, a positive conditional, ground-truth Lambda and a generator.

    Args:
        concentration: `[n]` ground-truth Lambda.
        space: one of `LATENT_SPACES` (the marginal of z).
        conditional: one of `CONDITIONALS`.
        generator_seed: seed of the invertible MLP g.
        generator_layers: depth of g.
        generator_draws: candidate matrices per layer of g.

    Example:

    >>> setup = SyntheticSetup(concentration_preset("linear", 4), generator_draws=10)
    >>> batch = setup.sample_pairs(8, seed=[0, 1])
    >>> sorted(batch), batch["view1"].shape
    (['view1', 'view2', 'z1', 'z2'], TensorShape([8, 4]))
    """

    concentration: np.ndarray
    space: str = "sphere"
    conditional: str = "projected_normal"
    generator_seed: int = 0
    generator_layers: int = 3
    generator_draws: int = 25_000

    def __post_init__(self):
        self.concentration = np.asarray(self.concentration, dtype="float64")
        positive = np.isfinite(self.concentration) & (self.concentration > 0)
        if self.concentration.ndim != 1 or not np.all(positive):
            raise ValueError("`concentration` must be a 1-D array of positive, finite values.")
        if self.space not in LATENT_SPACES:
            raise ValueError(f"Unknown `space` {self.space!r}; expected one of {LATENT_SPACES}.")
        if self.conditional not in CONDITIONALS:
            raise ValueError(
                f"Unknown `conditional` {self.conditional!r}; expected one of {CONDITIONALS}."
            )
        if self.generator_draws < 1:
            raise ValueError(
                f"`generator_draws` must be at least 1 (candidate matrices per layer of the "
                f"generator); got {self.generator_draws}."
            )
        self.generator = InvertibleMLP(
            dim=self.dim,
            layers=self.generator_layers,
            draws=self.generator_draws,
            seed=self.generator_seed,
        )

    @property
    def dim(self) -> int:
        return len(self.concentration)

    def sample_latent_pairs(self, batch_size: int, seed) -> tuple[tf.Tensor, tf.Tensor]:
        """`(z, z+)`, each `[batch_size, n]`, from a stateless seed of shape `[2]`."""
        marginal_seed, positive_seed = _seeds(tf.convert_to_tensor(seed, tf.int64), 2)
        z = sample_marginal(self.space, batch_size, self.dim, marginal_seed)
        z_positive = sample_positive(
            z, self.conditional, self.concentration, positive_seed, space=self.space
        )
        return z, z_positive

    def sample_pairs(self, batch_size: int, seed) -> dict[str, tf.Tensor]:
        """One batch: `dict(view1=g(z), view2=g(z+), z1=z, z2=z+)`."""
        z, z_positive = self.sample_latent_pairs(batch_size, seed)
        return {
            "view1": self.generator(z),
            "view2": self.generator(z_positive),
            "z1": z,
            "z2": z_positive,
        }

    def dataset(
        self, batch_size: int, seed: int = 0, steps: int | None = None, start: int = 0
    ) -> tf.data.Dataset:
        """Endless (or `steps`-long) dataset of pair batches (`indexed_batches`)."""
        return indexed_batches(self.sample_pairs, batch_size, seed, steps, start)

    def evaluation_set(self, size: int, seed: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
        """`(observations, latents)` of `size` fresh samples, as NumPy arrays."""
        z = sample_marginal(self.space, size, self.dim, tf.constant([seed, 1], tf.int64))
        return self.generator(z).numpy(), z.numpy()
