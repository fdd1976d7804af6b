"""Ctrl-C and SIGTERM end a recipe in one line that says how to resume; a rerun keeps
the summary of every seed (of its config; a damaged one named), exports a finished variant that `--export false` left
unexported, and keeps an unreadable TensorBoard event file aside."""

import dataclasses
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
import tensorflow as tf

from aninfonce_tf import runner
from aninfonce_tf.checkpoints import read_json, write_json
from aninfonce_tf.configs import synthetic
from aninfonce_tf.configs.base import UsageError
from aninfonce_tf.runner import event_files, loop, run_directory

ARGV = ["--smoke", "--losses", "aninfonce", "--export", "false"]
# One variant of 20 steps, evaluated once.
CONFIG = dataclasses.replace(
    synthetic.PRESETS["quick"], **{**synthetic.SMOKE, "steps": 20}, losses="aninfonce", export=False
)


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def _terminate(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)  # the signal arrives first


@pytest.mark.parametrize(
    "run, status, said",
    [(_interrupt, 130, "interrupted"), (_terminate, 143, "terminated (SIGTERM)")],
    ids=["ctrl-c", "sigterm"],
)
def test_ctrl_c_and_sigterm_end_in_one_line_saying_how_to_resume(
    tmp_path, capsys, monkeypatch, run, status, said
):
    def unexpected(signum, frame):  # the old default: the test process ends
        raise AssertionError("SIGTERM reached the handler outside the recipe")

    previous = signal.signal(signal.SIGTERM, unexpected)
    monkeypatch.setattr(loop, "run_plan", run)
    try:
        with pytest.raises(SystemExit) as stop:
            runner.main(synthetic, [*ARGV, "--out", str(tmp_path)])
        assert signal.getsignal(signal.SIGTERM) is unexpected  # restored
    finally:
        signal.signal(signal.SIGTERM, previous)
    error = capsys.readouterr().err
    assert stop.value.code == status and error.count("\n") == 1, error
    assert f"{said}: rerun the same command to resume the run in {tmp_path}." in error


@pytest.fixture(scope="module")
def _two_seeds(tmp_path_factory) -> Path:
    """Seeds 0 and 1 of CONFIG run once for the module; each test copies them."""
    out = tmp_path_factory.mktemp("two_seeds")
    runner.run_seeds(CONFIG, synthetic.build, out, [0, 1], verbose=0)
    return out


@pytest.fixture
def two_seeds(_two_seeds, tmp_path) -> Path:
    """A fresh copy of seeds 0 and 1 of CONFIG run into one directory, with its summary."""
    out = tmp_path / "run"
    shutil.copytree(_two_seeds, out)
    return out


def test_a_seeds_run_after_one_of_more_seeds_summarises_every_seed(two_seeds):
    # A seed's run of another config is not this summary's.
    run_directory.RunDirectory(two_seeds / "seed_2").write_config(
        dataclasses.replace(CONFIG, steps=40)
    )
    write_json(two_seeds / "seed_2" / "results.json", {"run": {}, "variants": {}})
    summary = runner.run_seeds(CONFIG, synthetic.build, two_seeds, [0], verbose=0)
    assert summary["seeds"] == [0, 1]
    assert summary["variants"]["aninfonce"]["mcc"]["n"] == 2


@pytest.mark.parametrize("name", ["results.json", "config.json"])
def test_a_damaged_earlier_seed_is_named_not_left_out_of_the_summary(two_seeds, name):
    (two_seeds / "seed_1" / name).write_text('{"variants": ')
    with pytest.raises(UsageError, match=f"seed_1/{name} does not read as JSON .*new --out"):
        runner.run_seeds(CONFIG, synthetic.build, two_seeds, [0], verbose=0)
    assert read_json(two_seeds / "summary.json")["seeds"] == [0, 1]  # kept as it was


def test_export_true_on_the_rerun_of_an_unexported_run_exports_it(tmp_path, capsys):
    runner.run(CONFIG, synthetic.build, tmp_path, verbose=0)
    assert not (tmp_path / "aninfonce" / "encoder").exists()
    exported = dataclasses.replace(CONFIG, export=True)
    runner.run(exported, synthetic.build, tmp_path, verbose=0)
    assert "exporting its encoder, which --export false left out" in capsys.readouterr().out
    assert (tmp_path / "aninfonce" / "encoder" / "saved_model.pb").is_file()
    assert run_directory.final_files_problem(tmp_path / "aninfonce") is None
    files = (tmp_path / "aninfonce" / run_directory.FILES).read_text()
    assert "encoder/saved_model.pb" in files


def test_an_event_file_whose_first_record_does_not_read_is_kept_aside(tmp_path, capsys):
    log_dir, aside = tmp_path / "tensorboard" / "aninfonce", tmp_path / "aside"
    writer = tf.summary.create_file_writer(str(log_dir))
    with writer.as_default():
        for step in (10, 20):
            tf.summary.scalar("train/loss", 1.0, step=step)
    writer.close()
    (path,) = log_dir.glob("events.out.tfevents.*")
    data = bytearray(path.read_bytes())
    data[8] ^= 0xFF  # the first record's length checksum
    path.write_bytes(bytes(data))
    event_files.drop_events_after(log_dir, 10, aside)
    assert not path.exists() and (aside / path.name).read_bytes() == bytes(data)
    assert f"{path}: its first record does not read; kept aside in {aside}" in (
        capsys.readouterr().out
    )
