"""The synthetic DGP: distributions against the authors' algorithm, seeding, tf.data."""

import numpy as np
import pytest
import scipy.special
import tensorflow as tf

from aninfonce_tf.data import latent_distributions, synthetic

LINEAR = synthetic.concentration_preset("linear")


def _authors_positive(z, concentration, rng, tolerance=0.1):
    """The authors' one-at-a-time rejection loop, in NumPy."""
    while True:
        candidate = z + rng.normal(size=z.shape) / np.sqrt(concentration)
        if abs(np.linalg.norm(candidate) - 1.0) < tolerance:
            return candidate / np.linalg.norm(candidate)


def test_standard_normal_is_normal_and_seeded():
    draws = latent_distributions.standard_normal([5001, 40], tf.constant([3, 4], tf.int64)).numpy()
    assert draws.shape == (5001, 40)
    flat = draws.ravel()
    assert scipy.stats.kstest(flat, "norm").pvalue > 1e-3
    np.testing.assert_allclose([flat.mean(), flat.var()], [0.0, 1.0], atol=0.01)
    np.testing.assert_allclose(scipy.stats.kurtosis(flat), 0.0, atol=0.03)
    # Columns are uncorrelated (the sine and cosine halves land in different rows).
    correlation = np.corrcoef(draws[:, :2].T)[0, 1]
    assert abs(correlation) < 0.05
    again = latent_distributions.standard_normal([5001, 40], tf.constant([3, 4], tf.int64)).numpy()
    np.testing.assert_array_equal(draws, again)


def test_projected_normal_matches_the_authors_sampler():
    rng = np.random.default_rng(0)
    z = rng.normal(size=10)
    z /= np.linalg.norm(z)
    count = 20_000
    reference = np.stack([_authors_positive(z, LINEAR, rng) for _ in range(count)])
    ours = latent_distributions.projected_normal_positive(
        tf.constant(np.tile(z, (count, 1)), tf.float32),
        tf.constant(LINEAR, tf.float32),
        tf.constant([0, 1]),
    ).numpy()
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-5)
    standard_error = reference.std(axis=0) / np.sqrt(count)
    np.testing.assert_array_less(
        np.abs(ours.mean(0) - reference.mean(0)), 5 * np.sqrt(2) * standard_error
    )
    np.testing.assert_allclose(ours.std(0), reference.std(0), rtol=0.05)
    # The less concentrated a latent, the more it moves.
    spread = ours.std(0)
    assert spread[0] > 1.5 * spread[-1]


def test_rejection_keeps_only_accepted_proposals_and_fills_every_row():
    z = tf.zeros([500, 1])

    def propose(rows, seed):
        return tf.random.stateless_uniform(tf.concat([tf.shape(rows)[:1], [3, 1]], 0), seed)

    def accept(candidates):
        return candidates[..., 0] < 0.05  # rare: most rows need several rounds

    out = latent_distributions._rejection_sample(
        propose, accept, z, tf.constant([0, 2]), sample_shape=[1], proposals=3
    ).numpy()
    assert np.all(out < 0.05) and np.all(out > 0)
    # Accepted draws are uniform on [0, 0.05).
    assert abs(out.mean() - 0.025) < 0.003


def test_rejection_fails_loudly_when_rows_stay_unaccepted():
    def propose(rows, seed):
        return tf.zeros(tf.concat([tf.shape(rows)[:1], [2, 1]], 0))

    def never(candidates):
        return candidates[..., 0] > 1.0

    with pytest.raises(tf.errors.InvalidArgumentError, match="unaccepted"):
        latent_distributions._rejection_sample(
            propose, never, tf.zeros([4, 1]), tf.constant([0, 1]), [1], proposals=2
        )


def test_one_proposal_a_round_still_fills_rows_with_low_acceptance():
    # z on the most concentrated axis of the two-valued Lambda: ~6 % of proposals are
    # accepted, so some of 2000 rows need more than 100 rounds of one proposal.
    concentration = synthetic.concentration_preset("two_valued")
    z = tf.one_hot(tf.zeros([2000], tf.int32), 10)
    positive = latent_distributions.projected_normal_positive(
        z, tf.constant(concentration, tf.float32), tf.constant([0, 6]), proposals=1
    )
    np.testing.assert_allclose(tf.norm(positive, axis=-1), 1.0, rtol=1e-5)


