"""The runner every recipe shares: a recipe hands `main` its config module.
Modules: docs/api.md#the-library-module-by-module (the `runner.*` rows)"""

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
