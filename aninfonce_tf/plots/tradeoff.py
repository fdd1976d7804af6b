"""The figure of a sweep's trade-off: part R^2 against Lambda_eff, and class accuracy."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.lines
import matplotlib.pyplot as plt
import matplotlib.ticker
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
# A sweep's Lambda_eff axis spans the measured values, widened by MARGIN either side;
# a part no pair changes (its estimate capped at MAX_EFFECTIVE_CONCENTRATION, in truth
# infinite) is drawn in a slot of its own, a factor BREAK beyond the measured range and
# behind a shaded break, joined to its measured points by a dotted line only.
MARGIN = 1.5
BREAK = 4.0
# R^2 below 0, worse than the mean, is drawn at 0, just above the axis's edge.
R2_RANGE = (-0.03, 1.0)
PART_MARKERS = "os^vDPX*hd"
# An axis's values, written under the panel's top edge.
VALUE_TEXT = dict(
    xytext=(0, -10), textcoords="offset points", fontsize=7, ha="center", color="0.35"
)


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
    """Each axis's cells: the preset's point and those changing that field alone, by value.

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


def concentration_axis(cells: Sequence[dict], parts: Sequence[str]) -> tuple[float, float, float]:
    """The Lambda_eff axis of a sweep's panels: `(low, high, never)` (see `MARGIN`, `BREAK`).

    Example:

    >>> run = lambda x: {"effective_concentration": {"parts": {"x": x, "y": 1e4}}}
    >>> low, high, never = concentration_axis([{"run": run(0.6)}, {"run": run(2)}], ["x", "y"])
    >>> round(low, 3), round(high, 3), round(never, 3)
    (0.4, 3.0, 12.0)
    """
    measured = [
        value
        for cell in cells
        for part, value in _concentration(cell).items()
        if part in parts and value < MAX_EFFECTIVE_CONCENTRATION
    ]
    low, high = (min(measured) / MARGIN, max(measured) * MARGIN) if measured else (1.0, 10.0)
    return low, high, high * BREAK