def test_von_mises_fisher_has_the_right_mean_cosine():
    kappa, dim = 15.0, 10
    z = tf.math.l2_normalize(tf.random.stateless_normal([20_000, dim], [0, 3]), axis=-1)
    positive = latent_distributions.sample_positive(
        z, "vmf", np.full(dim, kappa), tf.constant([0, 4])
    )
    mean_cosine = float(tf.reduce_mean(tf.reduce_sum(z * positive, -1)))
    expected = scipy.special.iv(dim / 2, kappa) / scipy.special.iv(dim / 2 - 1, kappa)
    assert abs(mean_cosine - expected) < 0.01
    np.testing.assert_allclose(tf.norm(positive, axis=-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("conditional", ["normal", "laplace"])
def test_euclidean_noise_has_variance_one_over_concentration(conditional):
    z = tf.random.stateless_normal([50_000, 10], [0, 5])
    positive = latent_distributions.sample_positive(
        z, conditional, LINEAR, tf.constant([0, 6]), space="euclidean"
    )
    np.testing.assert_allclose(np.var(positive - z, axis=0), 1.0 / LINEAR, rtol=0.05)


def test_theory_breaking_conditionals_are_wider_than_normal():
    z = tf.random.stateless_normal([20_000, 10], [0, 7])
    spread = {
        name: float(
            np.std(
                latent_distributions.sample_positive(
                    z, name, LINEAR, tf.constant([0, 8]), space="euclidean"
                )
                - z
            )
        )
        for name in ("normal", "heteroscedastic", "mixture")
    }
    assert spread["heteroscedastic"] > 1.3 * spread["normal"]
    assert spread["mixture"] > 1.3 * spread["normal"]


@pytest.mark.parametrize("space", latent_distributions.LATENT_SPACES)
def test_latents_and_positives_stay_in_their_space(space):
    setup = synthetic.SyntheticSetup(LINEAR, space=space, conditional="normal", generator_draws=50)
    z, positive = setup.sample_latent_pairs(2000, [0, 9])
    if space == "sphere":
        np.testing.assert_allclose(np.linalg.norm(positive, axis=1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-5)
    if space == "box":
        assert np.all(np.abs(z) <= 1) and np.all(np.abs(positive) <= 1)
        assert np.std(z) > 0.5  # uniform on [-1, 1] has std 0.577


def test_generator_is_well_conditioned_and_invertible():
    generator = synthetic.InvertibleMLP(dim=10, draws=5000, seed=1)
    assert max(generator.condition_numbers) < 5.0
    z = np.random.default_rng(0).normal(size=(100, 10))
    x = generator(z).numpy().astype("float64")
    for i, w in reversed(list(enumerate(generator.weights))):
        if i < len(generator.weights) - 1:
            x = np.where(x > 0, x, x / generator.negative_slope)
        x = x @ np.linalg.inv(w)
    np.testing.assert_allclose(x, z, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(generator.weights[0], axis=0), 1.0)


def test_dataset_is_seeded_static_and_equal_to_eager_sampling():
    setup = synthetic.SyntheticSetup(LINEAR, generator_draws=50)
    dataset = setup.dataset(batch_size=16, seed=3)
    assert dataset.element_spec["view1"].shape == (16, 10)
    first, second = list(dataset.take(2))
    again = next(iter(setup.dataset(batch_size=16, seed=3)))
    eager = setup.sample_pairs(16, tf.constant([3, 0], tf.int64))
    for key in ("view1", "view2", "z1", "z2"):
        np.testing.assert_array_equal(first[key], again[key])
        np.testing.assert_allclose(first[key], eager[key], rtol=1e-6)
        assert not np.allclose(first[key], second[key])
    np.testing.assert_allclose(first["view1"], setup.generator(first["z1"]), rtol=1e-6)
    # No autotuning thread (`without_autotune`: it slowed the step and the end of `fit`).
    assert dataset.options().autotune.enabled is False


@pytest.mark.parametrize("conditional", latent_distributions.CONDITIONALS)
def test_every_conditional_runs_inside_dataset_map_as_eagerly(conditional):
    space = "sphere" if conditional in ("projected_normal", "vmf") else "box"
    setup = synthetic.SyntheticSetup(
        LINEAR, space=space, conditional=conditional, generator_draws=50
    )
    batch = next(iter(setup.dataset(batch_size=64, seed=5)))
    eager = setup.sample_pairs(64, tf.constant([5, 0], tf.int64))
    for key in ("z1", "z2", "view2"):
        np.testing.assert_allclose(batch[key], eager[key], rtol=1e-5, atol=1e-6)


def test_presets_and_blocks():
    np.testing.assert_allclose(LINEAR, np.linspace(5, 25, 10))
    two = synthetic.concentration_preset("two_valued")
    assert sorted(two.tolist()) == [5.0] * 5 + [25.0] * 5
    blocks = synthetic.concentration_blocks(two)
    assert np.all(two[blocks["low"]] == 5) and np.all(two[blocks["high"]] == 25)
    content_style = synthetic.concentration_preset("content_style", dim=6)
    np.testing.assert_allclose(content_style, [200, 200 * 2**0.5, 400, 10, 10 * 2**0.5, 20])
    blocks = synthetic.concentration_blocks(content_style)
    assert blocks["high"].tolist() == [0, 1, 2] and blocks["low"].tolist() == [3, 4, 5]
    geometric = synthetic.concentration_preset("geometric", dim=3, low=1, high=100)
    np.testing.assert_allclose(geometric, [1, 10, 100])


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: synthetic.concentration_preset("cubic"), "preset"),
        (lambda: synthetic.SyntheticSetup([1.0, -1.0]), "positive"),
        (lambda: synthetic.SyntheticSetup([1.0, np.inf]), "positive, finite"),
        (lambda: synthetic.SyntheticSetup([1.0, np.nan]), "positive, finite"),
        (lambda: synthetic.SyntheticSetup(LINEAR, space="torus"), "space"),
        (lambda: synthetic.SyntheticSetup(LINEAR, conditional="cauchy"), "conditional"),
        (
            lambda: synthetic.SyntheticSetup(LINEAR, space="box", conditional="vmf").sample_pairs(
                4, [0, 0]
            ),
            "sphere",
        ),
        (
            lambda: synthetic.SyntheticSetup(LINEAR, generator_draws=5).dataset(batch_size=1),
            "batch_size",
        ),
    ],
)
def test_bad_arguments_raise(call, message):
    with pytest.raises(ValueError, match=message):
        call()
