"""LARS against SimCLR's formula and the coupled (PyTorch) weight decay against
PyTorch's recurrence, in float64 NumPy; exclusions; save/load; the runner's choices."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import optimizers
from aninfonce_tf.configs.base import RunConfig
from aninfonce_tf.optimizers import LARS, CoupledSGD

# A learning rate per step, exactly representable in float32 (the optimizer keeps it so).
RATES = (0.5, 0.25, 0.125, 0.0625)


def _schedule():
    return keras.optimizers.schedules.PiecewiseConstantDecay([0, 1, 2], list(RATES))


def _lars_reference(weights, gradients, excluded, momentum, weight_decay, eta):
    """SimCLR's `lars_optimizer.py` (classic momentum) in float64 NumPy."""
    weights = [w.copy() for w in weights]
    velocities = [np.zeros_like(w) for w in weights]
    for rate, step_gradients in zip(RATES, gradients, strict=True):
        for i, g in enumerate(step_gradients):
            w = weights[i]
            ratio = 1.0
            if not excluded[i]:
                g = g + weight_decay * w
                w_norm, g_norm = np.linalg.norm(w), np.linalg.norm(g)
                if w_norm > 0 and g_norm > 0:
                    ratio = eta * w_norm / g_norm
            velocities[i] = momentum * velocities[i] + rate * ratio * g
            weights[i] = w - velocities[i]
    return weights


def test_lars_follows_simclrs_update_over_steps():
    rng = np.random.default_rng(0)
    shapes = [(3, 3, 2, 4), (4,), (5, 3), (5, 3)]
    weights = [rng.standard_normal(shape) for shape in shapes]
    weights[3][:] = 0.0  # a zero weight: the trust ratio falls back to 1
    gradients = [[rng.standard_normal(shape) for shape in shapes] for _ in RATES]
    gradients[1][2][:] = 0.0  # a zero gradient once: the ratio falls back to 1
    variables = [keras.Variable(w, dtype="float64") for w in weights]
    # A large eta and decay, so that both terms show in the result.
    optimizer = LARS(_schedule(), momentum=0.9, weight_decay=0.1, trust_coefficient=0.05)
    for step_gradients in gradients:
        optimizer.apply(step_gradients, variables)
    expected = _lars_reference(weights, gradients, [False, True, False, False], 0.9, 0.1, 0.05)
    for variable, reference in zip(variables, expected, strict=True):
        np.testing.assert_allclose(variable.numpy(), reference, rtol=1e-12, atol=1e-14)
    # The trust ratio changed the update: plain momentum SGD lands elsewhere.
    plain = _lars_reference(weights, gradients, [True] * 4, 0.9, 0.1, 0.05)
    assert not np.allclose(plain[0], expected[0], atol=1e-3)


def test_lars_excludes_vectors_and_named_variables_from_decay_and_adaptation():
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(4, name="trunk")(inputs)
    hidden = keras.layers.BatchNormalization(name="norm")(hidden)
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(hidden))

    def excluded(optimizer):
        optimizer.build(model.trainable_variables)
        return {v.path: optimizer.excluded(v) for v in model.trainable_variables}

    default = excluded(LARS(0.1))
    assert default == {
        "trunk/kernel": False,
        "trunk/bias": True,
        "norm/gamma": True,
        "norm/beta": True,
        "head/kernel": False,
        "head/bias": True,
    }
    by_name = excluded(LARS(0.1, exclude_vectors=False, exclude_names=["head", "norm"]))
    assert [path for path, out in by_name.items() if out] == [
        "norm/gamma",
        "norm/beta",
        "head/kernel",
        "head/bias",
    ]
    # An excluded variable takes a plain momentum step: no decay, no trust ratio.
    optimizer = LARS(0.5, weight_decay=0.1)
    bias = model.get_layer("trunk").bias
    bias.assign(np.ones(4))
    optimizer.apply([np.full(4, 2.0, "float32")], [bias])
    np.testing.assert_allclose(bias.numpy(), 1.0 - 0.5 * 2.0)
    with pytest.raises(TypeError, match="exclude_names"):
        LARS(0.1, exclude_names="bias")
    with pytest.raises(ValueError, match="trust_coefficient"):
        LARS(0.1, trust_coefficient=0.0)


