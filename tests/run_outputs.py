"""The checks every recipe's `--smoke` test makes of the run's outputs: `results.json`
against its schema, and the TensorBoard logs."""

import collections
from pathlib import Path

import tensorflow as tf

from aninfonce_tf.checkpoints import read_json
from aninfonce_tf.evaluation.callbacks import scalar_items
from aninfonce_tf.loss_variants import LOSS_VARIANTS
from aninfonce_tf.runner import RUN_ENTRIES
from aninfonce_tf.schema import validate_results


def check_run(run_dir: Path, figures=()) -> dict:
    """Validates `run_dir/results.json` and checks `run_dir/tensorboard` (`figures`:
    the names of the PNGs expected as images); returns the results."""
    validate_results(run_dir / "results.json")
    results = read_json(run_dir / "results.json")
    check_tensorboard(run_dir / "tensorboard", results["variants"], figures)
    return results


def event_files(log_dir: Path) -> dict[Path, dict[tuple[str, str], list[int]]]:
    """Per event file under `log_dir`: `{(tag, plugin): [step, ...]}`."""
    files = {}
    for path in sorted(log_dir.rglob("events.out.tfevents.*")):
        tags = collections.defaultdict(list)
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                tags[value.tag, value.metadata.plugin_data.plugin_name].append(event.step)
        files[path] = dict(tags)
    return files


def check_tensorboard(log_dir: Path, variants: dict, figures=()) -> None:
    """Every event file holds summaries; within a run (directory), the files in the
    order written hold each tag at rising steps (a resumed run's files continue its
    killed run's, no point twice); the scalars are against the training step:
    `scores/<score>` at the evaluations' steps (each score once, none also under
    `train/`), `train/loss` at the loss curve's, `lambda_hat/<i>` per dimension of
    Lambda_hat; the figures are images."""
    files = event_files(log_dir)  # by name: by the time each was created
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for path, tags in files.items():
        assert tags, f"{path} is empty"
        for tag, steps in tags.items():
            runs[path.parent][tag] += steps
    for run, tags in runs.items():
        for tag, steps in tags.items():
            assert steps == sorted(set(steps)), (run, tag, steps)
    expected = {log_dir / name for name in variants} | ({log_dir / "figures"} if figures else set())
    assert set(runs) == expected, sorted(runs)
    for name, result in variants.items():
        tags = runs[log_dir / name]
        scalars = {tag: steps for (tag, plugin), steps in tags.items() if plugin == "scalars"}
        evaluations = [point["step"] for point in result["curve"]]
        final = scalar_items({k: v for k, v in result.items() if k not in RUN_ENTRIES})
        for score in final:
            assert scalars.pop(f"scores/{score}") == evaluations, (name, score)
        losses = [point["step"] for point in result["loss_curve"]]
        assert losses and scalars["train/loss"] == losses, name
        assert all(steps == losses for tag, steps in scalars.items() if tag.startswith("train/"))
        if LOSS_VARIANTS[name].learns_concentration:
            dimensions = [tag for tag in scalars if tag.startswith("lambda_hat/")]
            assert len(dimensions) == len(result["lambda_hat"]), name
            assert all(scalars[tag] == losses for tag in dimensions)
            assert tags["lambda_hat", "histograms"] == losses
        # Nothing else: no Keras `epoch_*` duplicates of the scores, no second copy.
        assert all(tag.startswith(("train/", "lambda_hat/")) for tag in scalars), scalars
        training = {tag.removeprefix("train/") for tag in scalars}
        assert not training & {*final, *(score.replace("/", "_") for score in final)}
    images = runs.get(log_dir / "figures", {})
    assert sorted(tag for tag, plugin in images if plugin == "images") == sorted(figures)
    steps = max(result["steps"] for result in variants.values())
    assert all(s == [steps] for s in images.values())
