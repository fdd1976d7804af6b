"""The figures over seeds: scores per variant, each part's R^2 against its Lambda_eff."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from aninfonce_tf.plots import style
from aninfonce_tf.plots.style import score_label, variant_label


def plot_seeds(
    summary: dict,
    path: str | Path,
    keys: Sequence[str] = (),
    title: str = "",
    classes: int | None = None,
) -> Path:
    """Scores over seeds: a panel per score, a point per variant at its mean +- 1 sd.

    Args:
        summary: `{"seeds", "variants": {variant: {score: {"mean", "sd", "n"}}}}`.
        path: the PNG to write.
        keys: the scores shown (default: every score of the summary).
        title: what the runs are (preset).
        classes: the class probes' classes (chance: 1 / `classes`).

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
    """Each latent part's held-out R^2 against its Lambda_eff (log axis), a panel per level.

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
