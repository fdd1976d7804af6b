"""ContrastiveModel: learning, saving/exporting, distribution and bad input."""

import json
import re
import subprocess
import sys
import textwrap
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import (
    AnInfoNCE,
    ContrastiveModel,
    DiagonalScaling,
    InfoNCE,
    distribute,
    export_encoder,
    models,
    projection_head,
)
from aninfonce_tf.evaluation.callbacks import EvaluationCallback
from aninfonce_tf.models import UNIFORMITY_ROWS
from tests import support


def _encoder(input_dim=6, output_dim=4, seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((input_dim,)),
            keras.layers.Dense(32, activation="tanh"),
            keras.layers.Dense(output_dim),
        ]
    )


def _pairs(count=512, dim=6, seed=0):
    """Views that differ by small noise on the first half of dims and large on the rest."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(count, dim)).astype("float32")
    scale = np.where(np.arange(dim) < dim // 2, 0.05, 0.5).astype("float32")
    return x, (x + scale * rng.normal(size=x.shape)).astype("float32")


def _model(scaling=True, projector=False, seed=0):
    return ContrastiveModel(
        _encoder(seed=seed),
        projector=projection_head([16], 4) if projector else None,
        scaling=DiagonalScaling(5.0, parametrization="exp") if scaling else None,
    )


def test_fit_lowers_the_loss_and_moves_the_concentration():
    x1, x2 = _pairs()
    model = _model()
    model.compile(keras.optimizers.Adam(3e-3), concentration_optimizer=3e-2)
    dataset = tf.data.Dataset.from_tensor_slices(
        {"view1": x1, "view2": x2, "label": np.arange(512)}
    )
    before = model.evaluate(dataset.batch(128), verbose=0, return_dict=True)
    history = model.fit(dataset.batch(128, drop_remainder=True), epochs=15, verbose=0)
    after = model.evaluate(dataset.batch(128), verbose=0, return_dict=True)
    assert after["loss"] < 0.8 * before["loss"]
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert {"accuracy", "alignment", "uniformity", "lambda_min", "lambda_max"} <= set(after)


def test_plain_infonce_model_with_projector_learns():
    x1, x2 = _pairs()
    model = _model(scaling=False, projector=True)
    model.compile(keras.optimizers.Adam(3e-3), loss=InfoNCE(temperature=0.2))
    assert model.concentration is None
    history = model.fit((x1, x2), batch_size=128, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > history.history["accuracy"][0]


def test_concentration_has_its_own_learning_rate():
    x1, x2 = _pairs()
    model = _model()
    model.compile(keras.optimizers.Adam(1e-2), concentration_optimizer=0.0)
    kernel = np.array(model.encoder.weights[0])
    model.fit((x1, x2), batch_size=128, epochs=1, verbose=0)
    np.testing.assert_array_equal(model.concentration, np.full(4, 5.0, "float32"))
    assert not np.allclose(kernel, model.encoder.weights[0])


def test_model_call_returns_encoder_features():
    model = _model(projector=True)
    x = _pairs(8)[0]
    np.testing.assert_array_equal(model(x), model.encoder(x))
    assert tuple(model.embed(x).shape) == (8, 4)


def _fit_one_step(strategy, data, optimizer):
    with strategy.scope():
        model = _model(projector=True, seed=3)
        model.compile(optimizer(), concentration_optimizer=2.0)
    history = model.fit(data, epochs=1, verbose=0)
    return history.history["loss"][0], [np.asarray(w) for w in model.trainable_weights]


@pytest.mark.parametrize(
    "optimizer",
    [lambda: keras.optimizers.SGD(0.5), lambda: keras.optimizers.Muon(0.05)],
    ids=["sgd", "muon"],
)
def test_mirrored_strategy_matches_a_single_replica(optimizer):
    x1, x2 = _pairs(32)
    data = tf.data.Dataset.from_tensor_slices((x1, x2)).batch(32)
    mirrored = distribute.get_strategy("mirrored")  # one per process: see distribute.py
    assert mirrored.num_replicas_in_sync == 2
    loss_1, weights_1 = _fit_one_step(tf.distribute.get_strategy(), data, optimizer)
    loss_2, weights_2 = _fit_one_step(mirrored, data, optimizer)
    np.testing.assert_allclose(loss_2, loss_1, rtol=1e-5)
    initial = [np.asarray(w) for w in _model(projector=True, seed=3).trainable_weights]
    for single, mirror, start in zip(weights_1, weights_2, initial, strict=True):
        assert not np.allclose(single, start)
        np.testing.assert_allclose(mirror, single, rtol=1e-4, atol=1e-6)


def test_mixed_precision_trains_with_a_float32_loss():
    keras.config.set_dtype_policy("mixed_bfloat16")
    x1, x2 = _pairs()
    model = _model()
    model.compile(keras.optimizers.Adam(3e-3), concentration_optimizer=3e-2)
    assert model.embed(x1[:4]).dtype == tf.float32
    history = model.fit((x1, x2), batch_size=128, epochs=5, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert history.history["loss"][-1] < history.history["loss"][0]


_RELOAD = textwrap.dedent(
    """
    import sys, numpy as np, keras, tensorflow as tf
    import aninfonce_tf  # registers the custom objects
    model = keras.saving.load_model(sys.argv[1])
    exported = tf.saved_model.load(sys.argv[2])
    x = np.load(sys.argv[3])
    np.save(sys.argv[4], np.stack([model(x), model.embed(x), exported.serve(x)]))
    print(float(np.min(model.concentration)))
    """
)


def test_save_load_and_export_round_trip_in_a_fresh_process(tmp_path):
    x1, x2 = _pairs()
    model = _model(projector=True)
    model.compile(
        keras.optimizers.Adam(1e-3),
        loss=AnInfoNCE(hard_negative_beta=0.5),
        concentration_optimizer=1e-2,
    )
    model.fit((x1, x2), batch_size=128, epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    model.encoder.export(str(tmp_path / "encoder"), verbose=False)
    np.save(tmp_path / "x.npy", x1[:16])
    script = tmp_path / "reload.py"
    script.write_text(_RELOAD)
    out = tmp_path / "out.npy"
    result = subprocess.run(
        [
            sys.executable,
            str(script),
            str(tmp_path / "model.keras"),
            str(tmp_path / "encoder"),
            str(tmp_path / "x.npy"),
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    features, embeddings, exported = np.load(out)
    np.testing.assert_array_equal(features, model(x1[:16]))
    np.testing.assert_array_equal(embeddings, model.embed(x1[:16]))
    # The SavedModel runs as a graph (grappler fuses ops), so it must match the
    # encoder run as a graph here, bit for bit.
    np.testing.assert_array_equal(exported, tf.function(model.encoder)(x1[:16]))

    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert reloaded.contrastive_loss.get_config() == model.contrastive_loss.get_config()
    assert float(reloaded.concentration_optimizer.learning_rate) == pytest.approx(1e-2)
    assert int(reloaded.optimizer.iterations) == int(model.optimizer.iterations) == 4
    for saved, loaded in zip(model.optimizer.variables, reloaded.optimizer.variables, strict=True):
        np.testing.assert_array_equal(saved, loaded)


@pytest.mark.parametrize(
    "data,error,message",
    [
        ({"view1": np.zeros((8, 6)), "z": np.zeros((8, 6))}, TypeError, "missing"),
        ((np.zeros((8, 6)), np.zeros((8, 6)), np.zeros((8, 6))), TypeError, "view1"),
        ((np.zeros((8, 6)), np.zeros((8, 5))), ValueError, "same shape"),
        ((np.zeros((1, 6)), np.zeros((1, 6))), ValueError, "at least 2"),
    ],
)
def test_bad_batches_raise(data, error, message):
    model = _model()
    model.compile()
    dataset = tf.data.Dataset.from_tensors(tuple(data) if isinstance(data, tuple) else data)
    with pytest.raises(error, match=message):
        model.fit(dataset, verbose=0)


def test_keras_style_inputs_and_targets_are_read_as_views_and_say_so():
    model = _model()
    model.compile()
    with pytest.raises(ValueError, match="same shape.*read as the two views, not as inputs"):
        model.fit(np.zeros((8, 6)), np.arange(8), batch_size=4, verbose=0)


def test_an_encoder_without_a_flat_output_is_refused_naming_its_shape():
    encoder = keras.Sequential([keras.Input((6,)), keras.layers.Reshape((2, 3))])
    with pytest.raises(ValueError, match="\\[batch, features\\].*\\(None, 2, 3\\).*Flatten"):
        ContrastiveModel(encoder)


def test_bad_model_arguments_raise():
    with pytest.raises(TypeError, match="scaling"):
        ContrastiveModel(_encoder(), scaling=keras.layers.Dense(3))
    # Refused when built, not at `fit`'s first step with an AttributeError.
    for encoder in (None, "resnet18"):
        with pytest.raises(TypeError, match="`encoder` must be a Keras model or layer"):
            ContrastiveModel(encoder)
    with pytest.raises(TypeError, match="`projector` must be a Keras model or layer; got int"):
        ContrastiveModel(_encoder(), projector=16)
    with pytest.raises(TypeError, match="`normalize` must be True or False; got 'no'"):
        ContrastiveModel(_encoder(), normalize="no")
    with pytest.raises(TypeError, match="loss"):
        _model().compile(loss="mse")
    # A boolean is refused, not read as a rate of 1.0; a rate must be finite, not negative.
    with pytest.raises(TypeError, match="concentration_optimizer"):
        _model().compile(concentration_optimizer=True)
    for rate in (-0.05, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="concentration_optimizer"):
            _model().compile(concentration_optimizer=rate)
    model = _model()
    model.compile(concentration_optimizer=np.float32(0.0))  # a rate of 0 freezes Lambda_hat
    assert type(model.concentration_optimizer) is keras.optimizers.Adam


def test_a_last_batch_of_one_row_is_refused_before_the_compiled_step_in_fit_and_evaluate():
    x1, x2 = _pairs(9)
    model = _model()
    model.compile()  # XLA, which drops the assertion inside the step
    with pytest.raises(ValueError, match="9 rows in batches of 4 leave a last batch of one row"):
        model.fit((x1, x2), batch_size=4, verbose=0)
    rows = tf.data.Dataset.from_tensor_slices({"view1": x1, "view2": x2}).batch(4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least 2 rows"):
        model.fit(rows, verbose=0)
    with pytest.raises(ValueError, match="9 rows in batches of 4 leave a last batch of one row"):
        model.evaluate((x1, x2), batch_size=4, verbose=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least 2 rows"):
        model.evaluate(rows, verbose=0)
    history = model.fit((x1[:8], x2[:8]), batch_size=4, verbose=0)  # 8 rows: no lone row
    assert np.isfinite(history.history["loss"][0])
    assert np.isfinite(model.evaluate((x1[:8], x2[:8]), batch_size=4, verbose=0)[0])


def test_infinite_datasets_train_validate_and_evaluate_for_the_steps_given_by_keyword_or_position():
    x1, x2 = _pairs(8)
    endless = tf.data.Dataset.from_tensors((x1, x2)).repeat()
    model = _model()
    model.compile(concentration_optimizer=1e-2, jit_compile=False)
    history = model.fit(
        endless, epochs=2, steps_per_epoch=2, validation_data=endless, validation_steps=1, verbose=0
    )
    assert len(history.history["val_loss"]) == 2 and int(model.optimizer.iterations) == 4
    by_keyword = model.evaluate(endless, steps=2, verbose=0)[0]
    by_position = model.evaluate(endless, None, None, 0, None, 2)[0]  # y, batch_size, verbose,
    assert by_keyword == by_position and np.isfinite(by_keyword)  # sample_weight, steps
    with pytest.raises(ValueError, match="`steps` is not given"):
        model.evaluate(endless, None, None, 0, None, None)
    with pytest.raises(ValueError, match="`steps_per_epoch` is not given"):
        model.fit(endless, None, None, 1, 0, None, 0.0, None, False, None, None, 0, None)
    for steps in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=f"`steps_per_epoch` must be .*; got {steps!r}"):
            model.fit(endless, steps_per_epoch=steps, verbose=0)
    with pytest.raises(ValueError, match="`validation_steps` must be .*; got 0"):
        model.fit(endless, steps_per_epoch=1, validation_data=endless, validation_steps=0)


def test_a_batch_size_or_steps_per_execution_that_is_not_a_positive_integer_is_refused():
    # Keras would read `batch_size=0` as its default, 32, and fail deep in a graph on 2.5.
    x1, x2 = _pairs(8)
    model = _model()
    model.compile(concentration_optimizer=1e-2, jit_compile=False)
    for batch_size in (0, -4, 2.5, True, "4"):
        with pytest.raises(ValueError, match=f"`batch_size` must be .*; got {batch_size!r}"):
            model.fit((x1, x2), batch_size=batch_size, verbose=0)
    with pytest.raises(ValueError, match="`batch_size` must be .*; got 0"):
        model.evaluate((x1, x2), batch_size=0, verbose=0)
    for steps in (0, -3, 2.5, True, "2", None):
        with pytest.raises(ValueError, match=f"`steps_per_execution` must be .*; got {steps!r}"):
            _model().compile(steps_per_execution=steps)
    model = _model()
    model.compile(concentration_optimizer=1e-2, jit_compile=False, steps_per_execution=np.int64(2))
    history = model.fit((x1, x2), batch_size=np.int64(4), verbose=0)
    assert len(history.history["loss"]) == 1 and int(model.optimizer.iterations) == 2


def test_a_training_step_checks_its_pair_once_and_the_loss_options_not_again(monkeypatch):
    model = _model()
    model.compile(concentration_optimizer=1e-2, jit_compile=False, run_eagerly=True)
    pair_checks = support.count_pair_checks(monkeypatch)
    x1, x2 = _pairs(8)
    model.fit((x1, x2), batch_size=4, verbose=0)
    assert len(pair_checks) == 2  # two steps: the loss checks each step's pair, once


class _Interrupt(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 2:
            raise RuntimeError("simulated preemption")


def test_backup_and_restore_resumes_both_optimizers(tmp_path):
    x1, x2 = _pairs()
    data = tf.data.Dataset.from_tensor_slices((x1, x2)).batch(128, drop_remainder=True)
    backup = str(tmp_path / "backup")
    model = _model()
    model.compile(keras.optimizers.Adam(1e-3), concentration_optimizer=1e-2)
    with pytest.raises(RuntimeError, match="preemption"):
        model.fit(
            data,
            epochs=4,
            verbose=0,
            callbacks=[keras.callbacks.BackupAndRestore(backup), _Interrupt()],
        )
    saved_concentration = np.asarray(model.concentration)

    resumed = _model(seed=1)
    resumed.compile(keras.optimizers.Adam(1e-3), concentration_optimizer=1e-2)
    history = resumed.fit(
        data, epochs=4, verbose=0, callbacks=[keras.callbacks.BackupAndRestore(backup)]
    )
    assert len(history.history["loss"]) == 2
    assert (
        int(resumed.optimizer.iterations) == int(resumed.concentration_optimizer.iterations) == 16
    )
    assert not np.allclose(resumed.concentration, saved_concentration)
    # Restored state, then two more epochs: Lambda_hat kept moving from where it was.
    assert np.max(np.abs(np.asarray(resumed.concentration) - 5.0)) > np.max(
        np.abs(saved_concentration - 5.0)
    )


class _WeightTrajectory(keras.callbacks.Callback):
    """The model's trainable weights after every step, and what the evaluation saw."""

    def __init__(self):
        super().__init__()
        self.steps, self.evaluated = [], []

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append([v.numpy() for v in self.model.trainable_variables])

    def evaluate(self, model):  # an evaluator of EvaluationCallback
        self.evaluated.append([v.numpy() for v in model.trainable_variables])
        return {}


