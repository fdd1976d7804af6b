"""Every row of the bad-input table (docs/bad-input.md): the input and the error it gives.

The table lists these cases by name; `test_the_docs_table_lists_every_case`
keeps the two in step."""

import contextlib
import dataclasses
import io
import json
import os
import re
import shutil
import tempfile
import typing
from pathlib import Path
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import (
    AnInfoNCE,
    ContrastiveModel,
    DiagonalScaling,
    IdentifiabilityEvaluator,
    InfoNCE,
    LearnedRotation,
    LinearAlignment,
    SimCLRAugment,
    augment_pairs,
    distribute,
    functional,
    optimizers,
    runner,
    small_cnn,
    sweep,
)
from aninfonce_tf.checkpoints import Backup, read_json, write_json
from aninfonce_tf.compare import listed_readout
from aninfonce_tf.compare import main as compare_main
from aninfonce_tf.configs import cifar10, imagenet, mnist_vae, photos, rendered, synthetic, train
from aninfonce_tf.configs.base import UsageError
from aninfonce_tf.configs.mnist_vae import trained_decoder
from aninfonce_tf.data.datasets import pair_batches
from aninfonce_tf.data.synthetic import SyntheticSetup, concentration_preset
from aninfonce_tf.data.vae import VAE, digit_images
from aninfonce_tf.distribute import distribute_global_batches, get_strategy
from aninfonce_tf.evaluation.callbacks import EvaluationCallback, StopOnNonFiniteLoss
from aninfonce_tf.evaluation.targets import parse_targets
from aninfonce_tf.export import export_encoder
from aninfonce_tf.loss_variants import LOSS_VARIANTS, loss_variant, register_loss
from aninfonce_tf.runner.identity import code_version
from aninfonce_tf.runner.lock import lock_run_directory
from tests import test_functional, test_models
from tests.support import ROOT, UndeclaredEvaluator

BAD_INPUT_TABLE = ROOT / "docs" / "bad-input.md"
SMOKE = dataclasses.replace(synthetic.PRESETS["quick"], **synthetic.SMOKE)
X = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")


def _aligned_model():
    return ContrastiveModel(_model().encoder, alignment=LinearAlignment())


def _model(scaling=True):
    encoder = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4)])
    return ContrastiveModel(encoder, scaling=DiagonalScaling(5.0) if scaling else None)


def _scaling_built_at_width_1():
    scaling = DiagonalScaling(5.0)
    scaling(np.ones((2, 1), "float32"))
    return scaling


def _fit_dataset(dataset, **kwargs):
    model = _model()
    model.compile("adam", concentration_optimizer=1e-2)
    return model.fit(dataset, epochs=1, verbose=0, **kwargs)


def _fit(*batch):
    return _fit_dataset(tf.data.Dataset.from_tensors(batch))


def _run(tmp_path, **overrides):
    runner.run(dataclasses.replace(SMOKE, **overrides), synthetic.build, tmp_path, verbose=0)


def _smoke(module, **overrides):
    """The `--smoke` config of a recipe's first preset, with `overrides`."""
    preset = next(iter(module.PRESETS.values()))
    return dataclasses.replace(preset, **{**module.SMOKE, **overrides})


def _run_recipe(module, tmp_path, **overrides):
    runner.run(_smoke(module, **overrides), module.build, tmp_path, verbose=0)


def _float_pixel_arrays(tmp_path) -> str:
    path = Path(tempfile.mkdtemp()) / "pixels.npz"  # beside the run directory, not in it
    np.savez(path, images=np.full((40, 8, 8, 3), 255.0, "float32"))
    return str(path)


def _folder_with_a_broken_image() -> str:
    folder = Path(tempfile.mkdtemp())
    for index in range(40):
        image = np.full((8, 8, 3), index, "uint8")
        tf.io.write_file(str(folder / f"{index}.png"), tf.io.encode_png(image))
    (folder / "broken.png").write_text("not an image")
    return str(folder)


def _serve_pixel_values(tmp_path):
    path = export_encoder(ContrastiveModel(small_cnn((8, 8, 3), 4)), tmp_path / "e")
    loaded = tf.saved_model.load(str(path))  # kept: its functions hold its variables weakly
    return loaded.serve(np.full((2, 8, 8, 3), 200.0, "float32"))


def _pixel_value_encoder(tmp_path, capsys):
    rescaling = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Rescaling(1 / 255)])
    flat = keras.Sequential([rescaling, keras.layers.Flatten()])
    with pytest.warns(UserWarning, match=r"pass `aninfonce_tf.for_unit_images\(encoder\)`"):
        ContrastiveModel(flat)


def _other_out(tmp_path):
    _run(tmp_path, steps=20, losses="aninfonce")
    _run(tmp_path, steps=20, losses="aninfonce", seed=1)


# The synthetic recipe's command line, as the run directory's cases run it.
COMMAND = ["--smoke", "--losses", "aninfonce", "--export", "false"]


def _command(out) -> None:
    """Runs the synthetic recipe's command line into `out`, which must end in one line on
    stderr and exit status 2; raises that line as a `UsageError`."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as stop:
        runner.main(synthetic, [*COMMAND, "--out", str(out)])
    assert stop.value.code == 2 and stderr.getvalue().count("\n") == 1, stderr.getvalue()
    raise UsageError(stderr.getvalue().strip())


def _compare_command(tmp_path, *flags) -> None:
    """Runs `python -m aninfonce_tf.compare` on an image run of seed 0 in `tmp_path` with
    `flags`, which must end with exit status 2; raises its error line as a `UsageError`."""
    seed_dir = tmp_path / "run" / "seed_0"
    seed_dir.mkdir(parents=True)
    variant = {"projector": {"readout": {"grayscale": 0.7, "hue": 0.5}}, "steps": 10}
    run = {"readout_determinable": {"kept": ["grayscale"], "targets": {}, "seed": 0}}
    (seed_dir / "results.json").write_text(json.dumps({"run": run, "variants": {"x": variant}}))
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as stop:
        compare_main([f"--arm=x={tmp_path / 'run'}:x", *flags])
    assert stop.value.code == 2, stderr.getvalue()
    raise UsageError(stderr.getvalue().strip().splitlines()[-1])


def _flags_refused(out, *flags, main=None) -> None:
    """Runs a command line (the synthetic recipe's `--smoke` by default, or `main(argv)`)
    into `out` with `flags`, which must end with exit status 2 before `out` is made;
    raises its error line as a `UsageError`."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as stop:
        if main is None:
            runner.main(synthetic, [*COMMAND, "--out", str(out), *flags])
        else:
            main(["--smoke", "--out", str(out), *flags])
    assert stop.value.code == 2 and not out.exists(), stderr.getvalue()
    raise UsageError(stderr.getvalue().strip().splitlines()[-1])


def _bad_tf_configs(out) -> None:
    """Each malformed TF_CONFIG of a multi-worker run: one line, before `out` is made."""
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    bad = {
        "not JSON": ("{cluster", "TF_CONFIG is not JSON"),
        "no cluster": (json.dumps({"task": {"type": "worker"}}), "TF_CONFIG names no cluster"),
        "unknown task type": (
            json.dumps({"cluster": cluster, "task": {"type": "ps", "index": 0}}),
            "TF_CONFIG's task type 'ps' is not one of its cluster's",
        ),
        "index beyond the cluster": (
            json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 2}}),
            "TF_CONFIG's task is worker 2, beyond the cluster's 2 workers",
        ),
    }
    for text, message in bad.values():
        with (
            mock.patch.dict(os.environ, {"TF_CONFIG": text}),
            pytest.raises(UsageError, match=re.escape(message)),
        ):
            _flags_refused(out, "--strategy", "multiworker")
    with mock.patch.dict(os.environ, {"TF_CONFIG": bad["index beyond the cluster"][0]}):
        _flags_refused(out, "--strategy", "multiworker")


def _beyond_int32(out) -> None:
    """The int32 bound counts the wider of the latents and the embeddings."""
    with pytest.raises(UsageError, match=r"from 4 to 3579139 .* x embedding_dim=600 values"):
        _flags_refused(out, "--eval-size", "4000000", "--embedding-dim", "600")
    _flags_refused(out, "--eval-size", "2000000000")


def _too_large_for_memory(out) -> None:
    with pytest.raises(UsageError, match="`dim` 100000 .* needs about .* GB of memory"):
        _flags_refused(out, "--dim", "100000")
    _flags_refused(out, "--generator-draws", "1000000000")


def _image_sets_too_large_for_memory(out) -> None:
    """The rendered and VAE recipes' held-out images: one line before `out` is made."""
    with pytest.raises(UsageError, match="`readout_size` 2000000000 .* GB of memory"):
        _flags_refused(
            out, "--readout-size", "2000000000", main=lambda argv: runner.main(rendered, argv)
        )
    _flags_refused(out, "--eval-size", "2000000000", main=lambda argv: runner.main(mnist_vae, argv))


