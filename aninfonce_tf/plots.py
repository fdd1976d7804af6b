"""Matplotlib figures of an experiment's results (written to PNG, no display needed),
titled with what they show and the run (preset, seed), their axes labelled in words."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.lines  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

# Words for the scores the evaluators return (`outer/inner` keys by their last part
# when the whole key is not listed), for axis labels.
LABELS = {
    "loss": "training loss",
    "linear_r2": "linear R² (held-out, mean over latents)",
    "nonlinear_r2": "kernel-ridge R² (held-out, mean over latents)",
    "mcc": "mean correlation coefficient (MCC)",
    "mcc_spearman": "MCC of the rank correlations",
    "block_r2/high": "linear R², high-concentration latents",
    "block_r2/low": "linear R², low-concentration latents",
    "lambda_spearman": "rank correlation of learned and true Λ",
    "lambda_relative_error": "mean relative error of the learned Λ",
    "class_accuracy": "class accuracy (linear probe)",
    "augmentation_readout": "augmentation readout (chance 0.5)",
    "block_linear_r2/style": "linear R², style latents",
    "block_linear_r2/content": "linear R², content latents",
    "shape_accuracy": "shape accuracy (linear probe)",
}
LEARNED = r"learned concentration $\hat{\Lambda}$"


def score_label(key: str) -> str:
    """Axis label of a score, in words.

    Example:

    >>> score_label("block_r2/low"), score_label("backbone/knn_k20_accuracy")
    ('linear R², low-concentration latents', 'backbone: kNN accuracy, k = 20')
    >>> score_label("projector/block_linear_r2/style")
    'projector: linear R², style latents'
    """
    parts = key.split("/")
    # The longest listed ending names the score; the parts before it its level.
    start = next((i for i in range(len(parts)) if "/".join(parts[i:]) in LABELS), len(parts) - 1)
    outer, name = parts[:start], "/".join(parts[start:])
    knn = re.fullmatch(r"knn_k(\d+)_accuracy", name)
    words = f"kNN accuracy, k = {knn.group(1)}" if knn else LABELS.get(name, name.replace("_", " "))
    return f"{'/'.join(outer)}: {words}" if outer else words


def variant_label(name: str) -> str:
    """A loss variant as a legend names it.

    Example:

    >>> variant_label("aninfonce"), variant_label("infonce_hard_negatives")
    ('AnInfoNCE', 'InfoNCE (hard negatives)')
    """
    loss, _, kind = name.partition("_")
    if loss not in ("aninfonce", "infonce"):
        return name  # a user's loss keeps its registered name
    loss = {"aninfonce": "AnInfoNCE", "infonce": "InfoNCE"}[loss]
    return f"{loss} ({kind.replace('_', ' ')})" if kind else loss


def _title(what: str, title: str) -> str:
    return f"{what}\n{title}" if title else what


def plot_concentration(learned, true, path: str | Path, title: str = "") -> Path:
    """Learned Lambda_hat (matched to latents) against the true Lambda, one dot per
    latent, on log axes with the line y = x of a perfect recovery (a NaN, infinite or
    non-positive Lambda_hat, of a diverged run, is left out)."""
    learned, true = np.asarray(learned, "float64"), np.asarray(true, "float64")
    kept = np.isfinite(learned) & (learned > 0)
    figure, axis = plt.subplots(figsize=(4.8, 4.4))
    values = np.concatenate([true, learned[kept]])
    limits = [values.min() / 1.5, values.max() * 1.5]
    axis.plot(limits, limits, "k--", lw=1, label="y = x (perfect recovery)")
    axis.scatter(true[kept], learned[kept], zorder=3, label="one latent")
    axis.set(
        xscale="log",
        yscale="log",
        xlim=limits,
        ylim=limits,
        xlabel="true concentration Λ of the latent",
        ylabel=f"{LEARNED}\n(of the feature matched to it)",
        title=title,
    )
    for scale in (axis.xaxis, axis.yaxis):
        scale.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        scale.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axis.grid(alpha=0.3, which="both")
    axis.legend(loc="upper left")
    return _save(figure, path)


def plot_per_latent_r2(
    per_latent: dict[str, list[float]], true_concentration, path: str | Path, title: str = ""
) -> Path:
    """Grouped bars: held-out linear R^2 of each latent, one group per latent (by its
    true concentration), one bar per loss variant."""
    true_concentration = np.asarray(true_concentration)
    order = np.argsort(true_concentration)
    figure, axis = plt.subplots(figsize=(max(5.5, 0.5 * len(order) * len(per_latent) + 1.5), 3.8))
    width = 0.8 / max(len(per_latent), 1)
    lowest = 0.0
    for index, (name, values) in enumerate(per_latent.items()):
        values = np.asarray(values, "float64")[order]
        lowest = min(lowest, np.nanmin(values, initial=0.0))
        positions = np.arange(len(order)) + index * width
        axis.bar(positions, values, width, label=variant_label(name))
    axis.set_xticks(np.arange(len(order)) + 0.4 - width / 2)
    axis.set_xticklabels([f"{c:.3g}" for c in true_concentration[order]])
    axis.axhline(0, color="k", lw=0.8)
    axis.set(
        xlabel="latent, by its true concentration Λ",
        ylabel="held-out linear R² of the latent",
        ylim=(max(lowest * 1.05, -0.5), 1.25),
        title=title,
    )
    axis.legend(loc="upper center", ncol=len(per_latent))
    return _save(figure, path)


def plot_curves(
    curves: dict[str, list[dict]],
    path: str | Path,
    keys: Sequence[str],
    loss_curves: dict[str, list[dict]] | None = None,
    title: str = "",
) -> Path:
    """Over the training steps, a panel for the training loss (from `loss_curves`,
    points `{"step", "loss"}`) and one per score key (`outer/inner` for nested
    scores; points of `curves`), a line per loss variant. A variant without points
    (diverged before its first evaluation) and non-finite values are left out."""
    panels = [("loss", loss_curves)] if any((loss_curves or {}).values()) else []
    panels += [(key, curves) for key in keys]
    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(4.3 * columns, 3.4 * rows + 0.4), squeeze=False
    )
    for axis in axes.flat[len(panels) :]:
        axis.set_axis_off()
    for axis, (key, source) in zip(axes.flat, panels, strict=False):
        for name, points in source.items():
            values = [(p["step"], _lookup(p, key)) for p in points]
            values = [(s, v) for s, v in values if v is not None and np.isfinite(v)]
            if values:
                axis.plot(*zip(*values, strict=True), marker=".", label=variant_label(name))
        axis.set(xlabel="training step", ylabel=score_label(key))
        axis.yaxis.label.set_wrap(True)
        axis.grid(alpha=0.3)
    legend = next((axis for axis in axes.flat if axis.lines), None)
    if legend is not None:  # a variant that diverged before its first evaluation has none
        legend.legend()
    if title:
        figure.suptitle(title)
    return _save(figure, path)


def _lookup(scores: dict, key: str):
    for part in key.split("/"):
        if not isinstance(scores, dict) or part not in scores:
            return None
        scores = scores[part]
    return scores


def plot_identifiability(
    results: dict, run_dir: str | Path, true_concentration, title: str = ""
) -> list[Path]:
    """Per-latent R^2 of every loss and, for each loss with a Lambda_hat, learned vs
    true concentration: `per_latent_r2.png`, `lambda_<loss>.png`, each titled with
    what it shows and `title` (e.g. the preset and seed). A loss that diverged before
    its first evaluation has no scores and is left out."""
    run_dir = Path(run_dir)
    per_latent = {
        name: r["linear_r2_per_latent"]
        for name, r in results.items()
        if "linear_r2_per_latent" in r
    }
    paths = []
    if per_latent:
        paths.append(
            plot_per_latent_r2(
                per_latent,
                true_concentration,
                run_dir / "per_latent_r2.png",
                title=_title("Which latents each loss recovers", title),
            )
        )
    for name, result in results.items():
        if "lambda_hat_matched" in result:
            paths.append(
                plot_concentration(
                    result["lambda_hat_matched"],
                    true_concentration,
                    run_dir / f"lambda_{name}.png",
                    title=_title(f"{variant_label(name)}: learned vs true Λ", title),
                )
            )
    return paths


def plot_image_grid(
    rows: Sequence[np.ndarray], path: str | Path, row_titles: Sequence[str] = ()
) -> Path:
    """Images in a grid, one row per array of `[N, H, W, 1 or 3]` images in [0, 1]."""
    columns = max(len(images) for images in rows)
    figure, axes = plt.subplots(
        len(rows), columns, figsize=(0.9 * columns, 1.0 * len(rows)), squeeze=False
    )
    for row, images in enumerate(rows):
        for column, axis in enumerate(axes[row]):
            axis.set_axis_off()
            if column < len(images):
                image = np.clip(np.asarray(images[column], "float32"), 0, 1)
                axis.imshow(image[..., 0] if image.shape[-1] == 1 else image, cmap="gray")
        if row < len(row_titles):
            axes[row][0].set_title(row_titles[row], fontsize=8, loc="left")
    return _save(figure, path)


def _save(figure, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_latent_r2_levels(
    scores: dict[str, dict[str, dict[str, float]]],
    latents: Sequence[str],
    path: str | Path,
    concentration=None,
    accuracy: dict[str, dict[str, float]] | None = None,
    title: str = "",
) -> Path:
    """One panel per level of the features (e.g. backbone and projector), grouped
    bars: a group per latent, a bar per loss variant, its held-out R^2.

    Args:
        scores: `{level: {variant: {latent: R^2}}}`.
        latents: the latents, in the order of the groups.
        path: the PNG to write.
        concentration: the true Lambda of each latent (same order), shown under its
            name; None when the pairs have none (augmentations).
        accuracy: `{level: {variant: accuracy}}` of the class latent, in the legend.
        title: what the run is (preset, seed).
    """
    levels = list(scores)
    variants = list(dict.fromkeys(v for level in levels for v in scores[level]))
    width = 0.8 / max(len(variants), 1)
    figure, axes = plt.subplots(
        1,
        len(levels),
        figsize=(max(4.5, 0.35 * len(latents) * len(variants) + 1.5) * len(levels), 3.9),
        squeeze=False,
        sharey=True,
    )
    names = [name.replace("_", " ") for name in latents]
    if concentration is not None:
        names = [f"{name}\nΛ = {c:.3g}" for name, c in zip(names, concentration, strict=True)]
    lowest = 0.0
    for axis, level in zip(axes[0], levels, strict=True):
        for index, variant in enumerate(variants):
            per_latent = scores[level].get(variant, {})
            values = np.array([per_latent.get(name, np.nan) for name in latents], "float64")
            lowest = min(lowest, np.nanmin(values, initial=0.0))
            label = variant_label(variant)
            if accuracy and variant in accuracy.get(level, {}):
                label += f" (shape accuracy {accuracy[level][variant]:.2f})"
            axis.bar(np.arange(len(latents)) + index * width, values, width, label=label)
        axis.set_xticks(np.arange(len(latents)) + 0.4 - width / 2)
        axis.set_xticklabels(names, fontsize=8)
        axis.axhline(0, color="k", lw=0.8)
        axis.set(title=f"{level} features", xlabel="true latent")
        axis.legend(loc="upper center", fontsize=7, ncol=1)
        axis.grid(alpha=0.3, axis="y")
    axes[0][0].set(ylabel="held-out linear R² of the latent", ylim=(max(lowest * 1.05, -0.5), 1.3))
    figure.suptitle(_title("How much of each true latent the features keep", title))
    return _save(figure, path)


def plot_lambda_hat_dimensions(
    lambda_hats: dict[str, Sequence[float]],
    path: str | Path,
    true_concentration=None,
    title: str = "",
) -> Path:
    """Each variant's learned Lambda_hat per output dimension, sorted from the
    largest, on a log axis, with the true Lambda of the latents as dashed lines
    (when the pairs have one). A NaN, infinite or non-positive value is left out."""
    figure, axis = plt.subplots(figsize=(5.6, 3.9))
    for name, values in lambda_hats.items():
        values = np.sort(np.asarray(values, "float64"))[::-1]
        kept = np.isfinite(values) & (values > 0)
        axis.plot(np.flatnonzero(kept) + 1, values[kept], "o-", label=variant_label(name))
    if true_concentration is not None:
        for index, value in enumerate(sorted(set(np.asarray(true_concentration, "float64")))):
            label = "true Λ of the latents" if index == 0 else None
            axis.axhline(value, color="gray", ls="--", lw=1, label=label)
            axis.annotate(
                f"Λ = {value:g}",
                (0.99, value),
                xycoords=("axes fraction", "data"),
                ha="right",
                va="bottom",
                fontsize=7,
                color="gray",
            )
    axis.set(
        yscale="log",
        xlabel="output dimension, by its learned concentration",
        ylabel=LEARNED,
        title=_title("Learned concentration per output dimension", title),
    )
    # Plain numbers; the minor ticks labelled over less than about a decade.
    labels = matplotlib.ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5))
    axis.yaxis.set_major_formatter(labels)
    axis.yaxis.set_minor_formatter(labels)
    axis.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8)
    return _save(figure, path)


def plot_tradeoff(
    cells: Sequence[dict],
    panels: Sequence[tuple[str, str]],
    path: str | Path,
    title: str = "",
) -> Path:
    """A sweep's trade-off (`aninfonce_tf.sweep.run_grid`): one panel per
    `(x score, y score)` pair, a point per cell and loss variant at the scores' means
    over its seeds, with +- 1 sd bars where there are several, labelled by the cell's
    values, points of one cell joined by a thin line.

    Args:
        cells: `run_grid`'s list of `{"values", "summary"}`.
        panels: `(x score, y score)` per panel.
        path: the PNG to write.
        title: what the sweep is (preset, steps).
    """
    figure, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.4), squeeze=False)
    variants = list(dict.fromkeys(v for cell in cells for v in cell["summary"]["variants"]))
    colours = {v: f"C{i}" for i, v in enumerate(variants)}
    for axis, (x_score, y_score) in zip(axes[0], panels, strict=True):
        for cell in cells:
            points = []
            for variant, entries in cell["summary"]["variants"].items():
                x, y = entries.get(x_score), entries.get(y_score)
                if not x or not y or x["mean"] is None or y["mean"] is None:
                    continue
                points.append((x["mean"], y["mean"]))
                axis.errorbar(
                    x["mean"],
                    y["mean"],
                    xerr=x["sd"] or 0,
                    yerr=y["sd"] or 0,
                    fmt="o",
                    color=colours[variant],
                    ms=5 if x["n"] > 1 else 3,
                    capsize=2,
                )
            if points:
                axis.plot(*np.transpose(points), color="gray", lw=0.5, alpha=0.6)
                label = ", ".join(f"{value:g}" for value in cell["values"].values())
                axis.annotate(
                    label, points[0], fontsize=6, xytext=(3, 3), textcoords="offset points"
                )
        axis.set(xlabel=score_label(x_score), ylabel=score_label(y_score))
        axis.grid(alpha=0.3)
    handles = [
        matplotlib.lines.Line2D([], [], marker="o", ls="", color=colours[v], label=variant_label(v))
        for v in variants
    ]
    fields = ", ".join(cells[0]["values"]) if cells else ""
    axes[0][0].legend(handles=handles, fontsize=8, title=f"points: ({fields})", title_fontsize=7)
    figure.suptitle(_title("Trade-off across augmentation strengths (mean ± sd over seeds)", title))
    return _save(figure, path)
