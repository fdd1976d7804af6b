"""The log-sum-exp kernels behind `functional.info_nce`, dense and blockwise: the value,
gradients and metrics of the loss written on the logits matrix
(`functional.contrastive_logits`, differentiated automatically) in every configuration,
eagerly and under XLA; the blockwise one in bounded intermediate sizes."""

import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import AnInfoNCE, InfoNCE, functional
from tests import reference


def _pair(batch, dim, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    z1 = rng.normal(size=(batch, dim)).astype("float32")
    return z1, (z1 + noise * rng.normal(size=z1.shape)).astype("float32")


def _on_logits(z1, z2, similarity, temperature, candidates="nt_xent", **gathered):
    """`functional.info_nce` and its stats written on the logits matrix, without the kernels."""
    temperatures = temperature if isinstance(temperature, list) else [temperature]
    losses = 0.0
    for temp in temperatures:
        logits = functional.contrastive_logits(z1, z2, similarity, temp, candidates, **gathered)
        losses += functional.info_nce_from_logits(*logits) / len(temperatures)
        if temp == temperatures[0]:
            stats = {
                "accuracy": functional.positive_accuracy(*logits),
                "candidates": tf.reduce_mean(tf.reduce_sum(logits[2], axis=-1)),
            }
    return losses, stats


def _losses_and_gradients(z1, z2, jit=False, loss=functional.info_nce, **options):
    @tf.function(jit_compile=jit)
    def compute(z1, z2):
        with tf.GradientTape() as tape:
            tape.watch([z1, z2])
            if loss is functional.info_nce:
                losses, stats = loss(z1, z2, return_stats=True, **options)
            else:
                losses, stats = loss(z1, z2, **options)
            loss_value = tf.reduce_sum(
                losses * tf.range(1.0, tf.cast(tf.size(losses), tf.float32) + 1)
            )
        return losses, stats, tape.gradient(loss_value, [z1, z2])

    losses, stats, gradients = compute(tf.constant(z1), tf.constant(z2))
    return losses.numpy(), {k: float(v) for k, v in stats.items()}, [g.numpy() for g in gradients]


def _assert_same(kernel, logits):
    np.testing.assert_allclose(kernel[0], logits[0], rtol=1e-5, atol=1e-5)
    assert kernel[1] == pytest.approx(logits[1])
    for kernel_gradient, logits_gradient in zip(kernel[2], logits[2], strict=True):
        np.testing.assert_allclose(kernel_gradient, logits_gradient, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
@pytest.mark.parametrize("candidates", ["nt_xent", "one_directional"])
@pytest.mark.parametrize("block_size", [None, 1, 5, 16, 64])
@pytest.mark.parametrize("jit", [False, True])
def test_kernels_equal_the_logits_matrix_in_value_gradients_and_metrics(
    similarity, candidates, block_size, jit
):
    z1, z2 = _pair(12, 5, seed=block_size or 0, noise=0.6)
    options = dict(similarity=similarity, temperature=[0.3, 0.9], candidates=candidates)
    on_logits = _losses_and_gradients(z1, z2, loss=_on_logits, **options)
    kernel = _losses_and_gradients(z1, z2, jit=jit, block_size=block_size, **options)
    assert 0.0 < on_logits[1]["accuracy"] < 1.0  # some rows right, some wrong
    _assert_same(kernel, on_logits)


@pytest.mark.parametrize("block_size", [None, 4])
def test_kernels_match_the_float64_reference(block_size):
    z1, z2 = (z.astype("float64") for z in _pair(6, 3, seed=7))
    losses = functional.info_nce(
        z1, z2, similarity="euclidean", temperature=0.5, block_size=block_size
    )
    expected = reference.info_nce(z1, z2, "euclidean", 0.5, "nt_xent")
    np.testing.assert_allclose(float(tf.reduce_mean(losses)), expected, rtol=1e-10)


@pytest.mark.parametrize("block_size", [None, 7])
def test_kernels_under_xla_with_gathered_candidates_equal_the_logits_matrix(block_size):
    # Replica 1 of 2: local rows 6..11 of a global batch of 12.
    z1, z2 = _pair(12, 4, seed=3)
    local = dict(z1_all=tf.constant(z1), z2_all=tf.constant(z2), row_offset=6)
    options = dict(similarity="euclidean", temperature=1.0, **local)
    on_logits = _losses_and_gradients(z1[6:], z2[6:], loss=_on_logits, **options)
    kernel = _losses_and_gradients(z1[6:], z2[6:], jit=True, block_size=block_size, **options)
    assert kernel[1]["candidates"] == on_logits[1]["candidates"] == 23.0
    _assert_same(kernel, on_logits)


@pytest.mark.parametrize("block_size", [None, 3])
@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
def test_a_collapsed_encoder_scores_zero_accuracy_through_the_kernels(similarity, block_size):
    z = tf.constant(np.full((8, 3), 0.7, "float32"))  # every logit equal: ties are misses
    _, stats = functional.info_nce(z, z, similarity, block_size=block_size, return_stats=True)
    assert float(stats["accuracy"]) == 0.0


def test_the_dense_kernel_stays_finite_where_logits_span_thousands():
    # Rows far apart: each row's exponentials are shifted by its largest candidate.
    z1, z2 = _pair(16, 4, seed=5)
    z1, z2 = 40.0 * z1, 40.0 * z2 + 0.01
    losses, _, gradients = _losses_and_gradients(z1, z2)
    on_logits = _losses_and_gradients(
        z1, z2, loss=_on_logits, similarity="euclidean", temperature=1.0
    )
    assert np.all(np.isfinite(losses)) and all(np.all(np.isfinite(g)) for g in gradients)
    np.testing.assert_allclose(losses, on_logits[0], rtol=1e-4, atol=1e-3)


def test_no_tensor_of_the_backward_pass_is_batch_by_batch():
    batch, block = 256, 32
    z1, z2 = (tf.constant(z) for z in _pair(batch, 8))

    @tf.function
    def step(z1, z2):
        with tf.GradientTape() as tape:
            tape.watch([z1, z2])
            loss = tf.reduce_mean(functional.info_nce(z1, z2, block_size=block))
        return tape.gradient(loss, [z1, z2])

    graph = step.get_concrete_function(z1, z2).graph
    graphs = [graph, *(function.graph for function in graph._functions.values())]  # + loops
    shapes = [
        tuple(o.shape)
        for g in graphs
        for op in g.get_operations()
        for o in op.outputs
        if o.shape.rank
    ]
    largest = max(int(np.prod([d or 1 for d in s])) for s in shapes)
    assert largest <= 2 * batch * block  # the [2B, block] block logits, never [2B, 2B]


def test_losses_take_a_block_size_and_round_trip():
    for loss in (InfoNCE(block_size=64), AnInfoNCE(block_size=64, temperature=[0.5, 1.0])):
        assert type(loss).from_config(loss.get_config()).block_size == 64
    with pytest.raises(ValueError, match="block_size"):
        InfoNCE(block_size=8, hard_negative_beta=1.0)
    # Not a whole number of rows: refused, not truncated.
    for block_size in (0, 2.5, True, "8"):
        with pytest.raises(ValueError, match="block_size"):
            InfoNCE(block_size=block_size)
    assert InfoNCE(block_size=np.int64(8)).block_size == 8
