"""The slow-feature alignment on the paper's latents, where its answer is known."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from scipy.stats import ortho_group

from aninfonce_tf import ContrastiveModel, LinearAlignment
from aninfonce_tf.data.synthetic import SyntheticSetup, concentration_preset
from aninfonce_tf.evaluation.alignment import slow_feature_alignment
from aninfonce_tf.evaluation.identifiability import (
    IdentifiabilityEvaluator,
    linear_r2,
    mean_correlation_coefficient,
)


def _paper_latent_pairs(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Latent pairs of the paper's linear setting: S^9, projected normal, Lambda 5..25."""
    setup = SyntheticSetup(concentration_preset("linear"), generator_draws=1)
    z, z_positive = setup.sample_latent_pairs(count, tf.constant([seed, 0], tf.int64))
    return z.numpy(), z_positive.numpy()


def test_it_turns_a_mixed_embedding_of_the_papers_latents_onto_them():
    # An embedding that is an invertible linear map of the latents reads them all
    # linearly but mixes them (MCC low); the alignment from 32768 pairs gives each axis
    # one latent, the neighbours 2.2 apart in Lambda included, on held-out latents
    # (8192 pairs: 0.975-0.99 over three draws, 32768: 0.994-0.997).
    z, z_positive = _paper_latent_pairs(32768, seed=0)
    held_out, _ = _paper_latent_pairs(4096, seed=1)
    mixing = ortho_group.rvs(10, random_state=0) @ np.diag(np.linspace(0.5, 2.0, 10))
    alignment = slow_feature_alignment(z @ mixing, z_positive @ mixing)
    mixed, aligned = held_out @ mixing, held_out @ mixing @ alignment
    assert mean_correlation_coefficient(held_out, mixed) < 0.8
    assert mean_correlation_coefficient(held_out, aligned) > 0.99
    np.testing.assert_allclose(linear_r2(held_out, aligned), linear_r2(held_out, mixed), atol=1e-9)
    # Slowest first: the columns follow the latents from the highest Lambda down.
    order = np.abs(np.corrcoef(held_out.T, aligned.T)[:10, 10:]).argmax(axis=0)
    assert order.tolist() == list(range(9, -1, -1))


def test_the_evaluator_scores_the_aligned_embedding_and_sets_the_models_alignment():
    z, z_positive = _paper_latent_pairs(16384, seed=0)
    held_out, _ = _paper_latent_pairs(2048, seed=1)
    mixing = ortho_group.rvs(10, random_state=2)

    class Mixed:
        scaling = None
        alignment = LinearAlignment()

        def embed(self, x, training=False, scaled=True):
            return tf.convert_to_tensor(np.asarray(x) @ mixing, tf.float32)

    evaluator = IdentifiabilityEvaluator(held_out, held_out, alignment_pairs=(z, z_positive))
    first, second = evaluator.pair_features(Mixed())
    np.testing.assert_allclose(first, z @ mixing, atol=1e-5)
    np.testing.assert_allclose(second, z_positive @ mixing, atol=1e-5)
    with pytest.raises(ValueError, match="`pair_features` needs `alignment_pairs`"):
        IdentifiabilityEvaluator(held_out, held_out).pair_features(Mixed())
    scores = evaluator.evaluate(Mixed())
    assert scores["mcc"] < 0.8 < 0.97 < scores["aligned_mcc"]
    features = np.asarray(Mixed.alignment(held_out @ mixing))
    assert mean_correlation_coefficient(held_out, features) == pytest.approx(
        scores["aligned_mcc"], abs=1e-4
    )


def test_the_alignment_layer_refuses_a_matrix_of_another_shape_and_a_model_without_one():
    layer = LinearAlignment()
    # Refused before it builds: the layer still takes a square matrix afterwards.
    for matrix in (np.eye(3)[:, :2], np.ones(3)):
        with pytest.raises(ValueError, match=r"`matrix` must be square \[d, d\]"):
            layer.set_matrix(matrix)
    layer.set_matrix(2 * np.eye(3))
    np.testing.assert_array_equal(layer(np.ones((1, 3), "float32")), [[2.0, 2.0, 2.0]])
    with pytest.raises(ValueError, match=r"`matrix` must be \[3, 3\]; got shape \(4, 4\)"):
        layer.set_matrix(np.eye(4))
    with pytest.raises(ValueError, match="`matrix` must be finite"):
        layer.set_matrix(np.full((3, 3), np.nan))
    # A model made trainable again (fine-tuning) saves `trainable: True` in its layers'
    # configs: the alignment still loads, and its matrix is never trained.
    restored = LinearAlignment.from_config({**layer.get_config(), "trainable": True})
    restored.build((None, 3))
    assert restored.trainable_variables == [] and len(restored.non_trainable_variables) == 1
    encoder = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3)])
    with pytest.raises(ValueError, match="alignment=LinearAlignment"):
        ContrastiveModel(encoder).embed_aligned(np.zeros((2, 3), "float32"))
    with pytest.raises(TypeError, match="`alignment` must be a LinearAlignment"):
        ContrastiveModel(encoder, alignment=keras.layers.Dense(3))
    with pytest.raises(ValueError, match="built for 4-dimensional embeddings"):
        ContrastiveModel(encoder, alignment=_built(LinearAlignment(), 4))


def _built(layer, dim):
    layer.build((None, dim))
    return layer


def test_a_model_without_an_alignment_saves_no_alignment_key():
    encoder = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3)])
    config = ContrastiveModel(encoder).get_config()
    assert "alignment" not in config
    assert ContrastiveModel.from_config(config).alignment is None
    aligned = ContrastiveModel.from_config(
        ContrastiveModel(encoder, alignment=LinearAlignment()).get_config()
    )
    assert isinstance(aligned.alignment, LinearAlignment)


def test_bad_pairs_are_refused_naming_the_argument():
    with pytest.raises(ValueError, match="`first` and `second`"):
        slow_feature_alignment(np.zeros((100, 3)), np.zeros((100, 4)))
    with pytest.raises(ValueError, match="Too few pairs"):
        slow_feature_alignment(np.zeros((5, 3)), np.zeros((5, 3)))
    # Three dimensions that are two latents: no alignment exists.
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(2, 100, 2))
    widen = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="linearly dependent"):
        slow_feature_alignment(first @ widen, second @ widen)
    with pytest.raises(ValueError, match="`alignment_pairs`"):
        IdentifiabilityEvaluator(
            np.zeros((8, 2)), np.zeros((8, 2)), alignment_pairs=(np.zeros((4, 2)), np.zeros((5, 2)))
        )
