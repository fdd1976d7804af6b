"""The evaluators, their protocol and the Keras callbacks of `fit`.
Modules: docs/api.md#the-library-module-by-module (the `evaluation.*` rows)"""

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
