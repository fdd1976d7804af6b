"""The figures of several runs: scores over seeds (`runner.run_seeds`' summary) and a
sweep's trade-off (`sweep.run_cells`), each point a mean with +- 1 sd bars, on the
scores' fixed ranges with their chance levels (`style`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.lines
import matplotlib.pyplot as plt
import numpy as np

from aninfonce_tf.data.effective_concentration import MAX_EFFECTIVE_CONCENTRATION
from aninfonce_tf.plots import style
from aninfonce_tf.plots.style import score_label, variant_label

# Short words for the fields a sweep varies, in the labels of its cells.
FIELD_LABELS = {
    "crop_min_scale": "crop",
    "jitter_strength": "jitter",
    "flip_probability": "flip",
    "grayscale_probability": "grayscale",
}
# What those words stand for, in the titles of its panels.
FIELD_MEANINGS = {
    "crop_min_scale": "smallest crop area",
    "jitter_strength": "colour-jitter strength s",
    "flip_probability": "flip probability",
    "grayscale_probability": "grayscale probability",
}
# A part is drawn on an axis's panel when the axis moves its Lambda_eff by this factor.
MOVED = 1.25
# The fixed range of Lambda_eff on a sweep's panels: a part no pair changes (its
# estimate capped at MAX_EFFECTIVE_CONCENTRATION) is drawn at NEVER_CHANGED, its tick so
# labelled. R^2 below 0, worse than the mean, is drawn at 0, just above the axis's edge.
CONCENTRATION_RANGE = (0.3, 300.0)
NEVER_CHANGED = 200.0
R2_RANGE = (-0.03, 1.0)
PART_MARKERS = "os^vDPX*hd"


def cell_label(values: dict) -> str:
    """A sweep cell's values (those it changes from the preset's point) as its label.

    Example:

    >>> cell_label({"crop_min_scale": 0.9, "jitter_strength": 1.0, "steps": 500})
    'crop 0.9, jitter 1, steps 500'
    >>> cell_label({})
    'preset'
    """
    return (
        ", ".join(
            f"{FIELD_LABELS.get(field, field.replace('_', ' '))} {value:g}"
            for field, value in values.items()
        )
        or "preset"
    )


def axis_cells(cells: Sequence[dict]) -> dict[str, list[dict]]:
    """The cells of each axis of a sweep (`sweep.run_cells`' records): the preset's
    point (`changed` empty) and those that change that field alone, by its value.

    Example:

    >>> cells = [{"changed": {}, "values": {"a": 1}}, {"changed": {"a": 0}, "values": {"a": 0}}]
    >>> [cell["values"]["a"] for cell in axis_cells(cells)["a"]]
    [0, 1]
    """
    center = [cell for cell in cells if not cell["changed"]]
    axes: dict[str, list[dict]] = {}
    for cell in cells:
        if len(cell["changed"]) == 1:
            axes.setdefault(next(iter(cell["changed"])), []).append(cell)
    return {
        field: sorted(center + members, key=lambda cell: cell["values"][field])
        for field, members in axes.items()
    }


def _concentration(cell: dict) -> dict[str, float]:
    return cell.get("run", {}).get("effective_concentration", {}).get("parts", {})


def _drawn_at(concentration: float) -> float:
    """Where a Lambda_eff is drawn: at NEVER_CHANGED where no pair changes the part."""
    return NEVER_CHANGED if concentration >= MAX_EFFECTIVE_CONCENTRATION else concentration


def moved_parts(cells: Sequence[dict]) -> list[str]:
    """The latent parts whose Lambda_eff (each cell's `run`) differs by a factor of
    `MOVED` or more between `cells`.

    Example:

    >>> run = lambda x: {"effective_concentration": {"parts": {"x": x, "y": 2.0}}}
    >>> moved_parts([{"run": run(0.6)}, {"run": run(1.2)}])
    ['x']
    """
    recorded = [_concentration(cell) for cell in cells]
    parts = [part for part in recorded[0] if all(part in each for each in recorded)]
    return [
        part
        for part in parts
        if max(each[part] for each in recorded) >= MOVED * min(each[part] for each in recorded)
    ]


def plot_tradeoff(
    cells: Sequence[dict],
    path: str | Path,
    title: str = "",
    levels: Sequence[str] = ("backbone", "projector"),
    accuracy: str = "shape_accuracy",
) -> Path:
    """A sweep's trade-off (`aninfonce_tf.sweep.run_cells`), a row per level: per axis
    (a field its cells change alone) each latent part the axis moves, its held-out
    linear R^2 against its Lambda_eff in each of the axis's cells (log axis; the axis's
    values marked above the part it moves most); and a panel of the class latent's
    accuracy per cell. A line per part and loss, mean +- 1 sd over the seeds; chance
    lines at R^2 0 and at the accuracy's chance; fixed ranges. A product grid's cells
    off the axes through the preset's point are left out (they are in its table).

    Args:
        cells: `run_cells`' records (`values`, `changed`, `summary`, `run`).
        path: the PNG to write.
        title: what the sweep is (preset, steps).
        levels: the levels of the features, a row each.
        accuracy: the class latent's accuracy (a score of each level).

    Example:

    >>> import tempfile
    >>> entry = {"mean": 0.4, "sd": 0.02, "n": 3}
    >>> cell = {"values": {"crop_min_scale": 0.4}, "changed": {}, "run": {},
    ...         "summary": {"variants": {"infonce": {"backbone/shape_accuracy": entry}}}}
    >>> plot_tradeoff([cell], Path(tempfile.mkdtemp()) / "t.png", levels=["backbone"]).name
    't.png'
    """
    axes = axis_cells(cells)
    shown = list({id(cell): cell for members in axes.values() for cell in members}.values())
    shown = shown or list(cells)  # no axis: the cells themselves
    variants = list(dict.fromkeys(v for cell in cells for v in cell["summary"]["variants"]))
    colours = {variant: f"C{index}" for index, variant in enumerate(variants)}
    parts = {field: moved_parts(members) for field, members in axes.items()}
    markers = {
        part: PART_MARKERS[index % len(PART_MARKERS)]
        for index, part in enumerate(dict.fromkeys(p for names in parts.values() for p in names))
    }
    figure, panels = plt.subplots(
        len(levels),
        len(axes) + 1,
        figsize=(3.7 * (len(axes) + 1) + 1.8, 3.4 * len(levels) + 0.9),
        squeeze=False,
        layout="constrained",
    )
    for row, level in zip(panels, levels, strict=True):
        for axis, (field, members) in zip(row, axes.items(), strict=False):
            _axis_panel(axis, level, field, members, parts[field], colours, markers)
        _accuracy_panel(row[-1], f"{level}/{accuracy}", shown, colours)
    handles = [
        matplotlib.lines.Line2D([], [], color=colours[v], marker="o", label=variant_label(v))
        for v in variants
    ]
    handles += [
        matplotlib.lines.Line2D(
            [], [], color="0.3", marker=marker, ls="", label=part.replace("_", " ")
        )
        for part, marker in markers.items()
    ]
    chance = [line for axis in panels.flat for line in axis.lines if line.get_label() == "chance"]
    figure.legend(handles=handles + chance[:1], loc="outside right upper", fontsize=8)
    figure.suptitle(
        style.title("What each loss keeps as each view setting changes alone (mean ± sd)", title),
        fontsize=10,
    )
    return style.save(figure, path)


def _axis_panel(axis, level, field, members, parts, colours, markers) -> None:
    """One axis's panel: each moved part's R^2 against its Lambda_eff per loss."""
    # The axis's values are marked on the part it moves most.
    spread = {part: [_drawn_at(_concentration(cell)[part]) for cell in members] for part in parts}
    marked = max(parts, key=lambda part: max(spread[part]) / min(spread[part]), default=None)
    for part in parts:
        key = f"{level}/part_linear_r2/{part}"
        x = spread[part]
        for variant, colour in colours.items():
            entries = [cell["summary"]["variants"].get(variant, {}).get(key) for cell in members]
            if not any(entry and entry["mean"] is not None for entry in entries):
                continue
            mean = [np.nan if not e or e["mean"] is None else max(e["mean"], 0.0) for e in entries]
            sd = [(e or {}).get("sd") or 0.0 for e in entries]
            axis.errorbar(
                x, mean, sd, color=colour, marker=markers[part], ms=4, lw=1, capsize=2, alpha=0.85
            )
        if part == marked:
            for cell, value in zip(members, x, strict=True):
                axis.annotate(
                    f"{cell['values'][field]:g}",
                    (value, R2_RANGE[1]),
                    xytext=(0, -10),
                    textcoords="offset points",
                    fontsize=7,
                    ha="center",
                    color="0.35",
                )
    if not parts:
        axis.text(
            0.5,
            0.5,
            "no part's Λ_eff moves\n(or none recorded)",
            ha="center",
            va="center",
            transform=axis.transAxes,
            fontsize=8,
            color="0.4",
        )
    style.chance_line(axis, 0.0)
    axis.set(
        xscale="log",
        xlim=CONCENTRATION_RANGE,
        ylim=R2_RANGE,
        title=f"{level}: {FIELD_MEANINGS.get(field, field.replace('_', ' '))}",
        xlabel="effective concentration Λ_eff of the part",
        ylabel="held-out linear R² of the part",
    )
    ticks = [tick for tick in (1, 10, 100) if CONCENTRATION_RANGE[0] < tick < NEVER_CHANGED]
    axis.set_xticks([*ticks, NEVER_CHANGED], [*map(str, ticks), "never\nchanged"], fontsize=7)
    axis.title.set_fontsize(9)
    axis.grid(alpha=0.3, which="both")


def _accuracy_panel(axis, key, cells, colours) -> None:
    """The class latent's accuracy per cell and loss, the losses side by side."""
    for index, (variant, colour) in enumerate(colours.items()):
        offset = (index - (len(colours) - 1) / 2) * 0.15
        for position, cell in enumerate(cells):
            entry = cell["summary"]["variants"].get(variant, {}).get(key)
            if entry and entry["mean"] is not None:
                axis.errorbar(
                    position + offset,
                    entry["mean"],
                    entry["sd"] or 0,
                    color=colour,
                    marker="o",
                    ms=4,
                    capsize=2,
                )
    style.fix_range(axis, key)
    axis.set_xlim(-0.5, len(cells) - 0.5)
    labels = [cell_label(cell["changed"]) for cell in cells]
    axis.set_xticks(range(len(cells)), labels, rotation=45, ha="right", fontsize=7)
    axis.set_title(score_label(key), fontsize=9)
    axis.grid(alpha=0.3, axis="y")


def plot_seeds(
    summary: dict,
    path: str | Path,
    keys: Sequence[str] = (),
    title: str = "",
    classes: int | None = None,
) -> Path:
    """Scores over seeds (`run_seeds`' `summary.json`): a panel per score, a point
    per loss variant at its mean with +- 1 sd bars and its number of seeds, on the
    score's fixed range with its chance level.

    Args:
        summary: `{"seeds", "variants": {variant: {score: {"mean", "sd", "n"}}}}`.
        path: the PNG to write.
        keys: the scores shown (default: every score of the summary).
        title: what the runs are (preset).
        classes: the number of classes of the class probes (their chance: 1 /
            `classes`).

    Example:

    >>> import tempfile
    >>> entry = {"mean": 0.9, "sd": 0.05, "n": 3}
    >>> summary = {"seeds": [0, 1, 2], "variants": {"aninfonce": {"mcc": entry}}}
    >>> plot_seeds(summary, Path(tempfile.mkdtemp()) / "seeds.png").name
    'seeds.png'
    """
    variants = summary["variants"]
    keys = list(keys) or list(dict.fromkeys(k for scores in variants.values() for k in scores))
    columns = min(len(keys), 4)
    rows = -(-len(keys) // columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(0.9 * len(variants) * columns + 1.6 * columns, 3.2 * rows + 0.6),
        squeeze=False,
        layout="constrained",
    )
    for axis in axes.flat[len(keys) :]:
        axis.set_axis_off()
    for axis, key in zip(axes.flat, keys, strict=False):
        for index, scores in enumerate(variants.values()):
            entry = scores.get(key)
            if not entry or entry["mean"] is None:
                continue
            axis.errorbar(index, entry["mean"], yerr=entry["sd"] or 0, fmt="o", capsize=4)
            axis.annotate(
                f"n = {entry['n']}",
                (index, entry["mean"]),
                xytext=(6, 0),
                textcoords="offset points",
                fontsize=7,
                va="center",
            )
        style.fix_range(axis, key, classes)
        axis.set_xlim(-0.5, len(variants) - 0.5)
        axis.set_xticks(range(len(variants)), [variant_label(v) for v in variants], fontsize=8)
        axis.set_ylabel(score_label(key), fontsize=8, wrap=True)
        axis.grid(alpha=0.3, axis="y")
    seeds = ", ".join(str(seed) for seed in summary.get("seeds", []))
    figure.suptitle(style.title(f"Mean ± sd over seeds {seeds}", title))
    return style.save(figure, path)


def plot_r2_by_concentration(
    part_r2: Mapping[str, Mapping[str, Mapping[str, float]]],
    concentration: Mapping[str, float],
    path: str | Path,
    title: str = "",
    part_sd: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None,
) -> Path:
    """The paper's claim in one picture: each latent part's held-out linear R^2 (0-1)
    against how strongly a positive pair keeps it, its effective concentration
    Lambda_eff (log axis), one panel per level of the features, a point per part and
    loss variant, the variants side by side (+- 1 sd bars over seeds with `part_sd`),
    parts of about the same Lambda_eff named under one label.

    Args:
        part_r2: `{level: {variant: {part: R^2}}}` (over seeds: the means).
        concentration: `{part: Lambda_eff}` (`data.effective_concentration`).
        path: the PNG to write.
        title: what the run is (preset, seeds).
        part_sd: the sds over seeds, as `part_r2`.
    """
    parts = sorted(concentration, key=lambda part: concentration[part])
    x = np.array([concentration[part] for part in parts], "float64")
    levels = list(part_r2)
    figure, axes = plt.subplots(
        1, len(levels), figsize=(5.2 * len(levels), 4.4), squeeze=False, layout="constrained"
    )
    # Parts of about the same Lambda_eff share one label.
    names: dict[float, list[str]] = {}
    for part, value in zip(parts, x, strict=True):
        near = next((v for v in names if abs(np.log(value / v)) < 0.1), value)
        names.setdefault(near, []).append(part.replace("_", " "))
    for axis, level in zip(axes[0], levels, strict=True):
        for index, (variant, scores) in enumerate(part_r2[level].items()):
            mean = [scores.get(part, np.nan) for part in parts]
            sd = None
            if part_sd is not None:
                sd = [part_sd[level][variant].get(part, 0.0) for part in parts]
            # Variants side by side (on the log axis), points not joined: parts of
            # one Lambda_eff are separate latents.
            shifted = x * 1.12**index
            axis.errorbar(
                shifted,
                mean,
                sd,
                ls="none",
                marker="o",
                ms=4,
                capsize=2,
                label=variant_label(variant),
            )
        for value, together in names.items():
            axis.annotate(
                "\n".join(together),
                (value, 0.01),
                fontsize=6,
                color="0.35",
                va="bottom",
                ha="center",
            )
        axis.set(
            xscale="log",
            ylim=(0.0, 1.0),
            title=f"{level} features",
            xlabel="effective concentration Λ_eff of the part\n(how little a pair changes it)",
        )
        axis.grid(alpha=0.3, which="both")
    axes[0][0].set(ylabel="held-out linear R² of the part")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)
    figure.suptitle(style.title("What each loss keeps, by how much a pair changes it", title))
    return style.save(figure, path)
