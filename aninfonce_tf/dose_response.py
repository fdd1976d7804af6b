"""The dose-response of identification: a sweep (`sweep.main`) over the spread r =
high / low of a geometric true Lambda, and its table and figure of each variant's
scores and the paired differences against log r.

Example:

>>> cells = [{"values": {"concentration_spread": 4.0}, "seed_scores": {
...     s: {"aninfonce": {"mcc": 0.9 + s / 100}, "infonce": {"mcc": 0.7}} for s in range(3)}}]
>>> print(dose_response_markdown(cells, ["mcc"], "a test").splitlines()[6])
| 4 | 0.910 ± 0.010 | - | 0.700 ± 0.000 | - | +0.210 [+0.185, +0.235] (+0.193, +0.227) p < 0.001, Holm < 0.001 |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from aninfonce_tf import sweep
from aninfonce_tf.plots import style
from aninfonce_tf.plots.style import score_label, variant_label
from aninfonce_tf.statistics import summarize
from aninfonce_tf.sweep_tables import seed_scores

SPREAD = "concentration_spread"
VARIANTS = ("aninfonce", "aninfonce_isotropic", "infonce")
PAIRS = ("aninfonce - aninfonce_isotropic", "aninfonce - infonce")


def cell_summaries(cells: Sequence[Mapping], scores: Sequence[str]) -> list[tuple[float, dict]]:
    """`(r, statistics.summarize of the cell's seeds)` per cell in the order of r, Holm
    over each cell's family of `scores` and pairs."""
    summaries = [
        (float(cell["values"][SPREAD]), summarize(seed_scores(cell), family=scores))
        for cell in cells
    ]
    return sorted(summaries, key=lambda item: item[0])


def _mean_sd(entry: Mapping | None) -> str:
    if not entry or entry["mean"] is None:
        return "-"
    sd = "" if entry["sd"] is None else f" ± {entry['sd']:.3f}"
    return f"{entry['mean']:.3f}{sd}"


def _difference(entry: Mapping | None) -> str:
    if not entry or entry["mean"] is None or entry.get("ci95") is None:
        return "-"
    low, high = entry["ci95"]
    low90, high90 = entry["ci90"]
    text = f"{entry['mean']:+.3f} [{low:+.3f}, {high:+.3f}] ({low90:+.3f}, {high90:+.3f})"
    holm = entry.get("p_holm")
    return text + f" p {_p(entry['p'])}" + (f", Holm {_p(holm)}" if holm is not None else "")


def _p(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def dose_response_markdown(cells: Sequence[Mapping], scores: Sequence[str], what: str) -> str:
    """Per score a table: a row per spread r with each variant's mean ± sd and the
    paired differences (`PAIRS`) with their 95 % [ ] and 90 % ( ) intervals, the
    paired t-test's p and its Holm p within the cell; the smallest difference the
    seeds could detect; the MCC's random-rotation floor."""
    lines = [f"Dose-response: {what}", ""]
    labels = [variant_label(name) for name in VARIANTS] + [
        f"{variant_label(a)} - {variant_label(b)}" for a, b in (p.split(" - ") for p in PAIRS)
    ]
    summaries = cell_summaries(cells, scores)
    for score in scores:
        lines += [f"**{score_label(score)}** (mean ± sd; differences [95 %] (90 %))", ""]
        lines += ["| r | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
        for spread, summary in summaries:
            row = [_mean_sd(summary["variants"].get(name, {}).get(score)) for name in VARIANTS]
            row += [_difference(summary["differences"].get(p, {}).get(score)) for p in PAIRS]
            lines.append(f"| {spread:g} | " + " | ".join(row) + " |")
        lines.append("")
    lines += ["Smallest difference the seeds could detect (power 0.8, two-sided 0.05):", ""]
    for spread, summary in summaries:
        detectable = [
            f"{pair} {score}: {summary['differences'][pair][score]['detectable']:.3f}"
            for pair in PAIRS
            for score in scores
            if summary["differences"].get(pair, {}).get(score, {}).get("detectable") is not None
        ]
        lines.append(f"- r = {spread:g}: " + "; ".join(detectable))
    floors = [
        f"r = {spread:g}: {summary['variants'][name]['mcc_floor']['mean']:.3f}"
        for spread, summary in summaries
        for name in VARIANTS[:1]
        if "mcc_floor" in summary["variants"].get(name, {})
    ]
    if floors:
        lines += ["", "MCC of a random rotation of the true latents (floor): " + ", ".join(floors)]
    return "\n".join(lines)


def plot_dose_response(
    cells: Sequence[Mapping], path: str | Path, scores: Sequence[str], title: str = ""
) -> Path:
    """Per score a panel: each paired difference (`PAIRS`) against r on a log axis,
    its mean with the 95 % interval as bars, a zero line."""
    summaries = cell_summaries(cells, scores)
    figure, axes = plt.subplots(1, len(scores), figsize=(5 * len(scores), 4), squeeze=False)
    spreads = np.array([spread for spread, _ in summaries])
    for axis, score in zip(axes[0], scores, strict=True):
        for offset, pair in zip((0.96, 1.04), PAIRS, strict=True):
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


def write_dose_response(records: list[dict], run_dir: Path, what: str, scores: Sequence[str]):
    """`sweep.main`'s report of a dose-response: `dose_response.md` and
    `dose_response.png` in `run_dir`."""
    table = dose_response_markdown(records, scores, what)
    (run_dir / "dose_response.md").write_text(table + "\n")
    plot_dose_response(records, run_dir / "dose_response.png", scores, title=what)
    print(table)
    print(f"table: {run_dir / 'dose_response.md'}\nfigure: {run_dir / 'dose_response.png'}")


def main(config_module, argv=None, description: str = "", epilog: str = "", prog=None) -> list:
    """The command line of the dose-response: `sweep.main` with its report
    (`write_dose_response`)."""
    return sweep.main(
        config_module, argv, description, epilog, prog, write_report=write_dose_response
    )


__all__ = [
    "cell_summaries",
    "dose_response_markdown",
    "main",
    "plot_dose_response",
    "write_dose_response",
]
