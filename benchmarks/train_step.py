"""Training steps/s of the paper's encoder (10-100-500-500-500-500-100-10) with AnInfoNCE.

    python benchmarks/train_step.py                 # B = 1000 and 6144, fp32/XLA/bf16
    python benchmarks/train_step.py --batch-sizes 1000 --steps 200
    python benchmarks/train_step.py --plain --batch-sizes 1000   # + a plain MSE step

Each configuration trains on one fixed batch (the step alone) and on the synthetic
tf.data pipeline (step + sampling); prints the median of `--repeats` timed windows.
"""

from __future__ import annotations

import argparse
import time

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf.data.synthetic import SyntheticSetup, concentration_preset
from aninfonce_tf.encoders import mlp_encoder
from aninfonce_tf.experiment import SyntheticConfig, build_model

MODES = {
    "fp32 graph": dict(jit_compile=False, mixed_precision=False),
    "fp32 XLA": dict(jit_compile=True, mixed_precision=False),
    "bf16 XLA": dict(jit_compile=True, mixed_precision=True),
}


def steps_per_second(model, data, steps: int, repeats: int) -> float:
    model.fit(data, steps_per_epoch=20, epochs=1, verbose=0)  # trace and compile
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
        rates.append(steps / (time.perf_counter() - start))
    return float(np.median(rates))


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="1000,6144")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--pipeline-batch-sizes", default="1000", help="also time with tf.data for these"
    )
    parser.add_argument("--plain", action="store_true", help="also time a plain MSE step")
    args = parser.parse_args()
    if args.plain:
        for rows in (1000, 2000):
            rates = plain_ceiling(rows, args.steps, args.repeats)
            print(
                f"plain MSE step, {rows} rows: fp32 XLA {rates['float32']:.1f}, bf16 XLA {rates['mixed_bfloat16']:.1f} steps/s"
            )
    setup = SyntheticSetup(concentration_preset("linear"), generator_draws=1000)
    print(f"{'batch':>6} {'mode':>11} {'fixed batch':>12} {'tf.data':>9}  (steps/s)")
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        pipeline = setup.dataset(batch_size, seed=0)
        fixed = tf.data.Dataset.from_tensors(next(iter(pipeline))).repeat()
        for mode, options in MODES.items():
            config = SyntheticConfig(jit_compile=options["jit_compile"])
            if options["mixed_precision"]:
                keras.config.set_dtype_policy("mixed_bfloat16")
            model = build_model(config, "aninfonce")
            keras.config.set_dtype_policy("float32")
            fixed_rate = steps_per_second(model, fixed, args.steps, args.repeats)
            pipeline_rate = float("nan")
            if str(batch_size) in args.pipeline_batch_sizes.split(","):
                pipeline_rate = steps_per_second(model, pipeline, args.steps, args.repeats)
            print(
                f"{batch_size:>6} {mode:>11} {fixed_rate:>12.1f} {pipeline_rate:>9.1f}", flush=True
            )


if __name__ == "__main__":
    main()
