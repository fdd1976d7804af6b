"""What `ContrastiveModel.compile(jit_compile="auto")` chooses, against both choices
timed: the training step of the synthetic MLP and of a MobileNetV3Small backbone, with
and without XLA, taking turns on one fixed batch.

    python benchmarks/xla_choice.py
    python benchmarks/xla_choice.py --windows 5 --steps 20

Prints, per encoder and choice, the compilation's seconds (the first call) and the
median seconds a step over the windows, the ratio of the two choices, and what "auto"
picks with its reason. Figures: docs/speed.md, "XLA by encoder".
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf import ContrastiveModel, DiagonalScaling, backbone, mlp_encoder
from aninfonce_tf.models import automatic_jit


def encoders() -> dict:
    """The two encoders and a batch of their pairs: the synthetic MLP (batch 1000) and
    MobileNetV3Small on 32-px views (batch 64)."""
    rng = np.random.default_rng(0)
    mlp_views = rng.normal(size=(1000, 10)).astype("float32")
    images = rng.uniform(size=(64, 32, 32, 3)).astype("float32")
    return {
        "mlp (10-100-500x4-100-10, batch 1000)": (
            lambda: mlp_encoder(10, 10),
            (mlp_views, mlp_views + 0.01),
        ),
        "MobileNetV3Small (32 px, batch 64)": (
            lambda: backbone("MobileNetV3Small", (32, 32, 3)),
            (images, np.clip(images + 0.01, 0, 1)),
        ),
    }


def time_steps(build, pairs, jit: bool, windows: int, steps: int) -> tuple[float, float]:
    """(seconds of the first step, median seconds a step over `windows` of `steps`)."""
    keras.utils.set_random_seed(0)
    model = ContrastiveModel(build(), scaling=DiagonalScaling(5.0, parametrization="exp"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.compile(keras.optimizers.Adam(1e-3), jit_compile=jit)
    data = tf.data.Dataset.from_tensors(pairs).repeat()
    start = time.perf_counter()
    model.fit(data, steps_per_epoch=1, epochs=1, verbose=0)
    first = time.perf_counter() - start
    per_step = []
    for _ in range(windows):
        start = time.perf_counter()
        model.fit(data, steps_per_epoch=steps, epochs=1, verbose=0)
        per_step.append((time.perf_counter() - start) / steps)
    return first, statistics.median(per_step)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=5, help="timed windows per choice")
    parser.add_argument("--steps", type=int, default=10, help="steps per window")
    options = parser.parse_args(argv)
    print(
        "encoder | XLA first step s | XLA s/step | no-XLA first step s | no-XLA s/step | "
        "XLA / no-XLA | auto"
    )
    for name, (build, pairs) in encoders().items():
        with_xla = time_steps(build, pairs, True, options.windows, options.steps)
        without = time_steps(build, pairs, False, options.windows, options.steps)
        jit, reason = automatic_jit(ContrastiveModel(build()), tf.distribute.get_strategy())
        print(
            f"{name} | {with_xla[0]:.1f} | {with_xla[1]:.4f} | {without[0]:.1f} | "
            f"{without[1]:.4f} | {with_xla[1] / without[1]:.2f} | {jit} ({reason})",
            flush=True,
        )


if __name__ == "__main__":
    main()