def _moving_average(trajectory, momentum):
    average = trajectory[0]  # Keras starts the average at the first step's weights
    for weights in trajectory[1:]:
        average = [momentum * a + (1 - momentum) * w for a, w in zip(average, weights, strict=True)]
    return average


def test_a_weight_average_covers_lambda_hat_is_evaluated_and_is_what_fit_leaves():
    x1, x2 = _pairs(256)
    model = _model()
    momentum = 0.8
    model.compile(
        keras.optimizers.Adam(1e-2, use_ema=True, ema_momentum=momentum),
        concentration_optimizer=5e-2,
        jit_compile=False,
    )
    trajectory = _WeightTrajectory()
    evaluation = EvaluationCallback(trajectory)
    model.fit((x1, x2), batch_size=64, epochs=2, verbose=0, callbacks=[trajectory, evaluation])
    assert len(trajectory.steps) == 8
    # The evaluator saw the average of the steps so far, Lambda_hat's variable included...
    for epoch, evaluated in enumerate(trajectory.evaluated):
        expected = _moving_average(trajectory.steps[: 4 * (epoch + 1)], momentum)
        for value, reference in zip(evaluated, expected, strict=True):
            np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)
    # ... training went on from its own weights (an average of 4 steps is not the 4th)...
    assert not np.allclose(trajectory.evaluated[0][-1], trajectory.steps[3][-1])
    # ... and fit ends on the average, which the last evaluation scored.
    for variable, reference in zip(
        model.trainable_variables, trajectory.evaluated[-1], strict=True
    ):
        np.testing.assert_allclose(variable.numpy(), reference, rtol=1e-5, atol=1e-6)


