"""Variants of several run directories ("arms") compared, paired by seed.
Details and command line: docs/method.md#comparing-run-directories"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from aninfonce_tf.evaluation.determinable import determinable_readout
from aninfonce_tf.parsing import INTEGER_FLAG
from aninfonce_tf.runner.report import scored_on, variant_scores
from aninfonce_tf.statistics import describe, holm, summary_table

# Scores of one arm: {seed: {score: value}}.
ArmScores = Mapping[int, Mapping[str, float]]


def parse_arm(text: str) -> tuple[str, Path, str]:
    """`"LABEL=DIRECTORY:VARIANT"` as `(label, directory, variant)`.

    Example:

    >>> parse_arm("tau 0.05=runs/tau:infonce")
    ('tau 0.05', PosixPath('runs/tau'), 'infonce')
    """
    label, _, rest = text.partition("=")
    directory, _, variant = rest.rpartition(":")
    if not (label.strip() and directory and variant):
        raise ValueError(
            f"`--arm` must read LABEL=DIRECTORY:VARIANT, e.g. 'infonce=runs/quick:infonce'; "
            f"got {text!r}."
        )
    return label.strip(), Path(directory), variant


def read_arm(directory: Path, variant: str) -> tuple[dict[int, dict], dict[int, dict]]:
    """`variant`'s scalar scores in each finished seed of `directory`, and what pairing compares."""
    found = _arm_results(directory, variant)
    scores = {seed: variant_scores(result) for seed, (result, _) in found.items()}
    return scores, {seed: _endpoint(result, run) for seed, (result, run) in found.items()}


def arm_scores(directory: Path, variant: str) -> dict[int, dict[str, float]]:
    """The scalar scores of `read_arm`."""
    return read_arm(directory, variant)[0]


def _endpoint(result: dict, run: dict) -> dict:
    check = run.get("readout_determinable") or {}
    return {
        "steps": result["steps"],
        **scored_on(run),
        "readout_check_seed": check.get("seed"),
        "readout_supervised": {
            target: entry["balanced_accuracy"] for target, entry in check.get("targets", {}).items()
        },
        "code": run.get("code"),
    }


def _arm_results(directory: Path, variant: str) -> dict[int, tuple[dict, dict]]:
    found = {}
    for path in sorted(Path(directory).glob("seed_*/results.json")):
        saved = json.loads(path.read_text())
        if variant in saved["variants"]:
            seed = int(path.parent.name.removeprefix("seed_"))
            found[seed] = (saved["variants"][variant], saved.get("run", {}))
    if not found:
        raise ValueError(
            f"No seed in {str(directory)!r} has finished the variant {variant!r}: give a run "
            "directory that `--seeds` wrote (seed_<k>/results.json) and one of its variants."
        )
    return dict(sorted(found.items()))


def endpoint_mismatches(
    endpoints: Mapping[str, Mapping[int, dict]],
    pairs: Sequence[tuple[str, str]],
    readout: bool = True,
) -> list[str]:
    """Where paired runs of one seed differ in steps, blocks or (`readout`) readout targets.

    Example:

    >>> endpoint_mismatches(
    ...     {"a": {0: {"steps": 1500, "blocks": None, "readout_kept": None}},
    ...      "b": {0: {"steps": 750, "blocks": None, "readout_kept": None}}},
    ...     [("a", "b")])
    ['a - b, seed 0: steps 1500 against 750']
    """
    problems = []
    for first, second in pairs:
        for seed in sorted(set(endpoints[first]) & set(endpoints[second])):
            a, b = endpoints[first][seed], endpoints[second][seed]
            for key in ("steps", "blocks", "readout_kept")[: 3 if readout else 2]:
                if a[key] != b[key]:
                    problems.append(
                        f"{first} - {second}, seed {seed}: {key} {a[key]} against {b[key]}"
                    )
    return problems


def common_readout(
    arms: Mapping[str, dict[int, dict[str, float]]],
    endpoints: Mapping[str, Mapping[int, dict]],
    check_seed: int | None = None,
) -> list[str]:
    """Adds `<level>/augmentation_readout_common` over the targets every check kept."""
    if check_seed is None:
        kept_sets = [entry["readout_kept"] for e in endpoints.values() for entry in e.values()]
    else:
        missing = sorted(
            label for label, per_seed in endpoints.items() if check_seed not in per_seed
        )
        if missing:
            raise ValueError(
                f"`--readout-check-seed {check_seed}`: no run of seed {check_seed} in the "
                f"arms {missing}; give a seed every arm ran."
            )
        kept_sets = [per_seed[check_seed]["readout_kept"] for per_seed in endpoints.values()]
    if not kept_sets or any(kept is None for kept in kept_sets):
        raise ValueError(
            "`--common-readout` needs image runs with the readout check "
            "(`run.readout_determinable` in each results.json)."
        )
    if check_seed is not None:
        checks = {per_seed[check_seed]["readout_check_seed"] for per_seed in endpoints.values()}
        if checks != {check_seed}:
            raise ValueError(
                f"`--readout-check-seed {check_seed}`: the runs of seed {check_seed} hold the "
                f"checks of seeds {sorted(checks, key=str)}, not their own (runs made with the "
                "preset's check share it already: leave the flag out)."
            )
        distinct = sorted({tuple(sorted(kept)) for kept in kept_sets})
        if len(distinct) > 1:
            raise ValueError(
                f"The arms' runs of seed {check_seed} kept other readout targets: {distinct}."
            )
    common = sorted(set.intersection(*(set(kept) for kept in kept_sets)))
    if not common:
        raise ValueError(
            "No readout target is kept in every seed of every arm."
            if check_seed is None
            else f"The check of seed {check_seed} kept no readout target."
        )
    _add_common_readout(arms, common)
    return common