def _numbers_with_underscores(out) -> None:
    for flag, value in (("--steps", "4_0"), ("--eval-size", "2e9"), ("--high", "3_0")):
        with pytest.raises(UsageError, match=f"argument {flag}: expected"):
            _flags_refused(out, flag, value)
    _flags_refused(out, "--learning-rate", "1_0e-3")


def _lists_with_underscores(tmp_path) -> None:
    """`1_0` in a seed list, a list flag or compare's seed: refused, not read as 10."""
    out = tmp_path / "run"
    for flags, message in (
        (["--seeds", "0,1_0"], "argument --seeds: expected distinct non-negative integers"),
        (["--hidden-units", "6_4"], "`hidden_units` must be comma-separated positive widths"),
        (
            ["--losses", "infonce_ensemble", "--ensemble-temperatures", "0.1,1_0"],
            "`ensemble_temperatures` must be comma-separated numbers",
        ),
    ):
        with pytest.raises(UsageError, match=re.escape(message)):
            _flags_refused(out, *flags, main=lambda argv: runner.main(synthetic, argv))
    with pytest.raises(UsageError, match="argument --corner-seeds: expected distinct"):
        _sweep_flags_refused(tmp_path, "--design", "product", "--corner-seeds", "0,1_0")
    _compare_command(tmp_path, "--readout-check-seed", "1_0")


def _worker_gone(tmp_path) -> None:
    """A collective op whose peer died, as TensorFlow raises it in a multi-worker `fit`, or
    aborted while the trained encoder is saved: one line, exit status 1."""
    context = runner.RunContext(get_strategy("default"), chief=True, multi_worker=True)
    aborted = tf.errors.AbortedError(None, None, "Collective ops is aborted by: peer gone\n" * 30)
    lines = []
    for target, name, lost in (
        (runner.run_directory.RunDirectory, "save_variant", aborted),
        (
            ContrastiveModel,
            "fit",
            tf.errors.UnavailableError(
                None,
                None,
                "Collective ops is aborted by: failed to connect to all addresses\n" * 30,
            ),
        ),
    ):
        stderr = io.StringIO()
        with (
            mock.patch.object(runner.RunContext, "create", return_value=context),
            mock.patch.object(target, name, side_effect=lost),
            contextlib.redirect_stderr(stderr),
            pytest.raises(SystemExit) as stop,
        ):
            runner.main(synthetic, [*COMMAND, "--out", str(tmp_path / name)])
        assert stop.value.code == 1 and stderr.getvalue().count("\n") == 1, stderr.getvalue()
        lines.append(stderr.getvalue().strip())
    assert "AbortedError: Collective ops is aborted by: peer gone) while aninfonce" in lines[0]
    raise UsageError(lines[1])


def _diverged_run(tmp_path) -> None:
    """A run whose loss turns non-finite finishes, then ends in one line, exit status 1."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as stop:
        runner.main(synthetic, [*COMMAND, "--learning-rate", "1e30", "--out", str(tmp_path)])
    assert stop.value.code == 1 and stderr.getvalue().count("\n") == 1, stderr.getvalue()
    assert "stopped" in read_json(tmp_path / "results.json")["variants"]["aninfonce"]
    # A worker but the chief, with --seeds, writes no results.json and exits 1 too.
    worker = runner.RunContext(get_strategy("default"), chief=False, multi_worker=False)
    with (
        mock.patch.object(runner.RunContext, "create", return_value=worker),
        mock.patch.object(runner.RunContext, "work_dir", lambda _, run: run / "workers" / "1"),
        contextlib.redirect_stderr(io.StringIO()) as worker_stderr,
        pytest.raises(SystemExit) as stop,
    ):
        argv = [*COMMAND, "--learning-rate", "1e30", "--seeds", "0", "--out", str(tmp_path / "w")]
        runner.main(synthetic, argv)
    assert stop.value.code == 1 and "(seed 0) stopped" in worker_stderr.getvalue()
    assert not (tmp_path / "w" / "seed_0" / "results.json").exists()
    raise UsageError(stderr.getvalue().strip())


def _sweep_flags_refused(out, *flags) -> None:
    _flags_refused(out / "run", *flags, main=lambda argv: sweep.main(rendered, argv))


def _sweep_strategy_and_sizes(tmp_path) -> None:
    """The sweeps' strategy and int32 sizes: one line, exit status 2, before the run's
    first line and before `--out` or its parents are made."""
    out = tmp_path / "n1" / "n2" / "run"
    bad_tf_config = {"TF_CONFIG": "{cluster"}
    for module, flags, environment, message in (
        (rendered, ["--strategy", "tpu"], {}, "found no TPU"),
        (rendered, ["--strategy", "multiworker"], bad_tf_config, "TF_CONFIG is not JSON"),
        (synthetic, ["--eval-size", "2000000000"], {}, "`eval_size` must be from 4"),
    ):
        stdout = io.StringIO()
        with (
            mock.patch.dict(os.environ, environment),
            contextlib.redirect_stdout(stdout),
            pytest.raises(UsageError, match=re.escape(message)),
        ):
            _flags_refused(out, *flags, main=lambda argv, m=module: sweep.main(m, argv))
        assert stdout.getvalue() == "" and not (tmp_path / "n1").exists(), stdout.getvalue()
    raise UsageError(message)


def _out_that_is_a_file(tmp_path, under: bool) -> None:
    (tmp_path / "file").write_text("not a directory")
    _command(tmp_path / "file" / "run" if under else tmp_path / "file")


def _read_only_out(tmp_path) -> None:
    # As root every directory is writable: the check is shown the answer a user gets.
    with mock.patch("aninfonce_tf.runner.cli.os.access", return_value=False):
        _command(tmp_path)


def _locked_out(tmp_path):
    with lock_run_directory(tmp_path):
        _command(tmp_path)


def _deleted_lock_file(tmp_path):
    with lock_run_directory(tmp_path):
        (tmp_path / ".lock").unlink()
        _command(tmp_path)


def _workers_given_different_flags(tmp_path):
    # Each worker's digest as another worker would gather it: theirs differs.
    other_worker = lambda strategy, digest: [digest, digest + 1]  # noqa: E731
    with mock.patch.object(distribute, "gather_from_workers", other_worker):
        runner.identity.check_workers_agree(get_strategy("default"), SMOKE)


def _out_of_others(tmp_path):
    (tmp_path / "figure.png").write_bytes(b"\x89PNG")
    (tmp_path / "results.json").write_text(json.dumps({"accuracy": 0.9}))
    _command(tmp_path)


def _corrupt_json_in_out(tmp_path):
    config, _ = runner.parse_config(synthetic.PRESETS, COMMAND, smoke=synthetic.SMOKE)
    (tmp_path / "config.json").write_text('{"run": {,}')
    with pytest.raises(UsageError, match="config.json does not read as JSON .*: pass a new --out"):
        _command(tmp_path)
    write_json(tmp_path / "config.json", dataclasses.asdict(config))
    (tmp_path / "results.json").write_text('{"run": {,}')
    _command(tmp_path)


def _damaged_vae_cache(tmp_path):
    with mock.patch.object(VAE, "fit"):  # its training is not at stake
        _, directory = trained_decoder(2, steps=1, cache_dir=tmp_path)
    (directory / "decoder.keras").write_bytes(b"a .keras file cut short")
    trained_decoder(2, steps=1, cache_dir=tmp_path)


def _non_finite(tmp_path):
    model = _model()
    model.compile("adam", concentration_optimizer=1e-2)
    stop = StopOnNonFiniteLoss()
    bad = np.where(np.arange(6) == 2, np.nan, X).astype("float32")
    model.fit((bad, X), batch_size=4, callbacks=[stop], verbose=0)
    raise RuntimeError(f"stopped at step {stop.stopped_at}")


# Names a loss variant cannot have: each would name a path, or a directory of the run's.
BAD_LOSS_NAMES = ["..", "/abs/path", "a,b", "backup", "", "a/b", "1st"]


def _bad_loss_names(tmp_path):
    for name in BAD_LOSS_NAMES[:-1]:
        with pytest.raises(ValueError, match=re.escape(f"got {name!r}.")):
            register_loss(name)
    register_loss(BAD_LOSS_NAMES[-1])


def _interrupted(run_dir, build=synthetic.build, **overrides):
    """A run of `SMOKE` (one variant unless `overrides` say otherwise) stopped at step
    20 of its last variant, with that variant's backup kept."""
    config = dataclasses.replace(SMOKE, **{"losses": "aninfonce", **overrides})
    names = config.loss_names()

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if self.model.name == names[-1]:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run(config, build, run_dir, verbose=0, callbacks=[Interrupt()])
    return config


def _backup_of_another_run(tmp_path):
    _interrupted(tmp_path / "other", seed=1)
    config = dataclasses.replace(SMOKE, losses="aninfonce")
    runner.run_directory.RunDirectory(tmp_path / "run", code=[code_version()]).write_config(config)
    shutil.copytree(tmp_path / "other" / "backup", tmp_path / "run" / "backup")
    _run(tmp_path / "run", losses="aninfonce")