@pytest.mark.parametrize("kind", [LARS, CoupledSGD])
def test_keras_exclude_from_weight_decay_exempts_variables_from_decay_and_adaptation(kind):
    # Without its own exclusions, the optimizer still honours Keras' (by variable and by
    # name): those variables take a plain momentum step, a weight under zero gradient
    # keeps its value, where the others decay.
    variables = [keras.Variable(np.ones((2, 2)), name=n) for n in ("kernel", "w", "gamma")]
    listed, kept, named = variables
    optimizer = kind(0.5, momentum=0.9, weight_decay=0.1, exclude_vectors=False)
    optimizer.exclude_from_weight_decay(var_list=[listed], var_names=["gamma"])
    optimizer.build(variables)
    assert [optimizer.excluded(v) for v in variables] == [True, False, True]
    zero = np.zeros((2, 2), "float32")
    optimizer.apply([zero] * 3, variables)
    np.testing.assert_array_equal(listed.numpy(), 1.0)
    np.testing.assert_array_equal(named.numpy(), 1.0)
    # LARS: ratio = eta ||w|| / ||wd w|| = eta / wd, so the step is lr * eta * w.
    decayed = 1 - 0.5 * (0.001 if kind is LARS else 0.1)
    np.testing.assert_allclose(kept.numpy(), decayed, rtol=1e-6)
    # An excluded variable's step is not adapted: lr * g, not lr * eta ||w|| / ||g|| * g.
    optimizer.apply([np.full((2, 2), 2.0, "float32"), zero, zero], variables)
    np.testing.assert_allclose(listed.numpy(), 1.0 - 0.5 * 2.0, rtol=1e-6)


def test_lars_round_trips_through_a_keras_file(tmp_path):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((32, 5)), rng.standard_normal((32, 1))
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile(LARS(_schedule(), weight_decay=1e-3, exclude_names=["dense_1"]), "mse")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(loaded.optimizer, LARS)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    for saved, restored in zip(model.optimizer.variables, loaded.optimizer.variables, strict=True):
        np.testing.assert_array_equal(saved.numpy(), restored.numpy())
    # The next step is the same step.
    for trained in (model, loaded):
        trained.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.weights, loaded.weights, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_the_coupled_decay_of_a_weight_under_zero_gradient_is_pytorchs(schedule):
    # SimSiam's CIFAR10 setting: lr 0.03 x 512 / 256, momentum 0.9, weight decay 5e-4.
    steps, rate, momentum, decay = 1000, 0.06, 0.9, 5e-4
    rates = np.full(steps, rate)
    learning_rate = rate
    if schedule == "cosine":
        learning_rate = keras.optimizers.schedules.CosineDecay(rate, steps)
        rates = rate * 0.5 * (1 + np.cos(np.pi * np.arange(steps) / steps))
    # torch.optim.SGD: b_t = m b_{t-1} + wd w_{t-1} (the gradient is 0), w_t = w_{t-1} - lr_t b_t.
    w, b = 1.0, 0.0
    for lr_t in rates:
        b = momentum * b + decay * w
        w = w - lr_t * b

    def decayed(optimizer):
        weight = keras.Variable([1.0])
        optimizer.build([weight])

        @tf.function
        def train():
            for _ in tf.range(steps):
                optimizer.apply([tf.zeros(1)], [weight])

        train()
        return float(weight.numpy()[0])

    coupled = decayed(CoupledSGD(learning_rate, momentum=momentum, weight_decay=decay))
    assert coupled == pytest.approx(w, rel=1e-4)
    keras_sgd = decayed(keras.optimizers.SGD(learning_rate, momentum, weight_decay=decay))
    if schedule == "constant":
        assert w == pytest.approx(0.742, abs=1e-3)  # the figures of the Keras/PyTorch gap
        assert keras_sgd == pytest.approx((1 - rate * decay) ** steps) == pytest.approx(0.970, 1e-3)
    assert abs(keras_sgd - w) > 0.1


