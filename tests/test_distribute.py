"""Strategies by name and the XLA switch: no XLA around several replicas, on any device."""

import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import distribute
from aninfonce_tf.models import ContrastiveModel, automatic_jit


def test_strategies_by_name():
    assert distribute.get_strategy("default").num_replicas_in_sync == 1
    mirrored = distribute.get_strategy("mirrored")
    assert isinstance(mirrored, tf.distribute.MirroredStrategy)
    assert mirrored.num_replicas_in_sync == 2  # the two logical CPUs of conftest.py
    assert not distribute.supports_jit(mirrored)
    assert distribute.supports_jit(distribute.get_strategy("one_device"))


def test_only_the_chief_or_worker_zero_writes(monkeypatch):
    import json

    for cluster, task, chief in [
        ({"chief": ["a:1"], "worker": ["b:1"]}, {"type": "chief", "index": 0}, True),
        ({"chief": ["a:1"], "worker": ["b:1"]}, {"type": "worker", "index": 0}, False),
        ({"worker": ["a:1", "b:1"]}, {"type": "worker", "index": 0}, True),
        ({"worker": ["a:1", "b:1"]}, {"type": "worker", "index": 1}, False),
    ]:
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        strategy = type("Strategy", (), {"cluster_resolver": resolver})()
        assert distribute.is_chief(strategy) is chief, (cluster, task)
    assert distribute.is_chief(distribute.get_strategy("mirrored"))


def test_unknown_strategy_name_raises():
    with pytest.raises(ValueError, match="strategy"):
        distribute.get_strategy("horovod")


def test_gather_is_a_no_op_with_one_replica():
    z = tf.ones([3, 2])
    assert distribute.gather_across_replicas(z, z) == (None, None, 0)


def _fake_strategy(replicas: int, device: str):
    extended = types.SimpleNamespace(
        worker_devices=[
            f"/job:worker/replica:0/task:0/device:{device}:{i}" for i in range(replicas)
        ]
    )
    return types.SimpleNamespace(num_replicas_in_sync=replicas, extended=extended)


class _FakeTPUStrategy(tf.distribute.TPUStrategy):
    """A TPUStrategy of `replicas` cores, without a TPU (its initialiser not run)."""

    def __init__(self, replicas: int):
        self.replicas = replicas

    @property
    def num_replicas_in_sync(self):
        return self.replicas


@pytest.mark.parametrize("device", ["GPU", "TPU", "CPU"])
def test_no_xla_around_several_replicas_on_any_device(device):
    assert not distribute.supports_jit(_fake_strategy(8, device))
    assert distribute.supports_jit(_fake_strategy(1, device))
    mlp = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    jit, reason = automatic_jit(mlp, _fake_strategy(8, device))
    assert not jit and "8 replicas" in reason
    # An explicit jit_compile=True is dropped with a warning, not silently.
    with pytest.warns(UserWarning, match="jit_compile=True is not used: 8 replicas"):
        assert distribute.supported_execution(_fake_strategy(8, device), True, 1) == (False, 1)


@pytest.mark.parametrize("replicas", [1, 8])
def test_no_keras_xla_around_a_tpu_strategy_not_even_one_chips(replicas):
    strategy = _FakeTPUStrategy(replicas)
    assert not distribute.supports_jit(strategy)
    mlp = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    jit, reason = automatic_jit(mlp, strategy)
    assert not jit and "compiles each replica's step itself" in reason


def test_xla_around_two_logical_cpu_replicas_fails_as_the_upstream_issue_says():
    # Why `supports_jit` is off for several replicas: a plain Keras model compiled
    # with XLA under MirroredStrategy cannot reach the second replica's variables.
    strategy = distribute.get_strategy("mirrored")
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse", jit_compile=True)
    x = np.zeros((8, 3), "float32")
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match="Trying to access resource .*/replica_1/.* located in device .*CPU:1 from device "
        ".*CPU:0",
    ):
        model.fit(x, x[:, :1], batch_size=4, epochs=1, verbose=0)


def test_auto_xla_is_on_for_an_mlp_and_off_for_a_convolutional_encoder(caplog):
    mlp = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    conv = keras.Sequential(
        [keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3), keras.layers.GlobalAveragePooling2D()]
    )
    choices = {}
    for name, encoder in (("mlp", mlp), ("conv", conv)):
        model = ContrastiveModel(encoder)
        with caplog.at_level("INFO", logger="aninfonce_tf"):
            model.compile("adam")
        choices[name] = (model.jit_compile, model.jit_compile_reason)
    assert choices["mlp"][0] is True and choices["conv"][0] is False
    assert "convolutional" in choices["conv"][1]
    assert "jit_compile='auto'" in caplog.text
    # A keras.applications backbone nests its convolutions one model deeper.
    backbone = keras.applications.MobileNetV3Small(
        input_shape=(32, 32, 3), weights=None, include_top=False, pooling="avg"
    )
    wrapped = keras.Sequential([keras.Input((32, 32, 3)), backbone])
    assert automatic_jit(ContrastiveModel(wrapped), tf.distribute.get_strategy())[0] is False
    with pytest.raises(ValueError, match="`jit_compile` must be True, False or 'auto'"):
        ContrastiveModel(mlp).compile("adam", jit_compile="yes")
