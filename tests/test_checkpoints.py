"""Backups that workers resume at one step, and files replaced atomically down to the
directory entry, the stale temporaries of killed shared writes deleted."""

import os
import shutil
import stat
import threading

import keras
import numpy as np
import pytest

from aninfonce_tf import checkpoints, distribute, runner
from aninfonce_tf.checkpoints import Backup, replace_atomically
from aninfonce_tf.configs import synthetic

# Two variants of 10 steps, a checkpoint every 5, no XLA to compile and no export.
TINY = synthetic.SyntheticConfig(
    dim=4,
    steps=10,
    eval_every=10,
    save_every=5,
    batch_size=32,
    hidden_units="16",
    eval_size=128,
    generator_draws=20,
    losses="aninfonce,infonce",
    jit_compile=False,
    steps_per_execution=1,
    export=False,
)


class _Weights(keras.callbacks.Callback):
    """The model's weights at the end of each epoch, by step."""

    def __init__(self):
        super().__init__()
        self.by_step = {}

    def on_epoch_end(self, epoch, logs=None):
        self.by_step[epoch + 1] = self.model.get_weights()


def _model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("adam", "mse")
    return model


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A backup with checkpoints at steps 1, 2 and 3 (an epoch of one step each) and
    the weights of each."""
    directory = tmp_path_factory.mktemp("backup")
    weights = _Weights()
    x = np.arange(8, dtype="float32").reshape(4, 2)
    _model().fit(
        x,
        x[:, :1],
        batch_size=4,
        epochs=3,
        callbacks=[Backup(directory, 1, keep=3), weights],
        verbose=0,
    )
    return directory, weights.by_step


def _worker_backup(trained, path, steps, torn=()):
    """A worker's backup holding the checkpoints of `steps`, those of `torn` torn."""
    directory, _ = trained
    path.mkdir()
    for step in steps:
        name = f"step-{step:06d}.weights.h5"
        shutil.copy(directory / name, path / name)
        if step in torn:
            (path / name).write_bytes((path / name).read_bytes()[:1000])
    return Backup(path, 1)


def _on_workers(backups):
    """`restore_on_every_worker` on each backup, each in its own thread as on its own
    worker, `gather` exchanging their steps; each worker's step or error."""
    barrier, steps, outcomes = threading.Barrier(len(backups), timeout=30), {}, {}

    def work(index):
        def gather(step):
            steps[index] = step
            barrier.wait()  # every worker's step is in
            gathered = [steps[i] for i in range(len(backups))]
            barrier.wait()  # every worker has read them
            return gathered

        try:
            outcomes[index] = backups[index].restore_on_every_worker(gather)
        except RuntimeError as error:
            outcomes[index] = error

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(backups))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [outcomes[i] for i in range(len(backups))]


def _loaded(backup):
    model = _model()
    backup.set_model(model)
    backup.on_train_begin()
    return model.get_weights()


def test_workers_resume_at_the_newest_step_every_one_of_them_has(trained, tmp_path, capsys):
    # A kill before worker 1 wrote its step 3; worker 2 tore its step 3 on disk.
    backups = [
        _worker_backup(trained, tmp_path / "chief", [2, 3]),
        _worker_backup(trained, tmp_path / "worker-1", [1, 2]),
        _worker_backup(trained, tmp_path / "worker-2", [2, 3], torn=[3]),
    ]
    assert [backup.restore() for backup in backups] == [3, 2, 2]  # each on its own: apart
    assert _on_workers(backups) == [2, 2, 2]
    assert "resuming at step 2, the newest that every worker has" in capsys.readouterr().out
    for backup in backups:  # each loads its own step 2
        for loaded, saved in zip(_loaded(backup), trained[1][2], strict=True):
            np.testing.assert_array_equal(loaded, saved)
    # Workers that agree exchange their steps once.
    same = [_worker_backup(trained, tmp_path / f"same-{i}", [1, 2]) for i in range(2)]
    assert _on_workers(same) == [2, 2]


