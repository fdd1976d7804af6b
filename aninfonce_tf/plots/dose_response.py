"""The dose-response's figure: each paired difference against the spread r of Lambda."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from aninfonce_tf.plots import style
from aninfonce_tf.plots.style import score_label, variant_label


def plot_dose_response(
    summaries: Sequence[tuple[float, dict]],
    path: str | Path,
    scores: Sequence[str],
    pairs: Sequence[str],
    title: str = "",
) -> Path:
    """Per score a panel: each difference of `pairs` (mean, 95 %) against r on a log axis."""
    figure, axes = plt.subplots(1, len(scores), figsize=(5 * len(scores), 4), squeeze=False)
    spreads = np.array([spread for spread, _ in summaries])
    for axis, score in zip(axes[0], scores, strict=True):
        for offset, pair in zip((0.96, 1.04), pairs, strict=True):
            entries = [summary["differences"].get(pair, {}).get(score) for _, summary in summaries]
            keep = [i for i, e in enumerate(entries) if e and e.get("ci95") is not None]
            if not keep:
                continue
            means = np.array([entries[i]["mean"] for i in keep])
            bounds = np.array([entries[i]["ci95"] for i in keep])
            first, second = pair.split(" - ")
            axis.errorbar(
                spreads[keep] * offset,
                means,
                yerr=[means - bounds[:, 0], bounds[:, 1] - means],
                marker="o",
                capsize=3,
                label=f"{variant_label(first)} - {variant_label(second)}",
            )
        axis.axhline(0.0, color="0.5", linewidth=0.8)
        axis.set_xscale("log", base=2)
        axis.set_xlabel("spread r = largest / smallest true Lambda")
        axis.set_ylabel(f"difference in {score_label(score)}")
        axis.legend(fontsize=8)
    figure.suptitle(title or "Dose-response", fontsize=9)
    return style.save(figure, path)


__all__ = ["plot_dose_response"]
