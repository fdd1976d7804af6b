"""The synthetic data generating process of Rusak et al. (2025), as `tf.data`.

Latents z are drawn from a marginal on a latent space, positives z+ from a
conditional around z with ground-truth concentration Lambda, and a frozen
invertible MLP g renders both as observations. Every draw uses stateless RNG ops
with explicit seeds, so a dataset is the same under any parallelism.

Example:

>>> setup = SyntheticSetup(concentration=concentration_preset("linear"))
>>> batch = next(iter(setup.dataset(batch_size=8, seed=0)))
>>> sorted(batch), tuple(batch["view1"].shape)
(['view1', 'view2', 'z1', 'z2'], (8, 10))
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.options import without_autotune

LATENT_SPACES = ("sphere", "box", "euclidean")
CONDITIONALS = (
    "projected_normal",
    "normal",
    "vmf",
    "laplace",
    "heteroscedastic",
    "mixture",
)
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
    """Endless (or `steps`-long) dataset of pair batches: batch i is
    `sample_pairs(batch_size, [seed, i])` for i from `start`, `PARALLEL_BATCHES` drawn
    at once, without tf.data's autotuning.

    `start` skips the first batches without drawing them: a run resumed at step k
    sees the batches it would have seen had it never stopped. Batch i depends on its
    index alone, so the batches are the same under any parallelism.

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
    """Ground-truth diagonal Lambda.

    Args:
        name: `"linear"`: linspace(low, high), default 5..25 (the paper's);
            `"geometric"`: geomspace(low, high), equal ratios between neighbours;
            `"two_valued"`: first half at `high`=25, second half at `low`=5 (the
            paper's); `"content_style"`: first half content, spread over
            [high / 2, high] (default high 400), second half style, spread over
            [low, 2 low] (default low 10). Style is what augmentations change
            strongly; the spread keeps every Lambda distinct so that Lambda_hat
            can be ranked against it.
        dim: latent dimension.
        high: the largest concentration.
        low: the smallest concentration.

    Returns:
        `[dim]` float64 array.

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
    """Lambda from a preset name (see `concentration_preset`) or `dim`
    comma-separated values.

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
    return values


def concentration_blocks(concentration) -> dict[str, np.ndarray]:
    """Splits latent indices into `"high"` and `"low"` concentration blocks.

    A latent is low when its Lambda is below the median (with an isotropic Lambda
    every latent is high): the two halves of `linear`, the two values of
    `two_valued`, content (high) and style (low) of `content_style`.

    Example:

    >>> {k: v.tolist() for k, v in concentration_blocks([25, 25, 5, 5]).items()}
    {'high': [0, 1], 'low': [2, 3]}
    """
    concentration = np.asarray(concentration, dtype="float64")
    low = concentration < np.median(concentration)
    return {"high": np.flatnonzero(~low), "low": np.flatnonzero(low)}


def _seeds(seed, count: int):
    return tf.unstack(tf.random.experimental.stateless_split(seed, count))