def listed_readout(
    arms: Mapping[str, dict[int, dict[str, float]]], targets: Sequence[str]
) -> list[str]:
    """Adds `<level>/augmentation_readout_common` over the fixed `targets`; returns them.

    Example:

    >>> arms = {"a": {0: {"projector/readout/grayscale": 0.7, "projector/readout/hue": 0.5}}}
    >>> listed_readout(arms, ["grayscale", "hue"])
    ['grayscale', 'hue']
    >>> arms["a"][0]["projector/augmentation_readout_common"]
    0.6
    """
    targets = list(dict.fromkeys(targets))
    if not targets:
        raise ValueError("`--readout-targets` names no target: give them comma-separated.")
    for label, per_seed in arms.items():
        for seed, scores in per_seed.items():
            scored: dict[str, set[str]] = {}
            for key, value in scores.items():
                parts = key.split("/")
                finite = isinstance(value, int | float) and math.isfinite(value)
                if len(parts) == 3 and parts[1] == "readout" and finite:
                    scored.setdefault(parts[0], set()).add(parts[2])
            if not scored:
                raise ValueError(
                    f"`--readout-targets`: seed {seed} of the arm {label!r} scored no readout "
                    "target (`<level>/readout/<target>`): give image runs."
                )
            for level, names in sorted(scored.items()):
                missing = [target for target in targets if target not in names]
                if missing:
                    raise ValueError(
                        f"`--readout-targets`: seed {seed} of the arm {label!r} scored no "
                        f"{level} readout of {missing}; it scored {sorted(names)}."
                    )
    _add_common_readout(arms, targets)
    return targets


def _add_common_readout(
    arms: Mapping[str, dict[int, dict[str, float]]], targets: Sequence[str]
) -> None:
    for per_seed in arms.values():
        for scores in per_seed.values():
            readout = determinable_readout(scores, {"kept": targets})
            scores.update(
                {
                    f"{key}_common": value
                    for key, value in readout.items()
                    if key.endswith("/augmentation_readout")
                }
            )


def compare(
    arms: Mapping[str, ArmScores],
    pairs: Sequence[tuple[str, str]],
    scores: Sequence[str] = (),
) -> dict:
    """Per arm and score the `describe` over its seeds; per pair and score (default:
    every score both have) that of the per-seed difference, with `p` and `p_holm`.

    Returns:
        `{"seeds": {arm: [...]}, "variants": {arm: {score: entry}}, "differences":
        {"first - second": {score: entry}}}`; `statistics.summary_table` prints it.

    Raises:
        ValueError: for a score no arm has, a pair naming an unknown arm, or a pair
            without a shared seed.

    Example:

    >>> summary = compare(
    ...     {"a": {0: {"r2": 0.9}, 1: {"r2": 0.8}, 2: {"r2": 0.85}},
    ...      "b": {0: {"r2": 0.5}, 1: {"r2": 0.6}, 2: {"r2": 0.5}}},
    ...     pairs=[("a", "b")], scores=["r2"])
    >>> entry = summary["differences"]["a - b"]["r2"]
    >>> round(entry["mean"], 3), entry["n"], round(entry["p_holm"], 3)
    (0.317, 3, 0.034)
    """
    known = {
        score for per_seed in arms.values() for values in per_seed.values() for score in values
    }
    unknown = [score for score in scores if score not in known]
    if unknown:
        raise ValueError(
            f"`scores` names scores no arm has: {unknown}; they have e.g. {sorted(known)[:8]}."
        )
    differences = {}
    for first, second in pairs:
        unknown = [name for name in (first, second) if name not in arms]
        if unknown:
            raise ValueError(f"`pairs` names unknown arms {unknown}; the arms are {list(arms)}.")
        shared = sorted(set(arms[first]) & set(arms[second]))
        if not shared:
            raise ValueError(f"The arms {first!r} and {second!r} share no seed.")
        names = scores or [s for s in arms[first][shared[0]] if s in arms[second][shared[0]]]
        differences[f"{first} - {second}"] = {
            score: _difference(arms[first], arms[second], shared, score) for score in names
        }
    tests = {
        (pair, score): entry["p"]
        for pair, entries in differences.items()
        for score, entry in entries.items()
        if entry["p"] is not None
    }
    for (pair, score), adjusted in holm(tests).items():
        differences[pair][score]["p_holm"] = adjusted
    return {
        "seeds": {name: list(per_seed) for name, per_seed in arms.items()},
        "variants": {
            name: {
                score: describe({seed: values.get(score) for seed, values in per_seed.items()})
                for score in (scores or _score_names(per_seed))
            }
            for name, per_seed in arms.items()
        },
        "differences": differences,
    }


