"""Identifiability metrics and their evaluator; the image probes (`probes`) and the Keras
callbacks that run evaluators during `fit` (`callbacks`)."""

from aninfonce_tf.evaluation.identifiability import (
    IdentifiabilityEvaluator,
    block_r2,
    concentration_agreement,
    identifiability_scores,
    linear_r2,
    mean_correlation_coefficient,
    nonlinear_r2,
)

__all__ = [
    "IdentifiabilityEvaluator",
    "block_r2",
    "concentration_agreement",
    "identifiability_scores",
    "linear_r2",
    "mean_correlation_coefficient",
    "nonlinear_r2",
]