def test_unbuilt_encoder_is_built_by_fit_with_one_optimizer_slot_per_variable():
    model = ContrastiveModel(keras.layers.Dense(4), scaling=DiagonalScaling(3.0))
    model.compile(keras.optimizers.Adam(1e-2), concentration_optimizer=1e-1)
    assert not model.built
    x1, x2 = _pairs(256)
    history = model.fit((x1, x2), batch_size=64, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    # Adam: iteration count, learning rate, and two moments per variable it updates.
    assert len(model.optimizer.variables) == 2 + 2 * 2  # kernel and bias
    assert len(model.concentration_optimizer.variables) == 2 + 2 * 1  # theta


def test_uneven_replica_batches_stop_with_a_clear_error():
    x1, x2 = _pairs(15)
    with distribute.get_strategy("mirrored").scope():
        model = _model()
        model.compile(keras.optimizers.Adam(1e-3), concentration_optimizer=1e-2)
    # The last batch of 7 rows splits 4 and 3 (the AddN crash of the gather's gradient).
    data = tf.data.Dataset.from_tensor_slices((x1, x2)).batch(8)
    with pytest.raises(tf.errors.InvalidArgumentError, match="drop_remainder=True"):
        model.fit(data, epochs=1, verbose=0)


class _Reports(keras.callbacks.Callback):
    """The batches after which `fit` reported its logs (once per compiled call)."""

    def __init__(self):
        super().__init__()
        self.batches = []

    def on_train_batch_end(self, batch, logs=None):
        self.batches.append(batch)


def test_several_steps_per_call_under_mirrored_train_as_one_step_per_call():
    x1, x2 = _pairs(256)
    strategy = distribute.get_strategy("mirrored")
    data = distribute.distribute_global_batches(
        strategy,
        lambda: (
            tf.data.Dataset.from_tensor_slices({"view1": x1, "view2": x2})
            .batch(32, drop_remainder=True)
            .repeat()
        ),
        32,
    )
    start, weights, reports = [], {}, {}
    for steps_per_execution in (1, 4):
        with strategy.scope():
            model = _model()
            model.compile(
                keras.optimizers.SGD(0.1, momentum=0.9),
                concentration_optimizer=1e-2,
                steps_per_execution=steps_per_execution,
            )
        assert model.steps_per_execution == steps_per_execution
        start = start or model.get_weights()
        model.set_weights(start)  # both from the same weights
        reports[steps_per_execution] = _Reports()
        model.fit(
            data, steps_per_epoch=8, epochs=2, verbose=0, callbacks=[reports[steps_per_execution]]
        )
        weights[steps_per_execution] = model.get_weights()
    assert reports[4].batches == [3, 7, 3, 7]  # the logs read once per call of 4 steps
    for after_four, after_one in zip(weights[4], weights[1], strict=True):
        np.testing.assert_allclose(after_four, after_one, rtol=1e-5, atol=1e-6)
    several_workers = object.__new__(tf.distribute.MultiWorkerMirroredStrategy)
    assert not distribute.supports_multi_step(several_workers)  # Keras' loop fails there


def test_lambda_hat_statistics_are_logged_after_the_update_under_a_strategy():
    x1, x2 = _pairs(256)
    with distribute.get_strategy("mirrored").scope():
        model = _model()
        model.compile(keras.optimizers.Adam(1e-3), concentration_optimizer=5e-2)
    history = model.fit((x1, x2), batch_size=64, epochs=2, verbose=0)
    concentration = np.asarray(model.concentration)
    assert history.history["lambda_max"][-1] == pytest.approx(concentration.max(), rel=1e-6)
    assert history.history["lambda_min"][-1] == pytest.approx(concentration.min(), rel=1e-6)
    assert history.history["lambda_max"][0] != history.history["lambda_max"][-1]


def _train_concentration(policy: str, steps: int = 60) -> np.ndarray:
    keras.config.set_dtype_policy(policy)
    try:
        model = _model(seed=1)
    finally:
        keras.config.set_dtype_policy("float32")
    model.compile(keras.optimizers.SGD(1e-2), concentration_optimizer=keras.optimizers.SGD(0.05))
    x1, x2 = _pairs(64 * steps)
    model.fit((x1, x2), batch_size=64, epochs=1, verbose=0)
    return np.asarray(model.concentration)


def test_mixed_float16_trains_lambda_hat_on_unscaled_gradients():
    keras.config.set_dtype_policy("mixed_float16")
    model = _model()
    keras.config.set_dtype_policy("float32")
    model.compile(keras.optimizers.SGD(1e-2), concentration_optimizer=keras.optimizers.SGD(0.05))
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    half, full = _train_concentration("mixed_float16"), _train_concentration("float32")
    assert np.all(np.isfinite(half))
    # The same steps as in float32, not steps multiplied by the loss scale (2^15).
    np.testing.assert_allclose(half, full, rtol=0.05)
    assert np.max(np.abs(full - 5.0)) > 0.05


def one_step_updates(policy, loss_scale=None, strategy="default"):
    """The change of every trainable variable (Lambda_hat's last) in one SGD step under
    `policy` (mixed_float16: a LossScaleOptimizer at `loss_scale`), and the steps
    Lambda_hat's optimizer took."""
    with distribute.get_strategy(strategy).scope():
        keras.config.set_dtype_policy(policy)
        try:
            model = _model(seed=1)
        finally:
            keras.config.set_dtype_policy("float32")
        optimizer = keras.optimizers.SGD(0.1)
        if loss_scale:
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=loss_scale)
        model.compile(optimizer, concentration_optimizer=keras.optimizers.SGD(0.5))
    before = [v.numpy() for v in model.trainable_variables]
    model.fit(tf.data.Dataset.from_tensors(_pairs(64)), epochs=1, verbose=0)
    updates = [v.numpy() - b for v, b in zip(model.trainable_variables, before, strict=True)]
    return updates, int(model.concentration_optimizer.iterations.numpy())


