"""The two speeds of the XLA training step on the 2-core CPU, and their cause: `fit`
on one repeated batch with tf.data's default options (autotuning on) and with
autotuning off (`aninfonce_tf.data.options.without_autotune`), taking turns.

    python benchmarks/two_speeds.py
    python benchmarks/two_speeds.py --windows 12 --steps 50

Prints each window's steps/s and the process's CPU use over it (200 % = both cores
busy), and the busiest threads of the autotuned run (name, CPU %, voluntary context
switches; Linux only). On the development machine autotuned windows ran either at
~16 steps/s with ~185 % CPU or at ~9.8 with ~110 % (TensorFlow's two intra-op
threads no longer overlapping); untuned ones always at ~16 (docs/speed.md, "Two
speeds").
"""

from __future__ import annotations

import argparse
import glob
import os
import time

from train_step import synthetic_data  # this directory's benchmark

from aninfonce_tf.data.options import without_autotune
from aninfonce_tf.runner import build_model


def timed(function, steps: int) -> tuple[float, float]:
    """Steps/s and CPU use (percent of one core) of `function()`."""
    cpu, start = os.times(), time.perf_counter()
    function()
    seconds = time.perf_counter() - start
    end = os.times()
    used = (end.user - cpu.user) + (end.system - cpu.system)
    return steps / seconds, 100 * used / seconds


def thread_times() -> dict[str, tuple[str, int, int]]:
    """Per thread of this process: name, CPU clock ticks, voluntary context switches."""
    times = {}
    for task in glob.glob("/proc/self/task/*"):
        try:
            with open(f"{task}/stat") as file:
                stat = file.read()
            with open(f"{task}/status") as file:
                status = file.read()
        except OSError:  # the thread ended
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        switches = int(status.split("\nvoluntary_ctxt_switches:")[1].split()[0])
        times[task] = (name, int(fields[11]) + int(fields[12]), switches)
    return times


def busiest_threads(before: dict, after: dict, seconds: float, count: int = 3) -> str:
    """The `count` threads that used the most CPU between two `thread_times()`."""
    ticks = os.sysconf("SC_CLK_TCK")
    rows = sorted(
        (
            (after[task][1] - before[task][1], after[task][0], after[task][2] - before[task][2])
            for task in after.keys() & before.keys()
        ),
        reverse=True,
    )[:count]
    return ", ".join(
        f"{name} {100 * used / ticks / seconds:.0f} % ({switches} waits)"
        for used, name, switches in rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    config, experiment, _, autotuned = synthetic_data(1000, autotune=True)
    untuned = without_autotune(autotuned)
    model = build_model(config, experiment, "aninfonce")
    model.fit(autotuned, steps_per_epoch=20, epochs=1, verbose=0)  # trace and compile

    def fit(data):
        return lambda: model.fit(data, steps_per_epoch=args.steps, epochs=1, verbose=0)

    print(
        f"{'window':>6} {'autotuned steps/s':>18} {'CPU %':>6} {'untuned steps/s':>16} {'CPU %':>6}"
    )
    for window in range(args.windows):
        before, start = thread_times(), time.perf_counter()
        tuned_rate, tuned_cpu = timed(fit(autotuned), args.steps)
        threads = busiest_threads(before, thread_times(), time.perf_counter() - start)
        untuned_rate, untuned_cpu = timed(fit(untuned), args.steps)
        print(
            f"{window:>6} {tuned_rate:>18.1f} {tuned_cpu:>6.0f} {untuned_rate:>16.1f}"
            f" {untuned_cpu:>6.0f}   autotuned threads: {threads}",
            flush=True,
        )


if __name__ == "__main__":
    main()
