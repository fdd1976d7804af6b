"""Sweeps over config fields, each cell a resumable `run_seeds`: a star (`star_cells`) or
the product grid (`grid_cells`). Details: docs/method.md#a-sweeps-tables"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from aninfonce_tf import plots, sweep_tables
from aninfonce_tf.checkpoints import read_json, write_json
from aninfonce_tf.configs.base import RunConfig, as_usage_errors, split_list
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.errors import UsageError
from aninfonce_tf.parsing import strict_float
from aninfonce_tf.plots.dose_response import plot_dose_response
from aninfonce_tf.runner import RunContext, run_directory, run_seeds
from aninfonce_tf.runner.cli import (
    parse_config,
    recipe_run_directory,
    refuse_out,
    run_line,
    run_name,
    seed_list,
)
from aninfonce_tf.runner.lock import lock_run_directory
from aninfonce_tf.runner.report import variant_scores
from aninfonce_tf.sweep_tables import tradeoff_markdown

# A cell: the config's values of the swept fields, and its seeds.
Cell = tuple[dict, list[int]]
# What a sweep writes beside its cells' directories.
GRID_FILES = (
    "grid.json",
    "tradeoff.md",
    "tradeoff.png",
    "dose_response.md",
    "dose_response.png",
)
# What a cell's record in grid.json keeps of its first seed's `run` record (those the
# experiment writes): the pairs' effective concentration and the blocks it gives.
RUN_RECORDS = ("effective_concentration", "blocks")
DESIGNS = ("star", "product")


def grid_cells(
    grid: Mapping[str, Sequence], seeds: Sequence[int], corner_seeds: Sequence[int]
) -> list[Cell]:
    """Every combination of the `grid`'s values with `seeds` (`corner_seeds` at corners).

    Example:

    >>> [seeds for _, seeds in grid_cells({"a": [1, 2, 3]}, seeds=[0], corner_seeds=[0, 1])]
    [[0, 1], [0], [0, 1]]
    """
    if not grid or any(len(values) == 0 for values in grid.values()):
        raise ValueError(f"`grid` must give each field at least one value; got {dict(grid)!r}.")
    if not seeds or not corner_seeds:
        raise ValueError("`seeds` and `corner_seeds` must each name at least one seed.")
    cells = []
    for combination in itertools.product(*grid.values()):
        values = dict(zip(grid, combination, strict=True))
        corner = all(
            value in (options[0], options[-1])
            for value, options in zip(combination, grid.values(), strict=True)
        )
        cells.append((values, list(corner_seeds if corner else seeds)))
    return cells


def star_cells(axes: Mapping[str, Sequence], center: Mapping, seeds: Sequence[int]) -> list[Cell]:
    """The `center`, then each axis's other values with that field alone changed.

    Example:

    >>> [values for values, _ in star_cells({"a": [1, 2], "b": [5, 6]}, {"a": 1, "b": 6}, [0])]
    [{'a': 1, 'b': 6}, {'a': 2, 'b': 6}, {'a': 1, 'b': 5}]
    """
    if not axes or set(axes) - set(center):
        raise ValueError(f"`center` must give a value of each axis {list(axes)}; got {center}.")
    if not seeds:
        raise ValueError("`seeds` must name at least one seed.")
    point = {field: center[field] for field in axes}
    cells = [(point, list(seeds))]
    for field, values in axes.items():
        for value in dict.fromkeys(values):
            if value != point[field]:
                cells.append(({**point, field: value}, list(seeds)))
    return cells


def changed_values(values: Mapping, center: Mapping) -> dict:
    """The `values` that differ from the `center`'s (`{}`: the center itself).

    Example:

    >>> changed_values({"a": 1, "b": 5}, {"a": 1, "b": 6, "c": 0})
    {'b': 5}
    """
    return {field: value for field, value in values.items() if center.get(field) != value}


def check_limits(cells: Sequence[Cell], limits: Mapping[str, tuple[float, str]]) -> None:
    """Raises ValueError, saying why, for a cell value below its field's `limits`.

    Example:

    >>> check_limits([({"crop": 0.2}, [0])], {"crop": (0.4, "the object leaves the view")})
    Traceback (most recent call last):
    ...
    ValueError: the cell crop=0.2 has `crop` 0.2, below 0.4: the object leaves the view. \
