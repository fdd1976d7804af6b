"""The functional core against the float64 reference, its invariances and its errors."""

import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import functional
from tests import reference


def _pair(batch, dim, seed=0, unit=False):
    rng = np.random.default_rng(seed)
    z1 = rng.normal(size=(batch, dim))
    z2 = z1 + 0.3 * rng.normal(size=(batch, dim))
    if unit:
        z1 /= np.linalg.norm(z1, axis=1, keepdims=True)
        z2 /= np.linalg.norm(z2, axis=1, keepdims=True)
    return z1, z2


def _loss_and_gradients(z1, z2, **options):
    z1, z2 = tf.constant(z1), tf.constant(z2)
    with tf.GradientTape() as tape:
        tape.watch([z1, z2])
        loss = tf.reduce_mean(functional.info_nce(z1, z2, **options))
    g1, g2 = tape.gradient(loss, [z1, z2])
    return float(loss), g1.numpy(), g2.numpy()


@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
@pytest.mark.parametrize("candidates", ["nt_xent", "one_directional"])
@pytest.mark.parametrize("batch,dim", [(2, 3), (5, 4), (8, 7)])
def test_loss_and_gradients_match_float64_reference(similarity, candidates, batch, dim):
    z1, z2 = _pair(batch, dim, seed=batch * dim)
    options = dict(similarity=similarity, temperature=0.7, candidates=candidates)
    loss, g1, g2 = _loss_and_gradients(z1, z2, **options)
    ref = lambda a, b: reference.info_nce(a, b, similarity, 0.7, candidates)  # noqa: E731
    np.testing.assert_allclose(loss, ref(z1, z2), rtol=1e-5)
    np.testing.assert_allclose(
        g1, reference.numerical_gradient(lambda a: ref(a, z2), z1), rtol=1e-5, atol=1e-8
    )
    np.testing.assert_allclose(
        g2, reference.numerical_gradient(lambda b: ref(z1, b), z2), rtol=1e-5, atol=1e-8
    )


@pytest.mark.parametrize("candidates", ["nt_xent", "one_directional"])
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_hard_negative_reweighting_matches_reference(candidates, beta):
    z1, z2 = _pair(6, 4, seed=3)
    loss, _, _ = _loss_and_gradients(z1, z2, candidates=candidates, hard_negative_beta=beta)
    expected = reference.info_nce(z1, z2, "euclidean", 1.0, candidates, hard_negative_beta=beta)
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    plain, _, _ = _loss_and_gradients(z1, z2, candidates=candidates)
    assert not np.isclose(loss, plain)


@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
@pytest.mark.parametrize("temperature", [0.2, 0.5, 3.0])
def test_hard_negatives_weight_beta_times_the_logit_at_any_temperature(similarity, temperature):
    """The documented rule: negatives weighted by exp(beta * similarity / temperature).
    At temperature 1 it equals exp(beta * similarity); elsewhere it must not."""
    z1, z2 = _pair(6, 4, seed=12)
    beta = 0.5
    options = dict(similarity=similarity, temperature=temperature, hard_negative_beta=beta)
    loss, _, _ = _loss_and_gradients(z1, z2, **options)
    # The reference weights by exp(beta * logit), logit = similarity / temperature.
    on_logits = reference.info_nce(z1, z2, similarity, temperature, hard_negative_beta=beta)
    np.testing.assert_allclose(loss, on_logits, rtol=1e-6)
    # exp(beta * similarity) = exp((beta * temperature) * logit): another loss here.
    on_similarities = reference.info_nce(
        z1, z2, similarity, temperature, hard_negative_beta=beta * temperature
    )
    assert abs(on_similarities - on_logits) > 1e-3 * abs(on_logits)


def test_hard_negative_weights_tend_to_the_plain_loss_as_beta_goes_to_zero():
    z1, z2 = _pair(6, 4, seed=4)
    np.testing.assert_allclose(
        _loss_and_gradients(z1, z2, hard_negative_beta=1e-9)[0],
        _loss_and_gradients(z1, z2)[0],
        rtol=1e-8,
    )


