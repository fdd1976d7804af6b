"""Identifiability metrics on constructed cases whose answer is known."""

import numpy as np
import pytest
from scipy.stats import ortho_group

from aninfonce_tf.evaluation import identifiability as metrics


@pytest.fixture
def latents():
    return np.random.default_rng(0).uniform(-1, 1, size=(4000, 6))


def test_permutation_and_sign_flips_are_perfect(latents):
    features = -3.0 * latents[:, [2, 0, 1, 5, 4, 3]] + 1.0
    scores = metrics.identifiability_scores(latents, features, nonlinear=True)
    assert scores["mcc"] == pytest.approx(1.0, abs=1e-9)
    assert scores["mcc_spearman"] == pytest.approx(1.0, abs=1e-9)
    assert scores["linear_r2"] == pytest.approx(1.0, abs=1e-9)
    assert scores["nonlinear_r2"] > 0.99


def test_orthogonal_mixing_keeps_linear_r2_but_not_mcc(latents):
    mixing = ortho_group.rvs(6, random_state=1)
    features = latents @ mixing
    assert metrics.linear_r2(latents, features).min() > 0.999
    assert metrics.mean_correlation_coefficient(latents, features) < 0.85


def test_monotone_distortion_is_caught_by_spearman_not_pearson(latents):
    features = np.sinh(5 * latents)
    assert metrics.mean_correlation_coefficient(latents, features, "spearman") == pytest.approx(1.0)
    assert metrics.mean_correlation_coefficient(latents, features, "pearson") < 0.95


def test_independent_noise_scores_about_zero(latents):
    noise = np.random.default_rng(2).normal(size=latents.shape)
    assert abs(np.mean(metrics.linear_r2(latents, noise))) < 0.02
    assert metrics.mean_correlation_coefficient(latents, noise) < 0.06


def test_held_out_r2_does_not_reward_overfitting():
    rng = np.random.default_rng(3)
    latents = rng.normal(size=(60, 1))
    noise_features = rng.normal(size=(60, 25))
    in_sample = (
        metrics.LinearRegression().fit(noise_features, latents).score(noise_features, latents)
    )
    assert in_sample > 0.3
    assert metrics.linear_r2(latents, noise_features)[0] < 0.1


def test_block_r2_and_concentration_agreement(latents):
    per_latent = np.array([1.0, 0.9, 0.8, 0.1, 0.2, 0.3])
    blocks = {"high": np.array([0, 1, 2]), "low": np.array([3, 4, 5])}
    assert metrics.block_r2(per_latent, blocks) == pytest.approx({"high": 0.9, "low": 0.2})
    true = np.array([5.0, 9.0, 13.0, 17.0, 21.0, 25.0])
    order = [3, 1, 5, 0, 2, 4]
    features = latents[:, order]  # feature j encodes latent order[j]
    learned = 2.0 * true[order]
    agreement = metrics.concentration_agreement(learned, true, latents, features)
    assert agreement["lambda_spearman"] == pytest.approx(1.0)
    np.testing.assert_allclose(agreement["lambda_hat_matched"], 2.0 * true)
    assert agreement["lambda_relative_error"] == pytest.approx(1.0)
    normalized = metrics.concentration_agreement(learned, true, latents, features, normalize=True)
    assert normalized["lambda_relative_error"] == pytest.approx(0.0, abs=1e-12)


def test_bad_inputs_raise(latents):
    with pytest.raises(ValueError, match="rows"):
        metrics.linear_r2(latents, latents[:10])
    with pytest.raises(ValueError, match="2-D"):
        metrics.linear_r2(latents[:, 0], latents)
    with pytest.raises(ValueError, match="method"):
        metrics.mean_correlation_coefficient(latents, latents, "kendall")


def test_orientation_scores_the_identity_one_and_a_rotation_its_floor(latents):
    blocks = {"high": np.arange(3), "low": np.arange(3, 6)}
    identity = metrics.identifiability_scores(latents, latents, blocks)
    assert identity["mcc"] == pytest.approx(1.0, abs=1e-9)
    assert identity["subspace_r2"] == pytest.approx({"high": 1.0, "low": 1.0}, abs=1e-9)
    permuted = -2.0 * latents[:, [4, 3, 5, 1, 2, 0]]
    flipped = metrics.identifiability_scores(latents, permuted, blocks)
    assert flipped["mcc"] == pytest.approx(1.0, abs=1e-9)
    assert flipped["subspace_r2"] == pytest.approx({"high": 1.0, "low": 1.0}, abs=1e-9)
    floor, sd = metrics.rotation_floor(latents, draws=40, seed=3)
    rotated = [
        metrics.identifiability_scores(latents, latents @ ortho_group.rvs(6, random_state=s))
        for s in range(20)
    ]
    assert np.mean([r["mcc"] for r in rotated]) == pytest.approx(
        floor, abs=2 * sd / np.sqrt(20) + 0.02
    )
    assert 0.55 < floor < 0.8  # the measured 0.69 +- 0.05 for 6 latents
    # A rotation keeps the block's R^2 from all dimensions but not from its own.
    mixed = metrics.identifiability_scores(
        latents, latents @ ortho_group.rvs(6, random_state=1), blocks
    )
    assert min(mixed["block_r2"].values()) > 0.999
    assert max(mixed["subspace_r2"].values()) < 0.9


