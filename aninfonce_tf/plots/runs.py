"""The figures of one run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np

from aninfonce_tf.plots import style
from aninfonce_tf.plots.style import LEARNED, score_label, variant_label


def plot_concentration(learned, true, path: str | Path, title: str = "") -> Path:
    """Learned Lambda_hat (matched to latents) against the true Lambda on log axes."""
    learned, true = np.asarray(learned, "float64"), np.asarray(true, "float64")
    kept = np.isfinite(learned) & (learned > 0)
    figure, axis = plt.subplots(figsize=(4.8, 4.4), layout="constrained")
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
    axis.legend(loc="best")
    return style.save(figure, path)


def _grouped_bars(axis, values: Mapping[str, np.ndarray], groups: Sequence[str]) -> None:
    """A group of bars per entry of `groups`, a bar per variant, clipped to 0-1."""
    width = 0.8 / max(len(values), 1)
    for index, (name, heights) in enumerate(values.items()):
        heights = np.clip(np.asarray(heights, "float64"), 0.0, 1.0)
        positions = np.arange(len(groups)) + index * width
        axis.bar(positions, heights, width, label=variant_label(name))
    axis.set_xticks(np.arange(len(groups)) + 0.4 - width / 2)
    axis.set_xticklabels(groups, fontsize=8)
    axis.set_ylim(0.0, 1.0)
    axis.grid(alpha=0.3, axis="y")


def plot_per_latent_r2(
    per_latent: dict[str, list[float]], true_concentration, path: str | Path, title: str = ""
) -> Path:
    """Grouped bars of each latent's held-out linear R^2, a bar per loss variant."""
    true_concentration = np.asarray(true_concentration)
    order = np.argsort(true_concentration)
    width = max(5.5, 0.5 * len(order) * len(per_latent) + 1.5)
    figure, axis = plt.subplots(figsize=(width, 3.8), layout="constrained")
    values = {name: np.asarray(v, "float64")[order] for name, v in per_latent.items()}
    _grouped_bars(axis, values, [f"{c:.3g}" for c in true_concentration[order]])
    axis.set(
        xlabel="latent, by its true concentration Λ",
        ylabel="held-out linear R² of the latent",
        title=title,
    )
    figure.legend(loc="outside right upper")
    return style.save(figure, path)


def plot_curves(
    curves: dict[str, list[dict]],
    path: str | Path,
    keys: Sequence[str],
    loss_curves: dict[str, list[dict]] | None = None,
    title: str = "",
    classes: int | None = None,
) -> Path:
    """A panel for the training loss and one per score key, a line per variant."""
    panels = [("loss", loss_curves)] if any((loss_curves or {}).values()) else []
    panels += [(key, curves) for key in keys]
    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(4.3 * columns, 3.4 * rows + 0.8),
        squeeze=False,
        layout="constrained",
    )
    for axis in axes.flat[len(panels) :]:
        axis.set_axis_off()
    for axis, (key, source) in zip(axes.flat, panels, strict=False):
        for name, points in source.items():
            values = [(p["step"], _lookup(p, key)) for p in points]
            values = [(s, v) for s, v in values if v is not None and np.isfinite(v)]
            if values:
                axis.plot(*zip(*values, strict=True), marker=".", label=variant_label(name))
        style.fix_range(axis, key, classes)
        axis.set(xlabel="training step", ylabel=score_label(key))
        axis.yaxis.label.set_wrap(True)
        axis.grid(alpha=0.3)
    handles = {}
    for axis in axes.flat:  # one entry per variant, and chance, over all panels
        handles.update(zip(*axis.get_legend_handles_labels()[::-1], strict=True))
    if handles:  # a variant that diverged before its first evaluation has none
        figure.legend(handles.values(), handles, loc="outside lower center", ncol=len(handles))
    if title:
        figure.suptitle(title)
    return style.save(figure, path)


def _lookup(scores: dict, key: str):
    """The value at `outer/inner` in nested `scores`, None when absent."""
    for part in key.split("/"):
        if not isinstance(scores, dict) or part not in scores:
            return None
        scores = scores[part]
    return scores


def plot_identifiability(
    results: dict, run_dir: str | Path, true_concentration, title: str = ""
) -> list[Path]:
    """`per_latent_r2.png` and, per loss with a Lambda_hat, `lambda_<loss>.png`."""
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
                title=style.title("Which latents each loss recovers", title),
            )
        )
    for name, result in results.items():
        if "lambda_hat_matched" in result:
            paths.append(
                plot_concentration(
                    result["lambda_hat_matched"],
                    true_concentration,
                    run_dir / f"lambda_{name}.png",
                    title=style.title(f"{variant_label(name)}: learned vs true Λ", title),
                )
            )
    return paths


