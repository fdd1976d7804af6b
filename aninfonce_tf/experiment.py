"""The experiment runner every recipe shares.

A recipe hands `main` its config module (`aninfonce_tf.configs.*`): a config
dataclass, `PRESETS`, `SMOKE` and `build(config) -> Experiment`, the parts of the
experiment (pair data, encoder, evaluators). The runner owns everything else: the
strategy and its scope, precision, the loss variants and their compile, `fit`
with evaluation, `--stop-at`, NaN stop and checkpoint-and-resume, then per
variant `model.keras`, the exported encoder, `results.json` (rewritten after each
variant), the results table and plots. Only the chief worker writes outputs.
With `--seeds 0,1,2` it runs each seed into its own directory and summarises the
scores over the seeds (`run_seeds`).

Example (the synthetic experiment, tiny):

>>> import tempfile
>>> from aninfonce_tf.configs import synthetic
>>> config = dataclasses.replace(synthetic.PRESETS["quick"], **synthetic.SMOKE, losses="aninfonce")
>>> results = run(config, synthetic.build, Path(tempfile.mkdtemp()), verbose=0)  # doctest: +ELLIPSIS
== aninfonce: 40 steps of 128 pairs
...
>>> results["aninfonce"]["steps"]
40
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import json
import math
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import aninfonce_tf
from aninfonce_tf import distribute, optimizers, plots
from aninfonce_tf.checkpoints import (
    Backup,
    read_json,
    remove_backup,
    replace_atomically,
    replace_directory_atomically,
    write_json,
)
from aninfonce_tf.config import EXECUTION_FIELDS, RunConfig, UsageError, parse_config, split_list
from aninfonce_tf.evaluation.callbacks import (
    EvaluationCallback,
    StopOnNonFiniteLoss,
    TrainingLogger,
    check_targets,
    format_score,
    parse_targets,
    scalar_items,
)
from aninfonce_tf.losses import LOSS_VARIANTS, loss_variant
from aninfonce_tf.models import ContrastiveModel, export_encoder, split_views, training_views
from aninfonce_tf.seeds import summarize, summary_table

# Entries of a variant's result that describe the run rather than score it.
RUN_ENTRIES = (
    "steps",
    "wall_seconds",
    "final_loss",
    "curve",
    "loss_curve",
    "target_reached",
    "stopped",
)


@dataclasses.dataclass
class Experiment:
    """The parts of an experiment that a config module's `build(config)` returns.

    Args:
        train_data: `start_step -> tf.data.Dataset` of global batches of pairs
            (`(view1, view2)` or dicts with `view1`, `view2` and extra keys),
            long enough for the run. Batch i does not depend on `start_step`, so
            that a resumed run sees the batches of an uninterrupted one.
        encoder: builds a fresh encoder (observations -> features).
        evaluators: objects with `evaluate(model)` and `score_names(anisotropic)`
            (see `aninfonce_tf.evaluation.callbacks`).
        projector: builds a fresh projection head, or None.
        normalize: embeddings on the unit sphere (InfoNCE then uses the cosine
            similarity); False trains the Euclidean variant.
        curve_keys: scores plotted over training, beside the loss (default: every
            scalar score).
        table_columns: scores shown in the printed tables and in the line printed
            at each evaluation (default: every scalar score; `results.json` and
            TensorBoard always have them all).
        metadata: entries of the `run` record of `results.json` (`run_record`).
        plots: `(results, run_dir, title=...) -> [paths]`, the experiment's own
            figures, `title` naming the preset and seed.
        worker_train_data: optional `(start_step, input_context) -> tf.data.Dataset`
            of one input pipeline's own shard in per-replica batches. Multi-worker
            runs read it, each worker only its shard, instead of every worker
            building the global batches of `train_data` and keeping its rows.
    """

    train_data: Callable[[int], tf.data.Dataset]
    encoder: Callable[[], keras.Model]
    evaluators: Sequence
    projector: Callable[[], keras.layers.Layer] | None = None
    normalize: bool = True
    curve_keys: Sequence[str] = ()
    table_columns: Sequence[str] = ()
    metadata: dict = dataclasses.field(default_factory=dict)
    plots: Callable[[dict, Path], list[Path]] | None = None
    worker_train_data: Callable[[int, tf.distribute.InputContext], tf.data.Dataset] | None = None


def encoder_optimizer(config: RunConfig) -> keras.optimizers.Optimizer:
    """The encoder's (and projector's) optimizer and learning-rate schedule."""
    learning_rate = config.learning_rate
    cosine = config.learning_rate_schedule == "cosine"
    if cosine or config.warmup_steps:
        # A linear warm-up from 0 to `learning_rate`, then a cosine decay to 0, or no
        # decay (alpha = 1: the cosine ends where it starts).
        learning_rate = keras.optimizers.schedules.CosineDecay(
            0.0 if config.warmup_steps else config.learning_rate,
            decay_steps=max(config.steps - config.warmup_steps, 1),
            alpha=0.0 if cosine else 1.0,
            warmup_target=config.learning_rate if config.warmup_steps else None,
            warmup_steps=config.warmup_steps,
        )
    # Keras keeps the average in the optimizer; ContrastiveModel extends it to Lambda_hat.
    average = dict(use_ema=True, ema_momentum=config.ema_momentum) if config.ema_momentum else {}
    if config.optimizer == "lars":
        return optimizers.LARS(
            learning_rate,
            momentum=config.momentum,
            weight_decay=config.l2_weight_decay,
            **average,
        )
    if config.optimizer == "sgd" and config.l2_weight_decay:
        # PyTorch's weight decay: an L2 term of the gradient, through the momentum.
        return optimizers.CoupledSGD(
            learning_rate,
            momentum=config.momentum,
            weight_decay=config.l2_weight_decay,
            **average,
        )
    if config.optimizer == "sgd":
        return keras.optimizers.SGD(
            learning_rate,
            momentum=config.momentum,
            weight_decay=config.weight_decay or None,
            **average,
        )
    if config.optimizer == "muon":
        # Muon orthogonalises each kernel's update, so directions with small gradients
        # move as fast as the rest; Adam updates biases and the excluded layers.
        return keras.optimizers.Muon(
            learning_rate,
            weight_decay=config.weight_decay,
            adam_weight_decay=config.weight_decay,
            exclude_layers=split_list(config.muon_exclude),
            **average,
        )
    if config.optimizer == "adamw":
        return keras.optimizers.AdamW(learning_rate, weight_decay=config.weight_decay, **average)
    return keras.optimizers.Adam(learning_rate, **average)


def build_model(config: RunConfig, experiment: Experiment, variant: str) -> ContrastiveModel:
    """The encoder, projector, optional Lambda_hat and compiled loss of one variant,
    under `config`'s precision (call it inside the strategy's scope)."""
    previous_policy = keras.config.dtype_policy()
    if config.mixed_precision:
        keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        encoder = experiment.encoder()
        projector = experiment.projector() if experiment.projector else None
    finally:
        keras.config.set_dtype_policy(previous_policy)
    loss, scaling = loss_variant(
        variant, normalized=experiment.normalize, seed=config.seed, **config.loss_options()
    )
    model = ContrastiveModel(
        encoder, projector=projector, normalize=experiment.normalize, scaling=scaling, name=variant
    )
    model.compile(
        optimizer=encoder_optimizer(config),
        loss=loss,
        # Lambda_hat's own Adam: no weight decay pulling it to a constant.
        concentration_optimizer=(
            keras.optimizers.Adam(config.concentration_learning_rate) if scaling else None
        ),
        jit_compile=config.jit_compile,
        steps_per_execution=config.steps_per_execution,
    )
    return model


def run_directory(out: str | None, name: str) -> Path:
    """`out`, or `runs/<name>-<time>` when unset."""
    path = Path(out) if out else Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def claim_run_directory(run_dir: Path, config: RunConfig) -> dict:
    """Checks that `run_dir` is new or holds a run of the same config and returns the
    results already saved there (resume). `config.json` is written once training
    starts (`run`), so that a run refused before it leaves none to refuse its rerun.

    Raises:
        ValueError: when `run_dir` holds a run of another config; a stale backup
            is never resumed silently.
    """
    config_path = run_dir / "config.json"
    if config_path.exists():
        saved = read_json(config_path)
        current = json.loads(json.dumps(config.resume_key()))
        saved = {k: v for k, v in saved.items() if k not in EXECUTION_FIELDS}
        differing = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
        if differing:
            changes = ", ".join(f"{k}: {saved.get(k)!r} -> {current.get(k)!r}" for k in differing)
            raise ValueError(
                f"{run_dir} holds a run of another config ({changes}); it would resume from "
                "stale checkpoints. Pass a new --out, or delete that directory to start over."
            )
    results_path = run_dir / "results.json"
    saved = read_json(results_path) if results_path.exists() else {}
    # A results.json written before the `run` / `variants` layout holds the variants
    # at its top level.
    return saved.get("variants", saved)


def _work_dir(run_dir: Path, strategy: tf.distribute.Strategy) -> Path:
    """The directory of this worker's own files (histories, backups): `run_dir` on the
    chief."""
    return run_dir if distribute.is_chief(strategy) else run_dir / "workers" / _task_name(strategy)


def train_variant(
    config: RunConfig,
    experiment: Experiment,
    variant: str,
    run_dir: Path,
    strategy: tf.distribute.Strategy,
    stop_at: dict[str, float],
    verbose: int,
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> tuple[ContrastiveModel, dict]:
    """Trains one loss variant (resuming its backup, if any) and returns the model
    and its result: final scores, steps, seconds, final loss, score and loss curves.

    Keras' epochs last `config.epoch_steps()` steps; at the end of each, the backup
    keeps a checkpoint (`checkpoints.Backup`), and every `eval_every` steps the
    evaluators score the model. TensorBoard (`run_dir/tensorboard/<variant>`, on the
    chief) gets the scores of each evaluation and, every `config.log_steps()` steps,
    the training metrics and Lambda_hat; the console a line per evaluation with the
    experiment's `table_columns` (with `verbose`)."""
    chief = distribute.is_chief(strategy)
    work_dir = _work_dir(run_dir, strategy)
    variant_dir = work_dir / variant
    variant_dir.mkdir(parents=True, exist_ok=True)
    epoch_steps = config.epoch_steps()
    backup = Backup(work_dir / "backup" / variant, epoch_steps)
    if distribute.is_multi_worker(strategy):  # each worker has its own backup: one step
        start_step = backup.restore_on_every_worker(
            functools.partial(distribute.gather_from_workers, strategy)
        )
    else:
        start_step = backup.restore()
    if start_step % epoch_steps:
        raise UsageError(
            f"The backup of {variant} in {run_dir} is at step {start_step}, which epochs of "
            f"{epoch_steps} steps (the default `save_every` for this `steps_per_execution`) "
            "cannot resume: pass the --steps-per-execution that it was trained with."
        )
    history_path = variant_dir / "history.json"
    loss_path = variant_dir / "loss_curve.json"
    history, loss_curve, reached = [], [], None
    if chief:  # also at step 0: a run killed before its first checkpoint logged too
        _drop_events_after(run_dir / "tensorboard" / variant, start_step)
    if start_step:
        history = _points_until(history_path, start_step)
        loss_curve = _points_until(loss_path, start_step)
        print(f"   resuming {variant} at step {start_step}", flush=True)
        last = scalar_items(history[-1]) if history and history[-1]["step"] == start_step else {}
        if stop_at and all(last.get(name, -math.inf) >= v for name, v in stop_at.items()):
            # The run stopped there, at its targets: nothing is left to train.
            reached = {"step": start_step, "seconds": history[-1]["seconds"]}
    with strategy.scope():
        keras.utils.set_random_seed(config.seed)
        model = build_model(config, experiment, variant)
    logs = str(run_dir / "tensorboard" / variant) if chief else None
    evaluation = EvaluationCallback(
        experiment.evaluators,
        logs,
        every_epochs=config.eval_every // epoch_steps,
        steps_per_epoch=epoch_steps,
        stop_at=stop_at,
        history=history,
        history_path=str(history_path),
        verbose=int(verbose != 0),
        columns=experiment.table_columns,
        scores_in_logs=False,  # Keras' progress line shows the training metrics only
    )
    evaluation.reached = reached
    training = TrainingLogger(
        logs, config.log_steps(), history=loss_curve, history_path=str(loss_path)
    )
    non_finite = StopOnNonFiniteLoss()
    # The backup after the evaluation and the loss curve: a checkpoint never runs ahead
    # of history.json and loss_curve.json.
    fit_callbacks = [non_finite, training, evaluation, backup, *callbacks]
    sharded = distribute.is_multi_worker(strategy) and experiment.worker_train_data
    if sharded:
        data = strategy.distribute_datasets_from_function(
            lambda context: training_views(experiment.worker_train_data(start_step, context))
        )
    elif strategy.num_replicas_in_sync > 1:
        data = distribute.distribute_global_batches(
            strategy, lambda: training_views(experiment.train_data(start_step)), config.batch_size
        )
    else:
        data = experiment.train_data(start_step)
    reading = " (each worker reads its own shard)" if sharded else ""
    print(f"== {variant}: {config.steps} steps of {config.batch_size} pairs{reading}", flush=True)
    start = time.perf_counter()
    fit_history = model.fit(
        data,
        steps_per_epoch=epoch_steps,
        initial_epoch=start_step // epoch_steps,
        epochs=(reached["step"] if reached else config.steps) // epoch_steps,
        callbacks=fit_callbacks,
        verbose=verbose,
        shuffle=False,  # fresh pairs every step; True would only make Keras warn
    )
    seconds = time.perf_counter() - start + (history[-1]["seconds"] if history else 0.0)
    curve = evaluation.history
    final = curve[-1] if curve else {}
    # Resumed at its last step, `fit` runs no epoch: the loss is the checkpoint's.
    losses = fit_history.history.get("loss") or [backup.restored_logs["loss"]]
    result = {
        **{k: v for k, v in final.items() if k not in ("step", "seconds")},
        # Counted from the batches, as the callbacks count them (none ran: resumed at the end).
        "steps": max(training.step, start_step),
        "wall_seconds": round(seconds, 1),
        "final_loss": float(losses[-1]),
        "curve": curve,
        "loss_curve": training.history,
    }
    if stop_at:
        result["target_reached"] = evaluation.reached
    if non_finite.stopped_at is not None:
        result["stopped"] = f"non-finite loss by step {non_finite.stopped_at}"
    return model, result


