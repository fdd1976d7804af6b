"""Matplotlib figures of an experiment's results (written to PNG, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_concentration(
    learned, true, path: str | Path, title: str = "Lambda_hat vs Lambda"
) -> Path:
    """Learned Lambda_hat (matched to latents) against the true Lambda, one dot per latent."""
    learned, true = np.asarray(learned), np.asarray(true)
    figure, axis = plt.subplots(figsize=(4.5, 4))
    axis.scatter(true, learned, zorder=3)
    limits = [0, 1.1 * max(true.max(), learned.max())]
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


def plot_curves(curves: dict[str, list[dict]], path: str | Path, keys=("linear_r2", "mcc")) -> Path:
    """Scores over training steps, one line per loss and key."""
    figure, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 3.5), squeeze=False)
    for axis, key in zip(axes[0], keys, strict=True):
        for name, points in curves.items():
            steps = [p["step"] for p in points if key in p]
            axis.plot(steps, [p[key] for p in points if key in p], marker=".", label=name)
        axis.set(xlabel="step", ylabel=key, ylim=(0, 1.02))
        axis.grid(alpha=0.3)
        axis.legend()
    return _save(figure, path)


def _save(figure, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
