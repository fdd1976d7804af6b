"""`Experiment`: the parts a config module's `build(config)` returns to the runner."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

import keras
import tensorflow as tf


@dataclasses.dataclass
class Experiment:
    """The parts of an experiment that a config module's `build(config)` returns.

    Args:
        train_data: `start_step -> tf.data.Dataset` of global batches of pairs
            (`(view1, view2)` or dicts with `view1`, `view2` and extra keys),
            long enough for the run. Batch i does not depend on `start_step`, so
            that a resumed run sees the batches of an uninterrupted one.
        encoder: builds a fresh encoder (observations -> features).
        evaluators: objects with `evaluate(model)` and `score_names(anisotropic)`
            (see `aninfonce_tf.evaluation.callbacks`).
        projector: builds a fresh projection head, or None.
        normalize: embeddings on the unit sphere (InfoNCE then uses the cosine
            similarity); False trains the Euclidean variant.
        curve_keys: scores plotted over training, beside the loss (default: every
            scalar score).
        table_columns: scores shown in the printed tables and in the line printed
            at each evaluation (default: every scalar score; `results.json` and
            TensorBoard always have them all).
        primary_scores: the scores the experiment's conclusions rest on, read at
            the final step: the endpoint, fixed in the config before any run and
            recorded as `run["endpoint"]` of `results.json`.
        metadata: entries of the `run` record of `results.json` (`run_record`).
        plots: `(results, run_dir, title=...) -> [paths]`, the experiment's own
            figures, `title` naming the preset and seed.
        seeds_plots: `(summary, run_dir, title=...) -> [paths]`, its own figures
            over seeds (`summary`: `runner.run_seeds`' `summary.json`).
        aligned: the model holds a `layers.LinearAlignment`, which its evaluators fit
            (`IdentifiabilityEvaluator(..., alignment_pairs=...)`), saved with it and
            exported as `embed_aligned`.
        worker_train_data: optional `(start_step, input_context) -> tf.data.Dataset`
            of one input pipeline's own shard in per-replica batches. Multi-worker
            runs read it, each worker only its shard, instead of every worker
            building the global batches of `train_data` and keeping its rows.

    Example (what a config module's `build` returns; `runner.run` trains it):

    >>> import numpy as np
    >>> from aninfonce_tf.encoders import mlp_encoder
    >>> from aninfonce_tf.evaluation import IdentifiabilityEvaluator
    >>> z = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
    >>> pairs = tf.data.Dataset.from_tensors((z, z + 0.1)).repeat()
    >>> experiment = Experiment(
    ...     train_data=lambda start: pairs,
    ...     encoder=lambda: mlp_encoder(3, 3, [16]),
    ...     evaluators=[IdentifiabilityEvaluator(z, z)],
    ...     table_columns=("linear_r2", "mcc"),
    ... )
    >>> experiment.encoder().output_shape
    (None, 3)
    """

    train_data: Callable[[int], tf.data.Dataset]
    encoder: Callable[[], keras.Model]
    evaluators: Sequence
    projector: Callable[[], keras.layers.Layer] | None = None
    normalize: bool = True
    curve_keys: Sequence[str] = ()
    table_columns: Sequence[str] = ()
    primary_scores: Sequence[str] = ()
    metadata: dict = dataclasses.field(default_factory=dict)
    plots: Callable[[dict, Path], list[Path]] | None = None
    seeds_plots: Callable[[dict, Path], list[Path]] | None = None
    aligned: bool = False
    worker_train_data: Callable[[int, tf.distribute.InputContext], tf.data.Dataset] | None = None


__all__ = ["Experiment"]