@pytest.mark.parametrize("strategy", ["default", "mirrored"])
def test_under_mixed_float16_lambda_hat_steps_exactly_when_the_encoder_does(strategy):
    full, _ = one_step_updates("float32", strategy=strategy)
    # A small loss scale: the step of float32, to float16's precision.
    half, steps = one_step_updates("mixed_float16", loss_scale=8.0, strategy=strategy)
    assert steps == 1
    for update_half, update_full in zip(half, full, strict=True):
        assert np.linalg.norm(update_full) > 0
        error = np.linalg.norm(update_half - update_full) / np.linalg.norm(update_full)
        assert error < 1e-2
    # An overflowing scale: the LossScaleOptimizer skips the encoder's step, and
    # Lambda_hat's (the last variable) is skipped with it.
    overflow, steps = one_step_updates("mixed_float16", loss_scale=2.0**60, strategy=strategy)
    assert steps == 0
    for update in overflow:
        np.testing.assert_array_equal(update, 0.0)


def test_a_float_concentration_optimizer_is_plain_adam_whatever_the_main_optimizer():
    model = _model()
    main = keras.optimizers.AdamW(1e-3, weight_decay=0.5, clipnorm=1.0, use_ema=True)
    model.compile(main, concentration_optimizer=1e-2)
    concentration = model.concentration_optimizer
    assert type(concentration) is keras.optimizers.Adam
    assert float(concentration.learning_rate) == pytest.approx(1e-2)
    assert (concentration.weight_decay, concentration.clipnorm, concentration.use_ema) == (
        None,
        None,
        False,
    )
    x1, x2 = _pairs(128)
    model.fit((x1, x2), batch_size=64, epochs=1, verbose=0)  # use_ema crashed fit before
    assert np.all(np.isfinite(model.concentration))