def _points_until(path: Path, step: int) -> list[dict]:
    """The points of a history file up to `step` (none when there is no file)."""
    return [p for p in json.loads(path.read_text()) if p["step"] <= step] if path.exists() else []


def _drop_events_after(log_dir: Path, step: int) -> None:
    """Removes from the TensorBoard event files in `log_dir` the summaries after `step`,
    which the run resumed there writes again (a file left without any is deleted)."""
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        records = []
        try:
            for record in tf.data.TFRecordDataset(str(path)):
                records.append(record.numpy())
        except tf.errors.DataLossError:
            pass  # a record torn by the kill: the ones before it stay
        events = [tf.compat.v1.Event.FromString(record) for record in records]
        kept = [r for r, e in zip(records, events, strict=True) if e.step <= step]
        if not any(e.summary.value and e.step <= step for e in events):
            path.unlink()
        elif len(kept) < len(records):

            def write(temporary: Path, kept=kept) -> None:
                with tf.io.TFRecordWriter(str(temporary)) as writer:
                    for record in kept:
                        writer.write(record)

            replace_atomically(path, write)


def _task_name(strategy) -> str:
    resolver = strategy.cluster_resolver
    return f"{resolver.task_type}-{resolver.task_id}"


def save_variant(model: ContrastiveModel, variant_dir: Path, input_spec, export: bool) -> None:
    """`model.keras` and, with `export`, the encoder SavedModel and Lambda_hat, each
    replaced atomically."""
    replace_atomically(variant_dir / "model.keras", model.save)
    if export:
        replace_directory_atomically(
            variant_dir / "encoder", lambda directory: export_encoder(model, directory, input_spec)
        )


