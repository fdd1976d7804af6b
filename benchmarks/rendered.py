"""Speed of the rendered-images experiment: the renderer's images/s, and the recipe's
training step through its real input pipeline against the same step on one batch.

    python benchmarks/rendered.py
    python benchmarks/rendered.py --presets quick --steps 20 --repeats 9 --verbose

Renderer: `render` of one batch of `sample_latents` (drawn once, outside the timing)
at each `--sizes` side, in a `tf.function` without XLA (TensorFlow's graph executor)
and with `jit_compile=True` (as the pair sources run it); median (best) of `--repeats`
windows of `--calls` calls after a warm-up.

Training step: each `--presets` preset of `aninfonce_tf.configs.rendered` (AnInfoNCE,
its batch size, view side, model and compiled step) trained on its
`Experiment.train_data` (rendering and, in `augment` mode, SimCLR's views in the
`tf.data` graph) and on one batch of that pipeline repeated from memory: windows of
`--steps` calls of the compiled step (`model.train_function`), each dataset read by
one iterator kept across its windows as `fit` keeps it, the two taking turns; the
ratio of the medians should be >= 0.9. Also the pipeline's ms a batch read alone,
before any training (two batches drawn at once, as in training).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import time
from collections.abc import Callable

import numpy as np
import tensorflow as tf
from step_parts import milliseconds  # this directory's benchmark

from aninfonce_tf.configs.rendered import PRESETS, build
from aninfonce_tf.data.options import without_autotune
from aninfonce_tf.data.renderer import render, sample_latents
from aninfonce_tf.runner import build_model


def renderer_rates(size: int, batch_size: int, calls: int, repeats: int) -> dict[str, tuple]:
    """`{mode: (median, best)}` images/s of `render` at `size` for a batch of `batch_size`."""
    latents = sample_latents(batch_size, seed=0)
    rates = {}
    for mode, jit_compile in (("graph", False), ("XLA", True)):
        compiled = tf.function(render, jit_compile=jit_compile)
        median, best = milliseconds(functools.partial(compiled, latents, size), calls, repeats)
        rates[mode] = (batch_size / median * 1e3, batch_size / best * 1e3)
    return rates


def step_rates(
    model,
    datasets: dict,
    steps: int,
    repeats: int,
    per_call: int = 1,
    after_window: Callable[[], None] | None = None,
    untimed: int = 0,
) -> dict[str, list[float]]:
    """Steps/s of `repeats` windows of `steps` calls of `model`'s compiled train step
    (`per_call` steps a call: its `steps_per_execution`) per dataset, each reading its
    own iterator kept across windows (as one `fit` does) and the datasets taking turns,
    so that they share the machine's load; `after_window` runs after each measured
    round (e.g. another measurement taking its turn). Each window first runs `untimed`
    calls: the batches a pipeline made ahead while the others had their turn."""
    model.make_train_function()
    iterators = {name: iter(data) for name, data in datasets.items()}
    rates = {name: [] for name in datasets}
    for window in range(repeats + 1):  # the first: tracing and warm-up
        for name, iterator in iterators.items():
            for _ in range(untimed if window else 0):
                model.train_function(iterator)
            start = time.perf_counter()
            for _ in range(steps if window else 3):
                logs = model.train_function(iterator)
            float(logs["loss"])
            if window:
                rates[name].append(steps * per_call / (time.perf_counter() - start))
        if window and after_window:
            after_window()
    return rates


def pipeline_rates(preset: str, steps: int, repeats: int) -> tuple[dict[str, list[float]], tuple]:
    """Steps/s windows of `preset`'s training step on its pipeline and on a fixed batch,
    and the median (best) ms a batch of the pipeline alone (no training)."""
    # The probes' sets are not timed: the smallest the config accepts.
    config = dataclasses.replace(PRESETS[preset], eval_size=100, readout_size=16, nonlinear=False)
    experiment = build(config)
    pipeline = experiment.train_data(0)
    alone = milliseconds(functools.partial(next, iter(pipeline)), steps, repeats)
    fixed = without_autotune(tf.data.Dataset.from_tensors(next(iter(pipeline))).repeat())
    model = build_model(config, experiment, "aninfonce")
    return step_rates(model, {"fixed": fixed, "tf.data": pipeline}, steps, repeats), alone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,32", help="renderer image sides")
    parser.add_argument("--render-batch", type=int, default=256)
    parser.add_argument("--calls", type=int, default=10, help="renderer calls per window")
    parser.add_argument("--presets", default="quick,latent")
    parser.add_argument("--steps", type=int, default=10, help="training steps per window")
    parser.add_argument("--repeats", type=int, default=7, help="windows per measurement")
    parser.add_argument("--verbose", action="store_true", help="print every training window")
    args = parser.parse_args()

    print("| renderer | graph images/s, median (best) | XLA images/s, median (best) |")
    print("|---|---|---|")
    for size in (int(size) for size in args.sizes.split(",")):
        rates = renderer_rates(size, args.render_batch, args.calls, args.repeats)
        cells = " | ".join(f"{median:,.0f} ({best:,.0f})" for median, best in rates.values())
        print(f"| {size} px, batch {args.render_batch} | {cells} |", flush=True)

    print(
        "\n| preset | batch, side | fixed batch steps/s, median (best) "
        "| tf.data steps/s, median (best) | tf.data / fixed, median (best) "
        "| pipeline alone, ms a batch |"
    )
    print("|---|---|---|---|---|---|")
    for preset in args.presets.split(","):
        rates, alone = pipeline_rates(preset, args.steps, args.repeats)
        if args.verbose:
            for name, values in rates.items():
                print(f"  {name} windows:", " ".join(f"{rate:.2f}" for rate in values))
        medians = {name: float(np.median(values)) for name, values in rates.items()}
        best = {name: max(values) for name, values in rates.items()}
        config = PRESETS[preset]
        cells = " | ".join(f"{medians[n]:.2f} ({best[n]:.2f})" for n in ("fixed", "tf.data"))
        ratio = medians["tf.data"] / medians["fixed"]
        print(
            f"| `{preset}` ({config.mode}) | {config.batch_size}, {config.size} px | {cells} | "
            f"{ratio:.2f} ({best['tf.data'] / best['fixed']:.2f}) | "
            f"{alone[0]:.0f} ({alone[1]:.0f}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