def test_a_loss_that_cannot_use_the_scaling_raises():
    with pytest.raises(ValueError, match="cosine InfoNCE normalises away"):
        _model().compile("adam", loss=InfoNCE(similarity="cosine"))
    with pytest.raises(ValueError, match="AnInfoNCE needs the model's `scaling`"):
        _model(scaling=False).compile("adam", loss=AnInfoNCE())
    # AnInfoNCE by hand.
    _model().compile("adam", loss=InfoNCE(similarity="euclidean", temperature=1.0))


def test_compile_refuses_keras_metrics_naming_what_the_logs_hold():
    model = _model()
    for name in ("metrics", "weighted_metrics"):
        with pytest.raises(ValueError, match=f"`{name}` cannot be used.*`alignment`"):
            model.compile("adam", **{name: ["mae"]})
    model.compile("adam", metrics=None)  # Keras' default


def test_the_export_serves_the_features_and_the_embedding_lambda_hat_weighs(tmp_path):
    x, _ = _pairs(64)
    model = ContrastiveModel(
        _encoder(), projector=projection_head([16], 3), scaling=DiagonalScaling([1.0, 4.0, 9.0])
    )
    path = export_encoder(model, tmp_path / "encoder")
    loaded = tf.saved_model.load(str(path))
    close = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loaded.serve(x), model(x), **close)
    embedding = np.asarray(loaded.embed(x))
    np.testing.assert_allclose(embedding, model.embed(x, scaled=False), **close)
    np.testing.assert_allclose(np.linalg.norm(embedding, axis=1), 1.0, rtol=1e-5)
    # The scaled embedding is the embedding times sqrt(Lambda_hat), dimension by dimension.
    np.testing.assert_allclose(loaded.embed_scaled(x), embedding * [1.0, 2.0, 3.0], **close)
    saved = json.loads((path / "concentration.json").read_text())
    np.testing.assert_allclose(saved["lambda_hat"], [1.0, 4.0, 9.0], rtol=1e-6)
    assert saved["space"] == "embed"
    assert "projector output on the unit sphere" in saved["description"]
    # Without Lambda_hat: features and embedding, nothing scaled, no concentration.json.
    path = export_encoder(_model(scaling=False), tmp_path / "infonce")
    assert not hasattr(tf.saved_model.load(str(path)), "embed_scaled")
    assert not (path / "concentration.json").exists()


