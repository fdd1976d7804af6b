"""Identifiability metrics and their evaluator, the slow-feature alignment (`alignment`); the `Evaluator` protocol every
evaluator follows (`protocol`), the image probes (`probes`; `determinable`: which
readout targets one view determines) and the Keras callbacks of `fit`
(`callbacks`: the one that runs evaluators, the NaN stop, the training metrics'
logger) and what they print (`console`)."""

from aninfonce_tf.evaluation.alignment import slow_feature_alignment
from aninfonce_tf.evaluation.identifiability import (
    IdentifiabilityEvaluator,
    block_r2,
    concentration_agreement,
    identifiability_scores,
    linear_r2,
    mean_correlation_coefficient,
    nonlinear_r2,
)
from aninfonce_tf.evaluation.protocol import Evaluator

__all__ = [
    "Evaluator",
    "IdentifiabilityEvaluator",
    "block_r2",
    "concentration_agreement",
    "identifiability_scores",
    "linear_r2",
    "mean_correlation_coefficient",
    "nonlinear_r2",
    "slow_feature_alignment",
]
