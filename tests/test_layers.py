"""DiagonalScaling, SphereNormalization, LinearAlignment, LearnedRotation and the projection
head."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import (
    AnInfoNCE,
    DiagonalScaling,
    InfoNCE,
    LearnedRotation,
    LinearAlignment,
    SphereNormalization,
    projection_head,
)
from tests import reference, support


@pytest.mark.parametrize("parametrization", ["softplus", "exp"])
@pytest.mark.parametrize("initial", [3.0, [0.5, 2.0, 1e3]])
def test_initial_concentration_is_exact(parametrization, initial):
    scaling = DiagonalScaling(initial, parametrization=parametrization)
    x = np.ones((2, 3), "float32")
    y = scaling(x)
    expected = np.broadcast_to(np.asarray(initial, "float32"), (3,))
    np.testing.assert_allclose(scaling.concentration, expected, rtol=1e-5)
    np.testing.assert_allclose(y, np.sqrt(expected) * x, rtol=1e-5)


def test_initial_noise_is_seeded():
    a = DiagonalScaling(2.0, initial_noise=0.1, seed=1)
    b = DiagonalScaling(2.0, initial_noise=0.1, seed=1)
    a.build((None, 4))
    b.build((None, 4))
    np.testing.assert_array_equal(a.concentration, b.concentration)
    assert np.ptp(np.asarray(a.concentration)) > 0


@pytest.mark.parametrize("seed", [-1, 2.5, True, "1"])
def test_a_seed_that_is_not_a_non_negative_integer_is_refused_when_constructed(seed):
    with pytest.raises(ValueError, match="`seed` must be None or a non-negative integer"):
        DiagonalScaling(2.0, initial_noise=0.1, seed=seed)


def test_a_numpy_seed_draws_what_its_int_draws_and_serialises_as_one():
    a = DiagonalScaling(2.0, initial_noise=0.1, seed=np.int64(3))
    b = DiagonalScaling(2.0, initial_noise=0.1, seed=3)
    a.build((None, 4))
    b.build((None, 4))
    np.testing.assert_array_equal(a.concentration, b.concentration)
    assert type(a.get_config()["seed"]) is int


def test_anisotropic_loss_equals_the_notes_formula_with_gradients():
    rng = np.random.default_rng(0)
    concentration = rng.uniform(0.5, 30.0, size=5)
    u = rng.normal(size=(6, 5))
    v = u + 0.2 * rng.normal(size=(6, 5))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    scaling = DiagonalScaling(concentration.tolist(), dtype="float64")
    loss = AnInfoNCE()
    u_t, v_t = tf.constant(u), tf.constant(v)
    with tf.GradientTape() as tape:
        tape.watch([u_t, v_t])
        value = loss(tf.cast(scaling(u_t), tf.float64), tf.cast(scaling(v_t), tf.float64))
    grad_u, grad_theta = tape.gradient(value, [u_t, scaling.theta])

    def ref(a=u, b=v, c=concentration):
        return reference.info_nce(a, b, "euclidean", concentration=c)

    np.testing.assert_allclose(float(value), ref(), rtol=1e-5)
    np.testing.assert_allclose(
        grad_u, reference.numerical_gradient(lambda a: ref(a=a), u), rtol=1e-4, atol=1e-7
    )
    # d loss / d theta = d loss / d lambda * softplus'(theta) = ... * sigmoid(theta).
    grad_lambda = reference.numerical_gradient(lambda c: ref(c=c), concentration)
    np.testing.assert_allclose(
        grad_theta, grad_lambda * (1 - np.exp(-concentration)), rtol=1e-4, atol=1e-7
    )


def test_isotropic_concentration_is_cosine_infonce_with_temperature_one_over_kappa():
    rng = np.random.default_rng(1)
    u = rng.normal(size=(8, 4))
    v = u + 0.3 * rng.normal(size=(8, 4))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    for kappa in (0.5, 7.0, 50.0):
        scaling = DiagonalScaling(kappa, trainable=False)
        anisotropic = float(AnInfoNCE()(scaling(u), scaling(v)))
        cosine = float(InfoNCE(similarity="cosine", temperature=1.0 / kappa)(u, v))
        # The constant -kappa in -kappa/2 ||u - v||^2 = kappa u.v - kappa cancels in the
        # softmax; both are float32, with logits spanning 2 kappa.
        atol = 2 * kappa * np.finfo(np.float32).eps
        np.testing.assert_allclose(anisotropic, cosine, rtol=1e-5, atol=atol)


def test_fixed_concentration_has_no_trainable_weights():
    scaling = DiagonalScaling(4.0, trainable=False)
    scaling.build((None, 3))
    assert not scaling.trainable_weights and len(scaling.non_trainable_weights) == 1


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"initial_concentration": 0.0}, "positive"),
        ({"initial_concentration": [1.0, -2.0]}, "positive"),
        ({"initial_concentration": [[1.0]]}, "1-D"),
        # Text and bools are not read as numbers.
        ({"initial_concentration": "8"}, "positive float"),
        ({"initial_concentration": True}, "positive float"),
        ({"initial_concentration": ["1", "2"]}, "positive float"),
        ({"initial_concentration": np.array([True, False])}, "positive float"),
        ({"initial_noise": "0.5"}, "initial_noise"),
        ({"initial_noise": True}, "initial_noise"),
        ({"parametrization": "relu"}, "parametrization"),
    ],
)
def test_bad_concentration_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DiagonalScaling(**kwargs)


def test_flags_given_as_text_and_widths_given_as_bools_are_refused():
    # "no" would read as True, and True as a width of 1.
    with pytest.raises(TypeError, match="`tied` must be True or False; got 'no'"):
        DiagonalScaling(5.0, tied="no")
    with pytest.raises(TypeError, match="`batch_norm` must be True or False; got 'no'"):
        projection_head([8], 4, batch_norm="no")
    for hidden_units, output_dim in (([8], True), ([True], 4), (8, 4), ("64", 4), ([8], 0)):
        with pytest.raises(ValueError, match="`hidden_units` must be a list of positive widths"):
            projection_head(hidden_units, output_dim)
    for hidden_units in ([8], np.array([8]), (8,)):  # NumPy's ints are widths
        head = projection_head(hidden_units, np.int64(3), batch_norm=1)  # 0 and 1 are flags
        assert tuple(head(np.zeros((2, 5), "float32")).shape) == (2, 3)
    assert DiagonalScaling(np.array([1.0, 2.0]), tied=np.bool_(False)).tied is False
    assert DiagonalScaling(tf.constant(4.0), tied=0).initial_concentration == 4.0


def test_per_dimension_concentration_must_match_embedding_dimension():
    with pytest.raises(ValueError, match="dimension 3"):
        DiagonalScaling([1.0, 2.0])(np.ones((2, 3), "float32"))


def _fitted_alignment() -> LinearAlignment:
    layer = LinearAlignment()
    layer.set_matrix(np.arange(9.0).reshape(3, 3) / 7.0 + np.eye(3))
    return layer


def _turned_rotation() -> LearnedRotation:
    layer = LearnedRotation(gain=3.0)
    layer.build((None, 3))
    layer.angles.assign([0.4, -0.2, 0.7])
    return layer


@pytest.mark.parametrize(
    "make_layer",
    [
        lambda: DiagonalScaling([1.0, 2.0, 3.0], parametrization="exp", initial_noise=0.1, seed=3),
        lambda: SphereNormalization(),
        lambda: _fitted_alignment(),
        lambda: _turned_rotation(),
    ],
)
def test_layer_harness(make_layer, tmp_path):
    x = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    layer = make_layer()
    layer(x)
    support.assert_config_round_trip(layer)
    support.assert_saved_in_model(make_layer(), x, tmp_path)
    outputs = support.assert_float32_under_mixed_precision(make_layer, x)
    np.testing.assert_allclose(outputs, make_layer()(x.astype("float32")), rtol=1e-2, atol=1e-2)


def test_sphere_normalization_keeps_zero_rows_finite():
    y = SphereNormalization()(np.array([[0.0, 0.0], [3.0, 4.0]], "float32"))
    np.testing.assert_allclose(y, [[0.0, 0.0], [0.6, 0.8]], rtol=1e-6)


def test_projection_head_shapes_and_round_trip(tmp_path):
    head = projection_head([8], 4)
    x = np.ones((2, 5), "float32")
    assert tuple(head(x).shape) == (2, 4)
    path = str(tmp_path / "head.keras")
    head.save(path)
    np.testing.assert_array_equal(keras.saving.load_model(path)(x), head(x))


@pytest.mark.parametrize("batch_norm", [False, True])
def test_projection_head_kernels_start_from_the_initializer_given_and_keep_it(batch_norm):
    simclr = keras.initializers.RandomNormal(stddev=0.01)
    head = projection_head([256], 256, batch_norm=batch_norm, kernel_initializer=simclr)
    head.build((None, 256))
    kernels = [layer.kernel.numpy() for layer in head.layers if hasattr(layer, "kernel")]
    assert [k.std() for k in kernels] == [pytest.approx(0.01, rel=0.02)] * 2
    assert abs(kernels[0].mean()) < 1e-3
    assert not np.allclose(kernels[0], kernels[1])  # each layer its own draw
    # The default stays Keras' Glorot uniform: U(+-sqrt(6 / (256 + 256))).
    default = projection_head([256], 256, batch_norm=batch_norm)
    default.build((None, 256))
    assert default.layers[0].kernel.numpy().std() == pytest.approx(np.sqrt(1 / 256), rel=0.02)
    # The initializer survives get_config / from_config.
    again = keras.Sequential.from_config(head.get_config())
    dense = [layer for layer in again.layers if isinstance(layer, keras.layers.Dense)]
    assert [layer.kernel_initializer.get_config()["stddev"] for layer in dense] == [0.01] * 2
