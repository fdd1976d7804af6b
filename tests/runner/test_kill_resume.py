"""A run killed with SIGKILL at many points, checkpoint and results writes included,
resumes to the result of a run never killed."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from aninfonce_tf import runner
from aninfonce_tf.configs import synthetic
from tests.support import assert_same_result, check_tensorboard

# Tiny: epochs of 5 steps (a checkpoint each), evaluations every 10, two variants so
# that a kill can fall between them; no export, and no XLA to compile in each process.
CONFIG = dict(
    dim=4,
    steps=20,
    eval_every=10,
    save_every=5,
    batch_size=32,
    hidden_units="16",
    eval_size=256,
    generator_draws=20,
    losses="aninfonce,infonce",
    jit_compile=False,
    steps_per_execution=1,
    export=False,
)

# Runs the config into a directory and kills itself (SIGKILL) at a point: when the
# run's own code renames a file into place (`os.replace`, `os.rename`), with the file
# torn, complete but not renamed, renamed, or torn and renamed (a power loss that kept
# the rename but not the data), or after a training step.
DRIVER = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    import keras
    from aninfonce_tf import runner
    from aninfonce_tf.configs import synthetic

    out, config, kill = Path(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
    seen = 0

    def die():
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def killing(rename):
        def wrapper(source, target, *args, **kwargs):
            global seen
            variant = kill.get("variant")
            if kill.get("file") != Path(target).name or (
                variant and variant not in Path(target).parts
            ):
                return rename(source, target, *args, **kwargs)
            seen += 1
            if seen < kill.get("count", 1):
                return rename(source, target, *args, **kwargs)
            if kill["when"].startswith("torn"):
                os.truncate(source, os.path.getsize(source) // 3)
            if kill["when"] in ("torn", "written"):
                die()
            rename(source, target, *args, **kwargs)
            die()
        return wrapper

    os.replace, os.rename = killing(os.replace), killing(os.rename)

    class KillAtStep(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(self.model.optimizer.iterations)
            if self.model.name == kill.get("variant") and step == kill.get("step"):
                die()

    config = synthetic.SyntheticConfig(**config)
    runner.run(config, synthetic.build, out, verbose=0, callbacks=[KillAtStep()])
    """
)

# Two chains, run side by side, each into its own directory: within a chain every run
# resumes what the one before left.
KILLS = [
    dict(file="config.json", when="renamed"),  # before any training
    dict(file="step-000005.weights.h5", variant="aninfonce", when="torn"),
    dict(file="step-000010.weights.h5", variant="aninfonce", when="written"),
    # The newest checkpoint torn on disk: the next run falls back to the one before.
    dict(file="step-000015.weights.h5", variant="aninfonce", when="torn-renamed"),
    dict(step=17, variant="aninfonce"),  # mid-epoch, between checkpoints
]
LATE_KILLS = [
    dict(file="history.json", variant="aninfonce", when="torn"),
    dict(file="model.keras", variant="aninfonce", when="written"),
    dict(file="results.json", when="torn"),
    dict(file="results.json", when="renamed"),  # between the two variants
    dict(file="step-000010.weights.h5", variant="infonce", when="renamed"),
    dict(file="results.json", when="written"),
]


# With XLA, a moving average of the weights (in the optimizer's state, restored with
# it) and the export: one kill mid-epoch (each more process compiles again).
XLA_CONFIG = dict(CONFIG, losses="aninfonce", jit_compile=True, ema_momentum=0.9, export=True)
XLA_KILLS = [dict(step=12, variant="aninfonce")]


def _run_chain(driver, out, kills, config=CONFIG) -> subprocess.Popen:
    """One process running every kill of `kills` in turn into `out`, then the run to its
    end; it prints each run's return code and output as JSON lines."""
    script = textwrap.dedent(
        """
        import json, subprocess, sys
        for command in json.loads(sys.argv[1]):
            run = subprocess.run(command, capture_output=True, text=True, timeout=300)
            print(json.dumps([run.returncode, run.stdout, run.stderr[-3000:]]), flush=True)
        """
    )
    run = [sys.executable, str(driver), str(out), json.dumps(config)]
    commands = [[*run, json.dumps(kill)] for kill in [*kills, {}]]
    return subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(commands)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, killed whole by `start_chain`
    )


