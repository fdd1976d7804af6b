"""The run of an experiment: every loss variant of a config, over one seed or several.
Its path to `results.json`: docs/api.md#from-a-recipes-command-line-to-resultsjson"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import keras

from aninfonce_tf.checkpoints import Backup, remove_backup, write_json
from aninfonce_tf.configs.base import RunConfig, as_usage_errors
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.data.pairs import split_views
from aninfonce_tf.errors import Diverged, UsageError
from aninfonce_tf.evaluation.console import on_terminal
from aninfonce_tf.evaluation.targets import check_targets
from aninfonce_tf.loss_variants import LOSS_VARIANTS
from aninfonce_tf.runner import report
from aninfonce_tf.runner.context import RunContext
from aninfonce_tf.runner.identity import check_workers_agree
from aninfonce_tf.runner.lock import lock_run_directory
from aninfonce_tf.runner.plan import RunPlan
from aninfonce_tf.runner.run_directory import RunDirectory, SeedsDirectory
from aninfonce_tf.runner.training import train_variant, worker_lost_as_one_line
from aninfonce_tf.statistics import summarize, summary_table


def run(
    config: RunConfig,
    build: Callable[[RunConfig], Experiment],
    run_dir: Path,
    verbose: int | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    preset: str | None = None,
    smoke: bool = False,
    allow_code_change: bool = False,
    context: RunContext | None = None,
) -> dict:
    """Trains and scores every loss variant of `config`; rerun, it resumes (docs/runner.md#resume).

    Args:
        config: the experiment's config.
        build: `config -> Experiment`.
        run_dir: where results, plots, checkpoints, models and logs go.
        verbose: `fit`'s (default: a progress bar on a terminal, else a line per evaluation).
        callbacks: extra Keras callbacks for every variant's `fit`.
        preset: the preset's name, for `results.json` and the figures' titles.
        smoke: whether `config` is a `--smoke` run.
        allow_code_change: resume a run that other code trained (`--allow-code-change`).
        context: default: made from `config`.

    Returns:
        `{variant: result}`, as written under `variants` in `run_dir/results.json`.

    Raises:
        UsageError: for a config, `stop_at` or `run_dir` that cannot run, before training.
        OutOfSpace: (a `UsageError`) when the disk is full; a rerun with room resumes.

    Example:

    >>> import dataclasses, tempfile
    >>> from aninfonce_tf.configs import synthetic
    >>> config = dataclasses.replace(synthetic.PRESETS["quick"], **synthetic.SMOKE, losses="aninfonce")
    >>> results = run(config, synthetic.build, Path(tempfile.mkdtemp()), verbose=0)  # doctest: +ELLIPSIS
    == aninfonce: 40 steps of 128 pairs
    ...
    >>> results["aninfonce"]["steps"]
    40
    """
    plan = RunPlan.create(config, None, preset, smoke, allow_code_change)
    return run_plan(plan, build, run_dir, context, verbose, callbacks)[0]


def run_plan(
    plan: RunPlan,
    build: Callable[[RunConfig], Experiment],
    run_dir: Path,
    context: RunContext | None = None,
    verbose: int | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> tuple[dict, dict[int | None, dict]]:
    """Runs `plan` into `run_dir`: as `run`, or with its seeds as `run_seeds`.

    Returns:
        `(output, runs)`: `run`'s results or `run_seeds`' summary, and `{seed: results}`.
    """
    context = context or RunContext.create(plan.config.strategy, plan.config.tpu)
    verbose = (1 if on_terminal() else 2) if verbose is None else verbose
    if not plan.seeds:
        results = _run(plan, build, run_dir, context, verbose, callbacks)[0]
        return results, {None: results}
    runs = {}
    with lock_run_directory(context.work_dir(run_dir)):
        with as_usage_errors():  # a damaged earlier seed is named before any training
            directory = SeedsDirectory.claim(run_dir, plan)
        for seed in plan.seeds:
            seed_dir = directory.seed_dir(seed)
            print(f"=== seed {seed}: {seed_dir}", flush=True)
            runs[seed], experiment = _run(
                plan.for_seed(seed), build, seed_dir, context, verbose, callbacks
            )
        if directory.earlier:
            print(
                f"=== seeds {sorted(directory.earlier)}: finished in {run_dir} before, "
                "summarised too"
            )
        with as_usage_errors():  # the codes that trained them, now that every seed has
            codes = directory.code_of_seeds()
            directory.check_protocol()
        summary = summarize(
            {
                seed: {name: report.variant_scores(result) for name, result in results.items()}
                for seed, results in sorted({**runs, **directory.earlier}.items())
            },
            family=experiment.primary_scores,
        )
        if codes:
            summary["code"] = {str(seed): code for seed, code in sorted(codes.items())}
        if context.chief:
            write_json(run_dir / "summary.json", summary)
            report.write_seeds_figures(summary, experiment, run_dir, plan.preset, plan.smoke)
    print(summary_table(summary, experiment.table_columns))
    print(f"summary: {run_dir / 'summary.json'}")
    return summary, runs


def _run(plan, build, run_dir, context, verbose, callbacks) -> tuple[dict, Experiment]:
    """`run` of `plan` (of one seed), returning the experiment too."""
    config = plan.config
    if context.multi_worker:
        with worker_lost_as_one_line(context, "the workers compared their flags"):
            check_workers_agree(context.strategy, config)
    work_dir = context.work_dir(run_dir)
    with lock_run_directory(work_dir):
        with as_usage_errors():
            directory = RunDirectory.claim(run_dir, plan)
        experiment = build(config)  # a defect here keeps its traceback (`check_inputs`)
        with as_usage_errors():
            anisotropic = {name: LOSS_VARIANTS[name].anisotropic for name in plan.losses}
            targets = check_targets(plan.stop_at, experiment.evaluators, anisotropic)
        record = report.run_record(config, experiment, plan.preset, plan.smoke, directory.code)
        results = dict(directory.finished)
        if results and len(results) < len(plan.losses):
            # The finished variants' scores and the ones to come share one record.
            changes = report.scoring_changes(directory.record, record)
            if changes:
                raise UsageError(
                    f"{run_dir}'s finished variants were scored on other parts, or by "
                    f"another final evaluation, than this run gives ({'; '.join(changes)}): "
                    "the variants still to train would not compare with them. Rerun with "
                    "their settings, or into a new --out."
                )
        input_spec = (
            split_views(experiment.train_data(0).element_spec)[0] if context.chief else None
        )
        for name in plan.losses:
            # A worker gone during the training, its final evaluation, saves or gathers.
            with worker_lost_as_one_line(context, f"{name} trained or was saved"):
                if name in results:
                    print(f"== {name}: finished in {run_dir}, not trained again", flush=True)
                    if context.chief and config.export:
                        directory.export_saved_variant(name, input_spec)
                else:
                    if name in directory.incomplete:
                        backup = Backup(work_dir / "backup" / name, config.epoch_steps())
                        again = (
                            "saving it again from its backup"
                            if backup.checkpoints()
                            else "training it again from the start (its backup is gone)"
                        )
                        print(f"== {name}: {directory.incomplete[name]}: {again}", flush=True)
                    if context.chief:
                        directory.write_config(config)
                    model, results[name] = train_variant(
                        plan, experiment, name, directory, context, targets, verbose, callbacks
                    )
                    if context.chief:
                        if "stopped" not in results[name]:  # a diverged model is not kept
                            directory.save_variant(name, model, input_spec, config.export)
                        directory.write_results(record, results)
            # Kept until the variant's outputs are written: a kill before resumes from it.
            remove_backup(work_dir / "backup", name)
        if context.chief:
            title = report.figure_title(config, plan.preset, plan.smoke)
            figures = report.write_plots(results, experiment, run_dir, title)
            steps = max(result["steps"] for result in results.values())
            report.log_figures(figures, run_dir / "tensorboard" / "figures", steps)
    print(report.results_table(results, experiment.table_columns))
    for name, result in results.items():
        if "stopped" in result:
            print(f"{name}: {result['stopped']}; its scores are from the last evaluation before.")
    print(f"results: {run_dir / 'results.json'}")
    print(f"TensorBoard: tensorboard --logdir {run_dir / 'tensorboard'}")
    return results, experiment


def run_seeds(
    config: RunConfig,
    build: Callable[[RunConfig], Experiment],
    run_dir: Path,
    seeds: Sequence[int],
    verbose: int | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    preset: str | None = None,
    smoke: bool = False,
    context: RunContext | None = None,
    allow_code_change: bool = False,
) -> dict:
    """`run`s `config` once per seed into `run_dir/seed_<k>/`, then writes, prints and
    returns `run_dir/summary.json`. Arguments as `run`'s. Details: docs/runner.md#several-seeds"""
    plan = RunPlan.create(config, seeds, preset, smoke, allow_code_change)
    return run_plan(plan, build, run_dir, context, verbose, callbacks)[0]


def raise_if_diverged(runs: Mapping[int | None, Mapping[str, dict]], run_dir: Path) -> None:
    """Raises `Diverged` naming each variant whose loss turned non-finite.

    Args:
        runs: `{seed: {variant: result}}` (seed None: a run without `--seeds`).
        run_dir: where their results are.

    Example:

    >>> raise_if_diverged({None: {"aninfonce": {"stopped": "non-finite loss by step 10"}}},
    ...                   Path("runs/x"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    aninfonce_tf.errors.Diverged: aninfonce stopped at a non-finite loss by step 10 (its scores in runs/x are ...
    """
    stopped = [
        f"{name}{'' if seed is None else f' (seed {seed})'} stopped at a {result['stopped']}"
        for seed, results in runs.items()
        for name, result in results.items()
        if "stopped" in result
    ]
    if stopped:
        raise Diverged(
            f"{'; '.join(stopped)} (its scores "
            f"in {run_dir} are from the last evaluation before): try a smaller --learning-rate "
            "(or check the data for NaN), into a new --out."
        )


__all__ = ["raise_if_diverged", "run", "run_plan", "run_seeds"]