def test_uniformity_is_estimated_on_the_first_rows_of_view_one():
    x1, x2 = _pairs(1024)
    model = ContrastiveModel(_encoder(seed=2), scaling=DiagonalScaling([1.0, 4.0, 1.0, 0.5]))
    model.compile("adam")
    logs = model.evaluate((x1, x2), batch_size=1024, verbose=0, return_dict=True)
    unit = np.asarray(model.embed(x1, scaled=False), "float64")
    rows = unit[:UNIFORMITY_ROWS]
    squared = np.sum((rows[:, None] - rows[None]) ** 2, axis=-1)
    pairs = squared[~np.eye(len(rows), dtype=bool)]
    assert logs["uniformity"] == pytest.approx(np.log(np.mean(np.exp(-2.0 * pairs))), rel=1e-4)


def test_alignment_and_uniformity_are_measured_before_lambda_hat():
    x1, x2 = _pairs(128)
    logs = {}
    for name, concentration in (("flat", [1.0] * 4), ("skewed", [1.0, 400.0, 1.0, 0.01])):
        model = ContrastiveModel(_encoder(seed=2), scaling=DiagonalScaling(concentration))
        model.compile("adam")
        logs[name] = model.evaluate((x1, x2), batch_size=128, verbose=0, return_dict=True)
    unit1, unit2 = (
        np.asarray(model.embed(x1, scaled=False)),
        np.asarray(model.embed(x2, scaled=False)),
    )
    expected = np.mean(np.sum((unit1 - unit2) ** 2, axis=1))
    for name in logs:
        assert logs[name]["alignment"] == pytest.approx(expected, rel=1e-4), name
        assert logs[name]["uniformity"] == pytest.approx(logs["flat"]["uniformity"], rel=1e-4)


