"""What a run reports: the `run` record of `results.json`, the printed tables and
the figures (also as TensorBoard images)."""

from __future__ import annotations

import dataclasses
import datetime
import platform
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import aninfonce_tf
from aninfonce_tf import plots
from aninfonce_tf.checkpoints import replace_directory_atomically
from aninfonce_tf.configs.base import RunConfig
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.evaluation.callbacks import format_score, scalar_items

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


def run_record(
    config: RunConfig,
    experiment: Experiment,
    preset: str | None = None,
    smoke: bool = False,
    code: Sequence[dict] = (),
) -> dict:
    """The `run` entry of `results.json`: what ran, where and when. The preset, the
    seed, the date (UTC), the versions of this package, TensorFlow, Keras, NumPy and
    Python, the code the run was trained by (`code`: the version and source sha256
    of this package, oldest first, `run_directory.code_history`), the whole config,
    and the experiment's `metadata` (e.g. the true Lambda, `true_concentration`)."""
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
        "code": list(code),
        "config": dataclasses.asdict(config),
    }


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
    keys = list(experiment.curve_keys) or scalar_columns(results)
    paths = [plots.plot_curves(curves, run_dir / "curves.png", keys, losses, title=title)]
    if experiment.plots:
        paths += experiment.plots(results, run_dir, title=title)
    return paths


def log_figures(paths: Sequence[Path], log_dir: Path, step: int) -> None:
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


def variant_scores(result: dict) -> dict[str, float]:
    return scalar_items({k: v for k, v in result.items() if k not in RUN_ENTRIES})


def scalar_columns(results: dict) -> list[str]:
    columns = {}
    for result in results.values():
        columns.update(dict.fromkeys(variant_scores(result)))
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
    columns = list(columns) or scalar_columns(results)
    rows = []
    for name, result in results.items():
        scores = variant_scores(result)
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


__all__ = [
    "RUN_ENTRIES",
    "figure_title",
    "log_figures",
    "results_table",
    "run_record",
    "scalar_columns",
    "variant_scores",
    "write_plots",
]
