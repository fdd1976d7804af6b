"""The Markdown tables of a sweep from each cell's per-seed scores.
Details: docs/method.md#a-sweeps-tables"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from aninfonce_tf import plots
from aninfonce_tf.plots.style import score_label, variant_label
from aninfonce_tf.plots.tradeoff import MOVED, axis_cells, moved_parts
from aninfonce_tf.statistics import SeedScores, describe, paired_variants, summarize

# The per-part score a table column gives for each part the sweep moves.
PART_SCORE = "{level}/part_linear_r2/{part}"


def seed_scores(cell: Mapping) -> dict[int, dict[str, dict[str, float | None]]]:
    """A cell's scores per seed from its record's `seed_scores` (seeds as numbers).

    Example:

    >>> seed_scores({"seed_scores": {"1": {"infonce": {"acc": 0.5}}}})
    {1: {'infonce': {'acc': 0.5}}}
    """
    if "seed_scores" not in cell:
        raise ValueError(
            f"the sweep's record of {cell.get('cell', 'a cell')} has no `seed_scores`: rerun "
            "the sweep's command, which skips the finished runs and writes them."
        )
    return {int(seed): dict(variants) for seed, variants in cell["seed_scores"].items()}


def paired_scores(
    scores: Mapping[int, SeedScores], names: Sequence[str]
) -> dict[int, dict[str, dict[str, float | None]]]:
    """`scores` of `names`, each kept on the seeds where every variant has it finite.

    Example:

    >>> paired_scores({0: {"a": {"acc": 0.5}, "b": {"acc": 0.4}},
    ...                1: {"a": {"acc": 0.6}, "b": {"acc": float("nan")}}}, ["acc"])
    {0: {'a': {'acc': 0.5}, 'b': {'acc': 0.4}}, 1: {'a': {'acc': None}, 'b': {'acc': None}}}
    """
    variants = _variants(scores)
    paired = {seed: {name: {} for name in variants} for seed in scores}
    for seed, per_seed in scores.items():
        for score in names:
            values = [per_seed.get(name, {}).get(score) for name in variants]
            shared = all(value is not None and math.isfinite(value) for value in values)
            for name, value in zip(variants, values, strict=True):
                paired[seed][name][score] = value if shared else None
    return paired


def swept_parts(cells: Sequence[dict]) -> list[str]:
    """The parts a sweep moves, as its figure draws them (`plots.tradeoff.moved_parts`).

    Example:

    >>> run = lambda x, y: {"effective_concentration": {"parts": {"x": x, "y": y}}}
    >>> swept_parts([{"changed": {}, "values": {"a": 0}, "run": run(0.6, 2.0)},
    ...              {"changed": {"a": 1}, "values": {"a": 1}, "run": run(0.6, 9.0)}])
    ['y']
    """
    groups = list(axis_cells(cells).values()) or [list(cells)]
    return list(dict.fromkeys(part for members in groups for part in moved_parts(members)))


def table_scores(
    cells: Sequence[dict], scores: Sequence[str], level: str = "backbone"
) -> list[str]:
    """The tables' columns: `scores` but block scores, then `level`'s R^2 of each moved part.

    Example:

    >>> run = lambda x: {"effective_concentration": {"parts": {"x": x, "y": 2.0}}}
    >>> cells = [{"changed": {}, "values": {"a": 0}, "run": run(0.6)},
    ...          {"changed": {"a": 1}, "values": {"a": 1}, "run": run(1.2)}]
    >>> table_scores(cells, ["backbone/shape_accuracy", "backbone/block_linear_r2/style"])
    ['backbone/shape_accuracy', 'backbone/part_linear_r2/x']
    """
    kept = [score for score in scores if not any(p.startswith("block_") for p in score.split("/"))]
    parts = [PART_SCORE.format(level=level, part=part) for part in swept_parts(cells)]
    return list(dict.fromkeys([*kept, *parts]))


def tradeoff_table(cells: Sequence[dict], scores: Sequence[str]) -> str:
    """A Markdown table of `run_cells`' result: per cell a row per variant and difference.

    Example:

    >>> scores = {seed: {"aninfonce": {"acc": 0.8 + d}, "infonce": {"acc": 0.7}}
    ...           for seed, d in enumerate([0.0, 0.02, 0.04])}
    >>> cell = {"changed": {"crop_min_scale": 0.6}, "seed_scores": scores}
    >>> print(tradeoff_table([cell], ["acc"]))
    | cell | loss | acc | seeds |
    |---|---|---|---|
    | crop 0.6 | AnInfoNCE | 0.820 ± 0.020 | 3 |
    | crop 0.6 | InfoNCE | 0.700 ± 0.000 | 3 |
    | crop 0.6 | AnInfoNCE − InfoNCE | +0.120 [+0.070, +0.170] | 3 |
    """
    lines = _header(scores)
    for cell in cells:
        summary = summarize(paired_scores(seed_scores(cell), scores))
        rows = [(plots.variant_label(v), e) for v, e in summary["variants"].items()]
        rows += [(_pair_label(pair), e) for pair, e in summary["differences"].items()]
        lines += [_row(plots.cell_label(cell["changed"]), loss, e, scores) for loss, e in rows]
    return "\n".join(lines)


def difference_changes(
    cell: Mapping, center: Mapping, scores: Sequence[str]
) -> dict[str, dict[str, dict]]:
    """Per difference `"A - B"` and score, `describe` of its change from `center` to `cell`.

    Example:

    >>> def cell(first, second):  # AnInfoNCE's accuracy at seeds 0 and 1
    ...     return {"seed_scores": {0: {"aninfonce": {"acc": first}, "infonce": {"acc": 0.5}},
    ...                             1: {"aninfonce": {"acc": second}, "infonce": {"acc": 0.4}}}}
    >>> changes = difference_changes(cell(0.9, 0.6), cell(0.6, 0.5), ["acc"])
    >>> entry = changes["aninfonce - infonce"]["acc"]
    >>> round(entry["mean"], 3), entry["n"]  # ((0.4 - 0.1) + (0.2 - 0.1)) / 2
    (0.2, 2)
    """
    here = paired_scores(seed_scores(cell), scores)
    there = paired_scores(seed_scores(center), scores)
    seeds = [seed for seed in here if seed in there]
    names = [name for name in _variants(here) if name in _variants(there)]

    def difference(per_seed: Mapping, first: str, second: str, score: str) -> float | None:
        one, other = per_seed[first].get(score), per_seed[second].get(score)
        return None if one is None or other is None else one - other

    changes = {}
    for first, second in paired_variants(names):
        changes[f"{first} - {second}"] = {}
        for score in scores:
            values = {}
            for seed in seeds:
                now = difference(here[seed], first, second, score)
                before = difference(there[seed], first, second, score)
                values[seed] = None if now is None or before is None else now - before
            changes[f"{first} - {second}"][score] = describe(values, interval=True)
    return changes


def change_table(cells: Sequence[dict], scores: Sequence[str]) -> str:
    """A Markdown table of each difference's change from the centre cell (empty without).

    Example:

    >>> scores = lambda d: {s: {"aninfonce": {"acc": 0.5 + d + s / 100}, "infonce": {"acc": 0.5}}
    ...                     for s in range(3)}
    >>> cells = [{"changed": {}, "seed_scores": scores(0.1)},
    ...          {"changed": {"jitter_strength": 1.0}, "seed_scores": scores(0.3)}]
    >>> print(change_table(cells, ["acc"]).splitlines()[-1])
    | jitter 1 | AnInfoNCE − InfoNCE | +0.200 [+0.200, +0.200] | 3 |
    """
    center = next((cell for cell in cells if not cell["changed"]), None)
    if center is None:
        return ""
    lines = _header(scores)
    for cell in cells:
        if cell is not center:
            label = plots.cell_label(cell["changed"])
            for pair, entries in difference_changes(cell, center, scores).items():
                lines.append(_row(label, _pair_label(pair), entries, scores))
    return "\n".join(lines)


def blocks_table(cells: Sequence[dict]) -> str:
    """A Markdown table of each cell's blocks with their parts' Lambda_eff; empty without any.

    Example:

    >>> run = {"blocks": {"content": ["y"], "style": ["x"]},
    ...        "effective_concentration": {"parts": {"x": 0.62, "y": 21.9}}}
    >>> print(blocks_table([{"changed": {}, "run": run}]))
    | cell | content parts (Λ_eff) | style parts (Λ_eff) |
    |---|---|---|
    | preset | y 21.9 | x 0.62 |
    """
    blocks = list(dict.fromkeys(b for cell in cells for b in cell["run"].get("blocks", {})))
    if not blocks:
        return ""
    lines = [
        "| cell | " + " | ".join(f"{block} parts (Λ_eff)" for block in blocks) + " |",
        "|" + "---|" * (len(blocks) + 1),
    ]
    for cell in cells:
        parts = cell["run"].get("effective_concentration", {}).get("parts", {})
        columns = [
            ", ".join(f"{part} {parts[part]:.3g}" if part in parts else part for part in members)
            for members in (cell["run"].get("blocks", {}).get(block, []) for block in blocks)
        ]
        lines.append("| " + " | ".join([plots.cell_label(cell["changed"]), *columns]) + " |")
    return "\n".join(lines)


def tradeoff_markdown(cells: Sequence[dict], scores: Sequence[str], what: str) -> str:
    """A sweep's tradeoff.md: `what` ran, how to read it, and its tables.

    Example:

    >>> cell = {"changed": {}, "run": {}, "seed_scores": {0: {"infonce": {"acc": 0.5}}}}
    >>> text = tradeoff_markdown([cell], ["acc"], "a test")
    >>> text.splitlines()[0], [line for line in text.splitlines() if "InfoNCE" in line]
    ('# Trade-off map: a test', ['| preset | InfoNCE | 0.500 | 1 |'])
    """
    columns = table_scores(cells, scores)
    parts = [
        f"# Trade-off map: {what}",
        "A row per cell (what it changes from the preset's point, with the command's flags) "
        "and loss: mean ± sd over the seeds; per pair of losses the paired difference over "
        "the seeds, mean [95 % t-interval], uncorrected for the table's many comparisons. "
        "Each score rests on the seeds on which every loss of the cell has a finite value "
        "(paired): `seeds` gives n, an entry on fewer seeds says its own. `R²`: the held-out "
        "linear R² of one latent part, each part the sweep moves (its Λ_eff changes by a "
        f"factor of {MOVED:g} or more between cells), the same part in "
        "every cell.",
        tradeoff_table(cells, columns),
    ]
    changes = change_table(cells, columns)
    if changes and len(cells) > 1:
        parts += [
            "## Change from the preset's point (difference in differences)",
            "Per cell and pair of losses: the cell's paired difference minus the preset's "
            "point's, seed by seed (seed k's difference here minus seed k's there), mean "
            "[95 % t-interval] over the seeds both cells share, uncorrected.",
            changes,
        ]
    blocks = blocks_table(cells)
    if blocks:
        parts += [
            "## Blocks",
            "Each cell's blocks, from its pairs' effective concentration. A block holds "
            "different parts in different cells, so its scores (`block_linear_r2/...`) are "
            "not comparable across cells and the tables above leave them out.",
            blocks,
        ]
    return "\n\n".join(parts)


def _variants(scores: Mapping[int, Mapping]) -> list[str]:
    return list(dict.fromkeys(name for per_seed in scores.values() for name in per_seed))


def _pair_label(pair: str) -> str:
    return " − ".join(map(plots.variant_label, pair.split(" - ")))


def _column(score: str) -> str:
    """A column's header: `backbone/part_linear_r2/x` as `backbone R² x`."""
    return score.replace("/part_linear_r2/", " R² ").replace("/", " ").replace("_", " ")