def plot_image_grid(
    rows: Sequence[np.ndarray], path: str | Path, row_titles: Sequence[str] = ()
) -> Path:
    """Images in a grid, one row per array of `[N, H, W, 1 or 3]` images in [0, 1]."""
    columns = max(len(images) for images in rows)
    figure, axes = plt.subplots(
        len(rows),
        columns,
        figsize=(0.9 * columns, 1.0 * len(rows)),
        squeeze=False,
        layout="constrained",
    )
    for row, images in enumerate(rows):
        for column, axis in enumerate(axes[row]):
            axis.set_axis_off()
            if column < len(images):
                image = np.clip(np.asarray(images[column], "float32"), 0, 1)
                axis.imshow(image[..., 0] if image.shape[-1] == 1 else image, cmap="gray")
        if row < len(row_titles):
            axes[row][0].set_title(row_titles[row], fontsize=8, loc="left")
    return style.save(figure, path)


def plot_latent_r2_levels(
    scores: dict[str, dict[str, dict[str, float]]],
    latents: Sequence[str],
    path: str | Path,
    concentration=None,
    accuracy: dict[str, dict[str, float]] | None = None,
    title: str = "",
) -> Path:
    """A panel per level: bars per latent and variant, and the class latent's accuracy.

    Args:
        scores: `{level: {variant: {latent: R^2}}}`.
        latents: the latents, in the order of the groups.
        path: the PNG to write.
        concentration: each latent's true Lambda (same order); None for augmentations.
        accuracy: `{level: {variant: accuracy}}` of the shape latent.
        title: what the run is (preset, seed).
    """
    levels = list(scores)
    variants = list(dict.fromkeys(v for level in levels for v in scores[level]))
    groups = [name.replace("_", "\n") for name in latents]
    if concentration is not None:
        groups = [f"{name}\nΛ = {c:.3g}" for name, c in zip(groups, concentration, strict=True)]
    if accuracy:
        groups.append("shape\naccuracy")
    width = max(4.5, 0.35 * len(groups) * len(variants) + 1.5)
    figure, axes = plt.subplots(
        1,
        len(levels),
        figsize=(width * len(levels), 4.2),
        squeeze=False,
        sharey=True,
        layout="constrained",
    )
    for axis, level in zip(axes[0], levels, strict=True):
        values = {}
        for variant in variants:
            per_latent = scores[level].get(variant, {})
            values[variant] = [per_latent.get(name, np.nan) for name in latents]
            if accuracy:
                values[variant].append(accuracy.get(level, {}).get(variant, np.nan))
        _grouped_bars(axis, values, groups)
        if accuracy:  # the chance line over the accuracy's group only
            last = len(groups) - 1
            chance = style.CHANCE["shape_accuracy"]
            axis.hlines(chance, last - 0.1, last + 0.9, "0.4", ":", label="chance (shape)")
        axis.set(title=f"{level} features", xlabel="true latent")
    axes[0][0].set(ylabel="held-out linear R² of the latent\n(accuracy for shape)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)
    figure.suptitle(style.title("How much of each true latent the features keep", title))
    return style.save(figure, path)


def plot_lambda_hat_dimensions(
    lambda_hats: dict[str, Sequence[float]],
    path: str | Path,
    true_concentration=None,
    title: str = "",
) -> Path:
    """Each variant's Lambda_hat per dimension, sorted, on a log axis, with the true Lambda."""
    figure, axis = plt.subplots(figsize=(5.6, 3.9), layout="constrained")
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
        title=style.title("Learned concentration per output dimension", title),
    )
    # Plain numbers; the minor ticks labelled over less than about a decade.
    labels = matplotlib.ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5))
    axis.yaxis.set_major_formatter(labels)
    axis.yaxis.set_minor_formatter(labels)
    axis.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axis.grid(alpha=0.3, which="both")
    figure.legend(loc="outside right upper", fontsize=8)
    return style.save(figure, path)


def plot_lambda_hats(
    results: dict, run_dir: str | Path, true_concentration=None, title: str = ""
) -> list[Path]:
    """`lambda_hat.png` of the variants that learn a Lambda_hat (none if no variant does)."""
    learned = {name: r["lambda_hat"] for name, r in results.items() if "lambda_hat" in r}
    if not learned:
        return []
    path = Path(run_dir) / "lambda_hat.png"
    return [plot_lambda_hat_dimensions(learned, path, true_concentration, title=title)]