def _renamed_checkpoint(tmp_path):
    _interrupted(tmp_path)
    backup = tmp_path / "backup" / "aninfonce"
    (backup / "step-000020.weights.h5").rename(backup / "step-000100.weights.h5")
    _run(tmp_path, losses="aninfonce")


def _lost_history(tmp_path):
    _interrupted(tmp_path)
    (tmp_path / "aninfonce" / "history.json").unlink()
    with pytest.raises(UsageError, match="lacks the evaluations at steps \\[20\\]"):
        _run(tmp_path, losses="aninfonce")
    shutil.rmtree(tmp_path / "aninfonce")  # the whole variant directory
    _run(tmp_path, losses="aninfonce")


def _resumed_without_the_plug_in(tmp_path):
    user_file = tmp_path.parent / f"{tmp_path.name}_plug_in.py"  # beside the run directory
    user_file.write_text("X = 1\n")
    with mock.patch.object(runner.identity, "USER_CODE", [user_file]):
        _interrupted(tmp_path)
    with mock.patch.object(runner.identity, "USER_CODE", []):
        _run(tmp_path, losses="aninfonce")


def _with_linear_evaluation(epochs):
    def build(config):
        experiment = synthetic.build(config)
        protocol = {"linear_evaluation": {"epochs": epochs}}
        return dataclasses.replace(experiment, metadata={**experiment.metadata, **protocol})

    return build


def _other_final_evaluation(tmp_path):
    losses = "aninfonce,infonce"
    _interrupted(tmp_path, _with_linear_evaluation(1), losses=losses)  # aninfonce finished
    runner.run(dataclasses.replace(SMOKE, losses=losses), _with_linear_evaluation(40), tmp_path)


def _seeds_of_other_final_evaluations(tmp_path):
    config = dataclasses.replace(SMOKE, losses="aninfonce", steps=20)
    runner.run_seeds(config, _with_linear_evaluation(1), tmp_path, [0], verbose=0)
    runner.run_seeds(config, _with_linear_evaluation(40), tmp_path, [1], verbose=0)


def _seeds_of_other_code(tmp_path):
    config = dataclasses.replace(SMOKE, losses="aninfonce", steps=20)
    runner.run_seeds(config, synthetic.build, tmp_path, [0], verbose=0)
    other_code = {**code_version(), "source_sha256": "0" * 64}
    with mock.patch.object(runner.identity, "code_version", lambda: other_code):
        summary = runner.run_seeds(
            config, synthetic.build, tmp_path, [1], verbose=0, allow_code_change=True
        )
    assert summary["seeds"] == [0, 1]
    assert [code[-1]["source_sha256"] for code in summary["code"].values()] == [
        code_version()["source_sha256"],
        "0" * 64,
    ]
    try:
        runner.run_seeds(config, synthetic.build, tmp_path, [2], verbose=0)
    finally:
        assert not (tmp_path / "seed_2").exists()  # refused before training


_PNG = tf.io.encode_png(np.zeros((6, 6, 3), "uint8")).numpy()