Pass --allow-below-limits to run it anyway.
    """
    for values, _ in cells:
        for field, (lowest, why) in limits.items():
            if field in values and values[field] < lowest:
                raise ValueError(
                    f"the cell {cell_name(values)} has `{field}` {_text(values[field])}, "
                    f"below {_text(lowest)}: {why}. Pass --allow-below-limits to run it anyway."
                )


def cell_name(values: Mapping[str, object]) -> str:
    """The directory name of a cell: `field=value,...`, each number exact.

    Example:

    >>> cell_name({"learning_rate": 1e-3, "steps": 600})
    'learning_rate=0.001,steps=600'
    >>> cell_name({"learning_rate": 0.1000001}), cell_name({"learning_rate": 0.10000001})
    ('learning_rate=0.1000001', 'learning_rate=0.10000001')
    """
    return ",".join(f"{field}={_text(value)}" for field, value in values.items())


def _text(value) -> str:
    """A value as its cell's name gives it: `%g` where exact, else `repr`."""
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    return str(value)


def read_seed_scores(cell_dir: Path, seeds: Sequence[int]) -> dict[int, dict]:
    """`{seed: {variant: {score: value}}}` from each `cell_dir/seed_<k>/results.json`.

    Example:

    >>> import tempfile
    >>> cell_dir = Path(tempfile.mkdtemp())
    >>> (cell_dir / "seed_1").mkdir()
    >>> _ = write_json(cell_dir / "seed_1" / "results.json",
    ...                {"run": {}, "variants": {"infonce": {"backbone": {"acc": 0.5}, "steps": 9}}})
    >>> read_seed_scores(cell_dir, [0, 1])
    {1: {'infonce': {'backbone/acc': 0.5}}}
    """
    scores = {}
    for seed in seeds:
        path = cell_dir / f"seed_{seed}" / "results.json"
        if path.exists():
            variants = read_json(path).get("variants", {})
            scores[seed] = {name: variant_scores(result) for name, result in variants.items()}
    return scores


def plan_cells(
    config: RunConfig, cells: Sequence[Cell], limits: Mapping[str, tuple[float, str]] | None = None
) -> list[tuple[dict, list[int], str, RunConfig]]:
    """Each cell's `(values, seeds, name, config)`, every one checked before any runs.

    Args:
        config: the config every cell starts from.
        cells: `(values, seeds)` of `star_cells` or `grid_cells`.
        limits: `check_limits`' lower limits (None: none).

    Raises:
        UsageError: for a cell `validate` refuses, below `limits`, or sharing a directory.

    Example:

    >>> [name for _, _, name, _ in plan_cells(RunConfig(), [({"steps": 1000}, [0])])]
    ['steps=1000']
    """
    known = {field.name for field in dataclasses.fields(config)}
    unknown = sorted({field for values, _ in cells for field in values} - known)
    if unknown:
        raise ValueError(f"the cells name fields the config does not have: {unknown}.")
    if {"strategy", "tpu"} & {field for values, _ in cells for field in values}:
        raise UsageError("a sweep runs every cell on one strategy: leave `strategy` and `tpu` out.")
    planned = []
    for values, cell_seeds in cells:
        name, cell_config = cell_name(values), dataclasses.replace(config, **values)
        try:
            cell_config.resolved().validate()
        except ValueError as error:
            raise UsageError(f"the sweep's cell {name} cannot run: {error}") from None
        planned.append((values, cell_seeds, name, cell_config))
    with as_usage_errors():  # a line on the command line, not a traceback
        check_limits(cells, limits or {})
    cell_names = {}
    for values, _, name, _ in planned:
        if name in cell_names:
            raise UsageError(
                f"the sweep's cells {cell_names[name]} and {values} share the directory {name}: "
                "give each value of an axis once."
            )
        cell_names[name] = values
    return planned


