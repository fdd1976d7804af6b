"""Matplotlib figures of an experiment's results (written to PNG, no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_concentration(
    learned, true, path: str | Path, title: str = "Lambda_hat vs Lambda"
) -> Path:
    """Learned Lambda_hat (matched to latents) against the true Lambda, one dot per latent
    (a NaN or infinite Lambda_hat, of a diverged run, is left out)."""
    learned, true = np.asarray(learned, "float64"), np.asarray(true, "float64")
    finite = np.isfinite(learned)
    figure, axis = plt.subplots(figsize=(4.5, 4))
    axis.scatter(true[finite], learned[finite], zorder=3)
    limits = [0, 1.1 * max(true.max(), learned[finite].max(initial=0.0))]
    axis.plot(limits, limits, "k--", lw=1, label="identity")
    axis.set(
        xlabel="true concentration",
        ylabel="learned concentration",
        title=title,
        xlim=limits,
        ylim=limits,
    )
    axis.legend()
    return _save(figure, path)


def plot_per_latent_r2(
    per_latent: dict[str, list[float]], true_concentration, path: str | Path
) -> Path:
    """Grouped bars: held-out linear R^2 of each latent, one group per loss."""
    true_concentration = np.asarray(true_concentration)
    order = np.argsort(true_concentration)
    figure, axis = plt.subplots(figsize=(max(5, 0.6 * len(order) * len(per_latent)), 3.5))
    width = 0.8 / max(len(per_latent), 1)
    for index, (name, values) in enumerate(per_latent.items()):
        positions = np.arange(len(order)) + index * width
        axis.bar(positions, np.asarray(values)[order], width, label=name)
    axis.set_xticks(np.arange(len(order)) + 0.4 - width / 2)
    axis.set_xticklabels([f"{c:.3g}" for c in true_concentration[order]])
    axis.set(xlabel="latent (true concentration)", ylabel="linear R^2", ylim=(0, 1.25))
    axis.legend(loc="upper center", ncol=len(per_latent))
    return _save(figure, path)


def plot_curves(curves: dict[str, list[dict]], path: str | Path, keys: Sequence[str]) -> Path:
    """Scores over training steps: a panel per key (`outer/inner` for nested scores),
    a line per loss."""
    figure, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.5), squeeze=False)
    for axis, key in zip(axes[0], keys, strict=True):
        for name, points in curves.items():
            values = [(p["step"], _lookup(p, key)) for p in points]
            values = [(step, value) for step, value in values if value is not None]
            if values:
                axis.plot(*zip(*values, strict=True), marker=".", label=name)
        axis.set(xlabel="step", ylabel=key)
        axis.grid(alpha=0.3)
        if axis.lines:  # a variant that diverged before its first evaluation has none
            axis.legend()
    return _save(figure, path)


def _lookup(scores: dict, key: str):
    for part in key.split("/"):
        if not isinstance(scores, dict) or part not in scores:
            return None
        scores = scores[part]
    return scores


def plot_identifiability(results: dict, run_dir: str | Path, true_concentration) -> list[Path]:
    """Per-latent R^2 of every loss and, for each loss with a Lambda_hat, learned vs
    true concentration: `per_latent_r2.png`, `lambda_<loss>.png`. A loss that
    diverged before its first evaluation has no scores and is left out."""
    run_dir = Path(run_dir)
    per_latent = {
        name: r["linear_r2_per_latent"]
        for name, r in results.items()
        if "linear_r2_per_latent" in r
    }
    paths = []
    if per_latent:
        paths.append(
            plot_per_latent_r2(per_latent, true_concentration, run_dir / "per_latent_r2.png")
        )
    for name, result in results.items():
        if "lambda_hat_matched" in result:
            paths.append(
                plot_concentration(
                    result["lambda_hat_matched"],
                    true_concentration,
                    run_dir / f"lambda_{name}.png",
                    title=name,
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