def standard_normal(shape, seed) -> tf.Tensor:
    """N(0, 1) draws by the Box-Muller transform of stateless uniforms.

    About 1.5x the throughput of `tf.random.stateless_normal` on CPU, which is
    what bounds the rejection sampler. Uniforms have 2^-24 resolution, so draws
    stop at |x| < 5.8 (a mass of 7e-9 is cut off).

    Args:
        shape: output shape (static or a 1-D tensor).
        seed: stateless seed, shape `[2]`.

    Returns:
        float32 tensor of `shape`.
    """
    shape = tf.convert_to_tensor(shape, tf.int32)
    size = tf.reduce_prod(shape)
    uniforms = tf.random.stateless_uniform(tf.stack([2, (size + 1) // 2]), seed)
    radius = tf.sqrt(-2.0 * tf.math.log1p(-uniforms[0]))  # 1 - u lies in (0, 1]
    cosine = tf.cos((2.0 * math.pi) * uniforms[1])
    # sin from cos: a square root is cheaper than a second polynomial; the sign is
    # that of sin on [0, 2 pi).
    sine = tf.sqrt(tf.maximum(1.0 - tf.square(cosine), 0.0)) * tf.sign(0.5 - uniforms[1])
    normals = tf.concat([radius * cosine, radius * sine], axis=0)
    return tf.reshape(normals[:size], shape)


def sample_marginal(space: str, batch_size: int, dim: int, seed) -> tf.Tensor:
    """Latents: uniform on the unit sphere or the box [-1, 1]^n, normal on R^n."""
    if space == "sphere":
        return tf.math.l2_normalize(standard_normal([batch_size, dim], seed), axis=-1)
    if space == "box":
        return tf.random.stateless_uniform([batch_size, dim], seed, -1.0, 1.0)
    if space == "euclidean":
        return standard_normal([batch_size, dim], seed)
    raise ValueError(f"Unknown latent `space` {space!r}; expected one of {LATENT_SPACES}.")


# Proposals a row may use before sampling fails: a row whose proposals are accepted
# 5 % of the time (the least likely row of the paper's two-valued Lambda: 5.8 %) is
# left unfilled with probability 0.95^400 = 1e-9.
MAX_PROPOSALS_PER_ROW = 400


def _rejection_sample(propose, accept, z, seed, sample_shape, proposals: int):
    """Vectorised rejection sampling: the first accepted proposal of each row.

    `propose(z_rows, seed)` returns `[R, proposals, ...]` candidates and `accept`
    an `[R, proposals]` mask. Rows with no accepted proposal draw again, and only
    those rows, so the result has the distribution of a one-at-a-time rejection
    loop at about the cost of the accepted draws. After `MAX_PROPOSALS_PER_ROW`
    proposals for a row it fails instead.
    """
    max_rounds = math.ceil(MAX_PROPOSALS_PER_ROW / proposals)
    rows = tf.shape(z)[0]

    def body(round_index, out, pending):
        candidates = propose(
            tf.gather(z, pending), tf.random.experimental.stateless_fold_in(seed, round_index)
        )
        accepted = accept(candidates)
        first = tf.argmax(tf.cast(accepted, tf.int32), axis=1, output_type=tf.int32)
        chosen = tf.gather(candidates, first, axis=1, batch_dims=1)
        found = tf.reduce_any(accepted, axis=1)
        out = tf.tensor_scatter_nd_update(
            out, tf.boolean_mask(pending, found)[:, None], tf.boolean_mask(chosen, found)
        )
        return round_index + 1, out, tf.boolean_mask(pending, ~found)

    def cond(round_index, out, pending):
        return (round_index < max_rounds) & (tf.size(pending) > 0)

    out = tf.zeros(tf.concat([[rows], sample_shape], 0), z.dtype)
    out_shape = z.shape[:1].concatenate(sample_shape)
    _, out, pending = tf.while_loop(
        cond,
        body,
        (tf.constant(0), tf.ensure_shape(out, out_shape), tf.range(rows)),
        shape_invariants=(tf.TensorShape([]), out_shape, tf.TensorShape([None])),
    )
    # Rows still unfilled would be zeros: fail loudly instead.
    with tf.control_dependencies(
        [
            tf.debugging.assert_equal(
                tf.size(pending),
                0,
                message="rejection sampling left rows unaccepted after "
                f"{MAX_PROPOSALS_PER_ROW} proposals each; "
                "the acceptance region is too unlikely for this concentration",
            )
        ]
    ):
        return tf.identity(out)


def _anisotropic_noise(shape, concentration, seed):
    return standard_normal(shape, seed) * tf.math.rsqrt(concentration)


def projected_normal_positive(z, concentration, seed, proposals: int = 4, tolerance: float = 0.1):
    """The authors' sphere conditional: z + eps with eps ~ N(0, diag(1/Lambda)), kept
    only when | ||z + eps|| - 1 | < tolerance, then projected onto the sphere."""

    def propose(z, seed):
        shape = tf.concat([tf.shape(z)[:1], [proposals], tf.shape(z)[1:]], 0)
        return z[:, None, :] + _anisotropic_noise(shape, concentration, seed)

    # | ||x|| - 1 | < tolerance, on the squared norm (no square root per proposal).
    lower, upper = (1.0 - tolerance) ** 2, (1.0 + tolerance) ** 2

    def accept(candidates):
        squared_norm = tf.reduce_sum(tf.square(candidates), axis=-1)
        return (squared_norm > lower) & (squared_norm < upper)

    sample = _rejection_sample(
        propose, accept, z, seed, sample_shape=z.shape[1:], proposals=proposals
    )
    return tf.math.l2_normalize(sample, axis=-1)


def von_mises_fisher_positive(z, kappa, seed, proposals: int = 8):
    """Isotropic von Mises-Fisher around z with concentration `kappa` (Wood, 1994)."""
    dim = z.shape[-1]
    b = (dim - 1) / (2 * kappa + np.sqrt(4 * kappa**2 + (dim - 1) ** 2))
    x0 = (1 - b) / (1 + b)
    c = kappa * x0 + (dim - 1) * np.log(1 - x0**2)
    direction_seed, loop_seed = _seeds(seed, 2)

    def propose(rows, seed):
        beta_seed, uniform_seed = _seeds(seed, 2)
        shape = tf.stack([tf.shape(rows)[0], proposals])
        eps = _stateless_beta(shape, (dim - 1) / 2, (dim - 1) / 2, beta_seed)
        w = (1 - (1 + b) * eps) / (1 - (1 - b) * eps)
        u = tf.random.stateless_uniform(shape, uniform_seed)
        keep = kappa * w + (dim - 1) * tf.math.log(1 - x0 * w) - c >= tf.math.log(u)
        return tf.stack([w, tf.cast(keep, w.dtype)], axis=-1)

    def accept(candidates):
        return candidates[..., 1] > 0

    w = _rejection_sample(propose, accept, z, loop_seed, sample_shape=[2], proposals=proposals)
    w = w[:, 0:1]
    # A uniform direction orthogonal to z, then rotate: z+ = w z + sqrt(1 - w^2) v.
    v = standard_normal(tf.shape(z), direction_seed)
    v = tf.math.l2_normalize(v - tf.reduce_sum(v * z, -1, keepdims=True) * z, axis=-1)
    return w * z + tf.sqrt(tf.maximum(1 - w**2, 0.0)) * v


def _stateless_beta(shape, a, b, seed):
    seed_a, seed_b = _seeds(seed, 2)
    x = tf.random.stateless_gamma(shape, seed_a, alpha=a)
    y = tf.random.stateless_gamma(shape, seed_b, alpha=b)
    return x / (x + y)


def _to_space(x, space: str):
    if space == "sphere":
        return tf.math.l2_normalize(x, axis=-1)
    if space == "box":
        # Reflect at the faces: the density stays continuous and inside the box.
        return 1.0 - tf.abs(tf.math.floormod(x + 1.0, 4.0) - 2.0)
    return x


def sample_positive(z, conditional: str, concentration, seed, space: str = "sphere", **options):
    """Positives z+ | z from a named conditional with ground-truth concentration.

    Args:
        z: `[B, n]` latents.
        conditional: one of `CONDITIONALS`. `"projected_normal"` is the authors'
            sphere conditional; `"normal"` adds N(0, diag(1/Lambda)) (R^n, box:
            reflected at the faces, sphere: projected); `"vmf"` is isotropic
            von Mises-Fisher with kappa = mean(Lambda). Three break the theory's
            assumptions: `"laplace"` (Laplace noise of the same variance),
            `"heteroscedastic"` (noise scale 1 + `alpha` |z_1|, `alpha`=2) and
            `"mixture"` (with probability `mixture_weight`=0.3 the noise is
            `mixture_scale`=3 times wider).
        concentration: `[n]` ground-truth Lambda.
        seed: stateless seed, shape `[2]`.
        space: the latent space positives must stay in.

    Returns:
        `[B, n]` positives.
    """
    concentration_values = np.asarray(concentration, "float32")
    concentration = tf.constant(concentration_values)
    if conditional not in CONDITIONALS:
        raise ValueError(f"Unknown `conditional` {conditional!r}; expected one of {CONDITIONALS}.")
    if conditional == "projected_normal":
        if space != "sphere":
            raise ValueError("`conditional='projected_normal'` needs `space='sphere'`.")
        return projected_normal_positive(z, concentration, seed, **options)
    if conditional == "vmf":
        if space != "sphere":
            raise ValueError("`conditional='vmf'` needs `space='sphere'`.")
        return von_mises_fisher_positive(z, float(concentration_values.mean()), seed, **options)
    noise_seed, extra_seed = _seeds(seed, 2)
    if conditional == "laplace":
        # Laplace(0, s) has variance 2 s^2: match N(0, 1/Lambda).
        u = tf.random.stateless_uniform(tf.shape(z), noise_seed, -0.5 + 1e-7, 0.5)
        noise = -tf.sign(u) * tf.math.log1p(-2 * tf.abs(u)) * tf.math.rsqrt(2 * concentration)
    else:
        noise = _anisotropic_noise(tf.shape(z), concentration, noise_seed)
    if conditional == "heteroscedastic":
        noise *= 1.0 + options.get("alpha", 2.0) * tf.abs(z[:, :1])
    if conditional == "mixture":
        wide = tf.random.stateless_uniform(tf.shape(z)[:1], extra_seed) < options.get(
            "mixture_weight", 0.3
        )
        noise *= tf.where(wide, options.get("mixture_scale", 3.0), 1.0)[:, None]
    return _to_space(z + noise, space)


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
        concentration: `[n]` ground-truth Lambda (see `concentration_preset`).
        space: one of `LATENT_SPACES`; its uniform (sphere, box) or normal
            (euclidean) marginal draws z.
        conditional: one of `CONDITIONALS`.
        generator_seed: seed of the invertible MLP g.
        generator_layers: depth of g.
        generator_draws: candidate matrices per layer of g.
    """

    concentration: np.ndarray
    space: str = "sphere"
    conditional: str = "projected_normal"
    generator_seed: int = 0
    generator_layers: int = 3
    generator_draws: int = 25_000

    def __post_init__(self):
        self.concentration = np.asarray(self.concentration, dtype="float64")
        if self.concentration.ndim != 1 or np.any(self.concentration <= 0):
            raise ValueError("`concentration` must be a 1-D array of positive values.")
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
        """Endless (or `steps`-long) dataset of pair batches, batch i seeded by (seed, i)
        (`indexed_batches`: `start` skips the first batches without drawing them)."""
        return indexed_batches(self.sample_pairs, batch_size, seed, steps, start)

    def evaluation_set(self, size: int, seed: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
        """`(observations, latents)` of `size` fresh samples, as NumPy arrays."""
        z = sample_marginal(self.space, size, self.dim, tf.constant([seed, 1], tf.int64))
        return self.generator(z).numpy(), z.numpy()
