"""The `tf.data` options every training pipeline here runs with."""

from __future__ import annotations

import tensorflow as tf


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` with tf.data's autotuning off (`AUTOTUNE` parallelism then means one
    call per CPU core).

    Measured on the 2-core CPU with TF 2.21 (benchmarks/README.md, "Two speeds"):
    while the autotuning thread ran, even for a batch repeated by
    `from_tensors(...).repeat()`, the XLA train step spent a third to two thirds of
    its `fit` windows at ~9.8 instead of ~16 steps/s (the two intra-op threads no
    longer overlapping); without it, 24 of 24 windows ran fast. And deleting an
    autotuned iterator, at the end of every `fit`, waited for that thread's sleep
    (up to a minute; 18-29 s seen).

    Example:

    >>> without_autotune(tf.data.Dataset.range(3)).options().autotune.enabled
    False
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
