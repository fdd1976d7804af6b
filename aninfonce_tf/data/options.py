"""The `tf.data` options every training pipeline here runs with."""

from __future__ import annotations

import tensorflow as tf


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` without autotuning. Details: docs/speed.md#two-speeds-and-why-no-pipeline-autotunes

    Example:

    >>> without_autotune(tf.data.Dataset.range(3)).options().autotune.enabled
    False
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