@keras.saving.register_keras_serializable(package="tests")
class _SubclassedEncoder(keras.Model):
    """A user's encoder as the README says to write it: registered, with get_config."""

    def __init__(self, width=8, **kwargs):
        super().__init__(**kwargs)
        self.width = width
        self.hidden = keras.layers.Dense(width, activation="tanh")
        self.out = keras.layers.Dense(4)

    def call(self, x):
        return self.out(self.hidden(x))

    def get_config(self):
        return {**super().get_config(), "width": self.width}


def test_a_registered_subclassed_encoder_round_trips_through_load_model(tmp_path):
    x1, x2 = _pairs(count=64)
    keras.utils.set_random_seed(0)
    model = ContrastiveModel(_SubclassedEncoder(width=8), scaling=DiagonalScaling(5.0))
    model.compile(keras.optimizers.Adam(1e-3), concentration_optimizer=1e-2)
    model.fit((x1, x2), batch_size=32, epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(reloaded.encoder, _SubclassedEncoder) and reloaded.encoder.width == 8
    np.testing.assert_array_equal(reloaded.embed(x1[:8]), model.embed(x1[:8]))
    np.testing.assert_array_equal(reloaded.concentration, model.concentration)


def test_a_subclassed_encoder_exports_with_the_spec_its_error_names(tmp_path):
    x1, x2 = _pairs(count=64)
    dict_pairs = tf.data.Dataset.from_tensor_slices({"view1": x1, "view2": x2, "label": x1[:, 0]})
    tuple_pairs = tf.data.Dataset.from_tensor_slices((x1, x2))
    model = ContrastiveModel(_SubclassedEncoder(name="mine"), scaling=DiagonalScaling(5.0))
    model.compile(keras.optimizers.Adam(1e-3), concentration_optimizer=1e-2)
    model.fit(dict_pairs.batch(32), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="`input_spec` is needed") as refused:
        export_encoder(model, tmp_path / "refused")
    hints = re.findall(r"`(pairs\.element_spec[^`]+)`", str(refused.value))
    assert len(hints) == 2
    for index, (hint, pairs) in enumerate(zip(hints, (dict_pairs, tuple_pairs), strict=True)):
        spec = eval(hint, {"pairs": pairs.batch(32)})
        exported = tf.saved_model.load(str(export_encoder(model, tmp_path / f"{index}", spec)))
        np.testing.assert_allclose(exported.serve(x1), model.encoder(x1), rtol=1e-5, atol=1e-6)


def test_a_dataset_of_features_and_labels_is_refused_before_tracing():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(64, 8)).astype("float32")
    labels = rng.normal(size=64)  # float64 targets, as tabular data has them
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    model = ContrastiveModel(keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)]))
    model.compile("adam")
    with pytest.raises(ValueError, match=r"read as the two views, not as inputs and targets"):
        model.fit(data, epochs=1, verbose=0)


