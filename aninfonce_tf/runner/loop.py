"""The run of an experiment: every loss variant of a config, over one seed or several.

The path from a recipe's command line to `results.json`: `cli.main` parses the config
and hands it to `run` (or `run_seeds`), which validates it, claims the run directory
(`run_directory`), makes the `RunContext` once, trains each variant
(`training.train_variant`), saves it (`run_directory`) and reports (`report`).

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

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import keras

from aninfonce_tf.checkpoints import Backup, read_json, remove_backup, write_json
from aninfonce_tf.configs.base import RunConfig, as_usage_errors
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.data.pairs import split_views
from aninfonce_tf.errors import Diverged, UsageError
from aninfonce_tf.evaluation.console import on_terminal
from aninfonce_tf.evaluation.targets import check_targets, parse_targets
from aninfonce_tf.loss_variants import LOSS_VARIANTS
from aninfonce_tf.runner import report, run_directory
from aninfonce_tf.runner.context import RunContext
from aninfonce_tf.runner.lock import lock_run_directory
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
    """Trains every loss variant of `config` on the experiment `build(config)` and
    scores them.

    Rerun into the same `run_dir` with the same config, it skips the variants
    already finished (with every final file as written: one damaged since saves
    again from its backup, or trains again) and resumes an interrupted one from its
    last backup checkpoint (every `save_every` steps and at each evaluation),
    evaluation history included, to the result an uninterrupted run gives; with
    another config it refuses (`steps_per_execution`, `log_every`, `strategy`, `tpu`
    and `export` may change: a finished variant saved without its export is exported
    then), and with other code, unless `allow_code_change`. Every
    file a resume reads, and the saved models, is replaced atomically, so a kill at
    any instant leaves a run that resumes; the figures are written again by every
    rerun, and TensorBoard's event files are appended to. The run holds `run_dir`'s
    lock throughout (`runner.lock`): a second run into it is refused.

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
        allow_code_change: resume a run trained by another version of this
            package's code (`--allow-code-change`); `config.json` and
            `results.json` record both.
        context: the run's `RunContext` (default: made from `config`).

    Returns:
        `{variant: result}`, as written under `variants` in `run_dir/results.json`,
        beside the `run` record (`run_record`; the layout: docs/results.md, "results.json").

    Raises:
        UsageError: (a `ValueError`) for a config, `stop_at` or `run_dir` that
            cannot run (held by another run, holding files that are not a run's or
            a run of another config or code), before any training and before
            anything is written.
        OutOfSpace: (a `UsageError`, `aninfonce_tf.disk_space`) when the disk has
            no room for a checkpoint, a model, an export or a results file; every
            file written before is kept and a rerun with room resumes. Other errors
            (of `build`, say) are raised as they are.
    """
    return _run(
        config, build, run_dir, verbose, callbacks, preset, smoke, allow_code_change, context
    )[0]


def _run(
    config, build, run_dir, verbose, callbacks, preset, smoke, allow_code_change, context=None
) -> tuple[dict, Experiment]:
    """`run`, returning the experiment too; `context` is made from the config once
    when not given."""
    if verbose is None:
        verbose = 1 if on_terminal() else 2
    with as_usage_errors():
        config = config.resolved()
        config.validate()
        config.check_inputs()
        stop_at = parse_targets(config.stop_at)
        names = config.loss_names()
    context = context or RunContext.create(config.strategy, config.tpu)
    if context.multi_worker:
        with worker_lost_as_one_line(context, "the workers compared their flags"):
            run_directory.check_workers_agree(context.strategy, config)
    work_dir = context.work_dir(run_dir)
    with lock_run_directory(work_dir):
        with as_usage_errors():
            saved = run_directory.claim_run_directory(run_dir, config)
            results, incomplete = run_directory.finished_variants(run_dir, saved, names)
            code = run_directory.code_history(run_dir, len(results) < len(names), allow_code_change)
        experiment = build(config)  # a defect here keeps its traceback (`check_inputs`)
        with as_usage_errors():
            anisotropic = {name: LOSS_VARIANTS[name].anisotropic for name in names}
            check_targets(stop_at, experiment.evaluators, anisotropic)
        record = report.run_record(config, experiment, preset, smoke, code)
        if results and len(results) < len(names):
            # The finished variants' scores and the ones to come share one record.
            saved_run = read_json(run_dir / "results.json").get("run", {})
            changes = report.scoring_changes(saved_run, record)
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
        for name in names:
            # A worker gone during the training, its final evaluation, saves or gathers.
            with worker_lost_as_one_line(context, f"{name} trained or was saved"):
                backup = Backup(work_dir / "backup" / name, config.epoch_steps())
                if name in results:
                    print(f"== {name}: finished in {run_dir}, not trained again", flush=True)
                    variant_dir = run_dir / name
                    unexported = (
                        "stopped" not in results[name] and not (variant_dir / "encoder").exists()
                    )
                    if context.chief and config.export and unexported:
                        print(f"== {name}: exporting its encoder, which --export false left out")
                        run_directory.export_saved_variant(variant_dir, input_spec)
                else:
                    if name in incomplete:
                        again = (
                            "saving it again from its backup"
                            if backup.checkpoints()
                            else "training it again from the start (its backup is gone)"
                        )
                        print(f"== {name}: {incomplete[name]}: {again}", flush=True)
                    if context.chief:
                        run_directory.write_config(run_dir, config, code)
                    model, results[name] = train_variant(
                        config,
                        experiment,
                        name,
                        run_dir,
                        context,
                        stop_at,
                        verbose,
                        callbacks,
                        code,
                    )
                    if context.chief:
                        if "stopped" not in results[name]:  # a diverged model is not worth keeping
                            run_directory.save_variant(
                                model, run_dir / name, input_spec, config.export
                            )
                        run_directory.write_results(run_dir, record, results)
            # Kept until the variant's outputs are written: a kill before resumes from it.
            remove_backup(work_dir / "backup", name)
        if context.chief:
            title = report.figure_title(config, preset, smoke)
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
    """`run`s `config` once per seed into `run_dir/seed_<k>/` (with `seed` k), then
    writes `run_dir/summary.json`: per variant and scalar score the mean, sd and n
    over the seeds, and the paired difference AnInfoNCE - InfoNCE with its 95 %
    t-interval (`aninfonce_tf.statistics.summarize`). The printed table shows the
    experiment's `table_columns` (default: every scalar score).

    Each seed resumes like a single run: rerun, it skips the finished seeds and
    variants and resumes an interrupted one. The summary covers, besides `seeds`,
    every seed of `run_dir` that an earlier run finished with this config (`--seeds 3`
    after `--seeds 0,1,2` summarises four seeds). `preset`, `smoke` and
    `allow_code_change`: as for `run`; `context`: the run's `RunContext` (default:
    made from `config` once). The run holds `run_dir`'s lock, and each seed's run its
    own, throughout; `run_dir` may hold nothing but the seeds' runs and
    `summary.json`. Seeds trained by different code are refused before any training
    (and again before the summary), unless `allow_code_change`; `summary.json` then
    records each seed's code under `code`.

    Returns:
        The summary, as written to `summary.json`.
    """
    return run_seeds_results(
        config, build, run_dir, seeds, verbose, callbacks, preset, smoke, context, allow_code_change
    )[0]


def run_seeds_results(
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
) -> tuple[dict, dict[int, dict]]:
    """`run_seeds`, returning with the summary each seed's `{variant: result}` as
    `run` returns it, on every worker (only the chief writes them to results.json).

    Returns:
        `(summary, {seed: {variant: result}})` for the `seeds` given.
    """
    with as_usage_errors():  # every seed, before a strategy is set up for any
        for seed in seeds:
            dataclasses.replace(config, seed=seed).resolved().validate()
    if not seeds:
        raise UsageError("`seeds` is empty: give at least one seed.")
    context = context or RunContext.create(config.strategy, config.tpu)
    runs = {}
    with lock_run_directory(context.work_dir(run_dir)):
        with as_usage_errors():  # a damaged earlier seed is named before any training
            run_directory.check_seeds_directory(run_dir)
            earlier = run_directory.finished_seeds(run_dir, config.resolved(), seeds)
            codes = run_directory.seeds_code(run_dir, [*seeds, *earlier])
            run_directory.check_seeds_code(codes, allow_code_change)
        for seed in seeds:
            seed_dir = run_dir / f"seed_{seed}"
            print(f"=== seed {seed}: {seed_dir}", flush=True)
            runs[seed], experiment = _run(
                dataclasses.replace(config, seed=seed),
                build,
                seed_dir,
                verbose,
                callbacks,
                preset,
                smoke,
                allow_code_change,
                context,
            )
        if earlier:
            print(f"=== seeds {sorted(earlier)}: finished in {run_dir} before, summarised too")
        with as_usage_errors():  # the codes that trained them, now that every seed has
            codes = run_directory.seeds_code(run_dir, [*runs, *earlier])
            mixed_code = run_directory.check_seeds_code(codes, allow_code_change)
            run_directory.check_seeds_protocol(run_dir, sorted({**runs, **earlier}))
        summary = summarize(
            {
                seed: {name: report.variant_scores(result) for name, result in results.items()}
                for seed, results in sorted({**runs, **earlier}.items())
            },
            family=experiment.primary_scores,
        )
        if mixed_code:
            summary["code"] = {str(seed): code for seed, code in sorted(codes.items())}
        if context.chief:
            write_json(run_dir / "summary.json", summary)
            report.write_seeds_figures(summary, experiment, run_dir, preset, smoke)
    print(summary_table(summary, experiment.table_columns))
    print(f"summary: {run_dir / 'summary.json'}")
    return summary, runs


def raise_if_diverged(runs: Mapping[int | None, Mapping[str, dict]], run_dir: Path) -> None:
    """Raises `Diverged` naming each variant whose loss turned non-finite.

    Args:
        runs: `{seed: {variant: result}}` (seed None: a run without `--seeds`), as
            `run` returns them.
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


__all__ = ["raise_if_diverged", "run", "run_seeds", "run_seeds_results"]