def _difference(first: ArmScores, second: ArmScores, seeds: list[int], score: str) -> dict:
    values = {}
    for seed in seeds:
        a, b = first[seed].get(score), second[seed].get(score)
        finite = a is not None and b is not None and math.isfinite(a) and math.isfinite(b)
        values[seed] = a - b if finite else None
    entry = describe(values, interval=True)
    entry["by_seed"] = values
    for name, arm in (("first_mean", first), ("second_mean", second)):
        own = [arm[seed].get(score) for seed in entry["seeds"]]
        entry[name] = float(sum(own) / len(own)) if own else None
    entry["p_holm"] = None
    return entry


def _score_names(per_seed: ArmScores) -> list[str]:
    return list(dict.fromkeys(score for values in per_seed.values() for score in values))


def main(argv: Sequence[str] | None = None) -> dict:
    """The command line (docs/method.md#comparing-run-directories)."""
    parser = argparse.ArgumentParser(
        prog="python -m aninfonce_tf.compare",
        description="Variants of several run directories compared, paired by seed.",
    )
    parser.add_argument("--arm", action="append", required=True, help="LABEL=DIRECTORY:VARIANT")
    parser.add_argument(
        "--pair", action="append", default=[], help="FIRST:SECOND, two labels (repeatable)"
    )
    parser.add_argument("--scores", default="", help="comma-separated scores (default: all)")
    parser.add_argument("--out", help="write the summary here as JSON")
    parser.add_argument(
        "--allow-other-endpoints",
        action="store_true",
        help="pair runs whose steps or blocks differ (refused without it)",
    )
    parser.add_argument(
        "--common-readout",
        action="store_true",
        help="image runs: add <level>/augmentation_readout_common, the readout over the "
        "targets the readout check kept in every seed of every arm",
    )
    parser.add_argument(
        "--readout-check-seed",
        type=INTEGER_FLAG,
        help="with --common-readout: the targets the check of this seed kept (0: the "
        "preset's check) instead of those kept in every seed",
    )
    parser.add_argument(
        "--readout-targets",
        help="image runs: add <level>/augmentation_readout_common, the readout over these "
        "comma-separated targets (a list fixed before the runs) in every run, whatever "
        "their readout checks kept; instead of --common-readout",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    options = parser.parse_args(argv)
    try:
        arms, endpoints = {}, {}
        for text in options.arm:
            label, directory, variant = parse_arm(text)
            arms[label], endpoints[label] = read_arm(directory, variant)
        if options.readout_check_seed is not None and not options.common_readout:
            raise ValueError("`--readout-check-seed` needs `--common-readout`.")
        if options.readout_targets is not None and options.common_readout:
            raise ValueError(
                "`--readout-targets` and `--common-readout` are two rules for the readout's "
                "targets: give one."
            )
        if options.readout_targets is not None:
            listed = [name.strip() for name in options.readout_targets.split(",")]
            common = listed_readout(arms, [name for name in listed if name])
        elif options.common_readout:
            common = common_readout(arms, endpoints, options.readout_check_seed)
        else:
            common = None
        pairs = []
        for text in options.pair:
            first, _, second = text.partition(":")
            if not (first and second):
                raise ValueError(f"`--pair` must read FIRST:SECOND, two labels; got {text!r}.")
            pairs.append((first, second))
        scores = [s.strip() for s in options.scores.split(",") if s.strip()]
        summary = compare(arms, pairs, scores)
        mismatches = endpoint_mismatches(endpoints, pairs, readout=common is None)
        if mismatches and not options.allow_other_endpoints:
            raise ValueError(
                "Paired runs differ in their endpoint or blocks: "
                + "; ".join(mismatches)
                + ". Compare runs of one endpoint, or pass --allow-other-endpoints."
            )
    except ValueError as error:
        parser.error(str(error))
    summary["endpoints"] = endpoints
    if common is not None:
        summary["common_readout_targets"] = common
        if options.readout_targets is not None:
            summary["common_readout_rule"] = "listed by --readout-targets"
        elif options.readout_check_seed is None:
            summary["common_readout_rule"] = "kept in every seed of every arm"
        else:
            summary["common_readout_rule"] = (
                f"kept by the check of seed {options.readout_check_seed}"
            )
    summary["endpoint_mismatches"] = mismatches
    summary["command"] = shlex.join(["python", "-m", "aninfonce_tf.compare", *argv])
    print(summary_table(summary, scores))
    if options.out:
        Path(options.out).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    main()


__all__ = [
    "arm_scores",
    "common_readout",
    "compare",
    "endpoint_mismatches",
    "listed_readout",
    "main",
    "parse_arm",
    "read_arm",
]
