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
