"""Every evaluator of the package is an `Evaluator`, and an object without both of its
methods is not."""

import numpy as np
import pytest

from aninfonce_tf.evaluation import Evaluator
from aninfonce_tf.evaluation.identifiability import IdentifiabilityEvaluator
from aninfonce_tf.evaluation.latents import LatentEvaluator
from aninfonce_tf.evaluation.probes import ImageProbeEvaluator

IMAGES = np.zeros((4, 8, 8, 3), "float32")
LABELS = np.arange(4) % 2


@pytest.mark.parametrize(
    "evaluator",
    [
        IdentifiabilityEvaluator(np.zeros((4, 2)), np.zeros((4, 2))),
        ImageProbeEvaluator(IMAGES, LABELS, IMAGES, LABELS, IMAGES, {"grayscale": LABELS}),
        LatentEvaluator(IMAGES, {"x": np.zeros(4)}),
    ],
    ids=lambda evaluator: type(evaluator).__name__,
)
def test_each_evaluator_is_an_evaluator(evaluator):
    assert isinstance(evaluator, Evaluator)


def test_an_object_with_evaluate_alone_is_not_an_evaluator():
    class ScoresOnly:
        def evaluate(self, model):
            return {}

    assert not isinstance(ScoresOnly(), Evaluator)