def test_lambda_hat_gets_its_own_optimizer_unless_told_otherwise(capsys):
    models._say_default_concentration_optimizer.cache_clear()  # said once per process
    defaulted = _model()
    with pytest.warns(UserWarning, match=r"own Adam\(learning_rate=0.01\)"):
        defaulted.compile(keras.optimizers.Adam(1e-4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not again
        _model().compile(keras.optimizers.Adam(1e-4))
    assert capsys.readouterr().out == ""  # a warning, which filters can silence
    optimizer = defaulted.concentration_optimizer
    assert isinstance(optimizer, keras.optimizers.Adam) and optimizer is not defaulted.optimizer
    assert float(optimizer.learning_rate) == pytest.approx(0.01)
    shared = _model()
    shared.compile(keras.optimizers.Adam(1e-4), concentration_optimizer=None)
    assert shared.concentration_optimizer is None and capsys.readouterr().out == ""
    # Trained alike, Lambda_hat moves with its own rate and barely with the encoder's.
    for model in (defaulted, shared):
        model.fit(_pairs(), batch_size=64, epochs=4, verbose=0)
    moved = [np.ptp(np.log(np.asarray(m.concentration))) for m in (defaulted, shared)]
    assert moved[0] > 5 * moved[1], moved
    without_scaling = _model(scaling=False)
    without_scaling.compile("adam")
    assert without_scaling.concentration_optimizer is None and capsys.readouterr().out == ""


def test_the_exported_encoder_reads_uint8_images_as_training_did(tmp_path):
    encoder = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Flatten(), keras.layers.Dense(4)]
    )
    model = ContrastiveModel(encoder, scaling=DiagonalScaling(5.0))
    path = export_encoder(model, tmp_path / "encoder")
    loaded = tf.saved_model.load(str(path))
    images = np.random.default_rng(0).integers(0, 256, size=(3, 8, 8, 3)).astype("uint8")
    as_floats = (images / 255).astype("float32")
    for endpoint in ("serve", "embed", "embed_scaled"):
        function = getattr(loaded, endpoint)
        expected = function(as_floats).numpy()
        for given in (images, tf.constant(images), as_floats.astype("float64")):
            np.testing.assert_allclose(function(given).numpy(), expected, atol=1e-6)
    inputs = json.loads((path / "inputs.json").read_text())
    assert inputs["accepted_dtypes"] == ["float32", "float64", "uint8"] and "255" in inputs["uint8"]
    flat = export_encoder(_model(scaling=False), tmp_path / "flat")
    assert "uint8" not in json.loads((flat / "inputs.json").read_text())["accepted_dtypes"]