def test_workers_refuse_to_resume_when_one_lacks_the_step_they_all_reached(trained, tmp_path):
    backups = [
        _worker_backup(trained, tmp_path / "chief", [1, 2, 3], torn=[2]),
        _worker_backup(trained, tmp_path / "worker-1", [1, 2]),
    ]
    outcomes = _on_workers(backups)
    for outcome in outcomes:  # both workers, so that neither waits for the other
        assert isinstance(outcome, RuntimeError)
        assert "checkpoints at or below step 2 are at steps [1, 2]" in str(outcome)
    assert str(backups[0].directory) in str(outcomes[0])


def test_every_replica_sends_its_value_to_every_worker():
    assert distribute.gather_from_workers(distribute.get_strategy("mirrored"), 7) == [7, 7]


def test_a_replaced_file_and_then_its_directory_reach_the_disk(tmp_path, monkeypatch):
    synced = []
    fsync, replace = os.fsync, os.replace

    def recording_fsync(descriptor):
        synced.append(("fsync", stat.S_ISDIR(os.fstat(descriptor).st_mode)))
        fsync(descriptor)

    def recording_replace(*args, **kwargs):
        synced.append(("replace", None))
        replace(*args, **kwargs)

    monkeypatch.setattr(checkpoints.os, "fsync", recording_fsync)
    monkeypatch.setattr(checkpoints.os, "replace", recording_replace)
    path = replace_atomically(tmp_path / "a.json", lambda temporary: temporary.write_text("1"))
    assert path.read_text() == "1"
    assert synced == [("fsync", False), ("replace", None), ("fsync", True)]


def test_a_shared_write_deletes_the_stale_temporaries_of_killed_writers_of_its_file(tmp_path):
    killed = tmp_path / f".partial-{'a' * 32}-decoder.keras"  # SIGKILL: no cleaning up
    writing = tmp_path / f".partial-{'b' * 32}-decoder.keras"  # another writer, at work
    other = tmp_path / f".partial-{'c' * 32}-settings.json"  # another file's
    mine = tmp_path / ".partial-decoder.keras"  # a write of one name per file
    hours_ago = os.stat(tmp_path).st_mtime - 2 * checkpoints.STALE_TEMPORARY_SECONDS
    for path in (killed, writing, other, mine):
        path.write_bytes(b"part of a file")
        if path is not writing:
            os.utime(path, (hours_ago, hours_ago))
    replace_atomically(tmp_path / "decoder.keras", lambda t: t.write_bytes(b"whole"), shared=True)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        ["decoder.keras", writing.name, other.name, mine.name]
    )


class _Interrupt(keras.callbacks.Callback):
    """Stops the run, as a kill would, at step 7 of the variant `infonce`."""

    def on_train_batch_end(self, batch, logs=None):
        if self.model.name == "infonce" and int(self.model.optimizer.iterations) == 7:
            raise KeyboardInterrupt


@pytest.mark.slow
def test_a_finished_run_leaves_no_backup_and_an_interrupted_one_resumes(tmp_path, capsys):
    with pytest.raises(KeyboardInterrupt):
        runner.run(TINY, synthetic.build, tmp_path, verbose=0, callbacks=[_Interrupt()])
    # The finished variant's backup is gone; the interrupted one's is kept for the rerun.
    backups = tmp_path / "backup"
    assert [path.name for path in backups.iterdir()] == ["infonce"]
    assert [path.name for path in (backups / "infonce").iterdir()] == ["step-000005.weights.h5"]
    capsys.readouterr()
    results = runner.run(TINY, synthetic.build, tmp_path, verbose=0)
    output = capsys.readouterr().out
    assert "== aninfonce: finished" in output and "resuming infonce at step 5" in output
    assert results["infonce"]["steps"] == 10
    assert not backups.exists()
    assert [path for path in tmp_path.rglob("*") if path.is_dir() and not any(path.iterdir())] == []


def test_removing_a_backup_keeps_the_others_and_any_directory_that_is_not_empty(tmp_path):
    backups = tmp_path / "backup"
    for name in ("a", "b"):
        (backups / name).mkdir(parents=True)
        (backups / name / "step-000001.weights.h5").write_text("")
    checkpoints.remove_backup(backups, "a")
    assert [path.name for path in backups.iterdir()] == ["b"]
    checkpoints.remove_backup(backups, "a")  # gone already: nothing to do
    checkpoints.remove_backup(backups, "b")
    assert list(tmp_path.iterdir()) == []
    checkpoints.remove_backup(tmp_path / "never", "a")  # no backup was ever made
