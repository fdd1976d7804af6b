"""Strategies by name and the XLA switch for logical CPU replicas."""

import pytest
import tensorflow as tf

from aninfonce_tf import distribute


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