def _header(scores: Sequence[str]) -> list[str]:
    return [
        "| " + " | ".join(["cell", "loss", *map(_column, scores), "seeds"]) + " |",
        "|" + "---|" * (len(scores) + 3),
    ]


def _row(label: str, loss: str, entries: Mapping[str, dict], scores: Sequence[str]) -> str:
    """A table row: each score's entry, its n where fewer than the row's most, and n."""
    found = [entries.get(score) for score in scores]
    n = max((entry["n"] for entry in found if entry), default=0)
    shown = [
        _entry(entry) + (f" (n {entry['n']})" if entry and 0 < entry["n"] < n else "")
        for entry in found
    ]
    return "| " + " | ".join([label, loss, *shown, str(n)]) + " |"


def _entry(entry: dict | None) -> str:
    """Mean +- sd, or a difference's signed mean and interval; `-` where none."""
    if entry is None or entry["mean"] is None:
        return "-"
    if "ci95" in entry:
        interval = entry["ci95"]
        shown = f" [{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else ""
        return f"{entry['mean']:+.3f}{shown}"
    return f"{entry['mean']:.3f}" + (f" ± {entry['sd']:.3f}" if entry["sd"] is not None else "")


# The dose-response (`sweep.dose_response_main`): its swept field, variants and pairs.
DOSE_SPREAD = "concentration_spread"
DOSE_VARIANTS = ("aninfonce", "aninfonce_isotropic", "infonce")
DOSE_PAIRS = ("aninfonce - aninfonce_isotropic", "aninfonce - infonce")


