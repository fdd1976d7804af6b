"""What a run reports: the `run` record of `results.json`, the tables and the figures."""

from __future__ import annotations

import dataclasses
import datetime
import platform
import re
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
from aninfonce_tf.evaluation.callbacks import scalar_items
from aninfonce_tf.evaluation.console import CONSOLE_WIDTH, format_score

# The width the printed tables keep to: the console's.
TABLE_WIDTH = CONSOLE_WIDTH
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


def scored_on(run: dict) -> dict:
    """What a run's scores are computed on beside its config (blocks, readout targets).

    Example:

    >>> scored_on({"blocks": {"content": ["y"]}, "readout_determinable": {"kept": ["hue"]}})
    {'blocks': {'content': ['y']}, 'readout_kept': ['hue']}
    """
    return {
        "blocks": run.get("blocks"),
        "readout_kept": (run.get("readout_determinable") or {}).get("kept"),
    }


def scoring_changes(saved: dict, record: dict) -> list[str]:
    """Where a resumed run's `record` is scored otherwise than the `saved` one, in words."""
    before, now = (
        {**scored_on(run), "linear_evaluation": run.get("linear_evaluation")}
        for run in (saved, record)
    )
    return [f"{key} {before[key]} -> {now[key]}" for key in before if before[key] != now[key]]


def run_record(
    config: RunConfig,
    experiment: Experiment,
    preset: str | None = None,
    smoke: bool = False,
    code: Sequence[dict] = (),
) -> dict:
    """The `run` entry of `results.json` (docs/results.md#the-layout-of-resultsjson)."""
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
        "endpoint": {"step": config.steps, "scores": list(experiment.primary_scores)},
    }


def figure_title(config: RunConfig, preset: str | None = None, smoke: bool = False) -> str:
    """`preset quick (smoke), seed 0`: what the figures of a run say they show."""
    name = preset_label(preset, smoke)
    return f"{name}, seed {config.seed}" if name else f"seed {config.seed}"


def preset_label(preset: str | None, smoke: bool = False) -> str:
    """`preset quick (smoke)`, or "" without a preset: what a figure's runs are."""
    return f"preset {preset}{' (smoke)' if smoke else ''}" if preset else ""


def write_seeds_figures(
    summary: dict, experiment: Experiment, run_dir: Path, preset: str | None, smoke: bool
) -> list[Path]:
    """`seeds.png` and the experiment's own figures over seeds."""
    keys = list(experiment.table_columns or experiment.curve_keys)
    title = preset_label(preset, smoke)
    paths = [
        plots.plot_seeds(summary, run_dir / "seeds.png", keys, title, probe_classes(experiment))
    ]
    if experiment.seeds_plots:
        paths += experiment.seeds_plots(summary, run_dir, title=title)
    return paths


def write_plots(
    results: dict, experiment: Experiment, run_dir: Path, title: str = ""
) -> list[Path]:
    """`curves.png` and the experiment's own figures, each titled `title`."""
    curves = {name: r["curve"] for name, r in results.items()}
    losses = {name: r.get("loss_curve", []) for name, r in results.items()}
    keys = list(experiment.curve_keys) or scalar_columns(results)
    classes = probe_classes(experiment)
    paths = [
        plots.plot_curves(curves, run_dir / "curves.png", keys, losses, title, classes=classes)
    ]
    if experiment.plots:
        paths += experiment.plots(results, run_dir, title=title)
    return paths


def probe_classes(experiment: Experiment) -> int | None:
    """The first `classes` an evaluator declares (None without class probes)."""
    return next((e.classes for e in experiment.evaluators if getattr(e, "classes", 0)), None)


def log_figures(paths: Sequence[Path], log_dir: Path, step: int) -> None:
    """The figures as TensorBoard images at `step`, in one event file."""

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


def results_table(results: dict, columns: Sequence[str] = (), width: int = TABLE_WIDTH) -> str:
    """A row per loss variant: a column per scalar score (or `columns`), steps, seconds.

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
    return fit_table(["variant", *columns, "steps", "seconds"], rows, width)


def fit_table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    """Right-aligned columns, at most `width` wide where it can be (headers broken, split).

    Example:

    >>> print(fit_table(["variant", "block_r2/high", "lambda_spearman"], [["a", "0.9", "0.5"]], 24))
             block_
                r2/
    variant    high
    -------  ------
          a     0.9
    <BLANKLINE>
              lambda_
    variant  spearman
    -------  --------
          a       0.5
    """
    columns = range(len(header))
    cells = [max((len(row[i]) for row in rows), default=0) for i in columns]
    headers = [[name] for name in header]
    if sum(max(c, len(h)) for c, h in zip(cells, header, strict=True)) + 2 * len(cells) - 2 > width:
        headers = [_broken(name, cell) for name, cell in zip(header, cells, strict=True)]
    widths = [max(cells[i], *map(len, headers[i])) for i in columns]
    tables, group = [], []
    for i in columns[1:]:
        if group and widths[0] + sum(widths[j] + 2 for j in [*group, i]) > width:
            tables.append(group)
            group = []
        group.append(i)
    tables.append(group)
    return "\n\n".join(_columns([0, *group], headers, rows, widths) for group in tables)


def _broken(name: str, width: int) -> list[str]:
    """`name` broken after `/` and `_` into lines of at most `width` (or its longest part)."""
    parts = re.findall(r"[^/_]*[/_]|[^/_]+$", name)
    lines = [""]
    for part in parts:
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return lines


def _columns(indices, headers, rows, widths) -> str:
    height = max(len(headers[i]) for i in indices)

    def line(texts) -> str:
        return "  ".join(text.rjust(widths[i]) for i, text in zip(indices, texts, strict=True))

    lines = [
        line([([""] * height + headers[i])[-height:][k] for i in indices]) for k in range(height)
    ]
    lines.append(line(["-" * widths[i] for i in indices]))
    lines += [line([row[i] for i in indices]) for row in rows]
    return "\n".join(text.rstrip() for text in lines)


__all__ = [
    "RUN_ENTRIES",
    "TABLE_WIDTH",
    "figure_title",
    "preset_label",
    "probe_classes",
    "fit_table",
    "log_figures",
    "results_table",
    "run_record",
    "scalar_columns",
    "scored_on",
    "scoring_changes",
    "variant_scores",
    "write_plots",
    "write_seeds_figures",
]
