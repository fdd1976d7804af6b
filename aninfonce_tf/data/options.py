"""The `tf.data` options every training pipeline here runs with."""

from __future__ import annotations

import tensorflow as tf


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` with tf.data's autotuning off (`AUTOTUNE` parallelism then means one
    call per CPU core).

    On a 2-core CPU the autotuning thread slows the XLA train step in part of its
    `fit` windows, even for a repeated batch, and deleting an autotuned iterator
    at the end of every `fit` waits for that thread's sleep (docs/speed.md, "Two
    speeds").

    Example:

    >>> without_autotune(tf.data.Dataset.range(3)).options().autotune.enabled
    False
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
