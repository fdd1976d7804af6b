"""The synthetic latents' marginals and positive conditionals z+ | z, from stateless
seeds. Details: docs/speed.md#sampling-pairs"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

LATENT_SPACES = ("sphere", "box", "euclidean")
CONDITIONALS = (
    "projected_normal",
    "normal",
    "vmf",
    "laplace",
    "heteroscedastic",
    "mixture",
)


def _seeds(seed, count: int):
    return tf.unstack(tf.random.experimental.stateless_split(seed, count))


def standard_normal(shape, seed) -> tf.Tensor:
    """float32 N(0, 1) draws by the Box-Muller transform of stateless uniforms (|x| < 5.8).

    Args:
        shape: output shape (static or a 1-D tensor).
        seed: stateless seed, shape `[2]`.
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


# Proposals a row may use before sampling fails (docs/speed.md#sampling-pairs).
MAX_PROPOSALS_PER_ROW = 400


def _rejection_sample(propose, accept, z, seed, sample_shape, proposals: int):
    """Vectorised rejection sampling: each row's first accepted proposal, or a failure."""
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
    """The authors' sphere conditional (docs/method.md#the-synthetic-conditionals)."""

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
    """`[B, n]` positives z+ | z from a named conditional with ground-truth concentration.

    Args:
        z: `[B, n]` latents.
        conditional: one of `CONDITIONALS` (docs/method.md#the-synthetic-conditionals).
        concentration: `[n]` ground-truth Lambda.
        seed: stateless seed, shape `[2]`.
        space: the latent space positives must stay in.
        **options: `alpha`, `mixture_weight`, `mixture_scale`, `proposals`, `tolerance`.
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
