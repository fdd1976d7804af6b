"""A run directory that only its own run touches: one run at a time (its lock), finished
only with its final files complete, no resume across a code change unless asked, no
files of others written over, an export swapped in whole, and a corrupt file named with
its fix."""

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import aninfonce_tf
from aninfonce_tf import runner, sweep
from aninfonce_tf.checkpoints import read_json, write_json
from aninfonce_tf.configs import synthetic
from aninfonce_tf.configs.base import UsageError
from aninfonce_tf.export import export_encoder
from aninfonce_tf.layers import DiagonalScaling
from aninfonce_tf.models import ContrastiveModel
from aninfonce_tf.runner import cli, identity, loop, run_directory
from aninfonce_tf.runner.plan import RunPlan
from aninfonce_tf.runner.run_directory import RunDirectory
from tests.support import ROOT, assert_same_result, check_run

# One variant of 40 steps, a backup every 10, no export (unless a test asks for one).
CONFIG = dataclasses.replace(
    synthetic.PRESETS["quick"], **synthetic.SMOKE, losses="aninfonce", save_every=10, export=False
)
# The same config from the command line.
ARGV = ["--smoke", "--losses", "aninfonce", "--save-every", "10", "--export", "false"]


class _InterruptAtStep20(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            raise KeyboardInterrupt


def _interrupted_run(run_dir) -> None:
    """A run of `CONFIG` stopped at step 20, with its backups kept."""
    with pytest.raises(KeyboardInterrupt):
        runner.run(CONFIG, synthetic.build, run_dir, verbose=0, callbacks=[_InterruptAtStep20()])


def _claim(run_dir, config) -> RunDirectory:
    return RunDirectory.claim(run_dir, RunPlan.create(config))


def _usage_error(capsys, argv) -> str:
    """The one line that `runner.main(synthetic, argv)` prints as it exits with status 2."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        runner.main(synthetic, argv)
    error = capsys.readouterr().err
    assert stop.value.code == 2 and error.count("\n") == 1, error
    return error


def _contents(directory) -> dict:
    return {path: path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()}


# One run at a time: the run directory's lock, taken over from a killed holder.


def test_a_second_run_on_a_locked_out_exits_with_one_line_naming_the_holder(tmp_path):
    from aninfonce_tf.runner.lock import lock_run_directory

    with lock_run_directory(tmp_path):
        second = subprocess.run(
            [sys.executable, str(ROOT / "recipes" / "synthetic.py"), "--smoke"]
            + ["--out", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert second.returncode == 2, second.stdout[-2000:] + second.stderr[-2000:]
    errors = [line for line in second.stderr.splitlines() if ": error: " in line]
    script = ROOT / "recipes" / "synthetic.py"
    assert len(errors) == 1 and errors[0].startswith(f"python {script}: error: "), second.stderr
    assert f"pid {os.getpid()} on {socket.gethostname()}, started " in errors[0]
    assert "another --out" in errors[0]
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # nothing written


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path, capsys):
    holder = textwrap.dedent(
        """
        import os, signal, sys
        from pathlib import Path
        from aninfonce_tf.runner.lock import lock_run_directory

        with lock_run_directory(Path(sys.argv[1])):
            print(os.getpid(), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    killed = subprocess.run(
        [sys.executable, "-c", holder, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert (tmp_path / ".lock").exists()  # left behind, but no longer held: the kernel let go
    capsys.readouterr()
    result = runner.run(CONFIG, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    assert f"taking over the lock of pid {killed.stdout.strip()} on " in capsys.readouterr().out
    assert result["steps"] == 40
    assert not (tmp_path / ".lock").exists()  # released when the run ends


# Imported with --import: holds each process until BARRIER_PARTIES have arrived (a file
# each in BARRIER_DIR), so that two runs reach the lock together, not one after the other.
BARRIER = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    arrived = Path(os.environ["BARRIER_DIR"])
    (arrived / str(os.getpid())).touch()
    deadline = time.monotonic() + 120
    while len(list(arrived.iterdir())) < int(os.environ["BARRIER_PARTIES"]):
        if time.monotonic() > deadline:
            raise SystemExit("the other run never started")
        time.sleep(0.05)
    """
)


@pytest.mark.slow
def test_of_two_runs_started_together_on_one_out_one_trains_and_the_other_names_it(tmp_path):
    barrier = tmp_path / "barrier.py"
    barrier.write_text(BARRIER)

    def start(out, parties):
        arrived = tmp_path / f"arrived-{out.name}"
        arrived.mkdir(exist_ok=True)
        env = {**os.environ, "BARRIER_DIR": str(arrived), "BARRIER_PARTIES": str(parties)}
        command = [sys.executable, str(ROOT / "recipes" / "synthetic.py"), *ARGV]
        command += ["--import", str(barrier), "--out", str(out)]
        return subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    # The same command twice into one --out, and once alone into another.
    runs = [
        start(tmp_path / "shared", 2),
        start(tmp_path / "shared", 2),
        start(tmp_path / "whole", 1),
    ]
    try:
        outputs = [run.communicate(timeout=300) for run in runs]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
    codes = [run.returncode for run in runs]
    assert sorted(codes[:2]) == [0, 2] and codes[2] == 0, [err[-2000:] for _, err in outputs]
    winner = codes.index(0)
    refused_out, refused_err = outputs[1 - winner]
    assert "== aninfonce" in outputs[winner][0] and "== aninfonce" not in refused_out
    errors = [line for line in refused_err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "Traceback" not in refused_err, refused_err
    holder = f"pid {runs[winner].pid} on {socket.gethostname()}, started "
    assert errors[0].split(": error: ")[0].endswith("synthetic.py") and holder in errors[0]
    assert f"{tmp_path / 'shared'} is in use by another run" in errors[0]
    # One run's outputs, as a run on its own gives them.
    shared = check_run(tmp_path / "shared", ["curves", "per_latent_r2", "lambda_aninfonce"])
    shared = shared["variants"]
    assert_same_result(shared, read_json(tmp_path / "whole" / "results.json")["variants"])


# A variant is finished only with every final file as it was written.


def test_a_truncated_model_is_trained_again_rather_than_counted_as_finished(tmp_path, capsys):
    first = runner.run(CONFIG, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    model_path = tmp_path / "aninfonce" / "model.keras"
    os.truncate(model_path, model_path.stat().st_size // 2)
    capsys.readouterr()
    again = runner.run(CONFIG, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    output = capsys.readouterr().out
    assert "not trained again" not in output
    assert f"== aninfonce: model.keras in {tmp_path / 'aninfonce'} is incomplete" in output
    assert "training it again from the start (its backup is gone)" in output
    model = keras.saving.load_model(model_path)
    np.testing.assert_allclose(model.concentration, first["lambda_hat"], rtol=1e-5)
    assert again["final_loss"] == pytest.approx(first["final_loss"], rel=1e-5)


def test_a_truncated_export_whose_backup_is_left_is_saved_again_from_it(
    tmp_path, capsys, monkeypatch
):
    # Killed after results.json was written, before the backup was removed.
    monkeypatch.setattr(loop, "remove_backup", lambda *args: None)
    config = dataclasses.replace(CONFIG, export=True)
    first = runner.run(config, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    variables = next((tmp_path / "aninfonce" / "encoder" / "variables").glob("*.data-*"))
    os.truncate(variables, variables.stat().st_size - 1)
    capsys.readouterr()
    again = runner.run(config, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    output = capsys.readouterr().out
    assert f"encoder/variables/{variables.name} in " in output and "is incomplete" in output
    assert "saving it again from its backup" in output
    assert "resuming aninfonce at step 40" in output  # no step trained again
    assert {k: v for k, v in again.items() if k != "wall_seconds"} == {
        k: v for k, v in first.items() if k != "wall_seconds"
    }
    loaded = tf.saved_model.load(str(tmp_path / "aninfonce" / "encoder"))
    assert loaded.serve(np.ones((2, CONFIG.dim), "float32")).shape[0] == 2


# A run resumes only with the code it was trained by, unless a change is allowed.


def test_resuming_across_a_code_change_is_refused_unless_allowed_and_then_recorded(
    tmp_path, capsys, monkeypatch
):
    _interrupted_run(tmp_path)
    trained_by = read_json(tmp_path / "config.json")["code"]
    assert [entry["aninfonce_tf"] for entry in trained_by] == [aninfonce_tf.__version__]
    changed = {**identity.code_version(), "source_sha256": "0" * 64}
    monkeypatch.setattr(identity, "code_version", lambda: changed)
    argv = [*ARGV, "--out", str(tmp_path)]
    error = _usage_error(capsys, argv)
    assert f"{tmp_path} was trained by aninfonce_tf {aninfonce_tf.__version__} (source " in error
    assert "Pass --allow-code-change to resume it with this code, or a new --out" in error
    results = runner.main(synthetic, [*argv, "--allow-code-change"])
    assert "resuming aninfonce at step 20" in capsys.readouterr().out
    assert results["aninfonce"]["steps"] == 40
    code = read_json(tmp_path / "config.json")["code"]
    assert [entry["source_sha256"] for entry in code] == [
        trained_by[0]["source_sha256"],
        "0" * 64,
    ]
    assert read_json(tmp_path / "results.json")["run"]["code"] == code


def test_a_change_of_layer_shapes_on_resume_ends_in_one_line(tmp_path):
    _interrupted_run(tmp_path)

    def wider(config):  # the same config, an encoder of other shapes
        return synthetic.build(dataclasses.replace(config, hidden_units="48,32"))

    with pytest.raises(UsageError) as raised:
        runner.run(CONFIG, wider, tmp_path, verbose=0)
    message = str(raised.value)
    assert "\n" not in message
    backup = tmp_path / "backup" / "aninfonce"
    assert f"{backup / 'step-000020.weights.h5'} does not fit the model" in message
    assert f"Delete {backup} to train this variant from the start" in message


# An --out holding files that are not a run's is refused and left as it was.


@pytest.mark.parametrize("case", ["others-files", "others-results", "seeds"], ids=lambda case: case)
def test_an_out_that_is_not_a_run_is_refused_and_left_as_it_was(tmp_path, capsys, case):
    config, _ = runner.parse_config(synthetic.PRESETS, ARGV, smoke=synthetic.SMOKE)
    argv = [*ARGV, "--out", str(tmp_path)]
    if case == "others-results":  # a config.json of this run beside someone else's results
        write_json(tmp_path / "config.json", dataclasses.asdict(config))
    else:
        (tmp_path / "figure.png").write_bytes(b"\x89PNG")
    if case == "seeds":
        (tmp_path / "seed_0").mkdir()  # a seed's run is a --seeds run's
        argv += ["--seeds", "0,1"]
    (tmp_path / "results.json").write_text(json.dumps({"accuracy": 0.9}))
    before = _contents(tmp_path)
    error = _usage_error(capsys, argv)
    if case == "others-results":
        assert f"{tmp_path / 'results.json'} is not the results.json of an aninfonce_tf" in error
    else:
        run = "a --seeds run" if case == "seeds" else "a run"
        assert f"{tmp_path} holds files that are not {run} of aninfonce_tf" in error
        assert "(figure.png, results.json; " in error
    assert "pass a new --out" in error
    assert _contents(tmp_path) == before and (case != "seeds" or (tmp_path / "seed_0").is_dir())


# An export replaces an earlier one whole.


def test_an_export_over_an_earlier_one_replaces_it_whole(tmp_path):
    encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    export_encoder(ContrastiveModel(encoder, scaling=DiagonalScaling(5.0)), tmp_path / "encoder")
    assert (tmp_path / "encoder" / "concentration.json").exists()
    export_encoder(ContrastiveModel(encoder), tmp_path / "encoder")
    assert not (tmp_path / "encoder" / "concentration.json").exists()
    assert not hasattr(tf.saved_model.load(str(tmp_path / "encoder")), "embed_scaled")
    # A directory that holds something else is not written over.
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match="is not empty and holds no export"):
        export_encoder(ContrastiveModel(encoder), tmp_path / "mine")
    assert [path.name for path in (tmp_path / "mine").iterdir()] == ["notes.txt"]


# A corrupt file is named, with its fix.


@pytest.mark.parametrize("name", ["config.json", "results.json"])
def test_a_corrupt_json_file_is_named_with_its_fix(tmp_path, capsys, name):
    config, _ = runner.parse_config(synthetic.PRESETS, ARGV, smoke=synthetic.SMOKE)
    write_json(tmp_path / "config.json", dataclasses.asdict(config))
    (tmp_path / name).write_text('{"run": {,}')
    error = _usage_error(capsys, [*ARGV, "--out", str(tmp_path)])
    assert f"{tmp_path / name} does not read as JSON (Expecting property name" in error
    fix = "delete it, or pass a new --out" if name == "results.json" else "pass a new --out"
    assert fix in error


def test_a_history_file_that_does_not_read_is_named_with_its_fix(tmp_path):
    path = tmp_path / "aninfonce" / "history.json"
    path.parent.mkdir()
    path.write_text('[{"step": 20, ')
    with pytest.raises(UsageError, match=r"history.json does not read as JSON .*new --out"):
        run_directory.points_until(path, 20)


def test_a_users_imported_file_is_part_of_the_code_a_run_records(tmp_path, monkeypatch):
    monkeypatch.setattr(identity, "USER_CODE", [])
    mine = tmp_path / "my_code.py"
    mine.write_text("X = 1\n")
    cli.import_user_code(str(mine))
    first = identity.code_version()["user_code_sha256"]
    mine.write_text("X = 2\n")
    assert identity.code_version()["user_code_sha256"] != first


# A rerun is the same run when its config gives the same targets.

SAVED_STOP_AT = "mcc=0.95, linear_r2>=0.90"


@pytest.mark.parametrize(
    "stop_at, resumes",
    [
        ("linear_r2>=0.9,mcc=0.950", True),
        (" mcc = .95 , linear_r2 >= 9e-1 ", True),
        ("mcc=0.95,linear_r2>=0.91", False),
        ("mcc=0.95,linear_r2<=0.9", False),
        ("mcc=0.95", False),
        # `=` takes its direction from the evaluators, built after the claim.
        ("mcc>=0.95,linear_r2>=0.9", False),
    ],
)
def test_a_stop_at_giving_the_same_targets_resumes_and_another_is_refused(
    tmp_path, stop_at, resumes
):
    saved = dataclasses.replace(CONFIG, stop_at=SAVED_STOP_AT)
    RunDirectory(tmp_path, code=[identity.code_version()]).write_config(saved)
    config = dataclasses.replace(CONFIG, stop_at=stop_at)
    if resumes:
        assert _claim(tmp_path, config).finished == {}
        return
    with pytest.raises(ValueError) as refused:
        _claim(tmp_path, config)
    assert "another config (stop_at: 'linear_r2>=0.9,mcc=0.95' -> " in str(refused.value)


def test_a_resume_with_another_stop_patience_is_refused(tmp_path):
    saved = dataclasses.replace(CONFIG, stop_at=SAVED_STOP_AT, stop_patience=2)
    RunDirectory(tmp_path, code=[identity.code_version()]).write_config(saved)
    assert _claim(tmp_path, saved).finished == {}
    with pytest.raises(ValueError, match="another config \\(stop_patience: 2 -> 1\\)"):
        _claim(tmp_path, dataclasses.replace(saved, stop_patience=1))


def test_a_grid_into_a_directory_of_other_files_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    config = dataclasses.replace(synthetic.PRESETS["quick"], **synthetic.SMOKE)
    with pytest.raises(UsageError, match="notes.txt"):
        sweep.run_grid(config, synthetic.build, tmp_path, {"steps": [20]})
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_a_field_added_after_a_run_counts_at_its_default_when_it_resumes(tmp_path, capsys):
    RunDirectory(tmp_path, code=[identity.code_version()]).write_config(CONFIG)
    saved = read_json(tmp_path / "config.json")
    del saved["momentum"]  # as a config.json written before the field existed
    write_json(tmp_path / "config.json", saved)
    assert CONFIG.momentum == synthetic.SyntheticConfig.momentum
    assert _claim(tmp_path, CONFIG).finished == {}
    assert "config.json has no momentum = 0.9: counted at the default" in capsys.readouterr().out
    other = dataclasses.replace(CONFIG, momentum=0.5)
    with pytest.raises(ValueError, match=r"another config \(momentum: 0.9 -> 0.5"):
        _claim(tmp_path, other)


class _InterruptTheSecondVariant(keras.callbacks.Callback):
    fits = 0

    def on_train_begin(self, logs=None):
        type(self).fits += 1

    def on_epoch_end(self, epoch, logs=None):
        if type(self).fits == 2 and epoch == 1:
            raise KeyboardInterrupt


def test_a_resume_scored_on_other_blocks_than_its_finished_variants_is_refused(tmp_path):
    config = dataclasses.replace(CONFIG, losses="aninfonce,infonce")

    def build_scored_on(blocks):
        def build(config):
            experiment = synthetic.build(config)
            return dataclasses.replace(experiment, metadata={**experiment.metadata, **blocks})

        return build

    before = {"blocks": {"content": ["x"], "style": ["y"]}}
    with pytest.raises(KeyboardInterrupt):  # aninfonce finished, infonce stopped at 20
        runner.run(config, build_scored_on(before), tmp_path, 0, [_InterruptTheSecondVariant()])
    assert list(read_json(tmp_path / "results.json")["variants"]) == ["aninfonce"]
    other = {"blocks": {"content": ["x", "y"], "style": []}}
    with pytest.raises(UsageError, match="finished variants were scored on other parts") as error:
        runner.run(config, build_scored_on(other), tmp_path, verbose=0)
    assert "blocks {'content': ['x'], 'style': ['y']} -> {'content': ['x', 'y']" in str(error.value)
    assert list(read_json(tmp_path / "results.json")["variants"]) == ["aninfonce"]
    results = runner.run(config, build_scored_on(before), tmp_path, verbose=0)
    assert results["infonce"]["steps"] == 40


def test_a_run_directory_gives_back_its_config(tmp_path):
    config = dataclasses.replace(CONFIG, alignment_pairs=64, seed=3)
    RunDirectory(tmp_path).write_config(config)
    assert run_directory.load_config(tmp_path, synthetic.SyntheticConfig) == config
    # Entries the type lacks (the code record) are left out; a lacking field keeps its default.
    saved = read_json(tmp_path / "config.json")
    write_json(tmp_path / "config.json", {k: v for k, v in saved.items() if k != "alignment_pairs"})
    loaded = run_directory.load_config(tmp_path, synthetic.SyntheticConfig)
    assert loaded == dataclasses.replace(config, alignment_pairs=0)
    with pytest.raises(ValueError, match="holds no config.json"):
        run_directory.load_config(tmp_path / "empty", synthetic.SyntheticConfig)


def test_runs_without_out_in_one_second_get_their_own_directories_named_in_utc(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    # One instant for both runs; its local time could repeat in a DST change, UTC cannot.
    instant = time.gmtime(1_800_000_000)
    monkeypatch.setattr(time, "gmtime", lambda *_: instant)
    first = run_directory.run_directory(None, "quick")
    second = run_directory.run_directory(None, "quick")
    assert first == Path("runs/quick-20270115-080000Z")
    assert second == Path("runs/quick-20270115-080000Z-2")
    assert first.is_dir() and second.is_dir()


def test_a_run_of_another_recipe_on_out_is_refused_without_a_line_before(tmp_path, capsys):
    write_json(tmp_path / "config.json", {"losses": "aninfonce", "steps": 1, "seed": 0})
    with pytest.raises(run_directory.AnotherConfig, match="holds a run of another config"):
        _claim(tmp_path, CONFIG)
    assert capsys.readouterr().out == ""


def test_export_encoder_refuses_an_input_spec_that_is_not_a_tensor_spec(tmp_path):
    encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    with pytest.raises(TypeError, match="`input_spec` must be a tf.TensorSpec"):
        export_encoder(ContrastiveModel(encoder), tmp_path / "encoder", input_spec=(None, 4))
    assert not (tmp_path / "encoder").exists()