def run_cells(
    config: RunConfig,
    build: Callable[[RunConfig], Experiment],
    run_dir: Path,
    cells: Sequence[Cell],
    limits: Mapping[str, tuple[float, str]] | None = None,
    report: Callable[[list[dict]], None] | None = None,
    context: RunContext | None = None,
    **labels,
) -> list[dict]:
    """`run_seeds` of each cell into `run_dir/<cell_name>/`, then `grid.json` and `report`.

    Args:
        config: the config every cell starts from.
        build: `config -> Experiment`.
        run_dir: the sweep's directory.
        cells: `(values, seeds)` of `star_cells` or `grid_cells`.
        limits: `check_limits`' lower limits (None: none).
        report: writes the tables and figure from the records.
        context: default: made from `config`.
        **labels: `preset`, `smoke`, `allow_code_change`, as for `run_seeds`.

    Returns:
        Per cell `{"cell", "values", "changed", "summary", "seed_scores", "run"}`.

    Raises:
        UsageError: as `plan_cells`, or for a `run_dir` holding other files than a sweep's.
    """
    planned = plan_cells(config, cells, limits)
    cell_names = {name for _, _, name, _ in planned}
    with as_usage_errors():
        run_directory.refuse_others(
            run_dir,
            "a sweep of aninfonce_tf",
            lambda path: path.name in cell_names or path.name in GRID_FILES,
            f"only the cells' directories and {', '.join(GRID_FILES)}",
        )
    context = context or RunContext.create(config.strategy, config.tpu)
    records = []
    with lock_run_directory(context.work_dir(run_dir)):  # each worker its own
        for values, cell_seeds, name, cell_config in planned:
            print(f"##### cell {name}: seeds {cell_seeds}", flush=True)
            summary = run_seeds(
                cell_config, build, run_dir / name, cell_seeds, context=context, **labels
            )
            first = run_dir / name / f"seed_{cell_seeds[0]}" / "results.json"
            run = read_json(first).get("run", {}) if context.chief and first.exists() else {}
            records.append(
                {
                    "cell": name,
                    "values": values,
                    "changed": changed_values(values, dataclasses.asdict(config)),
                    "summary": summary,
                    "seed_scores": read_seed_scores(run_dir / name, summary["seeds"])
                    if context.chief
                    else {},
                    "run": {key: run[key] for key in RUN_RECORDS if key in run},
                }
            )
        if context.chief:
            write_json(run_dir / "grid.json", records)
            if report:
                report(records)
    return records


def run_grid(
    config: RunConfig,
    build: Callable[[RunConfig], Experiment],
    run_dir: Path,
    grid: Mapping[str, Sequence],
    seeds: Sequence[int] = (0,),
    corner_seeds: Sequence[int] = (0, 1, 2),
    **labels,
) -> list[dict]:
    """`run_cells` of the product of the `grid`'s values (`grid_cells`)."""
    return run_cells(config, build, run_dir, grid_cells(grid, seeds, corner_seeds), **labels)


def write_tradeoff(records: list[dict], run_dir: Path, what: str, scores: Sequence[str]) -> None:
    """Writes `tradeoff.md` and `tradeoff.png` of `scores` in `run_dir`."""
    table = tradeoff_markdown(records, scores, what)
    (run_dir / "tradeoff.md").write_text(table + "\n")
    plots.plot_tradeoff(records, run_dir / "tradeoff.png", title=what)
    print(table)
    print(f"table: {run_dir / 'tradeoff.md'}\nfigure: {run_dir / 'tradeoff.png'}")


def grid_values(text: str) -> list[float]:
    """`"0.4, 0.8"` -> `[0.4, 0.8]`, a `--grid-<field>` axis ("" -> []).

    >>> grid_values("0.4, 0.8")
    [0.4, 0.8]
    """
    try:
        return split_list(text, strict_float)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers such as 0.4,0.8; got {text!r}"
        ) from None


