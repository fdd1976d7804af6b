"""`export_encoder`: a trained model's encoder as a TensorFlow SavedModel that loads
without this package, with Lambda_hat beside it."""

from __future__ import annotations

from pathlib import Path

import keras
import tensorflow as tf
from keras import ops

from aninfonce_tf.checkpoints import write_json
from aninfonce_tf.models import ContrastiveModel


def export_encoder(
    model: ContrastiveModel, directory: str | Path, input_spec: tf.TensorSpec | None = None
) -> Path:
    """Exports a trained model as a TF SavedModel whose endpoints take a batch of
    observations and return float32:

    - `serve`: the encoder's features (the backbone output, what downstream tasks
      usually take);
    - `embed`: the embedding that Lambda_hat belongs to and whose identifiability the
      theory is about: the projector output, on the unit sphere when the model
      normalises, before the scaling (`model.embed(x, scaled=False)`);
    - `embed_scaled` (with a Lambda_hat): that embedding times sqrt(Lambda_hat), what
      the loss compares (`model.embed(x)`).

    With a Lambda_hat, `concentration.json` beside them holds it (`lambda_hat`) and
    the endpoint whose dimensions it weighs (`space`: `"embed"`).

    Load it without this package with `keras.layers.TFSMLayer(directory,
    call_endpoint="serve")` (or `"embed"`), or in two lines, `encoder =
    tf.saved_model.load(directory)` then `encoder.serve(x)`. Keep the loaded object:
    its functions hold its variables only weakly (TensorFlow's design), so calling
    `serve` on a loaded object that nothing keeps fails with "variables which have
    been deleted".

    Args:
        model: a trained `ContrastiveModel`.
        directory: the SavedModel directory to write.
        input_spec: a batch of observations' spec (its batch size is left open);
            default: the input of a functional or Sequential encoder.

    Returns:
        `directory`.

    Example:

    >>> import json, tempfile
    >>> from aninfonce_tf.layers import DiagonalScaling
    >>> encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    >>> model = ContrastiveModel(encoder, scaling=DiagonalScaling(5.0))
    >>> path = export_encoder(model, tempfile.mkdtemp() + "/encoder")
    >>> loaded = tf.saved_model.load(str(path))
    >>> x = np.ones((2, 4), "float32")
    >>> tuple(loaded.serve(x).shape), np.linalg.norm(loaded.embed(x), axis=1).round(4)
    ((2, 3), array([1., 1.], dtype=float32))
    >>> json.loads((path / "concentration.json").read_text())["space"]
    'embed'
    """
    directory = Path(directory)
    encoder = model.encoder
    if input_spec is None:
        if not getattr(encoder, "inputs", None):
            raise ValueError(
                "`input_spec` is needed for an encoder without a defined input "
                "(a subclassed model); pass e.g. `dataset.element_spec[0]`."
            )
        input_spec = tf.TensorSpec(encoder.inputs[0].shape, encoder.inputs[0].dtype)
    archive = keras.export.ExportArchive()
    for layer in (encoder, model.projector, model.scaling):
        if layer is not None:
            archive.track(layer)
    spec = tf.TensorSpec([None, *input_spec.shape[1:]], input_spec.dtype, name="observations")
    endpoints = {
        "serve": lambda x: tf.cast(encoder(x, training=False), tf.float32),
        "embed": lambda x: model.embed(x, scaled=False),
    }
    if model.scaling is not None:
        endpoints["embed_scaled"] = lambda x: model.embed(x)
    for name, function in endpoints.items():
        archive.add_endpoint(name, tf.function(function, autograph=False), input_signature=[spec])
    archive.write_out(str(directory), verbose=False)
    if model.concentration is not None:
        embedding = "projector output" if model.projector is not None else "encoder output"
        sphere = " on the unit sphere" if model.normalize else ""
        concentration = {
            "lambda_hat": [float(v) for v in ops.convert_to_numpy(model.concentration)],
            "space": "embed",
            "description": (
                "Lambda_hat, one value per dimension of the output of the `embed` endpoint: "
                f"the {embedding}{sphere}, before the scaling. `embed_scaled` returns it "
                "times sqrt(Lambda_hat); the features of `serve` are another space."
            ),
        }
        write_json(directory / "concentration.json", concentration)
    return directory


__all__ = ["export_encoder"]
