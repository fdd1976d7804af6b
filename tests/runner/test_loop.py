"""The experiment runner: strategies, saved models and exported encoders, safe resume,
`--stop-at` checked before training, the Euclidean variant, the generic results table."""

import dataclasses
import json
import re
import subprocess
import sys
import time
import types

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import distribute, optimizers, runner
from aninfonce_tf.configs import synthetic
from aninfonce_tf.configs.base import UsageError
from aninfonce_tf.evaluation import slow_feature_alignment
from aninfonce_tf.evaluation.identifiability import mean_correlation_coefficient
from aninfonce_tf.runner import identity, run_directory
from tests import schema

SMOKE = dataclasses.replace(synthetic.PRESETS["quick"], **synthetic.SMOKE)


class RecordReplicas(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.replicas = self.model.distribute_strategy.num_replicas_in_sync


def test_mirrored_strategy_on_two_logical_cpus_trains_the_smoke_config(tmp_path):
    # With the learned rotation of `paper-linear-fast`.
    rotated = dataclasses.replace(SMOKE, rotation_gain=6.0)
    single = runner.run(rotated, synthetic.build, tmp_path / "single", verbose=0)
    replicas = RecordReplicas()
    config = dataclasses.replace(rotated, strategy="mirrored")
    mirrored = runner.run(
        config, synthetic.build, tmp_path / "mirrored", verbose=0, callbacks=[replicas]
    )
    assert replicas.replicas == 2
    for name in ("aninfonce", "infonce"):
        assert mirrored[name]["steps"] == 40
        # Each replica contrasts against the global batch: the same loss as one replica.
        np.testing.assert_allclose(
            mirrored[name]["final_loss"], single[name]["final_loss"], rtol=2e-3
        )
        assert (tmp_path / "mirrored" / name / "model.keras").exists()


def test_the_fitted_alignment_is_saved_and_exported_with_the_model(tmp_path):
    # With a weight average (`ema_momentum`): the matrix is fitted on the average, which
    # the saved model holds.
    config = dataclasses.replace(
        SMOKE, losses="aninfonce", alignment_pairs=1000, strategy="mirrored", ema_momentum=0.9
    )
    result = runner.run(config, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    model = keras.saving.load_model(tmp_path / "aninfonce" / "model.keras", safe_mode=True)
    experiment = synthetic.build(config)
    evaluator = experiment.evaluators[0]
    # The matrix in the saved model is the one the last evaluation fitted and scored.
    first, second = evaluator.alignment_pairs
    fitted = slow_feature_alignment(
        model.embed(first, scaled=False), model.embed(second, scaled=False)
    )
    np.testing.assert_allclose(model.alignment.matrix, fitted, rtol=1e-4, atol=1e-5)
    assert not np.allclose(model.alignment.matrix, np.eye(SMOKE.dim))
    aligned = model.embed_aligned(evaluator.observations)
    assert mean_correlation_coefficient(evaluator.latents, aligned) == pytest.approx(
        result["aligned_mcc"], abs=1e-4
    )
    exported = tf.saved_model.load(str(tmp_path / "aninfonce" / "encoder"))
    np.testing.assert_allclose(
        exported.embed_aligned(evaluator.observations), aligned, rtol=1e-5, atol=1e-5
    )


def test_steps_per_execution_changes_the_speed_only(tmp_path):
    config = dataclasses.replace(SMOKE, losses="aninfonce", export=False)
    results = {
        steps: runner.run(
            dataclasses.replace(config, steps_per_execution=steps),
            synthetic.build,
            tmp_path / str(steps),
            verbose=0,
        )["aninfonce"]
        for steps in (1, 10)
    }
    assert results[1]["steps"] == results[10]["steps"] == 40
    np.testing.assert_allclose(results[10]["lambda_hat"], results[1]["lambda_hat"], rtol=1e-6)
    for score in ("final_loss", "linear_r2", "mcc"):
        assert results[10][score] == pytest.approx(results[1][score], rel=1e-6), score


def test_saved_model_and_exported_encoder_round_trip_in_a_fresh_process(tmp_path):
    # With the learned rotation that `paper-linear-fast` ends its encoder with.
    config = dataclasses.replace(SMOKE, steps=20, losses="aninfonce", rotation_gain=6.0)
    result = runner.run(config, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    observations = np.random.default_rng(1).normal(size=(64, SMOKE.dim)).astype("float32")
    np.save(tmp_path / "x.npy", observations)

    model = keras.saving.load_model(tmp_path / "aninfonce" / "model.keras", safe_mode=True)
    np.testing.assert_allclose(model.concentration, result["lambda_hat"], rtol=1e-6)
    assert model.encoder.get_layer("rotation").gain == 6.0
    assert model.contrastive_loss.get_config()["similarity"] == "euclidean"
    features = np.asarray(model(observations))

    encoder_dir = tmp_path / "aninfonce" / "encoder"
    script = (
        "import sys, numpy as np, tensorflow as tf;"
        f"x = np.load({str(tmp_path / 'x.npy')!r});"
        f"encoder = tf.saved_model.load({str(encoder_dir)!r});"
        "y = encoder.serve(x).numpy();"
        f"np.save({str(tmp_path / 'y.npy')!r}, y);"
        f"np.save({str(tmp_path / 'e.npy')!r}, encoder.embed(x).numpy())"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    exported = np.load(tmp_path / "y.npy")
    assert exported.dtype == np.float32 and exported.shape == (64, SMOKE.dim)
    np.testing.assert_allclose(exported, features, rtol=1e-5, atol=1e-6)
    layer = keras.layers.TFSMLayer(str(encoder_dir), call_endpoint="serve")
    np.testing.assert_allclose(layer(observations), features, rtol=1e-5, atol=1e-6)
    # The embedding Lambda_hat belongs to, also without this package.
    embedding = model.embed(observations, scaled=False)
    np.testing.assert_allclose(np.load(tmp_path / "e.npy"), embedding, rtol=1e-5, atol=1e-6)
    saved = json.loads((encoder_dir / "concentration.json").read_text())
    np.testing.assert_allclose(saved["lambda_hat"], result["lambda_hat"], rtol=1e-6)
    assert saved["space"] == "embed"


def test_results_are_saved_after_each_variant(tmp_path):
    class FailInSecondVariant(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            if self.model.name == "infonce":
                raise RuntimeError("crash")

    with pytest.raises(RuntimeError, match="crash"):
        runner.run(SMOKE, synthetic.build, tmp_path, verbose=0, callbacks=[FailInSecondVariant()])
    saved = json.loads((tmp_path / "results.json").read_text())
    assert set(saved) == {"run", "variants"} and set(saved["variants"]) == {"aninfonce"}
    # Rerun: the finished variant is kept as it was, the other one is trained.
    results = runner.run(SMOKE, synthetic.build, tmp_path, verbose=0)
    assert results["aninfonce"] == saved["variants"]["aninfonce"]
    assert results["infonce"]["steps"] == 40


def test_a_run_into_the_same_out_with_other_flags_refuses_before_training(tmp_path, capsys):
    argv = ["--smoke", "--losses", "aninfonce", "--steps", "20", "--out", str(tmp_path)]
    first = runner.main(synthetic, argv)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        runner.main(synthetic, [*argv, "--learning-rate", "0.002"])
    # A usage error: one line and status 2, as argparse gives for a bad flag.
    error = capsys.readouterr().err
    assert stop.value.code == 2 and error.count("\n") == 1, error
    assert "another config (learning_rate: 0.001 -> 0.002)" in error
    # Where and how it runs may change: the same config resumes (here: nothing to do).
    again = runner.main(synthetic, [*argv, "--export", "false"])
    assert "not trained again" in capsys.readouterr().out
    assert again == first


def test_a_resume_whose_backup_period_misses_the_backup_names_the_flag_to_pass(tmp_path):
    # --steps-per-execution may change on resume, and with it the default backup period.
    trained = dataclasses.replace(SMOKE, losses="aninfonce", steps=2000, eval_every=2000)
    config = dataclasses.replace(trained, steps_per_execution=16)
    assert (trained.epoch_steps(), config.epoch_steps()) == (1000, 400)
    run_directory.RunDirectory(tmp_path, code=[identity.code_version()]).write_config(trained)
    (tmp_path / "backup" / "aninfonce").mkdir(parents=True)
    with h5py.File(tmp_path / "backup" / "aninfonce" / "step-001000.weights.h5", "w") as file:
        file.attrs["logs"] = json.dumps({"loss": 1.0})
    with pytest.raises(UsageError, match="at step 1000, which epochs of 400 steps .* pass the"):
        runner.run(config, synthetic.build, tmp_path, verbose=0)


def test_an_error_that_is_not_the_users_input_keeps_its_traceback(tmp_path):
    def build(config):
        raise ValueError("a defect while building the experiment")

    recipe = types.SimpleNamespace(PRESETS=synthetic.PRESETS, SMOKE=synthetic.SMOKE, build=build)
    with pytest.raises(ValueError, match="a defect") as raised:  # no SystemExit(2)
        runner.main(recipe, ["--smoke", "--out", str(tmp_path)])
    assert not isinstance(raised.value, UsageError)


@pytest.mark.parametrize(
    "optimizer",
    [
        dict(),
        dict(ema_momentum=0.9),
        dict(ema_momentum=0.9, optimizer="muon", muon_exclude="hidden"),
    ],
    ids=["adam", "adam-average", "muon-average"],
)
def test_an_interrupted_run_resumes_with_its_evaluation_history(tmp_path, optimizer, capsys):
    # A backup every 10 steps, evaluations every 20: Keras' epochs last 10 steps.
    config = dataclasses.replace(SMOKE, steps=60, save_every=10, losses="aninfonce", **optimizer)
    whole = runner.run(config, synthetic.build, tmp_path / "whole", verbose=0)["aninfonce"]

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 2:  # step 30, between two evaluations
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run(config, synthetic.build, tmp_path / "cut", verbose=0, callbacks=[Interrupt()])
    checkpoints = sorted(p.name for p in (tmp_path / "cut" / "backup" / "aninfonce").iterdir())
    assert checkpoints == ["step-000020.weights.h5", "step-000030.weights.h5"]  # the last two
    capsys.readouterr()
    resumed = runner.run(config, synthetic.build, tmp_path / "cut", verbose=0)["aninfonce"]
    assert "resuming aninfonce at step 30" in capsys.readouterr().out
    assert not (tmp_path / "cut" / "backup" / "aninfonce").exists()  # kept until finished
    assert resumed["steps"] == 60
    assert resumed["final_loss"] == pytest.approx(whole["final_loss"], rel=1e-5)
    assert [point["step"] for point in resumed["curve"]] == [20, 40, 60]
    # Same batches from the restored step on: the same model as an uninterrupted run.
    np.testing.assert_allclose(resumed["lambda_hat"], whole["lambda_hat"], rtol=1e-5)
    np.testing.assert_allclose(resumed["linear_r2"], whole["linear_r2"], atol=1e-4)
    assert resumed["wall_seconds"] >= resumed["curve"][1]["seconds"]
    # The saved model loads (with the average, its optimizer holds one more copy).
    model = keras.saving.load_model(tmp_path / "cut" / "aninfonce" / "model.keras")
    np.testing.assert_allclose(model.concentration, resumed["lambda_hat"], rtol=1e-5)


@pytest.mark.parametrize("patience", [1, 2])
def test_a_run_stopped_at_its_targets_and_killed_before_its_results_resumes_as_stopped(
    tmp_path, patience
):
    # Reached at every evaluation (every 20 steps): stopped at step 20 * patience.
    config = dataclasses.replace(
        SMOKE, losses="aninfonce", stop_at="mcc=-1", stop_patience=patience, steps=60
    )

    class InterruptAfterFit(keras.callbacks.Callback):
        def on_train_end(self, logs=None):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run(config, synthetic.build, tmp_path, verbose=0, callbacks=[InterruptAfterFit()])
    result = runner.run(config, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    step = 20 * patience
    assert (result["steps"], result["target_reached"]["step"]) == (step, step)
    assert [point["step"] for point in result["curve"]] == list(range(20, step + 1, 20))


def test_a_run_killed_at_its_targets_short_of_its_patience_resumes_and_stops_at_it(tmp_path):
    # Reached at every evaluation (every 20 steps), to hold at two in a row: killed after
    # the first (and its backup), the run trains on and stops at step 40.
    config = dataclasses.replace(
        SMOKE, losses="aninfonce", stop_at="mcc=-1", stop_patience=2, steps=60
    )

    class InterruptAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise KeyboardInterrupt

    interrupt = [InterruptAfterFirstEpoch()]
    with pytest.raises(KeyboardInterrupt):
        runner.run(config, synthetic.build, tmp_path, verbose=0, callbacks=interrupt)
    result = runner.run(config, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    assert (result["steps"], result["target_reached"]["step"]) == (40, 40)
    assert [point["step"] for point in result["curve"]] == [20, 40]


@pytest.mark.parametrize(
    "stop_at, message",
    [
        ("lambda_spearman=0.9", "'infonce' does not produce"),
        ("mcc=0.9,r2=0.5", r"\['r2'\]"),
        ("mcc>0.9", "must look like"),
    ],
)
def test_a_bad_stop_at_fails_within_seconds_before_any_training(stop_at, message, tmp_path):
    config = dataclasses.replace(SMOKE, stop_at=stop_at)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        runner.run(config, synthetic.build, tmp_path, verbose=0)
    assert time.perf_counter() - start < 5
    assert not (tmp_path / "aninfonce").exists() and not (tmp_path / "backup").exists()


@pytest.mark.parametrize("space", ["euclidean", "box"])
def test_box_and_euclidean_spaces_train_without_sphere_normalisation(space, tmp_path):
    config = dataclasses.replace(SMOKE, space=space, conditional="normal", steps=20, eval_every=20)
    parts = synthetic.build(config)
    aninfonce = runner.build_model(config, parts, "aninfonce")
    infonce = runner.build_model(config, parts, "infonce")
    assert not aninfonce.normalize and not infonce.normalize
    assert infonce.contrastive_loss.similarity == "euclidean"
    batch = next(iter(parts.train_data(0)))
    norms = np.linalg.norm(infonce.embed(batch["view1"]), axis=1)
    assert np.ptp(norms) > 0.1  # not on the sphere
    results = runner.run(config, synthetic.build, tmp_path, verbose=0)
    assert results["aninfonce"]["steps"] == 20 and np.isfinite(results["infonce"]["final_loss"])


def test_the_sphere_variant_normalises_and_uses_the_cosine_for_infonce():
    parts = synthetic.build(SMOKE)
    infonce = runner.build_model(SMOKE, parts, "infonce")
    assert infonce.normalize and infonce.contrastive_loss.similarity == "cosine"
    batch = next(iter(parts.train_data(0)))
    np.testing.assert_allclose(np.linalg.norm(infonce.embed(batch["view1"]), axis=1), 1, rtol=1e-5)


def test_the_encoder_optimizer_follows_the_config():
    sgd = optimizers.encoder_optimizer(
        dataclasses.replace(SMOKE, optimizer="sgd", weight_decay=5e-4, momentum=0.8)
    )
    assert isinstance(sgd, keras.optimizers.SGD)
    assert (sgd.momentum, sgd.weight_decay) == (0.8, 5e-4)
    cosine = optimizers.encoder_optimizer(
        dataclasses.replace(SMOKE, learning_rate_schedule="cosine")
    )
    assert isinstance(cosine.learning_rate, tf.Variable) or callable(cosine._learning_rate)
    assert float(cosine._learning_rate(SMOKE.steps)) == pytest.approx(0.0, abs=1e-9)
    rate = SMOKE.learning_rate
    for schedule, end in (("constant", rate), ("cosine", 0.0)):
        warm = optimizers.encoder_optimizer(
            dataclasses.replace(SMOKE, learning_rate_schedule=schedule, warmup_steps=10)
        )._learning_rate
        values = [float(warm(step)) for step in (0, 5, 10, SMOKE.steps)]
        assert values == pytest.approx([0.0, rate / 2, rate, end], abs=1e-9), schedule
    model = runner.build_model(SMOKE, synthetic.build(SMOKE), "aninfonce")
    # Lambda_hat has its own Adam, never the encoder's weight decay.
    assert isinstance(model.concentration_optimizer, keras.optimizers.Adam)
    assert float(model.concentration_optimizer.learning_rate) == pytest.approx(1e-2)
    assert model.concentration_optimizer.weight_decay is None


def test_muon_orthogonalises_the_updates_of_all_but_the_excluded_kernels():
    config = dataclasses.replace(
        SMOKE, optimizer="muon", muon_exclude="hidden", steps_per_execution=1
    )
    optimizer = optimizers.encoder_optimizer(config)
    assert isinstance(optimizer, keras.optimizers.Muon)
    assert optimizer.exclude_layers == ["hidden"]
    parts = synthetic.build(config)
    model = runner.build_model(config, parts, "aninfonce")
    kernels = {w.path: w for w in model.encoder.trainable_weights if len(w.shape) == 2}
    assert sorted(kernels) == ["features/kernel", "hidden_1/kernel", "hidden_2/kernel"]
    before = {path: w.numpy() for path, w in kernels.items()}
    model.fit(parts.train_data(0).take(1), epochs=1, verbose=0)

    def spread(path):  # largest over smallest singular value of the update
        values = np.linalg.svd(kernels[path].numpy() - before[path], compute_uv=False)
        return values[0] / values[-1]

    # Muon's update of the output kernel is (nearly) orthogonal; Adam's first update
    # of a hidden kernel is about lr * sign(gradient), far from it (5.3 here, 1.5
    # under Muon; the square 32 x 32 kernel is no test: five Newton-Schulz steps leave
    # its smallest singular values behind).
    assert spread("features/kernel") < 2.0
    assert spread("hidden_1/kernel") > 3.0


def test_the_results_table_has_a_column_per_scalar_score():
    results = {
        "a": {
            "backbone": {"knn": 0.5, "readout": 0.71234},
            "lambda_hat": [1, 2],
            "steps": 3,
            "wall_seconds": 1.0,
            "curve": [],
            "final_loss": 2.0,
        },
        "b": {"backbone": {"knn": 0.25}, "steps": 3, "wall_seconds": 2.4},
    }
    lines = runner.results_table(results).splitlines()
    assert lines[0].split() == ["variant", "backbone/knn", "backbone/readout", "steps", "seconds"]
    assert lines[2].split() == ["a", "0.500", "0.712", "3", "1"]
    assert lines[3].split() == ["b", "0.250", "-", "3", "2"]


class Poison(keras.callbacks.Callback):
    """Makes the encoder's first kernel NaN after step `step` of AnInfoNCE."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if self.model.name == "aninfonce" and int(self.model.optimizer.iterations) == self.step:
            kernel = self.model.encoder.weights[0]
            kernel.assign(np.full(kernel.shape, np.nan, "float32"))


def test_a_non_finite_loss_stops_the_variant_naming_the_step(tmp_path, capsys):
    config = dataclasses.replace(SMOKE, steps_per_execution=1)  # a callback every step
    results = runner.run(config, synthetic.build, tmp_path, verbose=0, callbacks=[Poison(25)])
    output = capsys.readouterr().out
    assert "Non-finite loss (nan) by step 26: training stopped." in output
    assert results["aninfonce"]["stopped"] == "non-finite loss by step 26"
    assert results["aninfonce"]["steps"] == 26
    assert [point["step"] for point in results["aninfonce"]["curve"]] == [20]
    assert not (tmp_path / "aninfonce" / "model.keras").exists()
    # The next variant trains as usual.
    assert results["infonce"]["steps"] == 40 and "stopped" not in results["infonce"]


def test_a_variant_that_diverges_before_its_first_evaluation_ends_the_run_cleanly(tmp_path, capsys):
    config = dataclasses.replace(SMOKE, steps=20, steps_per_execution=1)
    results = runner.run(config, synthetic.build, tmp_path, verbose=0, callbacks=[Poison(5)])
    assert results["aninfonce"]["curve"] == [] and np.isnan(results["aninfonce"]["final_loss"])
    output = capsys.readouterr().out
    assert re.search(r"\n *aninfonce( +-)* +6 +\d+\n", output), output  # its steps, no scores
    assert re.search(r"\n *aninfonce( +-)+\n", output), output  # a row without scores
    # Plots of the variant with scores, a results.json with null for NaN, and why.
    assert (tmp_path / "per_latent_r2.png").exists() and (tmp_path / "curves.png").exists()
    text = (tmp_path / "results.json").read_text()
    saved = json.loads(text, parse_constant=lambda constant: pytest.fail(f"{constant} in JSON"))
    assert saved["variants"]["aninfonce"]["final_loss"] is None
    assert saved["null_values"]["values"] == {"/variants/aninfonce/final_loss": "NaN"}
    schema.validate_results(saved)
    # A diverged variant is finished: a rerun keeps it, NaN included, and trains nothing.
    again = runner.run(config, synthetic.build, tmp_path, verbose=0)
    assert capsys.readouterr().out.count("not trained again") == 2
    assert np.isnan(again["aninfonce"]["final_loss"]) and again["infonce"] == results["infonce"]


def test_pipelines_have_static_batch_shapes_for_tpus():
    parts = synthetic.build(SMOKE)
    spec = parts.train_data(0).element_spec
    assert {key: tuple(value.shape) for key, value in spec.items()} == {
        "view1": (128, 6),
        "view2": (128, 6),
        "z1": (128, 6),
        "z2": (128, 6),
    }
    strategy = distribute.get_strategy("mirrored")
    distributed = distribute.distribute_global_batches(strategy, lambda: parts.train_data(0), 128)
    first = next(iter(distributed))
    shapes = [tuple(v.shape) for v in strategy.experimental_local_results(first["view1"])]
    assert shapes == [(64, 6), (64, 6)]
    # The two replicas hold the two halves of the global batch, in order.
    global_batch = next(iter(parts.train_data(0)))["view1"].numpy()
    halves = [v.numpy() for v in strategy.experimental_local_results(first["view1"])]
    np.testing.assert_array_equal(np.concatenate(halves), global_batch)


def test_every_seed_of_a_seeds_run_is_checked_before_any_trains(tmp_path):
    config = dataclasses.replace(synthetic.PRESETS["quick"], **synthetic.SMOKE, losses="aninfonce")
    with pytest.raises(UsageError, match="seed"):
        runner.run_seeds(config, synthetic.build, tmp_path, [0, 2**32], verbose=0)
    assert not (tmp_path / "seed_0").exists()
