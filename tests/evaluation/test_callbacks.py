"""The identifiability callback: logging, and stopping once score targets are reached."""

import keras
import numpy as np
import pytest

from aninfonce_tf.evaluation.callbacks import IdentifiabilityCallback, parse_targets


class RisingScores:
    """An evaluator whose MCC rises by 0.1 per call."""

    def __init__(self):
        self.calls = 0

    def evaluate(self, model):
        self.calls += 1
        return {"mcc": 0.1 * self.calls, "linear_r2": 0.99, "block_r2": {"low": 0.5}}


def _fit(callback, epochs=10):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.zeros((8, 3), "float32")
    return model.fit(x, x[:, :1], epochs=epochs, steps_per_epoch=2, callbacks=[callback], verbose=0)


def test_parse_targets():
    assert parse_targets("mcc=0.95, linear_r2=0.99") == {"mcc": 0.95, "linear_r2": 0.99}
    assert parse_targets("") == {}
    with pytest.raises(ValueError, match="stop_at"):
        parse_targets("mcc>0.9")


def test_training_stops_at_the_first_evaluation_reaching_every_target():
    callback = IdentifiabilityCallback(
        RisingScores(), steps_per_epoch=2, stop_at={"mcc": 0.35, "block_r2/low": 0.5}
    )
    history = _fit(callback)
    assert len(history.history["loss"]) == 4
    assert [entry["step"] for entry in callback.history] == [2, 4, 6, 8]
    assert callback.reached["step"] == 8
    assert callback.reached["seconds"] == callback.history[-1]["seconds"] >= 0
    assert history.history["mcc"][-1] == pytest.approx(0.4)


def test_without_targets_training_runs_to_the_end():
    callback = IdentifiabilityCallback(RisingScores(), every_epochs=2)
    assert len(_fit(callback, epochs=6).history["loss"]) == 6
    assert len(callback.history) == 3 and callback.reached is None


def test_unknown_target_names_raise():
    callback = IdentifiabilityCallback(RisingScores(), stop_at={"r2": 0.9})
    with pytest.raises(ValueError, match="stop_at.*r2"):
        _fit(callback)
