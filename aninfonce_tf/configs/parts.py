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
        train_data: `start_step -> tf.data.Dataset` of global batches of pairs.
        encoder: builds a fresh encoder (observations -> features).
        evaluators: `Evaluator`s (`evaluate(model)`, `score_names(anisotropic)`).
        projector: builds a fresh projection head, or None.
        normalize: embeddings on the unit sphere (InfoNCE cosine); False: Euclidean.
        curve_keys: scores plotted over training (default: every scalar score).
        table_columns: scores of the tables and evaluation lines (default: every one).
        primary_scores: the endpoint, read at the final step (`run["endpoint"]`).
        metadata: entries of the `run` record of `results.json`.
        plots: `(results, run_dir, title=...) -> [paths]`, the experiment's figures.
        seeds_plots: `(summary, run_dir, title=...) -> [paths]`, its figures over seeds.
        aligned: the model holds a `layers.LinearAlignment` its evaluators fit.
        worker_train_data: `(start_step, input_context) -> tf.data.Dataset`, a worker's shard.

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
