"""The tables of a sweep (`aninfonce_tf.sweep`) in Markdown: each cell's scores over
its seeds and the paired differences between its losses with their 95 % intervals
(`tradeoff_table`, from each cell's `statistics.summarize` summary), and the blocks of
latent parts each cell's pairs give (`blocks_table`).

Example:

>>> entry = {"mean": 0.3, "sd": 0.01, "n": 3}
>>> cells = [{"changed": {"jitter_strength": 1.0}, "summary": {"variants": {"infonce": {"acc": entry}}}}]
>>> print(tradeoff_table(cells, ["acc"]).splitlines()[-1])
| jitter 1 | InfoNCE | 0.300 ± 0.010 | 3 |
"""

from __future__ import annotations

from collections.abc import Sequence

from aninfonce_tf import plots


def tradeoff_table(cells: Sequence[dict], scores: Sequence[str]) -> str:
    """A Markdown table of `run_cells`' result: per cell (by its `changed` values) a
    row per loss variant, the mean +- sd of each of `scores` over the seeds, and a row
    per paired difference of the cell's summary (`statistics.summarize`): its mean
    and 95 % t-interval, uncorrected for the table's many comparisons.

    Example:

    >>> entry = lambda mean, sd: {"mean": mean, "sd": sd, "n": 3}
    >>> summary = {"variants": {"aninfonce": {"acc": entry(0.8, 0.01)}}, "differences": {
    ...     "aninfonce - infonce": {"acc": {**entry(0.1, 0.02), "ci95": [0.05, 0.15]}}}}
    >>> print(tradeoff_table([{"changed": {"crop_min_scale": 0.6}, "summary": summary}], ["acc"]))
    | cell | loss | acc | seeds |
    |---|---|---|---|
    | crop 0.6 | AnInfoNCE | 0.800 ± 0.010 | 3 |
    | crop 0.6 | AnInfoNCE − InfoNCE | +0.100 [+0.050, +0.150] | 3 |
    """
    lines = [
        "| " + " | ".join(["cell", "loss", *scores, "seeds"]) + " |",
        "|" + "---|" * (len(scores) + 3),
    ]
    for cell in cells:
        label = plots.cell_label(cell["changed"])
        summary = cell["summary"]
        rows = [(plots.variant_label(v), e) for v, e in summary["variants"].items()]
        rows += [
            (" − ".join(map(plots.variant_label, pair.split(" - "))), entries)
            for pair, entries in summary.get("differences", {}).items()
        ]
        for loss, entries in rows:
            found = [entries.get(score) for score in scores]
            n = max((entry["n"] for entry in found if entry), default=0)
            lines.append("| " + " | ".join([label, loss, *map(_entry, found), str(n)]) + " |")
    return "\n".join(lines)


def _entry(entry: dict | None) -> str:
    """Mean +- sd, or a difference's signed mean and interval; `-` where none."""
    if entry is None or entry["mean"] is None:
        return "-"
    if "ci95" in entry:
        interval = entry["ci95"]
        shown = f" [{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else ""
        return f"{entry['mean']:+.3f}{shown}"
    return f"{entry['mean']:.3f}" + (f" ± {entry['sd']:.3f}" if entry["sd"] is not None else "")


def blocks_table(cells: Sequence[dict]) -> str:
    """A Markdown table of each cell's blocks (its record's `run`): the parts of each
    with their effective concentration; empty without any.

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
    """A sweep's tradeoff.md: `what` ran, how to read it, `tradeoff_table` and
    `blocks_table`.

    Example:

    >>> summary = {"variants": {"infonce": {"acc": {"mean": 0.5, "sd": None, "n": 1}}}}
    >>> text = tradeoff_markdown([{"changed": {}, "summary": summary, "run": {}}], ["acc"], "a test")
    >>> text.splitlines()[0], text.splitlines()[-1]
    ('# Trade-off map: a test', '| preset | InfoNCE | 0.500 | 1 |')
    """
    parts = [
        f"# Trade-off map: {what}",
        "A row per cell (what it changes from the preset's point, with the command's flags) "
        "and loss: mean ± sd over the seeds; per pair of losses the paired difference over "
        "the seeds, mean [95 % t-interval], uncorrected for the table's many comparisons.",
        tradeoff_table(cells, scores),
    ]
    blocks = blocks_table(cells)
    if blocks:
        parts += ["Each cell's blocks, from its pairs' effective concentration:", blocks]
    return "\n\n".join(parts)


__all__ = ["blocks_table", "tradeoff_markdown", "tradeoff_table"]
