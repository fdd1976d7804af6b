"""LearnedRotation: a rotation, trained by AnInfoNCE onto the latents' axes and left
alone by rotation-invariant losses."""

import dataclasses

import keras
import numpy as np
import pytest
import scipy.linalg
import scipy.stats
import tensorflow as tf

from aninfonce_tf import (
    AnInfoNCE,
    ContrastiveModel,
    DiagonalScaling,
    mlp_encoder,
    optimizers,
)
from aninfonce_tf.configs import synthetic
from aninfonce_tf.evaluation.identifiability import mean_correlation_coefficient
from aninfonce_tf.rotation import MAX_GAIN, LearnedRotation, rotation_matrix, skew_index

CONCENTRATION = np.array([4.0, 5.0, 6.0, 7.0], "float32")


@pytest.mark.parametrize("dim", [6, 10])
@pytest.mark.parametrize("norm", [0.01, 0.1, 3.0, 50.0])
@pytest.mark.parametrize("planes", ["one", "all"])
def test_rotation_matrix_is_the_matrix_exponential_and_orthogonal(dim, norm, planes):
    generator = np.random.default_rng(0).normal(size=(dim, dim))
    if planes == "one":  # the whole norm in one angle
        generator = np.zeros((dim, dim))
        generator[0, 1] = 1.0
    generator = generator - generator.T
    generator = (generator * norm / np.linalg.norm(generator)).astype("float32")
    matrix = np.asarray(rotation_matrix(generator), "float64")
    np.testing.assert_allclose(matrix, scipy.linalg.expm(generator.astype("float64")), atol=2e-6)
    np.testing.assert_allclose(matrix.T @ matrix, np.eye(dim), atol=2e-6)
    assert np.linalg.det(matrix) == pytest.approx(1.0, abs=1e-4)


def test_skew_index_places_each_angle_once_above_and_once_below():
    index, sign = skew_index(4)
    angles = np.arange(1.0, 7.0)
    generator = np.concatenate([[0.0], angles])[index] * sign
    np.testing.assert_array_equal(generator, -generator.T)
    assert sorted(generator[np.triu_indices(4, k=1)]) == list(angles)


@pytest.mark.parametrize(
    "gain",
    [0.0, -1.0, float("nan"), True, np.True_, "6", None, [1.0, 2.0], MAX_GAIN * 1.01, 1e6, 1e-300],
)
def test_bad_gain_raises(gain):
    with pytest.raises(ValueError, match="`gain`"):
        LearnedRotation(gain)


def test_at_the_largest_gain_training_keeps_the_rotation_orthogonal():
    # Adam at 1e-2, the rate of `_rotation_model`: 320 steps at the range's edge.
    latents, view1, view2 = _pairs(4096, seed=0)
    model = _rotation_model(CONCENTRATION, gain=MAX_GAIN)
    history = model.fit((view1, view2), batch_size=512, epochs=40, verbose=0)
    matrix = np.asarray(model.encoder.get_layer("rotation").matrix(), "float64")
    assert np.all(np.isfinite(history.history["loss"]))
    np.testing.assert_allclose(matrix.T @ matrix, np.eye(4), atol=2e-6)


def test_a_negative_rotation_gain_is_refused_before_training():
    config = dataclasses.replace(synthetic.PRESETS["quick"], rotation_gain=-1.0)
    with pytest.raises(ValueError, match="`rotation_gain`"):
        config.validate()
    with pytest.raises(ValueError, match="`rotation_gain`"):
        mlp_encoder(4, 4, [8], rotation_gain=-1.0)


def _pairs(count: int, seed: int):
    """Gaussian latents, positives at `CONCENTRATION`, seen through a fixed rotation."""
    rng = np.random.default_rng(seed)
    latents = rng.normal(size=(count, 4)).astype("float32")
    positives = latents + rng.normal(size=latents.shape) / np.sqrt(CONCENTRATION)
    mixing = scipy.stats.special_ortho_group.rvs(4, random_state=4).astype("float32")
    return latents, latents @ mixing, (positives @ mixing).astype("float32")


def _rotation_model(concentration, gain: float = 4.0) -> ContrastiveModel:
    inputs = keras.Input((4,))
    encoder = keras.Model(inputs, LearnedRotation(gain=gain, name="rotation")(inputs))
    scaling = DiagonalScaling(concentration, trainable=False)
    model = ContrastiveModel(encoder, normalize=False, scaling=scaling)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=AnInfoNCE(), jit_compile=True)
    return model


def _angle_gradient(model, view1, view2) -> np.ndarray:
    with tf.GradientTape() as tape:
        loss = model.contrastive_loss(model.embed(view1), model.embed(view2))
    return np.asarray(tape.gradient(loss, model.encoder.get_layer("rotation").angles))


def test_anisotropic_loss_turns_a_rotated_embedding_onto_the_latents_axes():
    latents, view1, view2 = _pairs(4096, seed=0)
    model = _rotation_model(CONCENTRATION)
    before = mean_correlation_coefficient(latents, np.asarray(model.embed(view1, scaled=False)))
    model.fit((view1, view2), batch_size=512, epochs=40, verbose=0)
    held_out, observations, _ = _pairs(4096, seed=1)
    after = mean_correlation_coefficient(
        held_out, np.asarray(model.embed(observations, scaled=False))
    )
    assert before < 0.8 and after > 0.98, (before, after)


def test_an_isotropic_loss_gives_the_angles_no_gradient():
    # Up to float32 rounding, which Adam's normalised step still turns into a random walk
    # of the rotation over training (docs/speed.md): the rotation cannot align such a
    # loss's embedding, but it is not inert.
    _, view1, view2 = _pairs(512, seed=0)
    anisotropic = _angle_gradient(_rotation_model(CONCENTRATION), view1, view2)
    isotropic = _angle_gradient(_rotation_model(5.0), view1, view2)
    assert np.abs(anisotropic).max() > 1e-2
    assert np.abs(isotropic).max() < 1e-5 * np.abs(anisotropic).max()


def test_weight_decay_leaves_the_angles_alone():
    encoder = mlp_encoder(4, 4, [8], rotation_gain=2.0)
    angles = encoder.get_layer("rotation").angles
    angles.assign(np.full(6, 0.5, "float32"))
    config = dataclasses.replace(synthetic.PRESETS["paper-linear-fast"], weight_decay=0.5)
    for name in ("muon", "adamw", "sgd"):
        optimizer = optimizers.encoder_optimizer(
            dataclasses.replace(
                config,
                optimizer=name,
                muon_exclude="hidden" if name == "muon" else "",
                warmup_steps=0,
            )
        )
        variables = encoder.trainable_variables
        kernel = encoder.get_layer("features").kernel
        kernel_before = np.asarray(kernel).copy()
        optimizer.apply([keras.ops.zeros_like(v) for v in variables], variables)
        np.testing.assert_array_equal(angles, np.full(6, 0.5, "float32"))
        assert np.abs(np.asarray(kernel)).sum() < np.abs(kernel_before).sum(), name


def test_mlp_encoder_ends_with_the_rotation_whose_angles_muon_leaves_to_adam():
    encoder = mlp_encoder(4, 4, [8], rotation_gain=2.0)
    assert encoder.layers[-1].name == "rotation" and encoder.layers[-1].gain == 2.0
    assert [layer.name for layer in mlp_encoder(4, 4, [8]).layers][-1] == "features"
    angles = encoder.get_layer("rotation").angles
    assert keras.optimizers.Muon(exclude_layers=["hidden"])._should_use_adamw(angles)
