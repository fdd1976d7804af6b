"""A grid of runs: two or more config fields swept over their values, several seeds
per cell (more at the grid's corners, where an interval matters most), each cell a
`run_seeds` that resumes like any run, and the trade-off between two scores across
the grid as a table.

Example:

>>> cells = grid_cells({"crop_min_scale": [0.2, 0.5, 0.9], "jitter_strength": [0.0, 1.0]},
...                    seeds=[0], corner_seeds=[0, 1, 2])
>>> [(cell_name(values), seeds) for values, seeds in cells][:3]
[('crop_min_scale=0.2,jitter_strength=0', [0, 1, 2]), \
('crop_min_scale=0.2,jitter_strength=1', [0, 1, 2]), \
('crop_min_scale=0.5,jitter_strength=0', [0])]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from aninfonce_tf import plots
from aninfonce_tf.checkpoints import write_json
from aninfonce_tf.configs.base import RunConfig, UsageError, as_usage_errors, split_list
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.runner import RunContext, run_directory, run_seeds
from aninfonce_tf.runner.cli import parse_config, recipe_run_directory, run_line, run_name
from aninfonce_tf.runner.lock import lock_run_directory


def grid_cells(
    grid: Mapping[str, Sequence], seeds: Sequence[int], corner_seeds: Sequence[int]
) -> list[tuple[dict, list[int]]]:
    """Every combination of the `grid`'s values (the first field varying slowest),
    each with its seeds: `corner_seeds` where every field sits at its first or last
    value, `seeds` elsewhere.

    Raises:
        ValueError: for an empty grid, a field without values, or no seeds.
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


# What a grid writes beside its cells' directories.
GRID_FILES = ("grid.json", "tradeoff.md", "tradeoff.png")


def cell_name(values: Mapping[str, object]) -> str:
    """The directory name of a cell: `field=value,...` (numbers in `%g`)."""
    return ",".join(f"{field}={_text(value)}" for field, value in values.items())


