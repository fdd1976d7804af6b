"""Wall time until AnInfoNCE reaches MCC >= 0.95 and linear R^2 >= 0.99 on the paper's
linear setting, for several presets of `recipes/synthetic.py` side by side: each seed
runs every preset in turn, so that they share the machine's load, and the script prints
each run's time and step, each preset's median and range, and the ratios.

    python benchmarks/time_to_target.py --seeds 0,1,2,3,4     # paper-linear-fast vs paper-linear
    python benchmarks/time_to_target.py --presets paper-linear --seeds 0 -- --learning-rate 3e-3
    python benchmarks/time_to_target.py --summary docs/summaries/time-to-target.json

Flags after `--` go to the recipe and override every preset. Each run is the recipe in a
fresh process (`--stop-at`), timed from process start to exit, so that import,
compilation, every evaluation, saving and export count. The authors' code needs ~41k
steps for MCC 0.95.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TARGET_VALUES = {"mcc": 0.95, "linear_r2": 0.99}
TARGETS = ",".join(f"{score}={value}" for score, value in TARGET_VALUES.items())
RECIPE = Path(__file__).parent.parent / "recipes" / "synthetic.py"
PRESETS = ("paper-linear-fast", "paper-linear")


def run_seed(preset: str, seed: int, extra: list[str], out: Path) -> dict:
    """Runs the recipe for one preset and seed; returns its time, step and final scores."""
    command = [
        sys.executable,
        str(RECIPE),
        *("--preset", preset, "--losses", "aninfonce", "--stop-at", TARGETS),
        *("--seed", str(seed), "--out", str(out), *extra),
    ]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    result = json.loads((out / "results.json").read_text())["variants"]["aninfonce"]
    reached = result["target_reached"]
    return {
        "preset": preset,
        "seed": seed,
        "seconds": round(seconds, 1),
        "fit_seconds": result["wall_seconds"],
        "reached_step": reached["step"] if reached else None,
        # Which target held last: the step each one first held.
        **{f"{score}_step": first_step(result["curve"], score) for score in TARGET_VALUES},
        "steps": result["steps"],
        "linear_r2": result["linear_r2"],
        "mcc": result["mcc"],
    }


def first_step(curve: list[dict], score: str) -> int | None:
    """The first evaluated step at which `score` reached its target, None if none did."""
    return next((point["step"] for point in curve if point[score] >= TARGET_VALUES[score]), None)


def summarize(runs: list[dict], presets: list[str]) -> dict:
    """Per preset: median, range and steps of its runs, and whether every run reached
    the targets; with two presets, the ratio of the second's median to the first's and
    the median of the per-seed ratios."""
    summary = {}
    for preset in presets:
        own = [run for run in runs if run["preset"] == preset]
        seconds = [run["seconds"] for run in own]
        summary[preset] = {
            "median_seconds": float(np.median(seconds)),
            "min_seconds": min(seconds),
            "max_seconds": max(seconds),
            "median_step": float(np.median([run["steps"] for run in own])),
            "all_reached": all(run["reached_step"] for run in own),
        }
    if len(presets) == 2:
        first, second = presets
        by_seed = {(run["preset"], run["seed"]): run["seconds"] for run in runs}
        ratios = [by_seed[second, seed] / by_seed[first, seed] for p, seed in by_seed if p == first]
        summary["ratio_of_medians"] = (
            summary[second]["median_seconds"] / summary[first]["median_seconds"]
        )
        summary["median_paired_ratio"] = float(np.median(ratios))
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument(
        "--presets", default=",".join(PRESETS), help="comma-separated presets, run in turn"
    )
    parser.add_argument("--summary", type=Path, help="also write the runs and medians as JSON")
    parser.add_argument("extra", nargs="*", help="recipe flags (after --)")
    args = parser.parse_args()
    presets = args.presets.split(",")
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for seed in (int(s) for s in args.seeds.split(",")):
            for preset in presets:
                run = run_seed(preset, seed, args.extra, Path(scratch) / f"{preset}-{seed}")
                runs.append(run)
                reached = f"step {run['reached_step']}" if run["reached_step"] else "not reached"
                print(
                    f"{preset} seed {seed}: {run['seconds']:.0f} s, targets {reached} "
                    f"(R^2 {run['linear_r2']:.3f} from step {run['linear_r2_step']}, MCC "
                    f"{run['mcc']:.3f} from step {run['mcc_step']}; {run['steps']} steps, fit "
                    f"{run['fit_seconds']:.0f} s)",
                    flush=True,
                )
    summary = summarize(runs, presets)
    for preset in presets:
        own = summary[preset]
        print(
            f"{preset}: median {own['median_seconds']:.0f} s (range {own['min_seconds']:.0f}-"
            f"{own['max_seconds']:.0f} s), median step {own['median_step']:.0f}; targets "
            + ("reached in every run" if own["all_reached"] else "NOT reached in every run")
        )
    if "ratio_of_medians" in summary:
        print(
            f"{presets[1]} / {presets[0]}: {summary['ratio_of_medians']:.2f}x the median time, "
            f"median of the per-seed ratios {summary['median_paired_ratio']:.2f}x"
        )
    if args.summary:
        record = {
            "command": " ".join(["python", "benchmarks/time_to_target.py", *sys.argv[1:]]),
            "date": time.strftime("%Y-%m-%d"),
            "machine": _cpu_name(),
            "targets": TARGETS,
            "runs": runs,
            "summary": summary,
        }
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps(record, indent=1) + "\n")


def _cpu_name() -> str:
    """The CPU's model name and core count, as Linux reports them."""
    cpuinfo = Path("/proc/cpuinfo")
    names = [
        line.split(":", 1)[1].strip()
        for line in (cpuinfo.read_text().splitlines() if cpuinfo.exists() else [])
        if line.startswith("model name")
    ]
    return f"{names[0] if names else 'unknown CPU'}, {len(names) or '?'} cores"


if __name__ == "__main__":
    main()