def main(
    config_module: types.ModuleType,
    argv=None,
    description: str = "",
    epilog: str = "",
    prog: str | None = None,
    write_report: Callable[[list[dict], Path, str, Sequence[str]], None] = write_tradeoff,
) -> list[dict]:
    """A sweep's command line (`--design`, `--grid-<field>`, ...); returns `run_cells`'.

    Args:
        config_module: with `PRESETS`, `SMOKE`, `build`, `SWEEP`, `SWEEP_AXES`,
            `SWEEP_LIMITS`, `SWEEP_SCORES` and `check_sweep(config)`.
        argv: default `sys.argv[1:]`.
        description: the `--help` description.
        epilog: the end of `--help`.
        prog: the program's name (default: the script's).
        write_report: writes the table and figure.
    """
    limits = config_module.SWEEP_LIMITS
    flags = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    group = flags.add_argument_group("sweep")
    group.add_argument(
        "--design",
        choices=DESIGNS,
        default="star",
        help="star: each axis varied alone through the preset's point (with the flags "
        "given), which runs once; product: every combination of the axes' values",
    )
    for field, values in config_module.SWEEP_AXES.items():
        group.add_argument(
            f"--grid-{field.replace('_', '-')}",
            type=grid_values,
            default=",".join(map(_text, values)),  # argparse converts a text default
            metavar="VALUES",
            help=f"the values of --{field.replace('_', '-')} on its axis; empty: the preset's only",
        )
    group.add_argument(
        "--corner-seeds",
        type=seed_list,
        metavar="SEEDS",
        help="--design product: the seeds of the grid's corners (default: --seeds)",
    )
    group.add_argument(
        "--allow-below-limits",
        action="store_true",
        help="run cells below the lower limits, refused without it: "
        + "; ".join(f"{field} {_text(low)}: {why}" for field, (low, why) in limits.items())
        # argparse formats help with %
        .replace("%", "%%"),
    )
    config, options = parse_config(
        {"sweep": config_module.SWEEP, **config_module.PRESETS},
        argv,
        description=description,
        smoke=config_module.SMOKE,
        parents=[flags],
        epilog=epilog,
        prog=prog,
    )
    seeds = options.seeds or [0, 1, 2]
    axes = {
        field: getattr(options, f"grid_{field}") or [getattr(config, field)]
        for field in config_module.SWEEP_AXES
    }
    try:  # one line, before the run's first line and its directory (as `cli.main`)
        with as_usage_errors():
            config_module.check_sweep(config)
            if options.corner_seeds and options.design != "product":
                raise ValueError("--corner-seeds applies to --design product only.")
            center = {field: getattr(config, field) for field in axes}
            if options.design == "star":
                cells = star_cells(axes, center, seeds)
            else:
                cells = grid_cells(axes, seeds, options.corner_seeds or seeds)
            cell_limits = None if options.allow_below_limits else limits
            plan_cells(config, cells, cell_limits)
            config.check_inputs()
            context = RunContext.create(config.strategy, config.tpu)
    except UsageError as error:
        refuse_out(str(error), prog)
    with recipe_run_directory(
        options.out, f"{run_name(options)}-{options.design}", prog
    ) as run_dir:
        print(f"{run_line(options)}\nrun directory: {run_dir}", flush=True)
        recipe = config_module.__name__.rsplit(".", 1)[-1]
        what = (
            f"{recipe}, {options.design} of {len(cells)} cells, {run_line(options)}, "
            f"{config.steps} steps of {config.batch_size} pairs"
        )

        def report(records: list[dict]) -> None:
            write_report(records, run_dir, what, config_module.SWEEP_SCORES)

        records = run_cells(
            config,
            config_module.build,
            run_dir,
            cells,
            limits=cell_limits,
            report=report,
            context=context,
            preset=options.preset,
            smoke=options.smoke,
            allow_code_change=options.allow_code_change,
        )
    return records


def write_dose_response(records: list[dict], run_dir: Path, what: str, scores: Sequence[str]):
    """Writes `dose_response.md` and `dose_response.png` in `run_dir`."""
    table = sweep_tables.dose_response_markdown(records, scores, what)
    (run_dir / "dose_response.md").write_text(table + "\n")
    summaries = sweep_tables.cell_summaries(records, scores)
    plot_dose_response(
        summaries, run_dir / "dose_response.png", scores, sweep_tables.DOSE_PAIRS, title=what
    )
    print(table)
    print(f"table: {run_dir / 'dose_response.md'}\nfigure: {run_dir / 'dose_response.png'}")


def dose_response_main(
    config_module, argv=None, description: str = "", epilog: str = "", prog=None
) -> list:
    """The dose-response's command line: `main` with `write_dose_response`."""
    return main(config_module, argv, description, epilog, prog, write_report=write_dose_response)


__all__ = [
    "dose_response_main",
    "write_dose_response",
    "DESIGNS",
    "GRID_FILES",
    "cell_name",
    "changed_values",
    "check_limits",
    "grid_cells",
    "main",
    "plan_cells",
    "read_seed_scores",
    "run_cells",
    "run_grid",
    "star_cells",
]