CASES = {
    "a malformed TF_CONFIG (--strategy multiworker)": (
        lambda p: _bad_tf_configs(p / "run"),
        UsageError,
        "error: TF_CONFIG's task is worker 2, beyond the cluster's 2 workers \\(indices 0 to "
        "1\\): set it on each worker to JSON such as .* each worker with its own index",
    ),
    "--strategy tpu without a TPU": (
        lambda p: _flags_refused(p / "run", "--strategy", "tpu"),
        UsageError,
        "error: `strategy` 'tpu' found no TPU at `tpu` 'local' \\(NotFoundError: .*\\): run on "
        "a TPU VM",
    ),
    "--eval-size (or --batch-size, --alignment-pairs) beyond int32 (synthetic)": (
        lambda p: _beyond_int32(p / "run"),
        UsageError,
        "error: `eval_size` must be from 4 to 357913941 \\(half fits, half scores; TensorFlow "
        "counts the eval_size x dim=6 latents' values in int32\\); got 2000000000\\.$",
    ),
    "a --generator-draws or --dim that exceeds the memory (synthetic)": (
        lambda p: _too_large_for_memory(p / "run"),
        UsageError,
        "error: `generator_draws` 1000000000 at `dim` 6 \\(the generator's candidate 6 x 6 "
        "float64 matrices, 4 copies\\) needs about 1152.0 GB of memory and this machine has "
        ".* GB: pass a smaller --generator-draws",
    ),
    "held-out images beyond the memory (rendered --eval-size or --readout-size, VAE --eval-size)": (
        lambda p: _image_sets_too_large_for_memory(p / "run"),
        UsageError,
        "error: `eval_size` 2000000000 \\(28 x 28 x 1 float32 images held whole\\) needs about "
        "12544.0 GB of memory and this machine has .* GB: pass a smaller --eval-size\\.$",
    ),
    "a sweep's --strategy tpu, malformed TF_CONFIG or int32 --eval-size": (
        _sweep_strategy_and_sizes,
        UsageError,
        "`eval_size` must be from 4",
    ),
    "a worker of a multi-worker run that is gone": (
        _worker_gone,
        UsageError,
        "error: A worker of this run is gone \\(killed, stalled or cut off; UnavailableError: "
        "Collective ops is aborted by: failed to connect to all addresses\\) while aninfonce "
        "trained or was saved: rerun every worker with the same command, and the run resumes "
        "from its last backup\\.$",
    ),
    "--rotation-gain above 100": (
        lambda p: _flags_refused(p / "run", "--rotation-gain", "1e6"),
        UsageError,
        "error: `rotation_gain` must be a finite number above 0 and at most 100, or 0 \\(no "
        "rotation\\); got 1000000.0",
    ),
    "a run whose loss turns non-finite": (
        _diverged_run,
        UsageError,
        "error: aninfonce stopped at a non-finite loss by step \\d+ \\(its scores in .* are "
        "from the last evaluation before\\): try a smaller --learning-rate \\(or check the data "
        "for NaN\\), into a new --out\\.$",
    ),
    "a numeric flag written with an underscore (1_0)": (
        lambda p: _numbers_with_underscores(p / "run"),
        UsageError,
        "error: argument --learning-rate: expected a number such as 0.95 or 1e-3; got '1_0e-3'$",
    ),
    "a seed list, list flag or compare seed written with an underscore (1_0)": (
        _lists_with_underscores,
        UsageError,
        "error: argument --readout-check-seed: expected an integer such as 4096; got '1_0'$",
    ),
    "views with different row counts": (
        lambda _: _fit(X, X[:5]),
        ValueError,
        "`view1` has 8 rows and `view2` 5: each row of view1 pairs with the row of view2 in "
        "its place; give both views as many rows\\.",
    ),
    "views with different row counts, batched in tf.data": (
        lambda _: _fit_dataset(
            tf.data.Dataset.zip(
                tf.data.Dataset.from_tensor_slices(X).batch(4),
                tf.data.Dataset.from_tensor_slices(X[:6]).batch(3),
            )
        ),
        tf.errors.InvalidArgumentError,
        "`view1` and `view2` must have as many rows .*Rows of view1, then of view2.*4.*3",
    ),
    "a loss name that is no plain identifier, or a run directory's (register_loss)": (
        _bad_loss_names,
        ValueError,
        "A loss variant's name must be a plain identifier \\(letters, digits and _, not "
        "starting with a digit\\) other than backup, tensorboard, tensorboard_unreadable, "
        "workers: it names the variant's directory in a run directory and its Keras model; "
        "got '1st'\\.$",
    ),
    "views of different widths": (
        lambda _: _fit(X, X[:, :5]),
        ValueError,
        "`view1` and `view2` must have the same shape",
    ),
    "an infinite dataset without steps_per_epoch": (
        lambda _: _fit_dataset(tf.data.Dataset.from_tensors((X, X)).repeat()),
        ValueError,
        "The dataset is infinite \\(it repeats without end\\) and `steps_per_epoch` is not "
        "given: `fit` would never end its first epoch. Pass `steps_per_epoch`, or end the "
        "dataset",
    ),
    "an infinite dataset evaluated without steps": (
        lambda _: _model().evaluate(tf.data.Dataset.from_tensors((X, X)).repeat(), verbose=0),
        ValueError,
        "The dataset is infinite \\(it repeats without end\\) and `steps` is not given: "
        "`evaluate` would never end\\. Pass `steps`, or end the dataset",
    ),
    "a number of steps below 1 to fit or evaluate": (
        lambda _: _model().evaluate(tf.data.Dataset.from_tensors((X, X)).repeat(), steps=0),
        ValueError,
        "`steps` must be a positive number of batches, or None \\(until the data ends\\); got 0",
    ),
    "an infinite validation dataset without validation_steps": (
        lambda _: _fit_dataset(
            tf.data.Dataset.from_tensors((X, X)),
            validation_data=tf.data.Dataset.from_tensors((X, X)).repeat(),
        ),
        ValueError,
        "The dataset is infinite \\(it repeats without end\\) and `validation_steps` is "
        "not given: `fit` would never validate\\. Pass `validation_steps`",
    ),
    "a batch of one pair": (lambda _: _fit(X[:1], X[:1]), ValueError, "at least 2"),
    "a rotation gain of 0, negative, not finite, a bool (Python's or NumPy's) or 0 in float32": (
        lambda _: LearnedRotation(0.0),
        ValueError,
        "`gain` must be a finite number above 0",
    ),
    "embeddings of rank 3": (
        lambda _: functional.info_nce(np.zeros((4, 2, 3)), np.zeros((4, 2, 3))),
        ValueError,
        "must have rank 2",
    ),
    "an encoder whose output is not flat": (
        lambda _: ContrastiveModel(
            keras.Sequential([keras.Input((6,)), keras.layers.Reshape((2, 3))])
        ),
        ValueError,
        "must be \\[batch, features\\]; got shape \\(None, 2, 3\\) from the encoder: end",
    ),
    "a dataset of single views, not batched": (
        lambda _: _fit_dataset(tf.data.Dataset.from_tensor_slices((X, X))),
        ValueError,
        "the encoder takes \\(None, 6\\): each element of the data must be a batch of views",
    ),
    "`fit(x, y)` with labels as y": (
        lambda _: _fit(X, np.arange(8.0)),
        ValueError,
        "`fit\\(x, y\\)` and `\\(x, y\\)` batches are read as the two views",
    ),
    "a dataset of (features, labels) batches": (
        lambda _: _fit_dataset(tf.data.Dataset.from_tensor_slices((X, np.arange(8.0))).batch(4)),
        ValueError,
        "`fit\\(x, y\\)` and `\\(x, y\\)` batches are read as the two views",
    ),
    "float images outside [0, 1] for SimCLRAugment": (
        lambda _: SimCLRAugment(image_size=4)(np.full((2, 6, 6, 3), 255.0), seed=0),
        ValueError,
        "float `images` must lie in \\[0, 1\\] \\(`value_range`\\); for images in \\[0, 255\\] pass",
    ),
    "`pair_batches`' `batch_size`, `seed`, `shuffle`, `canvas`, `start` or `stream` not a "
    "whole number in range (0, -1, 2.5, True)": (
        lambda _: pair_batches({"image": np.zeros((4, 6, 6, 3), "uint8")}, SimCLRAugment(), 0),
        ValueError,
        "`batch_size` must be an integer of at least 1; got 0",
    ),
    "`SimCLRAugment`'s probabilities and bounds given as bools or text, its flags as text": (
        lambda _: SimCLRAugment(flip_probability=True),
        ValueError,
        "`flip_probability` must lie in \\[0, 1\\]; got True",
    ),
    "`IdentifiabilityEvaluator` given a block index outside the latents, a true Lambda of "
    "another length or not positive, latents not finite or of other rows than the "
    "observations, a `batch_size` that is not a positive integer": (
        lambda _: IdentifiabilityEvaluator(np.zeros((8, 6)), np.zeros((8, 6)), {"a": [-1]}),
        ValueError,
        "`blocks\\['a'\\]` must list latent indices from 0 to 5; got \\[-1\\]",
    ),
    "`export_encoder` given a plain Keras model, or an `input_spec` that is not a "
    "`tf.TensorSpec`": (
        lambda p: export_encoder(keras.Sequential([keras.Input((6,))]), p / "a"),
        TypeError,
        "`model` must be a ContrastiveModel .* got Sequential. Wrap an encoder as",
    ),
    "PNG files given to pair_batches without decode": (
        lambda _: pair_batches(
            {"image": np.array([_PNG, _PNG], object), "label": np.arange(2)},
            SimCLRAugment(image_size=4),
            batch_size=2,
        ),
        ValueError,
        "`examples` hold encoded images that are not JPEG files \\(PNGs\\?\\), which the views "
        "read only decoded: pass `decode`",
    ),
    "observations the encoder does not take": (
        lambda _: _fit(X[:, :5], X[:, :5]),
        ValueError,
        "expected axis -1 of input shape to have value 6",
    ),
    "views that are not numbers": (
        lambda _: _fit(np.full((8, 6), "a"), np.full((8, 6), "b")),
        TypeError,
        "`view1` must hold numbers; got dtype string",
    ),
    "a batch that is not a pair": (lambda _: _fit(X, X, X), TypeError, "`\\(view1, view2\\)`"),
    "a dict without view2": (
        lambda _: _fit({"view1": X, "z": X}),
        TypeError,
        "missing \\['view2'\\]",
    ),
    "an empty dataset": (
        lambda _: _fit_dataset(tf.data.Dataset.from_tensor_slices((X[:0], X[:0])).batch(4)),
        ValueError,
        "`fit` ran no training step",
    ),
    "NaN or inf in the data": (_non_finite, RuntimeError, "stopped at step 1"),
    "a global batch that replicas cannot split": (
        lambda _: distribute_global_batches(
            get_strategy("mirrored"), lambda: tf.data.Dataset.range(1), 7
        ),
        ValueError,
        "`batch_size` \\(7\\) must be divisible by the 2 replicas",
    ),
    "a cosine InfoNCE with Lambda_hat": (
        lambda _: _model().compile("adam", loss=InfoNCE()),
        ValueError,
        "cosine InfoNCE normalises away",
    ),
    "AnInfoNCE without Lambda_hat": (
        lambda _: _model(scaling=False).compile("adam", loss=AnInfoNCE()),
        ValueError,
        "AnInfoNCE needs",
    ),
    "an alignment matrix of another shape or not finite": (
        lambda _: _aligned_model().alignment.set_matrix(np.eye(3)),
        ValueError,
        "`matrix` must be \\[4, 4\\]; got shape \\(3, 3\\)",
    ),
    "`embed_aligned` of a model without an alignment": (
        lambda _: _model().embed_aligned(X),
        ValueError,
        "This model has no `alignment`",
    ),
    "`compile(metrics=[...])` on a ContrastiveModel": (
        lambda _: _model().compile("adam", metrics=["accuracy"]),
        ValueError,
        "`metrics` cannot be used: Keras metrics compare outputs with targets",
    ),
    "a non-positive temperature": (lambda _: InfoNCE(temperature=0.0), ValueError, "temperature"),
    "a vanishing temperature": (
        lambda _: InfoNCE(temperature=1e-30),
        ValueError,
        "`temperature` must be one or more positive, finite numbers \\(at least 0.0001\\)",
    ),
    "a concentration out of range": (
        lambda _: [DiagonalScaling(value) for value in (1e39, 1e-45)],
        ValueError,
        "`initial_concentration` must be .* each in \\[1e-06, 1000000.0\\]",
    ),
    "a NaN or huge initial noise": (
        lambda _: [DiagonalScaling(5.0, initial_noise=v) for v in (float("nan"), 1e6)],
        ValueError,
        "`initial_noise` must be a number in \\[0, 3.0\\]",
    ),
    "NaN ensemble weights": (
        lambda _: InfoNCE(temperature=[0.1, 0.5], ensemble_weights=[float("nan"), 1.0])(X, X),
        ValueError,
        "`ensemble_weights` must be finite",
    ),
    "a NaN hard-negative beta": (
        lambda _: InfoNCE(hard_negative_beta=float("nan")),
        ValueError,
        "`hard_negative_beta` must be a finite number",
    ),
    "`fit`'s `batch_size`, `compile`'s `steps_per_execution` or `EvaluationCallback`'s "
    "`every_epochs` not a positive integer (0, -3, 2.5, True, '4')": (
        lambda _: _model().fit((X, X), batch_size=0, verbose=0),
        ValueError,
        "`batch_size` must be a positive number of pairs, or None \\(Keras' 32\\); got 0",
    ),
    'a flag given as text (`normalize="no"`, `tied="no"`, `batch_norm="no"`)': (
        lambda _: ContrastiveModel(keras.Sequential([keras.Input((6,))]), normalize="no"),
        TypeError,
        "`normalize` must be True or False; got 'no'",
    ),
    'an encoder or projector that is not a Keras model or layer (`None`, `"resnet18"`, `16`)': (
        lambda _: ContrastiveModel("resnet18"),
        TypeError,
        "`encoder` must be a Keras model or layer; got str",
    ),
    "a concentration, noise or width given as text or a bool "
    '(`DiagonalScaling("8")`, `initial_noise=True`, `projection_head([8], True)`)': (
        lambda _: DiagonalScaling("8"),
        ValueError,
        "`initial_concentration` must be a positive float or a 1-D sequence",
    ),
    "a loss option given as a bool or text, or beyond float32": (
        lambda _: InfoNCE(temperature=True),
        ValueError,
        "`temperature` must be .* that float32 holds; got True",
    ),
    "a LARS or CoupledSGD setting that is not a finite number in range (`weight_decay=inf`, "
    "`learning_rate=nan`, `momentum=True`, `trust_coefficient=0`) or a flag as text "
    '(`exclude_vectors="no"`)': (
        lambda _: optimizers.LARS(weight_decay=float("inf")),
        ValueError,
        "`weight_decay` must be a finite non-negative number; got inf",
    ),
    "a DiagonalScaling seed that is not None or a non-negative integer (`seed=-1`, `seed=2.5`)": (
        lambda _: DiagonalScaling(5.0, seed=-1),
        ValueError,
        "`seed` must be None or a non-negative integer; got -1",
    ),
    "a NaN or infinite temperature": (
        lambda _: [InfoNCE(temperature=t) for t in (float("inf"), float("nan"))],
        ValueError,
        "`temperature` must be one or more positive, finite numbers",
    ),
    "a boolean concentration_optimizer": (
        lambda _: _model().compile("adam", concentration_optimizer=True),
        TypeError,
        "`concentration_optimizer` must be an optimizer, its name or a learning rate; got True",
    ),
    "a negative concentration_optimizer": (
        lambda _: _model().compile("adam", concentration_optimizer=-0.05),
        ValueError,
        "`concentration_optimizer` as a learning rate must be finite and not negative",
    ),
    "--weight-decay with --optimizer adam": (
        lambda p: _run(p, optimizer="adam", weight_decay=1e-4),
        ValueError,
        "`weight_decay` \\(0.0001\\) would be ignored by `optimizer` adam",
    ),
    "a last batch of one row": (
        # 9 rows in batches of 4 under the default XLA compile, which drops assertions.
        lambda _: _fit_dataset(
            tf.data.Dataset.from_tensor_slices((X[[*range(8), 0]],) * 2).batch(4)
        ),
        tf.errors.InvalidArgumentError,
        "at least 2 rows",
    ),
    "an unknown loss variant": (lambda _: loss_variant("simclr"), ValueError, "simclr"),
    "an unknown similarity": (lambda _: InfoNCE(similarity="dot"), ValueError, "similarity"),
    "an unknown latent space": (
        lambda _: SyntheticSetup(concentration_preset("linear"), space="torus"),
        ValueError,
        "`space` 'torus'",
    ),
    "an unknown concentration preset": (
        lambda _: concentration_preset("cubic"),
        ValueError,
        "'cubic'",
    ),
    "an unknown strategy": (lambda _: get_strategy("horovod"), ValueError, "`strategy`"),
    "an unknown optimizer": (lambda p: _run(p, optimizer="lamb"), ValueError, "`optimizer`"),
    "muon exclusions for another optimizer": (
        lambda p: _run(p, optimizer="adam", muon_exclude="hidden"),
        ValueError,
        "`muon_exclude`",
    ),
    "steps not a multiple of eval_every": (
        lambda p: _run(p, steps=30),
        ValueError,
        "`eval_every`",
    ),
    "a --stop-at score a variant lacks": (
        lambda p: _run(p, stop_at="lambda_spearman=0.9"),
        ValueError,
        "'infonce' does not produce",
    ),
    "a NaN or infinite --stop-at target": (
        lambda p: _run(p, stop_at="linear_r2=0.9,mcc=nan"),
        ValueError,
        "`stop_at` targets must be finite numbers; got 'mcc=nan'",
    ),
    "a --stop-patience above 1 without --stop-at": (
        lambda p: _run(p, stop_patience=2),
        ValueError,
        r"`stop_patience` \(2\) counts evaluations at the `stop_at` targets: give `stop_at`",
    ),
    "a --stop-patience above the run's evaluations": (
        lambda p: _run(p, stop_at="mcc=0.9", stop_patience=3),
        ValueError,
        r"`stop_patience` \(3\) is more than the 2 evaluations of `steps` \(40\) every",
    ),
    "a --stop-patience that is not a positive integer": (
        lambda p: _run(p, stop_at="mcc=0.9", stop_patience=0),
        ValueError,
        "`stop_patience` must be positive; got 0",
    ),
    "a --stop-at score given two targets": (
        lambda p: _run(p, stop_at="mcc=0,mcc=0.99"),
        ValueError,
        "`stop_at` gives 'mcc' two targets",
    ),
    "a --stop-at `=` target of a score of unknown direction": (
        lambda _: EvaluationCallback(UndeclaredEvaluator(), stop_at=parse_targets("score=0.5")),
        ValueError,
        "`stop_at` target score=0.5 has no direction.*write score>=0.5 or score<=0.5",
    ),
    "a --stop-at `=` target of the augmentation readout": (
        lambda p: _run_recipe(photos, p, stop_at="backbone/augmentation_readout=0.6"),
        ValueError,
        re.escape(
            "`stop_at` target backbone/augmentation_readout=0.6 has no direction: neither "
            "higher nor lower is better for it (its evaluator's `undirected_scores`); write "
            "backbone/augmentation_readout>=0.6 or backbone/augmentation_readout<=0.6."
        ),
    ),
    "--vae-steps 0 or negative": (
        lambda _: _smoke(mnist_vae, vae_steps=0).validate(),
        ValueError,
        "`vae_steps` must be at least 1 \\(Keras would read 0 as: until the data ends\\)",
    ),
    "a config field given from Python a value of another type than it declares "
    '(`batch_size=100.5`, `steps=True`, `export="yes"`, `stop_at=None`)': (
        lambda p: _run(p, batch_size=100.5),
        ValueError,
        "`batch_size` must be an integer; got 100.5",
    ),
    "a --seed outside [0, 2**32 - 1]": (
        lambda p: _run(p, seed=2**32),
        ValueError,
        "`seed` must be an integer from 0 to 4294967295",
    ),
    "--eval-size below 4 (synthetic, VAE)": (
        lambda p: _run(p, eval_size=1),
        ValueError,
        "`eval_size` must be (at least|from) 4",
    ),
    "--hidden-units with a layer of 0 units": (
        lambda p: _run(p, hidden_units="32,0"),
        ValueError,
        "`hidden_units` must be comma-separated positive widths",
    ),
    "--readout-size 0 (rendered)": (
        lambda p: _run_recipe(rendered, p, readout_size=0),
        ValueError,
        "`readout_size` must be at least 1",
    ),
    "--flip-probability or --grayscale-probability outside [0, 1] (rendered)": (
        lambda p: _run_recipe(rendered, p, grayscale_probability=1.5),
        ValueError,
        r"`grayscale_probability` must lie in \[0, 1\]; got 1.5",
    ),
    "compare --readout-targets naming a target a run did not score": (
        lambda _: listed_readout({"x": {0: {"projector/readout/hue": 0.5}}}, ["hue", "blur"]),
        ValueError,
        re.escape(
            "`--readout-targets`: seed 0 of the arm 'x' scored no projector readout of "
            "['blur']; it scored ['hue']."
        ),
    ),
    "compare --readout-targets of runs without a per-target readout": (
        lambda _: listed_readout({"x": {0: {"backbone/mcc": 0.5}}}, ["hue"]),
        ValueError,
        "seed 0 of the arm 'x' scored no readout target .*: give image runs",
    ),
    "compare --readout-targets with no target": (
        lambda p: _compare_command(p, "--readout-targets", ","),
        UsageError,
        "`--readout-targets` names no target: give them comma-separated",
    ),
    "compare --readout-targets with --common-readout": (
        lambda p: _compare_command(p, "--readout-targets", "hue", "--common-readout"),
        UsageError,
        "`--readout-targets` and `--common-readout` are two rules for the readout's targets: "
        "give one",
    ),
    "a flag given twice on one command line": (
        lambda p: _flags_refused(p / "run", "--steps", "6", "--steps=8"),
        UsageError,
        "error: --steps is given twice: give each flag once$",
    ),
    "a loss named twice in --losses": (
        lambda p: _run(p, losses="aninfonce,aninfonce"),
        ValueError,
        "`losses` names \\['aninfonce'\\] more than once \\('aninfonce,aninfonce'\\): each "
        "variant trains once into its own directory; name each once\\.",
    ),
    "a --stop-at number written with an underscore (1_0)": (
        lambda p: _run(p, stop_at="mcc=1_0"),
        ValueError,
        "`stop_at` must look like 'mcc=0.95,.*got 'mcc=1_0'",
    ),
    "a --grid-* value that is not a number (rendered_sweep)": (
        lambda p: _sweep_flags_refused(p, "--grid-crop-min-scale", "0.4,1_0"),
        UsageError,
        "error: argument --grid-crop-min-scale: expected comma-separated numbers such as "
        "0.4,0.8; got '0.4,1_0'$",
    ),
    "--corner-seeds that are not seeds (rendered_sweep)": (
        lambda p: _sweep_flags_refused(p, "--design", "product", "--corner-seeds", "0,x"),
        UsageError,
        "error: argument --corner-seeds: expected distinct non-negative integers such as "
        "0,1,2; got '0,x'$",
    ),
    "a --grid-crop-min-scale below 0.4 (rendered_sweep)": (
        lambda p: sweep.run_cells(
            rendered.SWEEP,
            rendered.build,
            p,
            [({"crop_min_scale": 0.2}, [0])],
            rendered.SWEEP_LIMITS,
        ),
        UsageError,
        "`crop_min_scale` 0.2, below 0.4: smaller crops lose the object from view .*\\. Pass "
        "--allow-below-limits to run it anyway",
    ),
    "`SimCLRAugment(value_range=(-1, 1))`": (
        lambda _: SimCLRAugment(value_range=(-1, 1)),
        ValueError,
        r"`value_range` must be \(0, 1\) or \(0, 255\), the range of float images",
    ),
    '`augment_pairs(..., view_dtype="float16")`': (
        lambda _: augment_pairs(
            tf.data.Dataset.from_tensors(np.zeros((2, 6, 6, 3), "uint8")),
            SimCLRAugment(image_size=4),
            view_dtype="float16",
        ),
        ValueError,
        r"`view_dtype` must be one of \('float32', 'uint8'\); got 'float16'",
    ),
    "float images in [0, 255] into an export's `serve` or `embed` (exported for [0, 1])": (
        lambda p: _serve_pixel_values(p),
        tf.errors.InvalidArgumentError,
        r"float `images` must lie in \[0, 1\] \(`value_range`\)",
    ),
    "`train --data` a path that does not exist, a folder without images, an unreadable .npy/.npz": (
        lambda p: _run_recipe(train, p, data=str(p / "missing")),
        ValueError,
        "--data .*missing: no such file or folder",
    ),
    "`train --data tfds:NAME` not prepared in `--data-dir`": (
        lambda p: _run_recipe(train, p, data="tfds:mnist", data_dir=str(p)),
        ValueError,
        "mnist is not prepared in .*: prepare it first with `tfds build mnist --data_dir",
    ),
    "`train` float arrays in [0, 255]": (
        lambda p: _run_recipe(train, p, data=_float_pixel_arrays(p)),
        ValueError,
        r"float images reach 25.*, beyond \[0, 1\]: pass --value-range 255",
    ),
    "`train --data` a folder with an unreadable image": (
        lambda p: _run_recipe(train, p, data=_folder_with_a_broken_image()),
        ValueError,
        "broken.png is not a readable image \\(JPEG, PNG, GIF or BMP\\): remove it or fix it",
    ),
    "`train --batch-size` above the training images": (
        lambda p: _run_recipe(train, p, mock_data=True, batch_size=300),
        ValueError,
        r"`batch_size` 300 is more than the 216 training images \(of 256\)",
    ),
    "`train --backbone` unknown, a missing file or function, `--weights` not a local file": (
        lambda p: _run_recipe(train, p, mock_data=True, backbone="NoSuchNet"),
        ValueError,
        "Unknown backbone 'NoSuchNet': give one of small_cnn",
    ),
    "`cifar10`/`imagenet` with a `--data-dir` that holds no prepared dataset": (
        lambda p: _run_recipe(cifar10, p, mock_data=False, data_dir=str(p)),
        ValueError,
        "The tfds dataset 'cifar10' is not prepared in .*: run `tfds build cifar10",
    ),
    "`cifar10 --smoke --data-dir DIR`": (
        lambda p: _run_recipe(cifar10, p, data_dir=str(p)),
        ValueError,
        r"names your tfds data, but --mock-data \(which --smoke sets\) trains on tfds' random",
    ),
    '`compile(jit_compile="yes")`': (
        lambda _: _model().compile("adam", jit_compile="yes"),
        ValueError,
        "`jit_compile` must be True, False or 'auto'",
    ),
    "--patches-per-photo 0 (photos)": (
        lambda p: _run_recipe(photos, p, patches_per_photo=0),
        ValueError,
        "`patches_per_photo` must be at least 1",
    ),
    "--linear-eval-split 10pct off ImageNet (cifar10)": (
        lambda p: _run_recipe(cifar10, p, linear_eval_split="10pct"),
        ValueError,
        "`linear_eval_split` 10pct is SimCLR's subset of ImageNet's training images, which "
        "cifar10 lacks: pass --linear-eval-split train",
    ),
    "--learning-rate-scaling linear without --base-learning-rate (imagenet)": (
        lambda p: _run_recipe(imagenet, p, learning_rate_scaling="linear"),
        ValueError,
        "`learning_rate_scaling` linear with `base_learning_rate` 0.075, a base rate of the "
        "sqrt rule, .*: SimCLR's pairs are linear 0.3 x B / 256 and sqrt 0.075 x sqrt\\(B\\); "
        "pass --base-learning-rate for the linear rule too",
    ),
    "--learning-rate-scaling sqrt with no base learning rate (photos)": (
        lambda p: _run_recipe(photos, p, learning_rate_scaling="sqrt"),
        ValueError,
        "`learning_rate_scaling` sqrt does nothing without `base_learning_rate`: pass "
        "--base-learning-rate too",
    ),
    "an --out that holds another config": (_other_out, ValueError, "another config \\(seed"),
    "another run's backup copied into --out": (
        _backup_of_another_run,
        UsageError,
        "The backup of aninfonce in .*/run/backup/aninfonce is not this run's: it was written "
        "by a run of another config \\(seed: 1 -> 0\\)\\. Delete .*/run/backup/aninfonce to "
        "train aninfonce from the start, or pass a new --out\\.$",
    ),
    "a backup checkpoint renamed to another step": (
        _renamed_checkpoint,
        UsageError,
        "step-000100.weights.h5 holds step 20, not the step 100 its name gives \\(a renamed "
        "file\\): delete .*/backup/aninfonce to train this variant from the start, or pass a "
        "new --out\\.$",
    ),
    "a lost history.json or variant directory beside a backup": (
        _lost_history,
        UsageError,
        "aninfonce/history.json lacks the evaluations at steps \\[20\\], before the step 20 "
        "that the backup of aninfonce resumes at \\(the file or its directory was lost\\): "
        "put it back, or delete .*/backup/aninfonce to train aninfonce from the start\\.$",
    ),
    "a resume without the --import plug-in that trained the run": (
        _resumed_without_the_plug_in,
        UsageError,
        "was trained by aninfonce_tf .* \\(source \\w+, --import and backbone files \\w+\\), "
        "this is aninfonce_tf .* \\(source \\w+\\): resuming would mix two versions",
    ),
    "a resume with other final-evaluation settings than its finished variants": (
        _other_final_evaluation,
        UsageError,
        "finished variants were scored on other parts, or by another final evaluation, than "
        "this run gives \\(linear_evaluation \\{'epochs': 1\\} -> \\{'epochs': 40\\}\\): the "
        "variants still to train would not compare with them",
    ),
    "--seeds summarising seeds scored by other final evaluations": (
        _seeds_of_other_final_evaluations,
        UsageError,
        "The seeds were scored by different final linear evaluations \\(seed 0: "
        "\\{'epochs': 1\\}; seed 1: \\{'epochs': 40\\}\\): their summary would average them\\. "
        "Rerun the seeds with the same --linear-eval-\\* flags, or into a new --out\\.$",
    ),
    "--seeds summarising seeds trained by other code": (
        _seeds_of_other_code,
        UsageError,
        "The seeds were trained by different code \\(seed 0: aninfonce_tf .*; seed 1: "
        "aninfonce_tf .* \\(source 000000000000\\); seed 2: .*\\): their summary would average two "
        "versions of the code\\. Pass --allow-code-change to summarise them with each seed's "
        "code recorded in summary.json, or a new --out\\.$",
    ),
    "an --out that is a file": (
        lambda p: _out_that_is_a_file(p, under=False),
        UsageError,
        "error: --out .*/file: .*/file is a file, not a directory: pass another --out\\.$",
    ),
    "an --out under a file": (
        lambda p: _out_that_is_a_file(p, under=True),
        UsageError,
        "error: --out .*/file/run: .*/file is a file, not a directory: pass another --out\\.$",
    ),
    "a read-only --out": (
        _read_only_out,
        UsageError,
        "error: --out .*: the run directory is read-only: make it writable \\(chmod u\\+w .*\\), "
        "or pass another --out\\.$",
    ),
    "an --out in use by another run (locked)": (
        _locked_out,
        UsageError,
        "is in use by another run \\(pid \\d+ on .+, started .+\\): wait for it to end, or "
        "pass another --out\\.$",
    ),
    "an --out in use by a run whose .lock file was deleted": (
        _deleted_lock_file,
        UsageError,
        "is in use by another run \\(a process whose .lock file, which names it, was "
        "deleted\\): wait for it to end, or pass another --out\\.$",
    ),
    "a sweep whose cells share a directory (a value given twice)": (
        lambda p: sweep.run_cells(
            dataclasses.replace(SMOKE, losses="aninfonce", steps=20),
            synthetic.build,
            p,
            [({"learning_rate": 0.01}, [0]), ({"learning_rate": 0.01}, [1])],
        ),
        UsageError,
        "the sweep's cells \\{'learning_rate': 0.01\\} and \\{'learning_rate': 0.01\\} share "
        "the directory learning_rate=0.01: give each value of an axis once\\.$",
    ),
    "workers of one run given different flags (--seed 0 and --seed 1)": (
        _workers_given_different_flags,
        UsageError,
        "The workers of this run were given different flags or code \\(digests \\['\\w+', "
        "'\\w+'\\], one per replica\\): every worker must run the same command with the same "
        "aninfonce_tf \\(TF_CONFIG aside\\)\\. Rerun every worker with the same flags\\.$",
    ),
    "an --out holding other files": (
        _out_of_others,
        UsageError,
        re.escape(
            "holds files that are not a run of aninfonce_tf (figure.png, results.json; no "
            "config.json): pass a new --out, or an empty one."
        ),
    ),
    "a corrupt config.json or results.json in --out": (
        _corrupt_json_in_out,
        UsageError,
        "results.json does not read as JSON \\(Expecting property name .*\\): delete it, or pass "
        "a new --out\\.$",
    ),
    "a --batch-size over TensorFlow's int32 limit": (
        lambda p: _run(p, batch_size=2**31),
        ValueError,
        "`batch_size` must be at most 1073741823 \\(TensorFlow indexes",
    ),
    "a --batch-size whose dense loss exceeds the memory": (
        lambda p: _run(p, batch_size=100_000),
        ValueError,
        "`batch_size` 100000 \\(the dense loss.* needs about 640.0 GB of memory and this "
        "machine has .*: pass --loss-block-size \\d+ \\(the blockwise loss\\), or a smaller",
    ),
    "an --embedding-dim that exceeds the memory": (
        lambda p: _run(p, embedding_dim=10**8, batch_size=2, eval_size=4, alignment_pairs=0),
        ValueError,
        "`embedding_dim` 100000000 .* needs about .* GB of memory .*: pass a smaller "
        "--embedding-dim",
    ),
    "a DiagonalScaling too large for the memory": (
        lambda _: DiagonalScaling(5.0).build((None, 10**10)),
        ValueError,
        "A DiagonalScaling of 10000000000 dimensions needs about 400.0 GB of memory .*: "
        "give the encoder fewer outputs",
    ),
    "a DiagonalScaling called on embeddings of another width": (
        lambda _: _scaling_built_at_width_1()(np.ones((2, 4), "float32")),
        ValueError,
        "This DiagonalScaling was built for embeddings of width 1 and is called on "
        "embeddings of width 4: .*pass a new `DiagonalScaling` for this width",
    ),
    "an embedding of width 1 on the sphere": (
        lambda _: ContrastiveModel(keras.Sequential([keras.Input((6,)), keras.layers.Dense(1)])),
        ValueError,
        "The embeddings have width 1 and `normalize=True`: on the unit sphere every embedding "
        "of width 1 is \\+1 or -1, so the loss has nothing to learn\\. Give the encoder \\(or "
        "projector\\) at least 2 outputs, or pass `normalize=False`\\.",
    ),
    "a dataset missing offline (MNIST for `--vae-source mnist`)": (
        lambda p: digit_images("mnist", data_dir=str(p)),
        ValueError,
        "MNIST is not prepared .*download_and_prepare.*--vae-source digits",
    ),
    "a damaged VAE cache file (decoder.keras in --vae-cache-dir)": (
        _damaged_vae_cache,
        ValueError,
        "the cached VAE decoder .*/decoder.keras does not load \\(not a whole .keras zip file\\): "
        "delete it, and the next run trains the VAE again",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_gives_a_clear_error(case, tmp_path):
    call, error, message = CASES[case]
    with pytest.raises(error, match=message):
        call(tmp_path)


def _integer_views(tmp_path, capsys):
    history = _fit(np.arange(48).reshape(8, 6), np.arange(48).reshape(8, 6) + 1)
    assert np.isfinite(history.history["loss"][0])


def _torn_checkpoint(tmp_path, capsys):
    """The quick half; `tests/runner/test_kill_resume.py` kills whole runs at many points."""
    model = _model()
    model.compile("adam", concentration_optimizer=1e-2)
    backup = Backup(tmp_path, steps_per_epoch=1)
    data = tf.data.Dataset.from_tensors((X, X + 0.01)).repeat()
    model.fit(data, steps_per_epoch=1, epochs=1, callbacks=[backup], verbose=0)
    after_first = model.get_weights()
    model.fit(data, steps_per_epoch=1, initial_epoch=1, epochs=2, callbacks=[backup], verbose=0)
    newest = tmp_path / "step-000002.weights.h5"
    # As reported: a kill during the write left 8,252 of its 54,320 bytes.
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 6])
    assert backup.restore() == 1
    assert f"checkpoint {newest} does not read" in capsys.readouterr().out
    fresh = _model()
    fresh.compile("adam", concentration_optimizer=1e-2)
    backup.set_model(fresh)
    backup.on_train_begin()
    for restored, saved in zip(fresh.get_weights(), after_first, strict=True):
        np.testing.assert_array_equal(restored, saved)


