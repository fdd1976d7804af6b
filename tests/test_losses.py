"""The Keras loss wrappers: values, configuration and serialisation."""

from pathlib import Path

import numpy as np
import pytest

from aninfonce_tf import AnInfoNCE, InfoNCE, functional
from aninfonce_tf.loss_variants import loss_variant
from tests import support


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
    expected = np.mean(functional.info_nce(z1, z2, **loss.options))
    np.testing.assert_allclose(float(loss(z1, z2)), expected, rtol=1e-6)
    restored = support.assert_config_round_trip(loss)
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
        ({"temperature": float("nan")}, "`temperature` must be one or more positive, finite"),
        ({"temperature": float("inf")}, "`temperature` must be one or more positive, finite"),
        ({"temperature": [0.1, float("nan")]}, "`temperature`"),
    ],
)
def test_bad_loss_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        InfoNCE(**kwargs)


def test_a_loss_checks_its_options_when_made_and_not_again_at_each_call(monkeypatch):
    with pytest.raises(ValueError, match="`ensemble_weights` has 1 entries for 2 temperatures"):
        InfoNCE(temperature=[0.1, 0.2], ensemble_weights=[1.0])
    losses = [
        InfoNCE(temperature=[0.1, 0.2], ensemble_weights=[1.0, 3.0], block_size=4),
        AnInfoNCE(hard_negative_beta=1.0),
    ]
    pair_checks = support.count_pair_checks(monkeypatch)
    z = np.eye(4, dtype="float32")
    assert all(np.isfinite(float(loss(z, z[::-1]))) for loss in losses)
    assert len(pair_checks) == len(losses)  # the pair: once a call


@pytest.mark.parametrize(
    "name, option, value",
    [
        ("infonce", "infonce_temperature", 0.0),
        ("infonce_hard_negatives", "infonce_temperature", float("nan")),
        ("infonce_ensemble", "ensemble_temperatures", []),
        ("aninfonce_ensemble", "ensemble_temperatures", [0.1, float("inf")]),
    ],
)
def test_loss_variant_errors_name_the_argument(name, option, value):
    with pytest.raises(ValueError, match=f"`{option}` must be one or more positive, finite"):
        loss_variant(name, **{option: value})


def test_aninfonce_refuses_another_similarity_instead_of_dropping_it():
    with pytest.raises(ValueError, match="similarity='cosine'"):
        AnInfoNCE(similarity="cosine")
    loss = AnInfoNCE(temperature=0.5)
    assert AnInfoNCE.from_config(loss.get_config()).get_config() == loss.get_config()


@pytest.mark.parametrize(
    "name, kind, similarity, temperature, beta, scaled",
    [
        ("aninfonce", "AnInfoNCE", "euclidean", 1.0, 0.0, True),
        ("infonce", "InfoNCE", "cosine", 0.2, 0.0, False),
        ("aninfonce_hard_negatives", "AnInfoNCE", "euclidean", 1.0, 0.5, True),
        ("infonce_hard_negatives", "InfoNCE", "cosine", 0.2, 0.5, False),
        ("aninfonce_ensemble", "AnInfoNCE", "euclidean", [0.5, 1.0, 5.0], 0.0, True),
        ("infonce_ensemble", "InfoNCE", "cosine", [0.05, 0.1, 0.5], 0.0, False),
    ],
)
def test_each_loss_variant_is_built_from_the_config_fields(
    name, kind, similarity, temperature, beta, scaled
):
    loss, scaling = loss_variant(
        name,
        infonce_temperature=0.2,
        hard_negative_beta=0.5,
        ensemble_temperatures=[0.05, 0.1, 0.5],
        initial_concentration=3.0,
    )
    assert type(loss).__name__ == kind
    assert (loss.similarity, loss.hard_negative_beta) == (similarity, beta)
    assert loss.temperature == pytest.approx(temperature)
    assert (scaling is not None) == scaled
    unnormalized, _ = loss_variant(name, normalized=False)
    assert unnormalized.similarity == "euclidean"
    with pytest.raises(ValueError, match="simclr"):
        loss_variant("simclr")


def test_infonce_defaults_to_simclrs_temperature_as_the_api_docs_say():
    assert InfoNCE().temperature == 0.1 and AnInfoNCE().temperature == 1.0
    api = (Path(__file__).parent.parent / "docs" / "api.md").read_text()
    assert "`InfoNCE()` uses temperature 0.1, SimCLR's; pass `temperature=1.0`" in api