def test_ensemble_is_weighted_sum_over_temperatures():
    z1, z2 = _pair(6, 4, seed=5)
    ensemble = np.mean(
        functional.info_nce(z1, z2, "cosine", [0.1, 0.5], ensemble_weights=[1.0, 3.0])
    )
    single = [np.mean(functional.info_nce(z1, z2, "cosine", t)) for t in (0.1, 0.5)]
    np.testing.assert_allclose(ensemble, 0.25 * single[0] + 0.75 * single[1], rtol=1e-6)


def test_float32_agrees_with_float64():
    z1, z2 = _pair(16, 8, seed=6)
    loss64 = np.mean(functional.info_nce(z1, z2, "cosine", 0.1))
    loss32 = np.mean(functional.info_nce(z1.astype("float32"), z2.astype("float32"), "cosine", 0.1))
    np.testing.assert_allclose(loss32, loss64, rtol=1e-5)


def test_half_precision_inputs_compute_in_float32():
    z1, z2 = _pair(16, 8, seed=7)
    losses = functional.info_nce(
        tf.constant(z1, tf.bfloat16), tf.constant(z2, tf.bfloat16), "cosine", 0.1
    )
    assert losses.dtype == tf.float32
    rounded = [tf.cast(tf.cast(z, tf.bfloat16), tf.float32) for z in (z1, z2)]
    np.testing.assert_allclose(losses, functional.info_nce(*rounded, "cosine", 0.1), rtol=1e-6)


@pytest.mark.parametrize("candidates", ["nt_xent", "one_directional"])
def test_permuting_the_batch_leaves_the_loss_unchanged(candidates):
    z1, z2 = _pair(9, 5, seed=8)
    order = np.random.default_rng(0).permutation(9)
    np.testing.assert_allclose(
        np.mean(functional.info_nce(z1, z2, candidates=candidates)),
        np.mean(functional.info_nce(z1[order], z2[order], candidates=candidates)),
        rtol=1e-10,
    )


@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
def test_swapping_views_leaves_nt_xent_unchanged(similarity):
    z1, z2 = _pair(9, 5, seed=9)
    np.testing.assert_allclose(
        np.mean(functional.info_nce(z1, z2, similarity)),
        np.mean(functional.info_nce(z2, z1, similarity)),
        rtol=1e-10,
    )
    one_way = [
        np.mean(functional.info_nce(a, b, similarity, candidates="one_directional"))
        for a, b in ((z1, z2), (z2, z1))
    ]
    assert not np.isclose(*one_way)


def test_gathered_candidates_reproduce_the_full_batch_loss():
    z1, z2 = _pair(8, 4, seed=10)
    full = functional.info_nce(z1, z2)
    halves = [
        functional.info_nce(z1[s], z2[s], z1_all=z1, z2_all=z2, row_offset=s.start)
        for s in (slice(0, 4), slice(4, 8))
    ]
    np.testing.assert_allclose(np.mean(np.concatenate(halves)), np.mean(full), rtol=1e-12)


def test_large_concentrations_and_zero_vectors_stay_finite():
    z1, z2 = _pair(8, 4, seed=11, unit=True)
    scale = np.sqrt(1e4)
    loss, g1, g2 = _loss_and_gradients(
        (scale * z1).astype("float32"), (scale * z2).astype("float32")
    )
    assert np.isfinite(loss) and np.all(np.isfinite(g1)) and np.all(np.isfinite(g2))
    zeros = np.zeros((4, 3), "float32")
    loss, g1, g2 = _loss_and_gradients(zeros, zeros, similarity="cosine", temperature=0.01)
    assert np.isfinite(loss) and np.all(np.isfinite(g1)) and np.all(np.isfinite(g2))
    np.testing.assert_allclose(loss, np.log(7.0), rtol=1e-6)


def test_accuracy_alignment_uniformity():
    z = np.eye(4)
    logits, positive, mask = functional.contrastive_logits(z, z, "cosine")
    assert float(functional.positive_accuracy(logits, positive, mask)) == 1.0
    assert float(functional.alignment(z, z)) == 0.0
    # Orthonormal vectors: every distinct pair is at squared distance 2.
    np.testing.assert_allclose(float(functional.uniformity(z)), -4.0, rtol=1e-6)


