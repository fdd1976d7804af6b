"""Two worker processes on 127.0.0.1 train the synthetic recipe (and the photos
one, each worker reading its own shard) under `MultiWorkerMirroredStrategy`: both end
with the same weights, each contrasted its rows against the negatives of both, and
only the chief wrote the run's outputs."""

import dataclasses
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from aninfonce_tf import runner
from aninfonce_tf.configs import synthetic
from aninfonce_tf.runner import identity, run_directory
from tests.runner import multiworker_worker
from tests.support import ROOT

WORKER = Path(multiworker_worker.__file__)


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def _train_on_two_workers(tmp_path: Path, kind: str) -> list:
    """Runs the two workers; returns their final weights."""
    cluster = {"worker": [f"127.0.0.1:{port}" for port in _free_ports(2)]}
    workers = []
    for index in range(2):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        env["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}
        )
        log = open(tmp_path / f"worker-{index}.log", "w")  # noqa: SIM115
        workers.append(
            subprocess.Popen(
                [sys.executable, str(WORKER), str(tmp_path), kind],
                env=env,
                stdout=log,
                stderr=log,
            )
        )
    try:
        codes = [worker.wait(timeout=240) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    logs = [(tmp_path / f"worker-{i}.log").read_text()[-3000:] for i in range(2)]
    assert codes == [0, 0], logs
    weights = [np.load(tmp_path / f"worker-{i}.npz") for i in range(2)]
    assert len(weights[0].files) > 2
    for name in weights[0].files:
        np.testing.assert_array_equal(weights[0][name], weights[1][name])
    return weights


@pytest.mark.slow
def test_two_workers_train_as_one_global_batch(tmp_path):
    # A run killed after the chief's first checkpoint, before worker 1's: both workers
    # start again at step 0, the newest step both have (apart, they would hang).
    config = dataclasses.replace(multiworker_worker.smoke_config(), strategy="multiworker")
    directory = run_directory.RunDirectory(tmp_path / "run", code=[identity.code_version()])
    directory.write_config(config)
    backup = tmp_path / "run" / "backup" / "aninfonce"
    backup.mkdir(parents=True)
    with h5py.File(backup / "step-000010.weights.h5", "w") as checkpoint:
        checkpoint.attrs["logs"] = json.dumps({"loss": 1.0})
    _train_on_two_workers(tmp_path, "synthetic")
    chief_log = (tmp_path / "worker-0.log").read_text()
    assert "checkpoints are at steps [0, 10]: resuming at step 0" in chief_log
    for index in range(2):
        # 32 rows per worker, 64 in the global batch: NT-Xent has 2 * 64 - 1 candidates.
        candidates = json.loads((tmp_path / f"worker-{index}.json").read_text())
        assert candidates == [127.0] * 20
    run = tmp_path / "run"
    assert (run / "results.json").exists() and (run / "aninfonce" / "model.keras").exists()
    results = json.loads((run / "results.json").read_text())["variants"]
    assert results["aninfonce"]["steps"] == 20
    assert not (run / "workers" / "worker-1" / "aninfonce" / "model.keras").exists()
    # The same training as on one device with the whole global batch.
    single = runner.run(
        multiworker_worker.smoke_config(), synthetic.build, tmp_path / "single", verbose=0
    )
    np.testing.assert_allclose(
        results["aninfonce"]["final_loss"], single["aninfonce"]["final_loss"], rtol=2e-3
    )


@pytest.mark.slow
def test_two_workers_train_the_photos_recipe_each_reading_its_own_shard(tmp_path):
    _train_on_two_workers(tmp_path, "photos")
    for index in range(2):
        log = (tmp_path / f"worker-{index}.log").read_text()
        assert "pairs (each worker reads its own shard)" in log
    for index in range(2):
        # 16 rows per worker, 32 in the global batch: 2 * 32 - 1 candidates.
        candidates = json.loads((tmp_path / f"worker-{index}.json").read_text())
        assert candidates == [63.0] * 20
    results = json.loads((tmp_path / "run" / "results.json").read_text())["variants"]
    assert results["aninfonce"]["steps"] == 20
    assert 0 <= results["aninfonce"]["backbone"]["class_accuracy"] <= 1


@pytest.mark.slow
def test_workers_given_different_flags_both_refuse_in_one_line_before_training(tmp_path):
    cluster = {"worker": [f"127.0.0.1:{port}" for port in _free_ports(2)]}
    workers = []
    for index in range(2):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        env["PYTHONPATH"] = str(ROOT)  # the package under test, in every worker
        env["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}
        )
        command = [sys.executable, str(ROOT / "recipes" / "synthetic.py"), "--smoke"]
        command += ["--losses", "aninfonce", "--export", "false", "--strategy", "multiworker"]
        command += ["--seed", str(index), "--out", str(tmp_path / "run")]  # seeds differ
        workers.append(
            subprocess.Popen(
                command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    try:
        outputs = [worker.communicate(timeout=240) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    for worker, (out, err) in zip(workers, outputs, strict=True):
        errors = [line for line in err.splitlines() if ": error: " in line]
        assert worker.returncode == 2 and len(errors) == 1, err[-3000:]
        assert "The workers of this run were given different flags or code" in errors[0]
        assert "Rerun every worker with the same flags." in errors[0]
        assert "== aninfonce" not in out  # before the first step
    assert not (tmp_path / "run" / "config.json").exists()
