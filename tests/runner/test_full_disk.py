"""A full disk, at any write of a run, ends the recipe with one line and status 1,
keeps every file written before, and a rerun with room resumes to the result of a run
that never ran out of space."""

import errno
import fnmatch
import os
from pathlib import Path

import pytest
import tensorflow as tf

from aninfonce_tf import disk_space, runner
from aninfonce_tf.checkpoints import read_json
from aninfonce_tf.configs import synthetic
from aninfonce_tf.runner import report
from tests.support import assert_same_result

# One variant of 40 steps, a backup every 10, exported.
ARGV = [
    *("--smoke", "--losses", "aninfonce", "--save-every", "10", "--export", "true"),
    *("--jit-compile", "false"),  # what is written, not how the step is compiled
]
# Each write of a run, in the order a run first makes them: the files replaced atomically
# (the disk fills up as they are written), the export and the figures.
WRITES = [
    "config.json",
    "loss_curve.json",
    "step-*.weights.h5",
    "history.json",
    "model.keras",
    "encoder",
    "files.json",
    "results.json",
    "curves.png",
]


def _full_disk(monkeypatch, pattern: str) -> None:
    """The disk fills up at the first write of a file named like `pattern`: when the
    atomic writer flushes it (`os.fsync`), as the export writes it, or as the figures
    are drawn."""

    def no_space(name):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), name)

    fsync = os.fsync

    def failing_fsync(descriptor):
        name = Path(os.readlink(f"/proc/self/fd/{descriptor}")).name
        if fnmatch.fnmatch(name, f".partial-{pattern}"):
            raise no_space(name)
        fsync(descriptor)

    def failing_export(obj, directory, **kwargs):
        raise no_space(directory)

    def failing_plots(results, experiment, run_dir, title=""):
        raise no_space(str(run_dir / "curves.png"))

    if pattern == "encoder":
        monkeypatch.setattr(tf.saved_model, "save", failing_export)
    elif pattern == "curves.png":
        monkeypatch.setattr(report, "write_plots", failing_plots)
    else:
        monkeypatch.setattr(os, "fsync", failing_fsync)


def _variant(out: Path) -> dict:
    return read_json(out / "results.json")["variants"]["aninfonce"]


def _out_of_space(capsys, out: Path) -> str:
    """The one line a run into `out` on a full disk exits with (status 1)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        runner.main(synthetic, [*ARGV, "--out", str(out)])
    error = capsys.readouterr().err
    assert stop.value.code == 1 and error.count("\n") == 1, error
    assert "Traceback" not in error
    return error


def test_a_full_disk_at_each_write_ends_in_one_line_and_the_rerun_resumes(
    tmp_path, capsys, monkeypatch
):
    runner.main(synthetic, [*ARGV, "--out", str(tmp_path / "whole")])
    out = tmp_path / "cut"
    for pattern in WRITES:
        with monkeypatch.context() as patch:
            _full_disk(patch, pattern)
            error = _out_of_space(capsys, out)
        assert f"No space left in {out}" in error and pattern.split("*")[0] in error, error
        assert "Free space or pass another --out; the run resumes." in error
        assert not list(out.rglob(".partial-*")), pattern  # its temporary deleted
    runner.main(synthetic, [*ARGV, "--out", str(out)])
    assert_same_result(_variant(out), _variant(tmp_path / "whole"))
    assert (out / "curves.png").exists() and (out / "aninfonce" / "encoder").is_dir()
    assert not (out / "backup").exists()


def test_a_checkpoint_the_disk_has_no_room_for_is_refused_before_h5py_writes_it(
    tmp_path, capsys, monkeypatch
):
    out = tmp_path / "run"
    usage = disk_space.shutil.disk_usage(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(disk_space.shutil, "disk_usage", lambda path: usage._replace(free=1_000))
        error = _out_of_space(capsys, out)
    assert f"No space left in {out / 'backup' / 'aninfonce'} for step-000010.weights.h5" in error
    assert "needs about" in error and "and 1,000 are free" in error, error
    assert not list(out.rglob("*.weights.h5"))  # not a byte written
    runner.main(synthetic, [*ARGV, "--out", str(out)])
    assert _variant(out)["steps"] == 40