@pytest.mark.parametrize("candidates", functional.CANDIDATE_SETS)
def test_accuracy_matches_numpy_argmax(candidates):
    z1, z2 = _pair(16, 3, seed=5, unit=False)
    logits, positive, mask = functional.contrastive_logits(z1, z2, candidates=candidates)
    masked = np.where(np.asarray(mask) > 0, np.asarray(logits), -np.inf)
    expected = np.mean(np.argmax(masked, axis=-1) == np.asarray(positive))
    assert 0.0 < expected < 1.0  # a case where some rows are wrong
    np.testing.assert_allclose(
        float(functional.positive_accuracy(logits, positive, mask)), expected
    )


@pytest.mark.parametrize(
    "z1,z2,message",
    [
        (np.zeros((4, 3)), np.zeros((4, 2)), "same shape"),
        (np.zeros((4, 3, 1)), np.zeros((4, 3, 1)), "rank 2"),
        (np.zeros(3), np.zeros(3), "rank 2"),
        (np.zeros((1, 3)), np.zeros((1, 3)), "at least 2"),
    ],
)
def test_bad_shapes_raise(z1, z2, message):
    with pytest.raises(ValueError, match=message):
        functional.info_nce(z1, z2)


def test_bad_options_raise():
    z1, z2 = _pair(4, 3)
    with pytest.raises(ValueError, match="similarity"):
        functional.info_nce(z1, z2, similarity="dot")
    with pytest.raises(ValueError, match="candidates"):
        functional.info_nce(z1, z2, candidates="all")
    for temperature in (0.0, float("nan"), float("inf"), [0.1, float("nan")], []):
        with pytest.raises(ValueError, match="`temperature` must be one or more positive, finite"):
            functional.info_nce(z1, z2, temperature=temperature)
    with pytest.raises(ValueError, match="ensemble_weights"):
        functional.info_nce(z1, z2, temperature=[0.1, 0.2], ensemble_weights=[1.0])
    with pytest.raises(ValueError, match="`hard_negative_beta` must be a finite number"):
        functional.info_nce(z1, z2, hard_negative_beta=float("nan"))


@pytest.mark.parametrize(
    "options",
    [
        dict(temperature=True),
        dict(temperature="0.5"),
        dict(temperature=(0.5, "1")),
        dict(temperature=1e39),
        dict(hard_negative_beta=True),
        dict(hard_negative_beta="0.5"),
        dict(hard_negative_beta=1e39),
        dict(temperature=[0.1, 0.2], ensemble_weights=[True, False]),
        dict(temperature=[0.1, 0.2], ensemble_weights=[1e308, 1e308]),
    ],
)
def test_an_option_given_as_a_bool_or_text_or_beyond_float32_is_refused(options):
    # Before, a bool was read as 1, text as its number, and an option float32 cannot hold
    # gave a NaN or constant loss.
    z1, z2 = _pair(4, 3)
    with pytest.raises(ValueError, match="must be .*that float32 holds; got"):
        functional.info_nce(z1, z2, **options)


def test_numpy_numbers_are_options_as_python_ones():
    z1, z2 = _pair(4, 3)
    options = dict(temperature=[0.1, 0.2], ensemble_weights=[1, 2], hard_negative_beta=-1.0)
    numpy_options = dict(
        temperature=[np.float32(0.1), tf.constant(0.2, tf.float64)],
        ensemble_weights=[np.int64(1), np.array(2.0)],
        hard_negative_beta=np.float32(-1.0),
    )
    np.testing.assert_allclose(
        functional.info_nce(z1, z2, **numpy_options),
        functional.info_nce(z1, z2, **options),
        rtol=1e-6,
    )


def test_a_collapsed_encoder_scores_zero_accuracy():
    z = np.ones((8, 3), "float32")  # every logit equal
    logits, positive, mask = functional.contrastive_logits(z, z, "cosine")
    assert float(functional.positive_accuracy(logits, positive, mask)) == 0.0