def _runs_of(chain: subprocess.Popen) -> list:
    """`[return code, stdout, stderr]` of each run of a chain, once it has ended."""
    output, _ = chain.communicate(timeout=600)
    assert chain.returncode == 0, output[-5000:]
    return [json.loads(line) for line in output.splitlines()]


@pytest.fixture
def start_chain():
    """`_run_chain`; every chain it started that still runs when the test ends, passed
    or failed, is killed with the runs under it."""
    chains = []

    def start(*args, **kwargs) -> subprocess.Popen:
        chains.append(_run_chain(*args, **kwargs))
        return chains[-1]

    yield start
    for chain in chains:
        if chain.poll() is None:
            os.killpg(chain.pid, signal.SIGKILL)
            chain.wait()


@pytest.mark.slow
def test_a_run_killed_at_any_point_resumes_to_the_uninterrupted_result(
    tmp_path, capsys, start_chain
):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    cuts = {"early": tmp_path / "early", "late": tmp_path / "late"}
    chains = {
        "early": start_chain(driver, cuts["early"], KILLS),
        "late": start_chain(driver, cuts["late"], LATE_KILLS),
    }
    config = synthetic.SyntheticConfig(**CONFIG)
    whole = runner.run(config, synthetic.build, tmp_path / "whole", verbose=0)
    runs = {name: _runs_of(chain) for name, chain in chains.items()}
    for name, kills in (("early", KILLS), ("late", LATE_KILLS)):
        assert len(runs[name]) == len(kills) + 1
        for kill, (code, stdout, stderr) in zip(kills, runs[name], strict=False):
            assert code == -signal.SIGKILL, (kill, stdout, stderr)
        code, stdout, stderr = runs[name][-1]
        assert code == 0, stderr
    newest = cuts["early"] / "backup" / "aninfonce" / "step-000015.weights.h5"
    after_torn = runs["early"][4][1]  # the run after the torn newest checkpoint
    assert f"checkpoint {newest} does not read" in after_torn, after_torn
    assert "resuming aninfonce at step 10" in after_torn
    assert "== aninfonce: finished" in runs["late"][-1][1]
    assert "resuming infonce at step 20" in runs["late"][-1][1]  # its last checkpoint

    for cut in cuts.values():
        resumed = json.loads((cut / "results.json").read_text())["variants"]
        assert set(resumed) == {"aninfonce", "infonce"}
        for name in ("aninfonce", "infonce"):
            assert [point["step"] for point in resumed[name]["curve"]] == [10, 20]
            assert_same_result(resumed[name], whole[name])
        # TensorBoard holds each point once: what a killed run wrote after the checkpoint
        # a resumed run started from is gone.
        figures = ["curves", "per_latent_r2", "lambda_aninfonce"]
        check_tensorboard(cut / "tensorboard", resumed, figures)
        # Nothing half-written or stale is left behind.
        assert not list(cut.rglob(".partial-*")) and not (cut / "backup").exists()
    tried = len(KILLS) + len(LATE_KILLS)
    with capsys.disabled():
        print(f"\n{tried} kill points tried; every rerun ended with the uninterrupted result")


@pytest.mark.slow
def test_a_run_with_xla_an_average_and_an_export_killed_resumes_to_the_uninterrupted_result(
    tmp_path, capsys, start_chain
):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    cut = tmp_path / "cut"
    chain = start_chain(driver, cut, XLA_KILLS, XLA_CONFIG)
    config = synthetic.SyntheticConfig(**XLA_CONFIG)
    whole = runner.run(config, synthetic.build, tmp_path / "whole", verbose=0)["aninfonce"]
    runs = _runs_of(chain)
    assert [code for code, _, _ in runs] == [-signal.SIGKILL] * len(XLA_KILLS) + [0], runs
    assert "resuming aninfonce at step 10" in runs[-1][1]
    resumed = json.loads((cut / "results.json").read_text())["variants"]["aninfonce"]
    assert_same_result(resumed, whole)
    # The exported Lambda_hat is the uninterrupted run's average.
    exported = [
        json.loads((run / "aninfonce" / "encoder" / "concentration.json").read_text())
        for run in (cut, tmp_path / "whole")
    ]
    assert_same_result(*exported)
    assert not list(cut.rglob(".partial-*")) and not (cut / "backup").exists()
    with capsys.disabled():
        print(f"\n{len(XLA_KILLS)} kill points tried with XLA, a weight average and the export")