def cell_summaries(cells: Sequence[Mapping], scores: Sequence[str]) -> list[tuple[float, dict]]:
    """`(r, statistics.summarize of the cell's seeds)` per cell, in the order of r."""
    summaries = [
        (float(cell["values"][DOSE_SPREAD]), summarize(seed_scores(cell), family=scores))
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
    """Per score a table: a row per spread r, each variant's mean ± sd and `DOSE_PAIRS`.

    Example:

    >>> cells = [{"values": {"concentration_spread": 4.0}, "seed_scores": {
    ...     s: {"aninfonce": {"mcc": 0.9 + s / 100}, "infonce": {"mcc": 0.7}} for s in range(3)}}]
    >>> print(dose_response_markdown(cells, ["mcc"], "a test").splitlines()[6])
    | 4 | 0.910 ± 0.010 | - | 0.700 ± 0.000 | - | +0.210 [+0.185, +0.235] (+0.193, +0.227) p < 0.001, Holm < 0.001 |
    """
    lines = [f"Dose-response: {what}", ""]
    labels = [variant_label(name) for name in DOSE_VARIANTS] + [
        f"{variant_label(a)} - {variant_label(b)}" for a, b in (p.split(" - ") for p in DOSE_PAIRS)
    ]
    summaries = cell_summaries(cells, scores)
    for score in scores:
        lines += [f"**{score_label(score)}** (mean ± sd; differences [95 %] (90 %))", ""]
        lines += ["| r | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
        for spread, summary in summaries:
            row = [_mean_sd(summary["variants"].get(name, {}).get(score)) for name in DOSE_VARIANTS]
            row += [_difference(summary["differences"].get(p, {}).get(score)) for p in DOSE_PAIRS]
            lines.append(f"| {spread:g} | " + " | ".join(row) + " |")
        lines.append("")
    lines += ["Smallest difference the seeds could detect (power 0.8, two-sided 0.05):", ""]
    for spread, summary in summaries:
        detectable = [
            f"{pair} {score}: {summary['differences'][pair][score]['detectable']:.3f}"
            for pair in DOSE_PAIRS
            for score in scores
            if summary["differences"].get(pair, {}).get(score, {}).get("detectable") is not None
        ]
        lines.append(f"- r = {spread:g}: " + "; ".join(detectable))
    floors = [
        f"r = {spread:g}: {summary['variants'][name]['mcc_floor']['mean']:.3f}"
        for spread, summary in summaries
        for name in DOSE_VARIANTS[:1]
        if "mcc_floor" in summary["variants"].get(name, {})
    ]
    if floors:
        lines += ["", "MCC of a random rotation of the true latents (floor): " + ", ".join(floors)]
    return "\n".join(lines)


__all__ = [
    "DOSE_PAIRS",
    "DOSE_VARIANTS",
    "cell_summaries",
    "dose_response_markdown",
    "PART_SCORE",
    "blocks_table",
    "change_table",
    "difference_changes",
    "paired_scores",
    "seed_scores",
    "swept_parts",
    "table_scores",
    "tradeoff_markdown",
    "tradeoff_table",
]
