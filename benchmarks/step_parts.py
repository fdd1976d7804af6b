"""Where the time of one training step and of one evaluation goes: the paper's encoder
and AnInfoNCE at B = 1000 (2000 rows) with `paper-linear`'s optimizer, each part timed
alone.

    python benchmarks/step_parts.py
    python benchmarks/step_parts.py --batch-size 500 --rotation-gain 6  # paper-linear-fast
    python benchmarks/step_parts.py --batch-size 500 --alignment-pairs 16384

Parts: the whole compiled train step on a fixed batch; the encoder's forward pass,
forward and backward, and with Adam's update (a sum-of-squares loss on its outputs);
the contrastive loss forward and backward on fixed embeddings, through the dense
log-sum-exp kernel (`functional.info_nce`) and through automatic differentiation of the
logits matrix (`functional.contrastive_logits`), each with its accuracy; the alignment and
uniformity metrics (as `ContrastiveModel` logs them). The matmul roofline of the step
(`train_step.py`) is printed beside them.

`--rotation-gain` ends the encoder with `paper-linear-fast`'s learned rotation.

The evaluation's parts, as the recipe's evaluation callback runs them every
`eval_every` steps: the embeddings of the held-out samples (`--eval-size`, the presets'
4096), the whole evaluation on the weight average (embeddings, linear R^2, MCC,
Lambda_hat's agreement; with `--alignment-pairs`, also the slow-feature alignment and
the aligned MCC), and the backup checkpoint written at the end of each Keras epoch. With
`--alignment-pairs`, the alignment's two parts are also timed alone: the embeddings of
both sides of the pairs, and the generalised eigendecomposition.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from train_step import matmul_flops_per_step, matmul_gflops, synthetic_data

from aninfonce_tf import functional
from aninfonce_tf.configs.synthetic import PRESETS, SyntheticConfig, build
from aninfonce_tf.evaluation import slow_feature_alignment
from aninfonce_tf.models import UNIFORMITY_ROWS
from aninfonce_tf.optimizers import averaged_weights
from aninfonce_tf.runner import build_model

# The optimization of `paper-linear` (Muon on the output layer, a weight average).
OPTIMIZATION = ("optimizer", "muon_exclude", "learning_rate", "warmup_steps", "ema_momentum")


def milliseconds(function, calls: int, repeats: int) -> tuple[float, float]:
    """Median and best ms per call over `repeats` windows of `calls` calls."""
    for _ in range(2):
        tf.nest.map_structure(np.asarray, function())
    windows = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            result = function()
        tf.nest.map_structure(np.asarray, result)
        windows.append((time.perf_counter() - start) / calls * 1e3)
    return float(np.median(windows)), min(windows)


def loss_on_logits(z1, z2):
    logits = functional.contrastive_logits(z1, z2)
    return tf.reduce_mean(functional.info_nce_from_logits(*logits)), functional.positive_accuracy(
        *logits
    )


def loss_by_kernel(z1, z2):
    losses, stats = functional.info_nce(z1, z2, return_stats=True)
    return tf.reduce_mean(losses), stats["accuracy"]


def parts(
    batch_size: int, aligned: bool, rotation_gain: float
) -> tuple[dict, keras.Model, SyntheticConfig]:
    """The step's parts at `batch_size`, of a model that holds an alignment when
    `aligned` and whose encoder ends with a learned rotation of `rotation_gain` (0:
    none).

    Returns:
        `{part name: zero-argument function}`, the model they train and its config.
    """
    config, experiment, _, fixed = synthetic_data(batch_size, rotation_gain=rotation_gain)
    preset = PRESETS["paper-linear"]
    config = dataclasses.replace(
        config, jit_compile=True, **{name: getattr(preset, name) for name in OPTIMIZATION}
    )
    experiment = dataclasses.replace(experiment, aligned=aligned)
    model = build_model(config, experiment, "aninfonce")
    model.make_train_function()
    iterator = iter(fixed)
    batch = next(iter(fixed))
    rows = tf.concat([batch["view1"], batch["view2"]], axis=0)
    encoder = model.encoder
    adam = keras.optimizers.Adam(1e-3)
    adam.build(encoder.trainable_variables)
    embeddings = tf.constant(np.asarray(model.embed(rows)))

    @tf.function(jit_compile=True)
    def forward():
        return tf.reduce_sum(encoder(rows))

    def encoder_step(update: bool):
        @tf.function(jit_compile=True)
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(encoder(rows)))
            gradients = tape.gradient(loss, encoder.trainable_variables)
            if update:
                adam.apply(gradients, encoder.trainable_variables)
                return loss
            return tf.add_n([tf.reduce_sum(g) for g in gradients])

        return step

    def loss_step(loss):
        @tf.function(jit_compile=True)
        def step():
            with tf.GradientTape() as tape:
                tape.watch(embeddings)
                value, accuracy = loss(embeddings[:batch_size], embeddings[batch_size:])
            return tf.reduce_sum(tape.gradient(value, embeddings)) + accuracy

        return step

    @tf.function(jit_compile=True)
    def metrics():
        u = functional.l2_normalize(embeddings)
        return functional.alignment(u[:batch_size], u[batch_size:]) + functional.uniformity(
            u[:UNIFORMITY_ROWS]
        )

    return (
        {
            "train step (fixed batch)": lambda: model.train_function(iterator)["loss"],
            "encoder forward": forward,
            "encoder forward + backward": encoder_step(update=False),
            "encoder forward + backward + Adam": encoder_step(update=True),
            "loss + accuracy, dense kernel": loss_step(loss_by_kernel),
            "loss + accuracy, logits autodiff": loss_step(loss_on_logits),
            "alignment + uniformity": metrics,
        },
        model,
        config,
    )


def evaluation_parts(
    model: keras.Model,
    config: SyntheticConfig,
    eval_size: int,
    alignment_pairs: int,
    directory: Path,
) -> dict:
    """The evaluation's parts: the recipe's callback scores the weight average, then
    writes the history file and TensorBoard (not timed); each Keras epoch ends with a
    backup whose weights this writes to `directory` (without its disk-space check).

    Returns:
        `{part name: zero-argument function}`.
    """
    (evaluator,) = build(
        dataclasses.replace(config, eval_size=eval_size, alignment_pairs=alignment_pairs)
    ).evaluators

    def evaluation():
        with averaged_weights(model):
            return evaluator.evaluate(model)["linear_r2"]

    timed = {
        f"embeddings of {eval_size} held-out samples": lambda: evaluator.features(model),
        "identifiability scores, weight average": evaluation,
        "backup checkpoint's save_weights": lambda: model.save_weights(
            directory / "backup.weights.h5"
        ),
    }
    if alignment_pairs:
        embedded = evaluator.pair_features(model)
        timed[f"embeddings of 2 x {alignment_pairs} pairs"] = lambda: evaluator.pair_features(model)
        timed["alignment: covariances + eigh"] = lambda: slow_feature_alignment(*embedded)
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--eval-size", type=int, default=4096, help="held-out samples")
    parser.add_argument(
        "--alignment-pairs",
        type=int,
        default=0,
        help="pairs the evaluation fits the slow-feature alignment on (e.g. 16384)",
    )
    parser.add_argument(
        "--rotation-gain",
        type=float,
        default=0.0,
        help="end the encoder with a learned rotation of this gain (paper-linear-fast: 6)",
    )
    args = parser.parse_args()
    step_parts, model, config = parts(args.batch_size, args.alignment_pairs > 0, args.rotation_gain)
    for name, function in step_parts.items():
        median, best = milliseconds(function, args.calls, args.repeats)
        print(f"{name:>34}: {median:6.1f} ms (best {best:.1f})", flush=True)
    gflops = max(matmul_gflops("float32", jit)[1] for jit in (False, True))
    bound = matmul_flops_per_step(args.batch_size) / gflops / 1e6
    print(f"{'matmul roofline of the step':>34}: {bound:6.1f} ms ({gflops:.0f} GFLOP/s)")
    with tempfile.TemporaryDirectory() as scratch:
        evaluation = evaluation_parts(
            model, config, args.eval_size, args.alignment_pairs, Path(scratch)
        )
        for name, function in evaluation.items():
            median, best = milliseconds(function, max(args.calls // 10, 1), args.repeats)
            print(f"{name:>34}: {median:6.1f} ms (best {best:.1f})", flush=True)


if __name__ == "__main__":
    main()