def test_rotations_within_a_block_keep_its_subspace_but_lower_the_mcc(latents):
    blocks = {"high": np.arange(3), "low": np.arange(3, 6)}
    within = np.zeros((6, 6))
    within[:3, :3] = ortho_group.rvs(3, random_state=0)
    within[3:, 3:] = ortho_group.rvs(3, random_state=1)
    scores = metrics.identifiability_scores(latents, latents @ within, blocks)
    assert scores["subspace_r2"] == pytest.approx({"high": 1.0, "low": 1.0}, abs=1e-6)
    assert scores["mcc"] < 0.9


def test_orientation_with_more_dimensions_than_latents(latents):
    noise = np.random.default_rng(5).normal(size=(len(latents), 4))
    wide = np.concatenate([noise[:, :2], -latents[:, ::-1], noise[:, 2:]], 1)
    scores = metrics.identifiability_scores(latents, wide, {"all": np.arange(6)})
    assert scores["mcc"] == pytest.approx(1.0, abs=1e-9)
    assert scores["subspace_r2"]["all"] == pytest.approx(1.0, abs=1e-9)
    floor_wide, _ = metrics.rotation_floor(latents, width=10)
    floor, _ = metrics.rotation_floor(latents)
    assert floor_wide > floor  # more dimensions to match each latent to raise the floor
    # Fewer dimensions than latents: the latents left without one count 0.
    assert metrics.mean_correlation_coefficient(latents, latents[:, :3]) == pytest.approx(0.5)


def test_the_evaluator_reports_the_floor_and_subspace_scores(latents):
    blocks = {"high": np.arange(3), "low": np.arange(3, 6)}
    evaluator = metrics.IdentifiabilityEvaluator(latents, latents, blocks)

    class Identity:
        scaling = None

        def embed(self, x, training=False, scaled=True):
            return x

    scores = evaluator.evaluate(Identity())
    assert scores["mcc"] == pytest.approx(1.0)
    assert 0.55 < scores["mcc_floor"] < 0.8 and scores["mcc_floor_sd"] > 0
    assert scores["subspace_r2"] == pytest.approx({"high": 1.0, "low": 1.0}, abs=1e-9)
    scalars = {"linear_r2", "min_linear_r2", "mcc", "mcc_spearman", "mcc_floor", "mcc_floor_sd"}
    assert evaluator.score_names(anisotropic=False) == scalars | {
        "block_r2/high",
        "block_r2/low",
        "subspace_r2/high",
        "subspace_r2/low",
    }


def test_spearman_mcc_gives_tied_values_their_mean_rank():
    latents = np.repeat(np.arange(50.0), 4)[:, None]  # every value four times
    reversed_order = latents[::-1]  # ties broken differently than in `latents`
    assert metrics.mean_correlation_coefficient(latents, reversed_order, "spearman") == (
        pytest.approx(1.0)
    )


@pytest.mark.parametrize(
    "arguments, message",
    [
        (
            dict(blocks={"a": np.array([-1])}),
            r"`blocks\['a'\]` must list latent indices from 0 to 5",
        ),
        (dict(blocks={"a": [0, 7]}), r"`blocks\['a'\]` must list latent indices"),
        (dict(blocks={"a": [0.5]}), r"`blocks\['a'\]` must list latent indices"),
        (dict(true_concentration=[-1.0] + [1.0] * 5), "`true_concentration` must hold 6 positive"),
        (dict(true_concentration=[1.0, 2.0]), "`true_concentration` must hold 6 positive"),
        (dict(true_concentration=[np.nan] * 6), "`true_concentration` must hold 6 positive"),
        (dict(batch_size=0), "`batch_size` must be a positive int; got 0"),
        (dict(batch_size=2.5), "`batch_size` must be a positive int; got 2.5"),
        (dict(batch_size=True), "`batch_size` must be a positive int; got True"),
        (dict(observations=np.zeros((5, 6))), r"`observations` \(5 rows\) and `latents` \(4000\)"),
        (dict(latents=np.full((4000, 6), np.nan)), r"`latents` must be a finite \[N, d\] array"),
    ],
)
def test_bad_evaluator_arguments_are_refused_when_built_not_at_the_first_evaluation(
    latents, arguments, message
):
    # Before, a negative block index scored the last latent and the others failed (or
    # gave a negative relative error) at the first evaluation, after an epoch of training.
    arguments = {"observations": latents, "latents": latents, **arguments}
    with pytest.raises(ValueError, match=message):
        metrics.IdentifiabilityEvaluator(**arguments)
    with pytest.raises(TypeError, match="`nonlinear` must be True or False"):
        metrics.IdentifiabilityEvaluator(latents, latents, nonlinear="no")
