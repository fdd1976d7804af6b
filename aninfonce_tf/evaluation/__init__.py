"""Identifiability metrics, linear readouts and the Keras callbacks that log them."""

from aninfonce_tf.evaluation.identifiability import (
    block_r2,
    concentration_agreement,
    identifiability_scores,
    linear_r2,
    mean_correlation_coefficient,
    nonlinear_r2,
)

__all__ = [
    "block_r2",
    "concentration_agreement",
    "identifiability_scores",
    "linear_r2",
    "mean_correlation_coefficient",
    "nonlinear_r2",
]