def run(
    config: RunConfig,
    build: Callable[[RunConfig], Experiment],
    run_dir: Path,
    verbose: int | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    preset: str | None = None,
    smoke: bool = False,
) -> dict:
    """Trains every loss variant of `config` on the experiment `build(config)` and
    scores them.

    Rerun into the same `run_dir` with the same config, it skips the variants
    already finished and resumes an interrupted one from its last backup
    checkpoint (every `save_every` steps and at each evaluation), evaluation
    history included, to the result an uninterrupted run gives; with another
    config it refuses (`steps_per_execution`, `log_every`, `strategy`, `tpu` and
    `export` may change). Every file a resume reads, and the saved models, is
    replaced atomically, so a kill at any instant leaves a run that resumes; the
    figures are written again by every rerun, and TensorBoard's event files are
    appended to.

    Args:
        config: the experiment's config (a `RunConfig`).
        build: `config -> Experiment`.
        run_dir: where results, plots, checkpoints, models and logs go.
        verbose: Keras' `fit` verbosity (default: a progress bar on a terminal,
            a line per evaluation otherwise).
        callbacks: extra Keras callbacks for every variant's `fit`.
        preset: the name of the preset `config` comes from, for `results.json`
            and the figures' titles.
        smoke: whether `config` is a `--smoke` run (as `preset`).

    Returns:
        `{variant: result}`, as written under `variants` in `run_dir/results.json`,
        beside the `run` record (`run_record`; the layout: `aninfonce_tf.schema`).

    Raises:
        UsageError: (a `ValueError`) for a config, `stop_at` or `run_dir` that
            cannot run, before any training and before anything is written. Other
            errors (of `build`, say) are raised as they are.
    """
    return _run(config, build, run_dir, verbose, callbacks, preset, smoke)[0]