def _diverged_before_evaluation(tmp_path, capsys):
    """The quick half; `tests/runner/test_loop.py` runs it end to end."""
    parts = synthetic.build(SMOKE)
    scores = {"linear_r2": 0.5, "linear_r2_per_latent": [0.5] * SMOKE.dim, "mcc": 0.4}
    results = {
        "aninfonce": {"steps": 6, "wall_seconds": 1.0, "final_loss": np.nan, "curve": []},
        "infonce": {**scores, "steps": 40, "wall_seconds": 2.0, "curve": [{"step": 20, **scores}]},
    }
    lines = runner.results_table(results, parts.table_columns).splitlines()
    assert lines[2].split() == ["aninfonce", "-", "-", "6", "1"]
    paths = runner.report.write_plots(results, parts, tmp_path)
    assert {p.name for p in paths} == {"curves.png", "per_latent_r2.png"}


def _later_variant_setting(tmp_path, capsys):
    for overrides, field in (
        (dict(infonce_temperature=0.0), "infonce_temperature"),
        (dict(losses="aninfonce,infonce_ensemble", ensemble_temperatures=""), "ensemble_temp"),
        (dict(losses="aninfonce,infonce_hard_negatives", loss_block_size=64), "loss_block_size"),
    ):
        with pytest.raises(ValueError, match=f"`{field}"):
            _run(tmp_path, **overrides)
        assert not list(tmp_path.iterdir())  # refused before the first variant trained


