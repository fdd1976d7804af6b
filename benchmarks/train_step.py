"""Training steps/s of the paper's encoder (10-100-500-500-500-500-100-10) with AnInfoNCE.

    python benchmarks/train_step.py                 # B = 1000 and 6144, fp32/XLA/bf16
    python benchmarks/train_step.py --batch-sizes 1000 --steps 200
    python benchmarks/train_step.py --plain --batch-sizes 1000   # + a plain MSE step
    python benchmarks/train_step.py --roofline --batch-sizes 1000
    python benchmarks/train_step.py --roofline --batch-sizes 1000 --threads 1
    python benchmarks/train_step.py --batch-sizes 1000 --steps-per-execution 1
    python benchmarks/train_step.py --batch-sizes 1000 --optimizer adam

The optimizer is `paper-linear`'s (Muon on the output layer, Adam on the rest) unless
`--optimizer adam`. Each configuration trains on one fixed batch (the step alone) and
on the synthetic tf.data pipeline (step + sampling); prints the median of `--repeats`
timed windows.
The roofline (the steps/s this CPU's matmuls allow: a step is forward + two backward
matmuls of every layer on 2B rows, whatever the code) is measured before every window,
and "fixed/roofline" is the median of each window's ratio to the roofline measured
just before it (best: best window over best roofline), so that both share the
machine's load. `--roofline` prints only the matmul throughputs.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import time
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf.configs.synthetic import PRESETS, SyntheticConfig, build
from aninfonce_tf.configs.tuning import FAST
from aninfonce_tf.data.options import without_autotune
from aninfonce_tf.encoders import PAPER_MLP_HIDDEN, mlp_encoder
from aninfonce_tf.runner import build_model

VERBOSE = False
MODES = {
    "fp32 graph": dict(jit_compile=False, mixed_precision=False),
    "fp32 XLA": dict(jit_compile=True, mixed_precision=False),
    "bf16 XLA": dict(jit_compile=True, mixed_precision=True),
}


def synthetic_data(batch_size: int, autotune: bool = False, **fields):
    """`(config, experiment, pipeline, fixed)`: the synthetic experiment at
    `batch_size` (and any other `SyntheticConfig` `fields`), its `tf.data` pipeline and
    one of its batches repeated, like the pipeline without tf.data's autotuning unless
    `autotune` (see "Two speeds")."""
    config = SyntheticConfig(batch_size=batch_size, generator_draws=1000, eval_size=16, **fields)
    experiment = build(config)
    pipeline = experiment.train_data(0)
    fixed = tf.data.Dataset.from_tensors(next(iter(pipeline))).repeat()
    if not autotune:
        fixed = without_autotune(fixed)
    return config, experiment, pipeline, fixed


def window_rates(
    model, datasets: dict, steps: int, repeats: int, bound: Callable[[], float] | None = None
) -> dict[str, list[float]]:
    """Steps/s of `repeats` calls of `fit` (`steps` steps each) per dataset, the
    datasets taking turns so that they share the machine's state; with `bound`, also
    its value (the roofline's steps/s) measured before each turn, under "roofline".

    Each `fit` runs in one of two speeds on the 2-core CPU (benchmarks/README.md,
    "Two speeds"): compare medians, and best windows, of one run.
    """
    for data in datasets.values():
        model.fit(data, steps_per_epoch=min(steps, 20), epochs=1, verbose=0)  # trace
    rates = {name: [] for name in datasets}
    if bound:
        rates["roofline"] = []
    for _ in range(repeats):
        if bound:
            rates["roofline"].append(bound())
        for name, data in datasets.items():
            start = time.perf_counter()
            model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
            rates[name].append(steps / (time.perf_counter() - start))
    if VERBOSE:
        for name, values in rates.items():
            print(f"  {name} windows:", " ".join(f"{rate:.1f}" for rate in values), flush=True)
    return rates


def steps_per_second(model, data, steps: int, repeats: int) -> float:
    """The median steps/s of `repeats` windows of `steps` steps."""
    return float(np.median(window_rates(model, {"data": data}, steps, repeats)["data"]))


def plain_ceiling(rows: int, steps: int, repeats: int) -> dict[str, float]:
    """Steps/s of the same MLP trained on a plain MSE loss, `rows` rows a step: the
    ceiling of the contrastive step without its loss, gather, metrics and Lambda_hat."""
    rates = {}
    for policy in ("float32", "mixed_bfloat16"):
        keras.config.set_dtype_policy(policy)
        model = mlp_encoder(10, 10)
        keras.config.set_dtype_policy("float32")
        model.compile(keras.optimizers.Adam(1e-3), "mse", jit_compile=True)
        x = np.random.default_rng(0).normal(size=(rows, 10)).astype("float32")
        rates[policy] = steps_per_second(
            model, tf.data.Dataset.from_tensors((x, x)).repeat(), steps, repeats
        )
    return rates


def matmul_flops_per_step(batch_size: int, widths=(10, *PAPER_MLP_HIDDEN, 10)) -> float:
    """Matmul FLOPs of one training step: 2B rows, forward and backward (the first
    layer needs no input gradient)."""
    rows = 2 * batch_size
    forward = sum(2 * rows * a * b for a, b in zip(widths[:-1], widths[1:], strict=False))
    first = 2 * rows * widths[0] * widths[1]
    return 3 * forward - first


def matmul_gflops(
    dtype: str,
    jit_compile: bool,
    rows: int = 2000,
    width: int = 500,
    repeats: int = 10,
    calls: int = 20,
) -> tuple[float, float]:
    """Median and best-window GFLOP/s of a [rows, width] x [width, width] matmul
    (windows of `calls` calls)."""
    a = tf.cast(tf.random.normal([rows, width]), dtype)
    b = tf.cast(tf.random.normal([width, width]), dtype)
    matmul = tf.function(tf.matmul, jit_compile=jit_compile)
    matmul(a, b).numpy()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            result = matmul(a, b)
        result.numpy()
        seconds.append((time.perf_counter() - start) / calls)
    flops = 2 * rows * width * width
    return flops / float(np.median(seconds)) / 1e9, flops / min(seconds) / 1e9


def roofline_rate(batch_size: int) -> float:
    """The fp32 roofline's steps/s at `batch_size`, measured now: the best short window
    of the faster of graph and XLA matmuls at the step shape."""
    gflops = max(matmul_gflops("float32", jit, repeats=3)[1] for jit in (False, True))
    return gflops * 1e9 / matmul_flops_per_step(batch_size)


def roofline(batch_sizes) -> None:
    # float16 is listed because this CPU family may expose AVX512_FP16. The last
    # rows are the machine's peak: a large square matmul keeps every core busy,
    # which the encoder's 2B x 500 by 500 x 500 shape does not.
    shapes = [(dtype, "step shape", {}) for dtype in ("float32", "bfloat16", "float16")]
    shapes.append(("float32", "peak 4000^3", dict(rows=4000, width=4000, repeats=3, calls=2)))
    for dtype, shape, options in shapes:
        for jit_compile in (False, True):
            median, best = matmul_gflops(dtype, jit_compile, **options)
            mode = "XLA" if jit_compile else "graph"
            for batch_size in batch_sizes:
                flops = matmul_flops_per_step(batch_size)
                print(
                    f"{dtype} {mode} matmul, {shape}: {median:.0f} (best {best:.0f}) "
                    f"GFLOP/s; B = {batch_size}: {flops / 1e9:.1f} GFLOP a step -> at "
                    f"most {best * 1e9 / flops:.1f} steps/s"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="1000,6144")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--pipeline-batch-sizes", default="1000", help="also time with tf.data for these"
    )
    parser.add_argument("--plain", action="store_true", help="also time a plain MSE step")
    parser.add_argument("--roofline", action="store_true", help="only the matmul ceiling")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: one per core)")
    parser.add_argument("--verbose", action="store_true", help="print every timed window")
    parser.add_argument(
        "--steps-per-execution",
        type=int,
        default=FAST["steps_per_execution"],
        help="steps per call of the compiled step (default: the synthetic presets')",
    )
    parser.add_argument(
        "--optimizer",
        choices=("muon", "adam"),
        default="muon",
        help="muon: paper-linear's (Muon on the output layer); adam: Adam everywhere",
    )
    args = parser.parse_args()
    if args.steps % args.steps_per_execution or 20 % args.steps_per_execution:
        parser.error("--steps-per-execution must divide --steps and 20 (the tracing window)")
    global VERBOSE
    VERBOSE = args.verbose
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    if args.roofline:
        roofline([int(b) for b in args.batch_sizes.split(",")])
        return
    if args.plain:
        for rows in (1000, 2000):
            rates = plain_ceiling(rows, args.steps, args.repeats)
            print(
                f"plain MSE step, {rows} rows: fp32 XLA {rates['float32']:.1f}, bf16 XLA {rates['mixed_bfloat16']:.1f} steps/s"
            )
    print(
        f"{'batch':>6} {'mode':>11} {'fixed batch':>17} {'tf.data':>17} {'tf.data/fixed':>14} "
        f"{'roofline':>9} {'fixed/roofline':>15}"
    )
    print(
        f"{'':>18} {'median (best) steps/s':>35} {'median (best)':>14} {'median':>9} {'median (best)':>15}"
    )
    pipelined = args.pipeline_batch_sizes.split(",")
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        bound = functools.partial(roofline_rate, batch_size)
        data, experiment, pipeline, fixed = synthetic_data(batch_size)
        datasets = {"fixed": fixed}
        if str(batch_size) in pipelined:
            datasets["tf.data"] = pipeline
        for mode, options in MODES.items():
            config = dataclasses.replace(
                data,
                steps_per_execution=args.steps_per_execution,
                optimizer=args.optimizer,
                muon_exclude=PRESETS["paper-linear"].muon_exclude
                if args.optimizer == "muon"
                else "",
                **options,
            )
            model = build_model(config, experiment, "aninfonce")
            rates = window_rates(model, datasets, args.steps, args.repeats, bound)
            # Each window against the roofline measured just before it, on the same load.
            paired = np.median(np.divide(rates["fixed"], rates["roofline"]))
            medians = {name: float(np.median(values)) for name, values in rates.items()}
            best = {name: max(values) for name, values in rates.items()}
            fixed = f"{medians['fixed']:.1f} ({best['fixed']:.1f})"
            piped = ratio = "-"
            if "tf.data" in rates:
                piped = f"{medians['tf.data']:.1f} ({best['tf.data']:.1f})"
                ratio = (
                    f"{medians['tf.data'] / medians['fixed']:.2f} "
                    f"({best['tf.data'] / best['fixed']:.2f})"
                )
            print(
                f"{batch_size:>6} {mode:>11} {fixed:>17} {piped:>17} {ratio:>14} "
                f"{medians['roofline']:>9.1f} {paired:>8.2f} ({best['fixed'] / best['roofline']:.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
