"""Wall time until AnInfoNCE reaches MCC >= 0.95 and linear R^2 >= 0.99 on the paper's
linear setting, for several presets of `recipes/synthetic.py` side by side: each seed
runs every preset in turn (alternating which goes first), so that they share the
machine's load, and the script prints each run's time and steps, each preset's median
and range, and the first preset's time over the second's. A run that fails or never
reaches the targets counts as infinitely long.

    python benchmarks/time_to_target.py --seeds 10,11,12,13,14,15,16,17,18,19 \\
        --summary docs/summaries/time-to-target.json      # paper-linear-fast vs paper-linear
    python benchmarks/time_to_target.py --presets paper-linear --seeds 0 -- --learning-rate 3e-3
    python benchmarks/time_to_target.py --presets paper-linear \\
        -- --batch-size 500 --alignment-pairs 16384         # the slow-feature alignment

Flags after `--` go to the recipe and override every preset. Each run is the recipe in a
fresh process (`--stop-at`), timed from process start to exit, so that import,
compilation, every evaluation, saving and export count. After each run, outside its
time, the saved model is scored on a second held-out set of 4096 samples, which the
stopping rule never saw, and (`--held-check`, on by default) the run is repeated without
stopping for twice the steps at which it stopped: the targets are *held* when both hold
at every evaluation from that step to twice it. With `--patience N` a run stops once
both targets held at N evaluations in a row (the recipe's `--stop-patience`), not at the
first that reaches them. The repeat's curve up to
that step is compared with the timed run's (the presets' learning rates are constant
after the warm-up, so the repeat trains the same steps); the largest difference is
recorded. A run whose targets did not hold counts as infinitely long in the medians
"with the targets held". A run that fits the slow-feature alignment at every evaluation
(`--alignment-pairs`, by its preset or after `--`) reads MCC as `aligned_mcc`: the MCC
of its embedding times that alignment, which the saved model holds and exports
(`embed_aligned`); the alignment lifts any loss's MCC, so such a run's MCC target no
longer tells AnInfoNCE from InfoNCE (docs/speed.md). The authors' code needs ~41k
steps for MCC 0.95.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TARGET_VALUES = {"mcc": 0.95, "linear_r2": 0.99}
RECIPE = Path(__file__).parent.parent / "recipes" / "synthetic.py"
PRESETS = ("paper-linear-fast", "paper-linear")


# Recipe flags that this script sets for every run, refused after `--`.
SET_HERE = (
    *("--preset", "--smoke", "--losses", "--stop-at", "--stop-patience", "--seed", "--seeds"),
    "--out",
)


def mcc_score(preset: str, extra: list[str]) -> str:
    """The score that the MCC target reads: `aligned_mcc` for a run that fits the
    slow-feature alignment at every evaluation (`alignment_pairs` of the config that
    the recipe's own parser makes of the preset and the recipe flags `extra`), else
    `mcc`. An unknown preset or a bad flag exits with the recipe's usage error."""
    from aninfonce_tf.configs import synthetic
    from aninfonce_tf.runner import cli

    config, _ = cli.parse_config(
        synthetic.PRESETS,
        ["--preset", preset, *extra],
        smoke=synthetic.SMOKE,
        prog=f"python {RECIPE.relative_to(RECIPE.parent.parent)}",
    )
    return "aligned_mcc" if config.alignment_pairs else "mcc"


def recipe_command(preset: str, seed: int, out: Path, flags: list[str]) -> list[str]:
    """The recipe's command line for AnInfoNCE on `preset` at `seed` into `out`, then
    `flags` (after the recipe flags given after `--`, which they override)."""
    return [
        sys.executable,
        str(RECIPE),
        *("--preset", preset, "--losses", "aninfonce", "--seed", str(seed), "--out", str(out)),
        *flags,
    ]


def run_one(
    preset: str, score: str, seed: int, extra: list[str], out: Path, patience: int = 1
) -> dict:
    """Runs the recipe for one preset, whose MCC target reads `score` (`mcc_score`),
    and seed in a fresh process, stopping once both targets held at `patience`
    evaluations in a row (`--stop-patience`).

    Returns:
        Its seconds from start to exit, the step at which it stopped at the targets
        (None if it never did), the score its MCC target read (`mcc_score`), the step at which
        each score first reached its target, its steps, its final scores (MCC, aligned
        MCC when it aligns, linear R^2) and the same on a second held-out set; a run
        that fails has `failed` set and no scores, and its error's last lines printed.
    """
    scores = {"mcc": score, "linear_r2": "linear_r2"}
    targets = ",".join(f"{scores[target]}={value}" for target, value in TARGET_VALUES.items())
    # Every score that the run records, with the value its target asks.
    recorded = {"mcc": TARGET_VALUES["mcc"], "linear_r2": TARGET_VALUES["linear_r2"]}
    if scores["mcc"] == "aligned_mcc":
        recorded["aligned_mcc"] = TARGET_VALUES["mcc"]
    stop = ["--stop-at", targets, "--stop-patience", str(patience)]
    command = recipe_command(preset, seed, out, [*extra, *stop])
    start = time.perf_counter()
    finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = round(time.perf_counter() - start, 1)
    if finished.returncode:
        print("\n".join(finished.stderr.splitlines()[-15:]), file=sys.stderr)
        return {"preset": preset, "seed": seed, "seconds": seconds, "failed": True}
    result = json.loads((out / "results.json").read_text())["variants"]["aninfonce"]
    reached = result["target_reached"]
    return {
        "preset": preset,
        "seed": seed,
        "mcc_score": scores["mcc"],
        "seconds": seconds,
        "fit_seconds": result["wall_seconds"],
        "reached_step": reached["step"] if reached else None,
        # Which target held last: the step each score first reached its target's value,
        # and the first step both did (before the stop when the patience is above 1).
        **{
            f"{score}_step": first_step(result["curve"], {score: value})
            for score, value in recorded.items()
        },
        "both_step": first_step(
            result["curve"], {scores[target]: value for target, value in TARGET_VALUES.items()}
        ),
        "steps": result["steps"],
        **{score: result[score] for score in recorded},
        **second_set_scores(out),
        "curve": [{key: point[key] for key in ("step", *recorded)} for point in result["curve"]],
    }


def held_check(run: dict, extra: list[str], out: Path) -> dict:
    """Repeats `run` (`run_one`'s record of a run that reached its targets) untimed for
    twice the steps at which it stopped, without stopping, in `out`.

    Returns:
        `held`: whether both targets held at every evaluation of the repeat from that
        step to twice it; `held_min`: each target's score's worst value there;
        `repeat_difference`: the largest absolute difference between the repeat's scores
        and the timed run's at the steps both evaluated; `held_failed` when the repeat
        failed.
    """
    step = run["reached_step"]
    targets = {run["mcc_score"]: TARGET_VALUES["mcc"], "linear_r2": TARGET_VALUES["linear_r2"]}
    command = recipe_command(run["preset"], run["seed"], out, [*extra, "--steps", str(2 * step)])
    finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if finished.returncode:
        print("\n".join(finished.stderr.splitlines()[-15:]), file=sys.stderr)
        return {"held": False, "held_failed": True}
    curve = json.loads((out / "results.json").read_text())["variants"]["aninfonce"]["curve"]
    after = [point for point in curve if step <= point["step"] <= 2 * step]
    timed = {point["step"]: point for point in run["curve"]}
    return {
        "held": bool(after)
        and all(point[score] >= value for point in after for score, value in targets.items()),
        "held_min": {score: min(point[score] for point in after) for score in targets},
        "repeat_difference": max(
            abs(point[score] - timed[point["step"]][score])
            for point in curve
            if point["step"] in timed
            for score in targets
        ),
    }


def second_set_scores(out: Path) -> dict:
    """The saved model's MCC, linear R^2 and, when its preset fits an alignment
    (`alignment_pairs`), the MCC of its aligned embedding (`model.embed_aligned`; a
    model without the layer raises), on a second held-out set of the run's
    data (seed + 20,000; the run evaluates on seed + 10,000): stopping at the first
    evaluation that reaches the targets selects on the run's own set, this one
    confirms."""
    import keras

    from aninfonce_tf.configs import synthetic
    from aninfonce_tf.evaluation.features import level_features
    from aninfonce_tf.evaluation.identifiability import (
        identifiability_scores,
        mean_correlation_coefficient,
    )
    from aninfonce_tf.runner import run_directory

    config = run_directory.load_config(out, synthetic.SyntheticConfig)
    observations, latents = synthetic.build_setup(config).evaluation_set(
        config.eval_size, seed=config.seed + 20_000
    )
    model = keras.saving.load_model(out / "aninfonce" / "model.keras")
    features = level_features(model, observations, "projector", config.eval_size)
    scores = identifiability_scores(latents, features)
    if config.alignment_pairs:
        aligned = np.asarray(model.embed_aligned(observations))
        scores["aligned_mcc"] = mean_correlation_coefficient(latents, aligned)
    return {
        f"second_set_{score}": float(scores[score])
        for score in ("mcc", "linear_r2", "aligned_mcc")
        if score in scores
    }


def first_step(curve: list[dict], targets: dict[str, float]) -> int | None:
    """The first evaluated step at which every score of `targets` reached its value, None
    if none did."""
    return next(
        (
            point["step"]
            for point in curve
            if all(point[score] >= value for score, value in targets.items())
        ),
        None,
    )


def seconds_to_target(run: dict, held: bool = False) -> float:
    """A run's seconds, infinite when it failed or never reached the targets, or, with
    `held`, when they did not hold to twice that step (`held_check`)."""
    reached = run.get("reached_step") and (run.get("held") or not held)
    return run["seconds"] if reached else math.inf


def summarize(runs: list[dict], presets: list[str]) -> dict:
    """The medians of `runs`.

    Args:
        runs: `run_one`'s records.
        presets: the distinct presets they ran, the new one first.

    Returns:
        Per preset, the median and range of its seconds to target (infinite for a run
        that failed or never reached them), its median step and whether every run
        reached the targets; with two presets, `first_over_second`: the first's median
        over the second's and the median of the per-seed ratios (seeds both finished).
    """
    summary = {}
    for preset in presets:
        own = [run for run in runs if run["preset"] == preset]
        seconds = [seconds_to_target(run) for run in own] or [math.nan]
        summary[preset] = {
            "runs": len(own),
            "median_seconds": float(np.median(seconds)),
            "min_seconds": min(seconds),
            "max_seconds": max(seconds),
            "median_step": float(
                np.median([run.get("steps", math.nan) for run in own] or [math.nan])
            ),
            "all_reached": bool(own) and all(run.get("reached_step") for run in own),
            # With the held check: the runs whose targets held to twice the step at
            # which they stopped, and the medians counting the others as infinite.
            **(
                {
                    "held": sum(bool(run["held"]) for run in own),
                    "median_seconds_held": float(
                        np.median([seconds_to_target(run, held=True) for run in own])
                    ),
                    "max_seconds_held": max(seconds_to_target(run, held=True) for run in own),
                }
                if own and all("held" in run for run in own)
                else {}
            ),
            # Of the runs that reached the targets, those that also hold on a second set.
            "second_set_held": sum(
                run[f"second_set_{run['mcc_score']}"] >= TARGET_VALUES["mcc"]
                and run["second_set_linear_r2"] >= TARGET_VALUES["linear_r2"]
                for run in own
                if run.get("reached_step")
            ),
        }
    if len(presets) == 2:
        first, second = presets
        by_seed = {(run["preset"], run["seed"]): seconds_to_target(run) for run in runs}
        ratios = [
            by_seed[first, seed] / by_seed[second, seed]
            for preset, seed in by_seed
            if preset == first and (second, seed) in by_seed
        ]
        summary["first_over_second"] = {
            "of_medians": summary[first]["median_seconds"] / summary[second]["median_seconds"],
            "median_per_seed": float(np.median(ratios)) if ratios else math.nan,
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument(
        "--presets",
        default=",".join(PRESETS),
        help="comma-separated presets, the new one first; each seed runs them in turn",
    )
    parser.add_argument("--summary", type=Path, help="write the runs and medians as JSON")
    parser.add_argument(
        "--held-check",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="repeat each run that reached its targets for twice its steps, untimed",
    )
    parser.add_argument(
        "--patience",
        type=int,
        default=1,
        help="evaluations in a row at which both targets must hold before a run stops",
    )
    parser.add_argument("extra", nargs="*", help="recipe flags (after --)")
    args = parser.parse_args()
    if args.patience < 1:
        parser.error(f"--patience must be at least 1; got {args.patience}")
    presets = args.presets.split(",")
    if len(set(presets)) != len(presets):
        parser.error(f"--presets must name each preset once; got {args.presets!r}")
    fixed = [flag for flag in args.extra if flag.split("=", 1)[0] in SET_HERE]
    if fixed:
        parser.error(f"{', '.join(fixed)} after -- would change what this script sets per run")
    scores = {preset: mcc_score(preset, args.extra) for preset in presets}
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for index, seed in enumerate(int(s) for s in args.seeds.split(",")):
            # Alternate which preset runs first, so that neither always starts cold.
            for preset in presets if index % 2 == 0 else presets[::-1]:
                out = Path(scratch) / f"{preset}-{seed}"
                run = run_one(preset, scores[preset], seed, args.extra, out, args.patience)
                if args.held_check:
                    run.update(
                        held_check(run, args.extra, Path(scratch) / f"{preset}-{seed}-held")
                        if run.get("reached_step")
                        else {"held": False}
                    )
                runs.append(run)
                print_run(run)
                if args.summary:
                    write_summary(args.summary, runs, scores, args.patience)
    summary = summarize(runs, presets)
    for preset in presets:
        own = summary[preset]
        print(
            f"{preset}: median {own['median_seconds']:.0f} s (range {own['min_seconds']:.0f}-"
            f"{own['max_seconds']:.0f} s), median step {own['median_step']:.0f}; targets "
            + ("reached in every run" if own["all_reached"] else "NOT reached in every run")
            + f"; both held on a second held-out set in {own['second_set_held']} of "
            f"{own['runs']}"
            + (
                f"; held to twice their step in {own['held']} of {own['runs']}: median "
                f"{own['median_seconds_held']:.0f} s, longest {own['max_seconds_held']:.0f} s "
                "with the targets held"
                if "held" in own
                else ""
            )
        )
    if len(set(scores.values())) > 1:
        print(
            "The presets' MCC targets read different scores ("
            + ", ".join(f"{preset}: {score}" for preset, score in scores.items())
            + "): aligned_mcc is the MCC after the slow-feature alignment, which any "
            "embedding that reads the latents linearly gets, whichever loss trained it."
        )
    if "first_over_second" in summary:
        ratio = summary["first_over_second"]
        print(
            f"{presets[0]} takes {ratio['of_medians']:.2f}x the median time of {presets[1]} "
            f"(median of the per-seed ratios {ratio['median_per_seed']:.2f}x)"
        )


def print_run(run: dict) -> None:
    """One line per run: its time, and the steps at which the targets held."""
    name = f"{run['preset']} seed {run['seed']}: {run['seconds']:.0f} s"
    if run.get("failed"):
        print(f"{name}, FAILED (its error above)", flush=True)
        return
    reached = f"step {run['reached_step']}" if run["reached_step"] else "not reached"
    print(
        f"{name}, targets {reached} (R^2 {run['linear_r2']:.3f} from step "
        f"{run['linear_r2_step']}, {run['mcc_score']} {run[run['mcc_score']]:.3f} from step "
        f"{run[run['mcc_score'] + '_step']}; "
        f"{run['steps']} steps, fit {run['fit_seconds']:.0f} s; a second held-out set: "
        f"R^2 {run['second_set_linear_r2']:.3f}, {run['mcc_score']} "
        f"{run['second_set_' + run['mcc_score']]:.3f})"
        + (
            f"; held to step {2 * run['reached_step']}: {'yes' if run['held'] else 'NO'} "
            f"(worst {', '.join(f'{k} {v:.3f}' for k, v in run['held_min'].items())}; "
            f"repeat differs by {run['repeat_difference']:.1e})"
            if "held_min" in run
            else ""
        ),
        flush=True,
    )


def write_summary(path: Path, runs: list[dict], scores: dict[str, str], patience: int) -> None:
    """The runs so far, their medians, the command, date, CPU, versions and `--patience`
    as JSON at `path` (`scores`: each preset's MCC score, `mcc_score`, in the order of
    `--presets`)."""
    record = {
        "command": " ".join(["python", "benchmarks/time_to_target.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d"),
        "machine": _cpu_name(),
        "versions": _versions(),
        "patience": patience,
        "targets": {
            preset: {score: TARGET_VALUES["mcc"], "linear_r2": TARGET_VALUES["linear_r2"]}
            for preset, score in scores.items()
        },
        "runs": runs,
        "summary": summarize(runs, list(scores)),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def _cpu_name() -> str:
    """The CPU's model name, core count and widest vector instructions, as Linux reports
    them: a seed's curve measured on one CPU need not repeat on another."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
    vectors = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{names[0] if names else 'unknown CPU'}, {len(names) or '?'} cores, {vectors}"


def _versions() -> dict[str, str]:
    """TensorFlow's, Keras' and NumPy's versions, which a seed's curve may depend on."""
    import keras
    import tensorflow as tf

    return {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__}


if __name__ == "__main__":
    main()