def _refused_then_corrected(tmp_path, capsys):
    # Fields of every run's config, and of the experiment's own; some failed after the
    # first evaluation.
    for refused in (
        dict(initial_concentration=-1.0),
        dict(seed=2**32),
        dict(embedding_dim=3),
        dict(eval_size=1),
    ):
        with pytest.raises(ValueError):
            _run(tmp_path, **refused)
        assert not (tmp_path / "config.json").exists()
        plan = runner.plan.RunPlan.create(SMOKE)
        assert runner.run_directory.RunDirectory.claim(tmp_path, plan).finished == {}  # not refused


class _Interrupted(Exception):
    """A kill, raised by `_InterruptAfterFit` once `fit` returns."""


class _InterruptAfterFit(keras.callbacks.Callback):
    def on_train_end(self, logs=None):
        raise _Interrupted


def _lower_is_better_target(tmp_path, capsys):
    # The error starts below 100: reached at the first evaluation, and again by the run
    # killed there and resumed (`>=` would train on and never reach it).
    config = dataclasses.replace(SMOKE, losses="aninfonce", stop_at="lambda_relative_error=100")
    with pytest.raises(_Interrupted):
        runner.run(config, synthetic.build, tmp_path, verbose=0, callbacks=[_InterruptAfterFit()])
    result = runner.run(config, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    assert (result["steps"], result["target_reached"]["step"]) == (20, 20)


# Count fields of which 0 is a setting: none, automatic, dense, the step field's value.
ZERO_IS_A_SETTING = {
    "seed",
    "warmup_steps",
    "save_every",
    "loss_block_size",
    "embedding_dim",
    "alignment_pairs",
    "epochs",
    "warmup_epochs",
    "eval_epochs",
    "linear_eval_epochs",
    "readout_check_steps",
}


def _count_flags(tmp_path, capsys):
    for module in (synthetic, rendered, mnist_vae, photos, cifar10, imagenet):
        config = _smoke(module)
        hints = typing.get_type_hints(type(config))
        for field in dataclasses.fields(config):
            if hints[field.name] is not int:
                continue
            for value in (-1,) if field.name in ZERO_IS_A_SETTING else (0, -1):
                with pytest.raises(ValueError, match=f"`{field.name}`"):
                    dataclasses.replace(config, **{field.name: value}).validate()


def _string_keys(tmp_path, capsys):
    names = np.array([f"image_{i}.png" for i in range(8)])
    history = _fit({"view1": X, "view2": X + 0.01, "name": names, "label": np.arange(8)})
    assert np.isfinite(history.history["loss"][0])


def _loss_scale_overflow(tmp_path, capsys):
    updates, lambda_steps = test_models.one_step_updates("mixed_float16", loss_scale=2.0**60)
    assert lambda_steps == 0
    assert all(not np.any(update) for update in updates)


def _nan_in_json(tmp_path, capsys):
    results = {"a": {"final_loss": np.nan, "lambda_hat": [np.inf, 2.0], "steps": 3}}
    runner.run_directory.RunDirectory(tmp_path).write_results(
        {"true_concentration": [1.0, 2.0]}, results
    )
    model = _model()
    model.scaling.variables[0].assign(np.full(4, np.nan, "float32"))
    export_encoder(model, tmp_path / "encoder")

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    for path in (tmp_path / "results.json", tmp_path / "encoder" / "concentration.json"):
        saved = json.loads(path.read_text(), parse_constant=refuse)
        assert "JSON has no NaN or infinity" in saved["null_values"]["note"]
    saved = json.loads((tmp_path / "results.json").read_text())
    variant = saved["variants"]["a"]
    assert variant["final_loss"] is None and variant["lambda_hat"] == [None, 2.0]
    assert saved["null_values"]["values"] == {
        "/variants/a/final_loss": "NaN",
        "/variants/a/lambda_hat/0": "Infinity",
    }
    restored = read_json(tmp_path / "results.json")["variants"]["a"]
    assert np.isnan(restored["final_loss"]) and restored["lambda_hat"] == [np.inf, 2.0]


def _saved_model_one_liner(tmp_path, capsys):
    """`tf.saved_model.load(dir).serve(x)` fails (the loaded object's functions hold its
    variables weakly): no documentation shows it; the two-line form is a doctest of
    `export_encoder`."""
    one_liner = re.compile(r"saved_model\.load\([^()\n]*\)\s*\.serve")
    files = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("notebooks/*.ipynb")]
    files += [*ROOT.glob("aninfonce_tf/**/*.py"), *ROOT.glob("recipes/*.py")]
    files.remove(BAD_INPUT_TABLE)  # which names it as the bad input
    assert [path for path in files if one_liner.search(path.read_text())] == []