def _run(config, build, run_dir, verbose, callbacks, preset, smoke) -> tuple[dict, Experiment]:
    """`run`, returning the experiment too."""
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    with _as_usage_errors():
        config = config.resolved()
        config.validate()
        stop_at = parse_targets(config.stop_at)
        names = config.loss_names()
        saved = claim_run_directory(run_dir, config)
    strategy = distribute.get_strategy(config.strategy, config.tpu)
    experiment = build(config)
    with _as_usage_errors():
        anisotropic = {name: LOSS_VARIANTS[name].anisotropic for name in names}
        check_targets(stop_at, experiment.evaluators, anisotropic)
    chief = distribute.is_chief(strategy)
    results = {name: saved[name] for name in names if _finished(run_dir, saved, name)}
    record = run_record(config, experiment, preset, smoke)
    input_spec = split_views(experiment.train_data(0).element_spec)[0] if chief else None
    for name in names:
        if name in results:
            print(f"== {name}: finished in {run_dir}, not trained again", flush=True)
        else:
            if chief and not (run_dir / "config.json").exists():
                run_dir.mkdir(parents=True, exist_ok=True)
                write_json(run_dir / "config.json", dataclasses.asdict(config))
            model, results[name] = train_variant(
                config, experiment, name, run_dir, strategy, stop_at, verbose, callbacks
            )
            if chief:
                if "stopped" not in results[name]:  # a diverged model is not worth keeping
                    save_variant(model, run_dir / name, input_spec, config.export)
                _write_results(run_dir, record, results)
        # Kept until the variant's outputs are written: a kill before resumes from it.
        remove_backup(_work_dir(run_dir, strategy) / "backup", name)
    if chief:
        figures = write_plots(results, experiment, run_dir, figure_title(config, preset, smoke))
        steps = max(result["steps"] for result in results.values())
        _log_figures(figures, run_dir / "tensorboard" / "figures", steps)
    print(results_table(results, experiment.table_columns))
    for name, result in results.items():
        if "stopped" in result:
            print(f"{name}: {result['stopped']}; its scores are from the last evaluation before.")
    print(f"results: {run_dir / 'results.json'}")
    print(f"TensorBoard: tensorboard --logdir {run_dir / 'tensorboard'}")
    return results, experiment


