"""The blockwise loss: the dense loss's value, gradients and metrics in every
configuration, eagerly and under XLA, with bounded intermediate sizes."""

import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import AnInfoNCE, InfoNCE, ops
from tests import reference


def _pair(batch, dim, seed=0):
    rng = np.random.default_rng(seed)
    z1 = rng.normal(size=(batch, dim)).astype("float32")
    return z1, (z1 + 0.3 * rng.normal(size=z1.shape)).astype("float32")


def _losses_and_gradients(z1, z2, jit=False, **options):
    @tf.function(jit_compile=jit)
    def compute(z1, z2):
        with tf.GradientTape() as tape:
            tape.watch([z1, z2])
            losses, stats = ops.info_nce(z1, z2, return_stats=True, **options)
            loss = tf.reduce_sum(losses * tf.range(1.0, tf.cast(tf.size(losses), tf.float32) + 1))
        return losses, stats, tape.gradient(loss, [z1, z2])

    losses, stats, gradients = compute(tf.constant(z1), tf.constant(z2))
    return losses.numpy(), {k: float(v) for k, v in stats.items()}, [g.numpy() for g in gradients]


@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
@pytest.mark.parametrize("candidates", ["nt_xent", "one_directional"])
@pytest.mark.parametrize("block_size", [1, 5, 16, 64])
def test_blockwise_equals_dense_in_value_gradients_and_metrics(similarity, candidates, block_size):
    z1, z2 = _pair(12, 5, seed=block_size)
    options = dict(similarity=similarity, temperature=[0.3, 0.9], candidates=candidates)
    dense = _losses_and_gradients(z1, z2, **options)
    blockwise = _losses_and_gradients(z1, z2, block_size=block_size, **options)
    np.testing.assert_allclose(blockwise[0], dense[0], rtol=1e-5, atol=1e-5)
    assert blockwise[1] == pytest.approx(dense[1])
    for block_gradient, dense_gradient in zip(blockwise[2], dense[2], strict=True):
        np.testing.assert_allclose(block_gradient, dense_gradient, rtol=1e-4, atol=2e-5)


def test_blockwise_matches_the_float64_reference():
    z1, z2 = (z.astype("float64") for z in _pair(6, 3, seed=7))
    losses = ops.info_nce(z1, z2, similarity="euclidean", temperature=0.5, block_size=4)
    expected = reference.info_nce(z1, z2, "euclidean", 0.5, "nt_xent")
    np.testing.assert_allclose(float(tf.reduce_mean(losses)), expected, rtol=1e-10)


def test_blockwise_under_xla_with_gathered_candidates_equals_dense():
    # Replica 1 of 2: local rows 6..11 of a global batch of 12.
    z1, z2 = _pair(12, 4, seed=3)
    local = dict(z1_all=tf.constant(z1), z2_all=tf.constant(z2), row_offset=6)
    options = dict(similarity="euclidean", temperature=1.0, **local)
    dense = _losses_and_gradients(z1[6:], z2[6:], **options)
    blockwise = _losses_and_gradients(z1[6:], z2[6:], jit=True, block_size=7, **options)
    np.testing.assert_allclose(blockwise[0], dense[0], rtol=1e-5)
    assert blockwise[1]["candidates"] == dense[1]["candidates"] == 23.0
    for block_gradient, dense_gradient in zip(blockwise[2], dense[2], strict=True):
        np.testing.assert_allclose(block_gradient, dense_gradient, rtol=1e-4, atol=2e-5)


def test_no_tensor_of_the_backward_pass_is_batch_by_batch():
    batch, block = 256, 32
    z1, z2 = (tf.constant(z) for z in _pair(batch, 8))

    @tf.function
    def step(z1, z2):
        with tf.GradientTape() as tape:
            tape.watch([z1, z2])
            loss = tf.reduce_mean(ops.info_nce(z1, z2, block_size=block))
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
    with pytest.raises(ValueError, match="block_size"):
        InfoNCE(block_size=0)
