"""The Keras loss wrappers: values, configuration and serialisation."""

import numpy as np
import pytest

from aninfonce_tf import AnInfoNCE, InfoNCE, ops
from tests import harness


@pytest.mark.parametrize(
    "loss",
    [
        InfoNCE(),
        InfoNCE(similarity="euclidean", temperature=[0.1, 1.0], ensemble_weights=[1.0, 2.0]),
        InfoNCE(candidates="one_directional", hard_negative_beta=1.0),
        AnInfoNCE(temperature=0.5),
    ],
)
def test_loss_wraps_the_functional_core(loss):
    rng = np.random.default_rng(0)
    z1 = rng.normal(size=(6, 3)).astype("float32")
    z2 = z1 + 0.1 * rng.normal(size=(6, 3)).astype("float32")
    expected = np.mean(ops.info_nce(z1, z2, **loss.options))
    np.testing.assert_allclose(float(loss(z1, z2)), expected, rtol=1e-6)
    restored = harness.assert_config_round_trip(loss)
    np.testing.assert_allclose(float(restored(z1, z2)), expected, rtol=1e-6)


def test_aninfonce_is_euclidean():
    assert AnInfoNCE().similarity == "euclidean"
    assert InfoNCE().similarity == "cosine"


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"similarity": "dot"}, "similarity"),
        ({"candidates": "both"}, "candidates"),
        ({"temperature": -1.0}, "temperature"),
    ],
)
def test_bad_loss_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        InfoNCE(**kwargs)