def test_the_runner_builds_lars_and_the_coupled_sgd_from_the_config():
    config = RunConfig(optimizer="lars", l2_weight_decay=1e-6, momentum=0.9, warmup_steps=10)
    config.validate()
    lars = optimizers.encoder_optimizer(config)
    assert isinstance(lars, LARS) and lars.weight_decay == 1e-6 and lars.exclude_vectors
    sgd = optimizers.encoder_optimizer(dataclasses.replace(config, optimizer="sgd"))
    assert isinstance(sgd, CoupledSGD) and sgd.weight_decay == 1e-6 and not sgd.exclude_vectors
    plain = dataclasses.replace(config, optimizer="sgd", l2_weight_decay=0.0, weight_decay=1e-4)
    assert type(optimizers.encoder_optimizer(plain)) is keras.optimizers.SGD
    for bad, match in (
        (dict(optimizer="adam"), "needs `optimizer` sgd or lars"),
        (dict(optimizer="sgd", weight_decay=1e-4), "no decoupled `weight_decay`"),
        (dict(l2_weight_decay=0.0, weight_decay=1e-4), "lars decays the weights by"),
    ):
        with pytest.raises(ValueError, match=match):
            dataclasses.replace(config, **bad).validate()


@pytest.mark.parametrize("optimizer", [LARS, CoupledSGD])
@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(weight_decay=float("inf")), "`weight_decay` must be a finite non-negative"),
        (dict(weight_decay=-1e-4), "`weight_decay` must be a finite non-negative"),
        (dict(weight_decay="1e-4"), "`weight_decay` must be a finite non-negative"),
        (dict(learning_rate=float("nan")), "`learning_rate` must be a finite non-negative"),
        (dict(learning_rate=float("inf")), "`learning_rate` must be a finite non-negative"),
        (dict(learning_rate=-0.1), "`learning_rate` must be a finite non-negative"),
        (dict(learning_rate=True), "`learning_rate` must be a finite non-negative"),
        (dict(learning_rate="0.1"), "`learning_rate` must be a finite non-negative"),
        (dict(momentum=True), "`momentum` must be a number in"),
        (dict(momentum=float("nan")), "`momentum` must be a number in"),
        (dict(momentum=1.0), "`momentum` must be a number in"),
    ],
)
def test_a_setting_out_of_range_or_of_another_type_is_refused_by_the_constructor(
    optimizer, setting, message
):
    with pytest.raises(ValueError, match=message):
        optimizer(**setting)


@pytest.mark.parametrize("value", [0.0, -1.0, float("inf"), float("nan"), True])
def test_lars_refuses_a_trust_coefficient_that_is_not_finite_and_positive(value):
    with pytest.raises(ValueError, match="`trust_coefficient` must be a finite positive"):
        LARS(trust_coefficient=value)


def test_the_optimizers_keep_working_settings_as_numbers_arrays_and_schedules():
    schedule = keras.optimizers.schedules.CosineDecay(0.1, 100)
    for optimizer in (LARS, CoupledSGD):
        assert optimizer(learning_rate=np.float32(0.0), momentum=np.float64(0.5)).momentum == 0.5
        assert optimizer(learning_rate=schedule, weight_decay=np.array(1e-4)).weight_decay > 0
        assert optimizer(exclude_vectors=1).exclude_vectors is True
    with pytest.raises(TypeError, match="`exclude_vectors` must be True or False; got 'no'"):
        LARS(exclude_vectors="no")