def _text(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def run_grid(
    config: RunConfig,
    build: Callable[[RunConfig], Experiment],
    run_dir: Path,
    grid: Mapping[str, Sequence],
    seeds: Sequence[int] = (0,),
    corner_seeds: Sequence[int] = (0, 1, 2),
    **labels,
) -> list[dict]:
    """`run_seeds` of `config` with each cell's values into `run_dir/<cell_name>/`,
    then `run_dir/grid.json`: a list of `{"cell", "values", "summary"}`.

    Rerun, every finished seed and variant is skipped and an interrupted one
    resumes, so a killed sweep continues where it stopped.

    Args:
        config: the config every cell starts from.
        build: `config -> Experiment`.
        run_dir: the sweep's directory.
        grid: `{field: values}` of `config`'s fields.
        seeds: the seeds of the inner cells.
        corner_seeds: the seeds of the corner cells.
        **labels: `preset`, `smoke` and `allow_code_change`, as for `run_seeds`.

    Raises:
        ValueError: for a field `config` does not have, or a grid `grid_cells` refuses.
        UsageError: for a cell whose config `validate` refuses (before any runs).
    """
    known = {field.name for field in dataclasses.fields(config)}
    unknown = sorted(set(grid) - known)
    if unknown:
        raise ValueError(f"`grid` names fields the config does not have: {unknown}.")
    if {"strategy", "tpu"} & set(grid):
        raise UsageError("a grid runs every cell on one strategy: leave `strategy` and `tpu` out.")
    planned = []  # every cell checked before the first one runs
    for values, cell_seeds in grid_cells(grid, seeds, corner_seeds):
        name, cell_config = cell_name(values), dataclasses.replace(config, **values)
        try:
            cell_config.resolved().validate()
        except ValueError as error:
            raise UsageError(f"the grid's cell {name} cannot run: {error}") from None
        planned.append((values, cell_seeds, name, cell_config))
    cell_names = {name for _, _, name, _ in planned}
    with as_usage_errors():
        run_directory.refuse_others(
            run_dir,
            "a grid of aninfonce_tf",
            lambda path: path.name in cell_names or path.name in GRID_FILES,
            f"only the cells' directories and {', '.join(GRID_FILES)}",
        )
    context = RunContext.create(config.strategy, config.tpu)
    cells = []
    with lock_run_directory(run_dir):
        for values, cell_seeds, name, cell_config in planned:
            print(f"##### cell {name}: seeds {cell_seeds}", flush=True)
            summary = run_seeds(
                cell_config, build, run_dir / name, cell_seeds, context=context, **labels
            )
            cells.append({"cell": name, "values": values, "summary": summary})
        if context.chief:
            write_json(run_dir / "grid.json", cells)
    return cells


def tradeoff_table(cells: Sequence[dict], scores: Sequence[str]) -> str:
    """A Markdown table of a `run_grid` result: a row per cell and variant, the
    mean +- sd (n seeds) of each of `scores`.

    Example:

    >>> entry = lambda mean, sd: {"mean": mean, "sd": sd, "n": 3}
    >>> cells = [{"values": {"s": 0.5}, "summary": {"variants": {"aninfonce": {
    ...     "acc": entry(0.8, 0.01), "r2": entry(0.4, None)}}}}]
    >>> print(tradeoff_table(cells, ["acc", "r2"]))
    | s | loss | acc | r2 | seeds |
    |---|---|---|---|---|
    | 0.5 | AnInfoNCE | 0.800 ± 0.010 | 0.400 | 3 |
    """
    fields = list(cells[0]["values"]) if cells else []
    lines = [
        "| " + " | ".join([*fields, "loss", *scores, "seeds"]) + " |",
        "|" + "---|" * (len(fields) + len(scores) + 2),
    ]
    for cell in cells:
        for variant, entries in cell["summary"]["variants"].items():
            row = [_text(cell["values"][field]) for field in fields]
            row.append(plots.variant_label(variant))
            n = 0
            for score in scores:
                entry = entries.get(score)
                if entry is None or entry["mean"] is None:
                    row.append("-")
                    continue
                n = max(n, entry["n"])
                sd = f" ± {entry['sd']:.3f}" if entry["sd"] is not None else ""
                row.append(f"{entry['mean']:.3f}{sd}")
            lines.append("| " + " | ".join([*row, str(n)]) + " |")
    return "\n".join(lines)


def main(
    config_module: types.ModuleType,
    argv=None,
    description: str = "",
    epilog: str = "",
    prog: str | None = None,
) -> list[dict]:
    """The command line of a trade-off map (`python -m aninfonce_tf rendered_sweep`):
    the flags of the config module's recipe, which every cell starts from (its `SWEEP`
    preset by default), `--grid-<field>` for each field of its `SWEEP_GRID` and
    `--corner-seeds`; then `run_grid` into `--out`, `tradeoff.md` (`tradeoff_table` of
    the scores of its `SWEEP_PANELS`) and `tradeoff.png`.

    Args:
        config_module: a module with `PRESETS`, `SMOKE`, `build`, `SWEEP`,
            `SWEEP_GRID`, `SWEEP_PANELS` and `check_sweep(config)`.
        argv: arguments (default `sys.argv[1:]`).
        description: the `--help` description.
        epilog: the end of `--help` (examples).
        prog: the program's name in `--help` and errors (default: the script's).

    Returns:
        The cells of `run_grid`.
    """
    grid_flags = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    group = grid_flags.add_argument_group("grid")
    for field, values in config_module.SWEEP_GRID.items():
        group.add_argument(
            f"--grid-{field.replace('_', '-')}",
            type=lambda text: split_list(text, float),
            default=values,
            help=f"the values of --{field.replace('_', '-')} (default: {values})",
        )
    group.add_argument(
        "--corner-seeds",
        type=lambda text: split_list(text, int),
        default=[0, 1, 2],
        help="the seeds of the grid's corners (default: 0,1,2)",
    )
    config, options = parse_config(
        {"sweep": config_module.SWEEP, **config_module.PRESETS},
        argv,
        description=description,
        smoke=config_module.SMOKE,
        parents=[grid_flags],
        epilog=epilog,
        prog=prog,
    )
    name = run_name(options)
    grid = {field: getattr(options, f"grid_{field}") for field in config_module.SWEEP_GRID}
    with recipe_run_directory(options.out, f"{name}-grid", prog) as run_dir:
        with as_usage_errors():
            config_module.check_sweep(config)
        print(f"{run_line(options)}\nrun directory: {run_dir}", flush=True)
        cells = run_grid(
            config,
            config_module.build,
            run_dir,
            grid,
            seeds=options.seeds or [0],
            corner_seeds=options.corner_seeds,
            preset=options.preset,
            smoke=options.smoke,
            allow_code_change=options.allow_code_change,
        )
        panels = config_module.SWEEP_PANELS
        table = tradeoff_table(cells, [score for panel in panels for score in reversed(panel)])
        (run_dir / "tradeoff.md").write_text(table + "\n")
        recipe = config_module.__name__.rsplit(".", 1)[-1]
        title = f"{recipe}, {name}, {config.steps} steps of {config.batch_size} pairs"
        plots.plot_tradeoff(cells, panels, run_dir / "tradeoff.png", title=title)
    print(table)
    print(f"table: {run_dir / 'tradeoff.md'}\nfigure: {run_dir / 'tradeoff.png'}")
    return cells


__all__ = ["cell_name", "grid_cells", "main", "run_grid", "tradeoff_table"]
