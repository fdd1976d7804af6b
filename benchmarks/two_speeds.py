"""The two speeds of the XLA training step on the 2-core CPU: `fit` windows and the
same compiled train function called in a plain loop, taking turns.

    python benchmarks/two_speeds.py
    python benchmarks/two_speeds.py --windows 12 --steps 50

Prints each window's steps/s and the process's CPU use over it (200 % = both cores
busy). On the development machine every window ran either at ~16 steps/s with ~185 %
CPU or at ~9.8 with ~110 % (the two cores taking turns), in `fit` and in the loop
alike (benchmarks/README.md, "Two speeds").
"""

from __future__ import annotations

import argparse
import os
import time

import tensorflow as tf
from train_step import synthetic_data  # this directory's benchmark

from aninfonce_tf.experiment import build_model


def timed(function, steps: int) -> tuple[float, float]:
    """Steps/s and CPU use (percent of one core) of `function()`."""
    cpu, start = os.times(), time.perf_counter()
    function()
    seconds = time.perf_counter() - start
    end = os.times()
    used = (end.user - cpu.user) + (end.system - cpu.system)
    return steps / seconds, 100 * used / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    config, experiment, _, fixed = synthetic_data(1000)
    model = build_model(config, experiment, "aninfonce")
    model.fit(fixed, steps_per_epoch=20, epochs=1, verbose=0)  # trace and compile

    def fit():
        model.fit(fixed, steps_per_epoch=args.steps, epochs=1, verbose=0)

    def loop():
        iterator = iter(fixed)
        for _ in range(args.steps):
            logs = model.train_function(iterator)
        tf.nest.map_structure(lambda value: value.numpy(), logs)

    print(f"{'window':>6} {'fit steps/s':>12} {'CPU %':>6} {'loop steps/s':>13} {'CPU %':>6}")
    for window in range(args.windows):
        fit_rate, fit_cpu = timed(fit, args.steps)
        loop_rate, loop_cpu = timed(loop, args.steps)
        print(
            f"{window:>6} {fit_rate:>12.1f} {fit_cpu:>6.0f} {loop_rate:>13.1f} {loop_cpu:>6.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