@contextlib.contextmanager
def _as_usage_errors():
    """Raises the `ValueError`s of checks of the user's input (the config, `--stop-at`,
    the run directory) as `UsageError`s, which the recipes print as one line; every
    other error keeps its traceback."""
    try:
        yield
    except UsageError:
        raise
    except ValueError as error:
        raise UsageError(str(error)) from error


def _finished(run_dir: Path, saved: dict, name: str) -> bool:
    """Saved with its model, or diverged (which saves none)."""
    return name in saved and ("stopped" in saved[name] or (run_dir / name / "model.keras").exists())


def run_record(
    config: RunConfig, experiment: Experiment, preset: str | None = None, smoke: bool = False
) -> dict:
    """The `run` entry of `results.json`: what ran, where and when. The preset, the
    seed, the date (UTC), the versions of this package, TensorFlow, Keras, NumPy and
    Python, the whole config, and the experiment's `metadata` (e.g. the true
    Lambda, `true_concentration`)."""
    return {
        **experiment.metadata,
        "preset": preset,
        "smoke": smoke,
        "seed": config.seed,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {
            "aninfonce_tf": aninfonce_tf.__version__,
            "tensorflow": tf.__version__,
            "keras": keras.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "config": dataclasses.asdict(config),
    }


def _write_results(run_dir: Path, record: dict, results: dict) -> None:
    write_json(run_dir / "results.json", {"run": record, "variants": results})


def figure_title(config: RunConfig, preset: str | None = None, smoke: bool = False) -> str:
    """`preset quick (smoke), seed 0`: what the figures of a run say they show."""
    name = f"preset {preset}{' (smoke)' if smoke else ''}, " if preset else ""
    return f"{name}seed {config.seed}"


def write_plots(
    results: dict, experiment: Experiment, run_dir: Path, title: str = ""
) -> list[Path]:
    """`curves.png` of the training loss and the scores over training, and the
    experiment's own figures, each titled `title` (and what it shows)."""
    curves = {name: r["curve"] for name, r in results.items()}
    losses = {name: r.get("loss_curve", []) for name, r in results.items()}
    keys = list(experiment.curve_keys) or _scalar_columns(results)
    paths = [plots.plot_curves(curves, run_dir / "curves.png", keys, losses, title=title)]
    if experiment.plots:
        paths += experiment.plots(results, run_dir, title=title)
    return paths


def _log_figures(paths: Sequence[Path], log_dir: Path, step: int) -> None:
    """The figures as TensorBoard images at `step` (tag: the file name without
    `.png`), in one event file that replaces the one of an earlier (resumed) run."""

    def write(directory: Path) -> None:
        writer = tf.summary.create_file_writer(str(directory))
        with writer.as_default(step=step):
            for path in paths:
                image = tf.io.decode_png(tf.io.read_file(str(path)), channels=3)
                tf.summary.image(Path(path).stem, image[None])
        writer.close()

    if paths:
        replace_directory_atomically(log_dir, write)


def _scores(result: dict) -> dict[str, float]:
    return scalar_items({k: v for k, v in result.items() if k not in RUN_ENTRIES})


def _scalar_columns(results: dict) -> list[str]:
    columns = {}
    for result in results.values():
        columns.update(dict.fromkeys(_scores(result)))
    return list(columns)


def results_table(results: dict, columns: Sequence[str] = ()) -> str:
    """A row per loss variant: a column per scalar score (3 decimals; or those in
    `columns`), steps, seconds.

    Example:

    >>> print(results_table({"a": {"mcc": 0.91234, "steps": 5, "wall_seconds": 2.0}}))
    variant    mcc  steps  seconds
    -------  -----  -----  -------
          a  0.912      5        2
    """
    columns = list(columns) or _scalar_columns(results)
    rows = []
    for name, result in results.items():
        scores = _scores(result)
        rows.append(
            [
                name,
                *(format_score(scores[c]) if c in scores else "-" for c in columns),
                str(result["steps"]),
                f"{result['wall_seconds']:.0f}",
            ]
        )
    header = ["variant", *columns, "steps", "seconds"]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row):
        return "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def run_seeds(
    config: RunConfig,
    build: Callable[[RunConfig], Experiment],
    run_dir: Path,
    seeds: Sequence[int],
    verbose: int | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    preset: str | None = None,
    smoke: bool = False,
) -> dict:
    """`run`s `config` once per seed into `run_dir/seed_<k>/` (with `seed` k), then
    writes `run_dir/summary.json`: per variant and scalar score the mean, sd and n
    over the seeds, and the paired difference AnInfoNCE - InfoNCE with its 95 %
    t-interval (`aninfonce_tf.seeds.summarize`). The printed table shows the
    experiment's `table_columns` (default: every scalar score).

    Each seed resumes like a single run: rerun, it skips the finished seeds and
    variants and resumes an interrupted one. `preset` and `smoke`: as for `run`.

    Returns:
        The summary, as written to `summary.json`.
    """
    scores = {}
    for seed in seeds:
        seed_dir = run_dir / f"seed_{seed}"
        print(f"=== seed {seed}: {seed_dir}", flush=True)
        results, experiment = _run(
            dataclasses.replace(config, seed=seed),
            build,
            seed_dir,
            verbose,
            callbacks,
            preset,
            smoke,
        )
        scores[seed] = {name: _scores(result) for name, result in results.items()}
    summary = summarize(scores)
    if distribute.is_chief(distribute.get_strategy(config.strategy, config.tpu)):
        write_json(run_dir / "summary.json", summary)
    print(summary_table(summary, experiment.table_columns))
    print(f"summary: {run_dir / 'summary.json'}")
    return summary


