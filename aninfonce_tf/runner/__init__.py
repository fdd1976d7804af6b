"""The runner every recipe shares, one module per job.

A recipe hands `main` its config module (`aninfonce_tf.configs.*`): a config
dataclass, `PRESETS`, `SMOKE` and `build(config) -> Experiment`. The runner owns the
rest:

- `cli`: the command line (`parse_config`, `main`);
- `plan`: `RunPlan`, the config resolved and validated and its targets parsed, once;
- `loop`: `run` (every loss variant of a config) and `run_seeds` (over seeds);
- `context`: `RunContext`, the strategy and whether this process is the chief,
  decided once per run and passed down;
- `training`: one variant's model built (`build_model`) and trained
  (`train_variant`);
- `run_directory`: `RunDirectory`, claimed once, then each variant saved (with its
  `files.json`) and the results written, atomically; `SeedsDirectory` of `--seeds`;
- `identity`: the config fields a resume keeps and the code a run is trained by;
- `lock`: the lock a run holds on its run directory;
- `exits`: how a recipe ends on a usage error, a full disk, Ctrl-C or SIGTERM:
  one line and an exit status;
- `report`: `results.json`'s run record, the tables and figures.

`Experiment` (the parts a config module builds) lives with the configs
(`aninfonce_tf.configs.parts`).
"""

from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.runner.cli import main, parse_config, recipe_run_directory
from aninfonce_tf.runner.context import RunContext
from aninfonce_tf.runner.loop import run, run_seeds
from aninfonce_tf.runner.report import RUN_ENTRIES, figure_title, results_table
from aninfonce_tf.runner.training import build_model

__all__ = [
    "RUN_ENTRIES",
    "Experiment",
    "RunContext",
    "build_model",
    "figure_title",
    "main",
    "parse_config",
    "recipe_run_directory",
    "results_table",
    "run",
    "run_seeds",
]
