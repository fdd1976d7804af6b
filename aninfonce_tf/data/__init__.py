"""Pair sources: `tf.data` pipelines that yield positive pairs."""