def moved_parts(cells: Sequence[dict]) -> list[str]:
    """The latent parts whose Lambda_eff differs by a factor of `MOVED` or more between `cells`.

    Example:

    >>> run = lambda x: {"effective_concentration": {"parts": {"x": x, "y": 2.0}}}
    >>> moved_parts([{"run": run(0.6)}, {"run": run(1.2)}])
    ['x']
    """
    recorded = [_concentration(cell) for cell in cells]
    parts = [part for part in (recorded or [{}])[0] if all(part in each for each in recorded)]
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
    """A sweep's trade-off, a row per level: part R^2 against Lambda_eff, class accuracy.

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
    scale = concentration_axis(shown, list(markers))
    figure, panels = plt.subplots(
        len(levels),
        len(axes) + 1,
        figsize=(3.7 * (len(axes) + 1) + 1.8, 3.4 * len(levels) + 0.9),
        squeeze=False,
        layout="constrained",
    )
    never = False
    for row, level in zip(panels, levels, strict=True):
        for axis, (field, members) in zip(row, axes.items(), strict=False):
            panel = (level, field, members, parts[field])
            never |= _axis_panel(axis, *panel, scale, colours, markers)
        _accuracy_panel(row[-1], f"{level}/{accuracy}", shown, colours)
    handles = [_handle(variant_label(v), color=colours[v], marker="o") for v in variants]
    handles += [_handle(p.replace("_", " "), marker=m, ls="") for p, m in markers.items()]
    if never:
        label = "no pair changes it\n(Λ_eff = ∞, off the scale)"
        handles.append(_handle(label, marker="o", mfc="white", ls=":"))
    chance = [line for axis in panels.flat for line in axis.lines if line.get_label() == "chance"]
    figure.legend(handles=handles + chance[:1], loc="outside right upper", fontsize=8)
    figure.suptitle(
        style.title("What each loss keeps as each view setting changes alone (mean ± sd)", title),
        fontsize=10,
    )
    return style.save(figure, path)


def _axis_panel(axis, level, field, members, parts, scale, colours, markers) -> bool:
    """One axis's panel of moved parts; whether it drew a part no pair changes."""
    low, high, slot = scale
    values = {part: np.array([_concentration(cell)[part] for cell in members]) for part in parts}
    changed = {part: values[part] < MAX_EFFECTIVE_CONCENTRATION for part in parts}
    drawn = {part: np.where(changed[part], values[part], slot) for part in parts}
    # The axis's values are marked on the part it moves most.
    marked = max(parts, key=lambda part: drawn[part].max() / drawn[part].min(), default=None)
    for part in parts:
        key, x, ok = f"{level}/part_linear_r2/{part}", drawn[part], changed[part]
        for variant, colour in colours.items():
            entries = [
                cell["summary"]["variants"].get(variant, {}).get(key) or {} for cell in members
            ]
            if all(entry.get("mean") is None for entry in entries):
                continue
            mean = np.array(
                [np.nan if e.get("mean") is None else max(e["mean"], 0) for e in entries]
            )
            sd = np.array([e.get("sd") or 0.0 for e in entries])
            line = dict(color=colour, marker=markers[part], ms=4, capsize=2, alpha=0.85)
            if ok.any():
                axis.errorbar(x[ok], mean[ok], sd[ok], lw=1, **line)
            if not ok.all():  # hollow, joined by a dotted line across the break
                axis.plot(x, mean, color=colour, ls=":", lw=0.8, alpha=0.85, label="_never")
                axis.errorbar(x[~ok], mean[~ok], sd[~ok], ls="none", mfc="white", **line)
        if part == marked:
            for cell, value in zip(members, x, strict=True):
                text = f"{cell['values'][field]:g}"
                axis.annotate(text, (value, R2_RANGE[1]), **VALUE_TEXT)
    if not parts:
        message = "no part's Λ_eff moves\n(or none recorded)"
        axis.text(0.5, 0.5, message, ha="center", va="center", transform=axis.transAxes)
    style.chance_line(axis, 0.0)
    # The break: nothing is measured between the range's end and the slot.
    axis.axvspan(high, slot / MARGIN, fc="0.93", hatch="//", ec="0.6", lw=0, zorder=0)
    axis.set(
        xscale="log",
        xlim=(low, slot * MARGIN),
        ylim=R2_RANGE,
        title=f"{level}: {FIELD_MEANINGS.get(field, field.replace('_', ' '))}",
        xlabel="effective concentration Λ_eff of the part",
        ylabel="held-out linear R² of the part",
    )
    ticks = _log_ticks(low, high)
    axis.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    axis.set_xticks([*ticks, slot], [*(f"{t:g}" for t in ticks), "never\nchanged"], fontsize=7)
    axis.title.set_fontsize(9)
    axis.grid(alpha=0.3)
    return any(not flags.all() for flags in changed.values())


def _log_ticks(low: float, high: float) -> list[float]:
    """1, 2 and 5 times the powers of ten in [`low`, `high`] (or fewer, or the ends).

    >>> _log_ticks(2.1, 4.7)
    [2.1, 4.7]
    """
    steps = (1, 2, 5) if high / low <= 30 else (1,)
    powers = range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
    ticks = [s * 10.0**p for p in powers for s in steps if low <= s * 10.0**p <= high]
    return ticks if len(ticks) >= 2 else [float(f"{low:.2g}"), float(f"{high:.2g}")]


def _handle(label: str, color: str = "0.3", **kwargs) -> matplotlib.lines.Line2D:
    """A legend entry that draws nothing on the axes."""
    return matplotlib.lines.Line2D([], [], color=color, label=label, **kwargs)


def _accuracy_panel(axis, key, cells, colours) -> None:
    """The class latent's accuracy per cell and loss, the losses side by side."""
    for index, (variant, colour) in enumerate(colours.items()):
        offset = (index - (len(colours) - 1) / 2) * 0.15
        for position, cell in enumerate(cells):
            entry = cell["summary"]["variants"].get(variant, {}).get(key)
            if entry and entry["mean"] is not None:
                point = (position + offset, entry["mean"], entry["sd"] or 0)
                axis.errorbar(*point, color=colour, marker="o", ms=4, capsize=2)
    style.fix_range(axis, key)
    axis.set_xlim(-0.5, len(cells) - 0.5)
    labels = [cell_label(cell["changed"]) for cell in cells]
    axis.set_xticks(range(len(cells)), labels, rotation=45, ha="right", fontsize=7)
    axis.set_title(score_label(key), fontsize=9)
    axis.grid(alpha=0.3, axis="y")