def _hard_negatives_at_a_temperature(tmp_path, capsys):
    test_functional.test_hard_negatives_weight_beta_times_the_logit_at_any_temperature(
        "cosine", 0.5
    )


def _augment_seeds(tmp_path, capsys):
    augment, images = SimCLRAugment(image_size=4), np.zeros((2, 6, 6, 3), "uint8")
    for seed in (1.5, "7"):
        with pytest.raises(TypeError, match="`seed` must be an int, a pair of ints or None"):
            augment(images, seed=seed)
    for seed in (7, np.int64(7), [7, 0], None):
        assert augment(images, seed=seed)[0].shape == (2, 4, 4, 3)


def _augment_channels(tmp_path, capsys):
    augment = SimCLRAugment(image_size=4)
    for channels in (2, 4):
        with pytest.raises(ValueError, match="`images` must be .* with 3 or 1 channels"):
            augment(np.zeros((2, 6, 6, channels), "uint8"), seed=0)
    for channels in (1, 3):
        assert augment(np.zeros((2, 6, 6, channels), "uint8"), seed=0)[0].shape[-1] == channels


def _augment_jpeg_files(tmp_path, capsys):
    augment = SimCLRAugment(image_size=4)
    files = tf.stack([tf.io.encode_jpeg(np.zeros((6, 8, 3), "uint8"))] * 2)
    with pytest.raises(ValueError, match="JPEG files give their own sizes .*: leave"):
        augment(files, seed=0, image_sizes=[[6, 8], [6, 8]])
    with pytest.raises(ValueError, match="one file \\(a scalar string\\) or a batch"):
        augment(files[None], seed=0)
    assert augment(files, seed=0)[0].shape == (2, 4, 4, 3)
    assert augment(files[0], seed=0)[0].shape == (4, 4, 3)


