"""One harness every Keras object of the package goes through: config round trip,
saving inside a model, and mixed precision."""

import keras
import numpy as np


def assert_config_round_trip(obj):
    """`get_config` -> `from_config` and Keras (de)serialisation give the same config."""
    config = obj.get_config()
    assert type(obj).from_config(config).get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(obj))
    assert type(restored) is type(obj)
    assert restored.get_config() == config
    return restored


def assert_saved_in_model(layer, inputs, tmp_path):
    """A functional model holding `layer` reloads from `.keras` with identical outputs."""
    model_in = keras.Input(inputs.shape[1:])
    model = keras.Model(model_in, layer(model_in))
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(np.asarray(reloaded(inputs)), np.asarray(model(inputs)))
    return reloaded


def assert_float32_under_mixed_precision(make_layer, inputs):
    """Built under `mixed_bfloat16`, the layer still computes and returns float32."""
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        layer = make_layer()
        outputs = layer(keras.ops.cast(inputs, "bfloat16"))
    finally:
        keras.config.set_dtype_policy("float32")
    assert keras.backend.standardize_dtype(outputs.dtype) == "float32"
    return outputs