def main(config_module, argv=None, description: str = "") -> dict:
    """The command line of a recipe: parses its config module's presets and flags,
    then `run`s it into `--out`, or with `--seeds` `run_seeds`.

    Args:
        config_module: a module with `PRESETS`, `SMOKE` and `build`.
        argv: arguments (default `sys.argv[1:]`).
        description: the `--help` description.
    """
    config, options = parse_config(
        config_module.PRESETS, argv, description=description, smoke=config_module.SMOKE
    )
    name = options.preset + ("-smoke" if options.smoke else "")
    with recipe_run_directory(options.out, name) as run_dir:
        print(f"preset {options.preset}: {config}\nrun directory: {run_dir}", flush=True)
        labels = dict(preset=options.preset, smoke=options.smoke)
        if options.seeds:
            return run_seeds(config, config_module.build, run_dir, options.seeds, **labels)
        return run(config, config_module.build, run_dir, **labels)


@contextlib.contextmanager
def recipe_run_directory(out: str | None, name: str):
    """A recipe's run directory (`run_directory`), in which a `UsageError` is printed
    as argparse prints a bad flag (one line, status 2, no traceback) and leaves no
    empty directory behind."""
    new_directory = not (out and Path(out).exists())
    run_dir = run_directory(out, name)
    try:
        yield run_dir
    except UsageError as error:
        if new_directory and not any(run_dir.iterdir()):
            run_dir.rmdir()
        print(f"{Path(sys.argv[0]).name}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


__all__ = [
    "Experiment",
    "build_model",
    "encoder_optimizer",
    "main",
    "recipe_run_directory",
    "results_table",
    "run",
    "run_seeds",
]
