"""Test set-up. The CPU is split into two logical devices before any TF op runs, so
that `MirroredStrategy` has two replicas in the tests."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(_cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_readout_checks(monkeypatch):
    """Each test runs the readout checks it builds, as a new process would."""
    from aninfonce_tf.configs import images

    monkeypatch.setattr(images, "_RECORDS", {})


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(0)
    yield
    keras.config.set_dtype_policy("float32")
