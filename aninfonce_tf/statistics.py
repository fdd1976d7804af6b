"""Scores over seeds (`--seeds`, `summary.json`): mean, sd and paired differences.
Details: docs/method.md#statistics-over-seeds

Example:

>>> summary = summarize({
...     0: {"aninfonce": {"mcc": 0.9}, "infonce": {"mcc": 0.5}},
...     1: {"aninfonce": {"mcc": 0.8}, "infonce": {"mcc": 0.6}},
... })
>>> summary["variants"]["aninfonce"]["mcc"]["n"]
2
>>> round(summary["differences"]["aninfonce - infonce"]["mcc"]["mean"], 3)
0.3
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

from aninfonce_tf.loss_variants import LOSS_VARIANTS

# Scores of one seed: {variant: {score: value}}; a value may be None (not measured).
SeedScores = Mapping[str, Mapping[str, float | None]]


def paired_variants(names: Sequence[str]) -> list[tuple[str, str]]:
    """The `(AnInfoNCE variant, other variant)` pairs among `names` the summary reports.

    Example:

    >>> paired_variants(["infonce", "aninfonce", "infonce_ensemble", "aninfonce_isotropic"])
    [('aninfonce', 'infonce'), ('aninfonce', 'aninfonce_isotropic')]
    """
    pairs = []
    for name in names:
        variant = LOSS_VARIANTS[name]
        if variant.anisotropic:
            pairs += [
                (name, other)
                for other in names
                if not LOSS_VARIANTS[other].anisotropic
                and LOSS_VARIANTS[other].options == variant.options
            ]
    return pairs


# The power at which `describe` states the smallest difference the seeds could detect
# (two-sided, at the level of its 95 % interval).
DETECTION_POWER = 0.8


def describe(values: Mapping[int, float | None], interval: bool = False) -> dict:
    """Mean, sd, `n`, `seeds`, `values` of the finite `{seed: value}` (`interval`: `ci95`, ...).

    Example:

    >>> entry = describe({0: 1.0, 1: 2.0, 2: None, 3: 6.0}, interval=True)
    >>> {key: entry[key] for key in ("mean", "sd", "n", "seeds", "ci95")}
    {'mean': 3.0, 'sd': 2.646, 'n': 3, 'seeds': [0, 1, 3], 'ci95': [-3.572, 9.572]}
    >>> entry["values"], entry["ci90"], round(entry["p"], 3), round(entry["detectable"], 2)
    ([1.0, 2.0, 6.0], [-1.46, 7.46], 0.188, 8.19)
    """
    seeds = [seed for seed, value in values.items() if value is not None and math.isfinite(value)]
    sample = np.array([values[seed] for seed in seeds], dtype=np.float64)
    n = len(seeds)
    mean = float(sample.mean()) if n else None
    sd = float(sample.std(ddof=1)) if n > 1 else None
    entry = {"mean": mean, "sd": sd, "n": n, "seeds": seeds}
    entry["values"] = sample.tolist()
    if interval:
        entry.update(ci95=None, ci90=None, p=paired_p_value(sample), detectable=None)
        if n > 1:
            error = sd / math.sqrt(n)
            for key, level in (("ci95", 0.975), ("ci90", 0.95)):
                half = float(stats.t.ppf(level, n - 1)) * error
                entry[key] = [mean - half, mean + half]
            quantiles = stats.t.ppf(0.975, n - 1) + stats.t.ppf(DETECTION_POWER, n - 1)
            entry["detectable"] = float(quantiles * error)
    return entry


def paired_p_value(differences: Sequence[float]) -> float | None:
    """The two-sided paired t-test's p that the mean of `differences` is 0 (None below 2).

    Example:

    >>> round(paired_p_value([0.1, 0.2, 0.15]), 3), paired_p_value([0.02, 0.02, 0.02])
    (0.035, 0.0)
    >>> paired_p_value([0.0, 0.0]), paired_p_value([0.3])
    (1.0, None)
    """
    sample = np.asarray(differences, dtype=np.float64)
    if sample.size < 2:
        return None
    largest = float(np.abs(sample).max())
    if np.ptp(sample) <= 1e-9 * max(1.0, largest):
        return 0.0 if largest > 1e-12 else 1.0
    return float(stats.ttest_1samp(sample, 0.0).pvalue)


def holm(p_values: Mapping) -> dict:
    """Holm's step-down adjustment of the p-values of several comparisons (keys kept).

    Example:

    >>> holm({"a": 0.01, "b": 0.04, "c": 0.03})
    {'a': 0.03, 'c': 0.06, 'b': 0.06}
    """
    ordered = sorted(p_values.items(), key=lambda item: item[1])
    adjusted, running = {}, 0.0
    for rank, (key, value) in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - rank) * value))
        adjusted[key] = round(running, 12)
    return adjusted


def summarize(scores: Mapping[int, SeedScores], family: Sequence[str] = ()) -> dict:
    """`describe` per variant and score, and per `paired_variants` pair of the difference.

    Args:
        scores: `{seed: {variant: {score: value}}}`, scalar scores only.
        family: the scores whose differences are tested as one family.

    Returns:
        `{"seeds", "variants": {variant: {score: entry}}, "differences", "family"}`.
    """
    names = list(dict.fromkeys(name for per_seed in scores.values() for name in per_seed))

    def values(name: str, score: str) -> dict[int, float | None]:
        return {seed: per_seed.get(name, {}).get(score) for seed, per_seed in scores.items()}

    def score_names(name: str) -> list[str]:
        return list(
            dict.fromkeys(s for per_seed in scores.values() for s in per_seed.get(name, {}))
        )

    differences = {}
    for first, second in paired_variants(names):
        shared = [score for score in score_names(first) if score in score_names(second)]
        differences[f"{first} - {second}"] = {
            score: describe(_subtract(values(first, score), values(second, score)), interval=True)
            for score in shared
        }
    tests = {
        (pair, score): entries[score]["p"]
        for pair, entries in differences.items()
        for score in family
        if score in entries and entries[score]["p"] is not None
    }
    for (pair, score), adjusted in holm(tests).items():
        differences[pair][score]["p_holm"] = adjusted
    return {
        "seeds": list(scores),
        "variants": {
            name: {score: describe(values(name, score)) for score in score_names(name)}
            for name in names
        },
        "differences": differences,
        "family": list(family),
    }


def _subtract(first: dict, second: dict) -> dict[int, float | None]:
    return {
        seed: None if first[seed] is None or second[seed] is None else first[seed] - second[seed]
        for seed in first
    }


def summary_table(summary: dict, scores: Sequence[str] = ()) -> str:
    """The `summarize` result as text: per score a row per variant and per pair.

    Example:

    >>> print(summary_table(summarize({
    ...     0: {"aninfonce": {"mcc": 0.9}, "infonce": {"mcc": 0.5}},
    ...     1: {"aninfonce": {"mcc": 0.8}, "infonce": {"mcc": 0.6}},
    ... })))
    score  variant                mean     sd  n  95% interval      Holm p  if unresolved: 90% interval, detectable
    -----  -------------------  ------  -----  -  ----------------  ------  ---------------------------------------
    mcc    aninfonce             0.850  0.071  2
    mcc    infonce               0.550  0.071  2
    mcc    aninfonce - infonce  +0.300  0.141  2  [-0.971, +1.571]       -  [-0.331, +0.931], 1.408
    """
    rows = []
    known = dict.fromkeys(s for entries in summary["variants"].values() for s in entries)
    for score in [s for s in scores if s in known] if scores else known:
        for group, sign in ((summary["variants"], ""), (summary["differences"], "+")):
            for name, entries in group.items():
                if score in entries:
                    entry = entries[score]
                    row = [score, name, _number(entry["mean"], sign), _number(entry["sd"])]
                    row += [str(entry["n"]), _interval(entry.get("ci95"))]
                    if group is summary["differences"]:
                        row += [_number(entry.get("p_holm")), _bounds(entry)]
                    rows.append(row + [""] * (8 - len(row)))
    header = ["score", "variant", "mean", "sd", "n", "95% interval", "Holm p"]
    header.append("if unresolved: 90% interval, detectable")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    # Names to the left, numbers to the right.
    align = [str.ljust, str.ljust, str.rjust, str.rjust, str.rjust, str.ljust, str.rjust]
    align.append(str.ljust)

    def line(row):
        return "  ".join(a(c, w) for a, c, w in zip(align, row, widths, strict=True)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def _interval(bounds: Sequence[float] | None) -> str:
    return f"[{_number(bounds[0], '+')}, {_number(bounds[1], '+')}]" if bounds else ""


def _bounds(entry: dict) -> str:
    """An unresolved difference's 90 % interval and detectable difference, else ""."""
    ci95, ci90 = entry.get("ci95"), entry.get("ci90")
    if not ci95 or not ci90 or not ci95[0] <= 0 <= ci95[1]:
        return ""
    return f"{_interval(ci90)}, {_number(entry.get('detectable'))}"


def _number(value: float | None, sign: str = "") -> str:
    return "-" if value is None else f"{value:{sign}.3f}"


__all__ = [
    "describe",
    "holm",
    "paired_p_value",
    "paired_variants",
    "summarize",
    "summary_table",
]
