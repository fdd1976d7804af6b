"""The trade-off map on rendered images: how strong SimCLR's views must be for each
loss to recover the object's shape, and how much of the style latents each keeps.

Run:

    python recipes/rendered_sweep.py --smoke --corner-seeds 0 --out runs/sweep-smoke  # 9 tiny runs
    python recipes/rendered_sweep.py --out runs/rendered-sweep        # ~1.5-2 h

on a 2-core CPU, no download (~6.5 min per cell and seed with two other runs on the
CPU; 17 cell-seeds). The grid is the smallest crop area (0.9, 0.5, 0.2)
by the colour-jitter strength s (0, 0.5, 1.0; brightness, contrast, saturation
0.8 s, hue 0.2 s), flips and grayscale as in the `quick` preset of
`recipes/rendered.py`; each cell trains both losses for 500 steps of 256 pairs
(`--steps` and every other flag of that recipe apply to every cell), seeds 0, 1
and 2 at the four corners and seed 0 (`--seeds`) inside. Killed, the same command
resumes where it stopped.

Writes, besides every cell's runs in `OUT/<cell>/seed_<k>/`: `grid.json` (each
cell's `summary.json`), `tradeoff.md` (a row per cell and loss: shape accuracy
and style R^2 at both layers, mean +- sd over the seeds) and `tradeoff.png` (shape
accuracy against style R^2, one panel per layer).

Results: docs/results.md, "The trade-off map: augmentation strength against what each
loss keeps".
"""

import argparse

from aninfonce_tf import plots, sweep
from aninfonce_tf.configs import rendered
from aninfonce_tf.configs.base import UsageError, split_list
from aninfonce_tf.evaluation.features import LEVELS
from aninfonce_tf.runner import recipe_run_directory
from aninfonce_tf.runner.cli import parse_config

PANELS = [(f"{level}/block_linear_r2/style", f"{level}/shape_accuracy") for level in LEVELS]


def main(argv=None) -> list[dict]:
    grid_flags = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    group = grid_flags.add_argument_group("grid")
    for field, values in rendered.SWEEP_GRID.items():
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
        {"sweep": rendered.SWEEP, **rendered.PRESETS},
        argv,
        description=__doc__.splitlines()[0],
        smoke=rendered.SMOKE,
        parents=[grid_flags],
    )
    name = options.preset + ("-smoke" if options.smoke else "")
    grid = {field: getattr(options, f"grid_{field}") for field in rendered.SWEEP_GRID}
    with recipe_run_directory(options.out, f"{name}-grid") as run_dir:
        if config.mode != "augment":
            raise UsageError(
                f"the grid sweeps SimCLR's views, which only the augment mode uses; got "
                f"--mode {config.mode} (preset {options.preset})."
            )
        cells = sweep.run_grid(
            config,
            rendered.build,
            run_dir,
            grid,
            seeds=options.seeds or [0],
            corner_seeds=options.corner_seeds,
            preset=options.preset,
            smoke=options.smoke,
        )
    scores = [score for panel in PANELS for score in reversed(panel)]
    table = sweep.tradeoff_table(cells, scores)
    (run_dir / "tradeoff.md").write_text(table + "\n")
    title = f"rendered, {name}, {config.steps} steps of {config.batch_size} pairs"
    plots.plot_tradeoff(cells, PANELS, run_dir / "tradeoff.png", title=title)
    print(table)
    print(f"table: {run_dir / 'tradeoff.md'}\nfigure: {run_dir / 'tradeoff.png'}")
    return cells


if __name__ == "__main__":
    main()