def _supervised_pairs(tmp_path, capsys):
    images = np.zeros((4, 6, 6, 3), "uint8")
    data = tf.data.Dataset.from_tensor_slices((images, np.arange(4))).batch(2)
    batch = next(iter(augment_pairs(data, SimCLRAugment(image_size=4))))
    assert batch["view1"].shape == (2, 4, 4, 3) and batch["label"].numpy().tolist() == [0, 1]


def _usage_errors(tmp_path, capsys, cases):
    out = tmp_path / "run"
    for flags, message in cases:
        with pytest.raises(SystemExit) as stop:
            runner.main(synthetic, ["--smoke", *flags, "--out", str(out)])
        assert stop.value.code == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and message in error and "Traceback" not in error, error
        assert not out.exists()  # the refused run left no empty directory


def _usage_error(tmp_path, capsys):
    _usage_errors(
        tmp_path,
        capsys,
        [
            (["--generator-draws", "0"], "`generator_draws` must be at least 1"),
            (["--stop-at", "mcc>0.9"], "`stop_at` must look like"),
            (["--stop-at", "mcc=0,mcc=0.99"], "`stop_at` gives 'mcc' two targets"),
            (["--seed", "-1"], "`seed` must be an integer from 0 to 4294967295"),
            (["--infonce-temperature", "nan"], "`infonce_temperature` must be a finite number"),
        ],
    )


def _smoke_and_smoke_full(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        runner.main(cifar10, ["--smoke", "--smoke-full", "--out", str(tmp_path / "run")])
    assert stop.value.code == 2
    assert "--smoke and --smoke-full exclude each other" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def _bad_loss_name_on_the_command_line(tmp_path, capsys):
    user_file = tmp_path / "my_losses.py"
    user_file.write_text(
        "from aninfonce_tf import InfoNCE, register_loss\nregister_loss('..')(InfoNCE)\n"
    )
    LOSS_VARIANTS[".."] = LOSS_VARIANTS["infonce"]  # put there without `register_loss`
    try:
        _usage_errors(
            tmp_path, capsys, [(["--losses", ".."], "A loss variant's name must be a plain")]
        )
    finally:
        del LOSS_VARIANTS[".."]
    with pytest.raises(SystemExit) as stop:  # argparse's usage, then one line
        runner.main(synthetic, ["--import", str(user_file), "--out", str(tmp_path / "run")])
    error = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in error, error
    assert "my_losses.py: ValueError: A loss variant's name must be a plain" in error
    assert sorted(path.name for path in tmp_path.iterdir()) == ["my_losses.py"]


def _log_every(tmp_path, capsys):
    _usage_errors(
        tmp_path,
        capsys,
        [
            (["--log-every", every], f"`log_every` must be positive; got {every}")
            for every in ["0", "-5"]
        ],
    )


# Inputs the package handles without an error, or whose defence is not one exception.
BEHAVIOURS = {
    "integer views": _integer_views,
    "a kill -9 during a run, checkpoint writes included": _torn_checkpoint,
    "a variant that diverges before its first evaluation": _diverged_before_evaluation,
    "a bad loss setting of a later variant": _later_variant_setting,
    "an --out whose first run was refused before training": _refused_then_corrected,
    "a --stop-at target of a lower-is-better score": _lower_is_better_target,
    "a count flag of 0 or below, of any recipe": _count_flags,
    "string extra keys in a dict batch": _string_keys,
    "a loss-scale overflow under mixed_float16": _loss_scale_overflow,
    "NaN in results.json or concentration.json": _nan_in_json,
    "tf.saved_model.load(dir).serve(x) in one line": _saved_model_one_liner,
    "hard negatives at a temperature other than 1": _hard_negatives_at_a_temperature,
    "a usage error on a recipe's command line": _usage_error,
    "--log-every 0 or negative": _log_every,
    "--smoke beside --smoke-full": _smoke_and_smoke_full,
    "a loss name that is no plain identifier, on the command line (--losses, --import)": (
        _bad_loss_name_on_the_command_line
    ),
    "a SimCLRAugment seed that is a float or a string": _augment_seeds,
    "images of 2 or 4 channels for SimCLRAugment": _augment_channels,
    "JPEG files for SimCLRAugment with `image_sizes`, or not a string or `[B]` strings": (
        _augment_jpeg_files
    ),
    "`(images, labels)` batches for augment_pairs": _supervised_pairs,
    "an encoder that starts with a `Rescaling` of pixel values (MobileNetV3, EfficientNet)": (
        _pixel_value_encoder
    ),
}


@pytest.mark.parametrize("case", list(BEHAVIOURS))
def test_handled_input_behaves_as_the_table_says(case, tmp_path, capsys):
    BEHAVIOURS[case](tmp_path, capsys)


def test_the_docs_table_lists_every_case():
    table = re.search(r"\n(\|.*?)\n\n", BAD_INPUT_TABLE.read_text(), re.S).group(1).splitlines()
    assert all(re.fullmatch(r"\| .+ \| .+ \|", line) for line in table[2:])
    rows = [line.split("|")[1].strip() for line in table[2:]]
    assert set(CASES) | set(BEHAVIOURS) == set(rows)
