"""`export_encoder`: a model's encoder as a SavedModel that loads without this package."""

from __future__ import annotations

from pathlib import Path

import keras
import tensorflow as tf
from keras import ops

from aninfonce_tf.checkpoints import replace_directory_atomically, write_json
from aninfonce_tf.data.augment import VALUE_RANGES
from aninfonce_tf.data.image_ops import checked_unit_range
from aninfonce_tf.disk_space import state_bytes
from aninfonce_tf.models import ContrastiveModel


def export_encoder(
    model: ContrastiveModel,
    directory: str | Path,
    input_spec: tf.TensorSpec | None = None,
    value_range: tuple[float, float] = (0.0, 1.0),
) -> Path:
    """Exports a trained model as a TF SavedModel in `directory` (returned), with float32
    endpoints (`serve`, `embed`, ...). Details: docs/api.md#exported-encoders

    Args:
        model: a trained `ContrastiveModel`.
        directory: the SavedModel directory to write, replaced whole.
        input_spec: a batch of observations' spec (default: the encoder's input).
        value_range: the range of the float images the endpoints take: (0, 1) or (0, 255).

    Example:

    >>> import json, tempfile
    >>> import numpy as np
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
    if not isinstance(model, ContrastiveModel):
        raise TypeError(
            "`model` must be a ContrastiveModel (its encoder, projector and Lambda_hat are "
            f"exported); got {type(model).__name__}. Wrap an encoder as "
            "`ContrastiveModel(encoder)`."
        )
    if input_spec is not None and not isinstance(input_spec, tf.TensorSpec):
        raise TypeError(
            "`input_spec` must be a tf.TensorSpec of a batch of observations, e.g. "
            f"`tf.TensorSpec([None, 4], tf.float32)`; got {input_spec!r}."
        )
    directory = Path(directory)
    if tuple(value_range) not in VALUE_RANGES:
        raise ValueError(f"`value_range` must be (0, 1) or (0, 255); got {value_range!r}.")
    if directory.exists() and not (
        (directory / "saved_model.pb").is_file()
        or (directory.is_dir() and not any(directory.iterdir()))
    ):
        raise ValueError(
            f"{directory} is not empty and holds no export (no saved_model.pb), which an "
            "export would replace whole: pass a new or empty directory."
        )
    encoder = model.encoder
    if input_spec is None:
        if not getattr(encoder, "inputs", None):
            raise ValueError(
                "`input_spec` is needed for an encoder without a defined input (a subclassed "
                "model); pass the spec of a batch of observations: "
                '`pairs.element_spec["view1"]` of dict pairs, `pairs.element_spec[0]` of '
                "`(view1, view2)` pairs."
            )
        input_spec = tf.TensorSpec(encoder.inputs[0].shape, encoder.inputs[0].dtype)
    archive = keras.export.ExportArchive()
    for layer in (encoder, model.projector, model.scaling, model.alignment):
        if layer is not None:
            archive.track(layer)
    spec = tf.TensorSpec([None, *input_spec.shape[1:]], input_spec.dtype, name="observations")
    endpoints = {
        "serve": lambda x: tf.cast(encoder(x, training=False), tf.float32),
        "embed": lambda x: model.embed(x, scaled=False),
    }
    if model.scaling is not None:
        endpoints["embed_scaled"] = lambda x: model.embed(x)
    if model.alignment is not None:
        endpoints["embed_aligned"] = lambda x: model.embed_aligned(x)
    specs = _accepted_specs(spec)
    top = float(value_range[1])
    for name, function in endpoints.items():
        archive.add_endpoint(name, _observations_function(function, spec, specs, top))

    def write(fresh: Path) -> None:
        archive.write_out(str(fresh), verbose=False)
        write_json(fresh / "inputs.json", _inputs_record(spec, specs, top))
        if model.concentration is not None:
            write_json(fresh / "concentration.json", _concentration_record(model))

    # Room for twice the weights (the graphs are small beside them).
    return replace_directory_atomically(directory, write, needed=2 * state_bytes(encoder))


def _concentration_record(model: ContrastiveModel) -> dict:
    embedding = "projector output" if model.projector is not None else "encoder output"
    sphere = " on the unit sphere" if model.normalize else ""
    return {
        "lambda_hat": [float(v) for v in ops.convert_to_numpy(model.concentration)],
        "space": "embed",
        "description": (
            "Lambda_hat, one value per dimension of the output of the `embed` endpoint: "
            f"the {embedding}{sphere}, before the scaling. `embed_scaled` returns it "
            "times sqrt(Lambda_hat); the features of `serve` are another space."
        ),
    }


def _accepted_specs(spec: tf.TensorSpec) -> list[tf.TensorSpec]:
    """`spec`, float64 for float observations, and uint8 for float images."""
    specs = [spec]
    if spec.dtype.is_floating and spec.dtype != tf.float64:
        specs.append(tf.TensorSpec(spec.shape, tf.float64, name=spec.name))
    if spec.dtype.is_floating and spec.shape.rank == 4:
        specs.append(tf.TensorSpec(spec.shape, tf.uint8, name=spec.name))
    return specs


def _observations_function(function, spec: tf.TensorSpec, specs, top: float) -> tf.function:
    """`function` traced for each of `specs` (docs/api.md#exported-encoders)."""
    images = spec.dtype.is_floating and spec.shape.rank == 4

    def call(x):
        if x.dtype == tf.uint8 and spec.dtype.is_floating:
            x = tf.cast(x, tf.float32) / 255.0
        elif images:
            x = checked_unit_range(tf.cast(x, tf.float32) / top, (0.0, top))
        return function(tf.cast(x, spec.dtype))

    traced = tf.function(call, autograph=False)
    for accepted in specs:
        traced.get_concrete_function(accepted)
    return traced


def _inputs_record(spec: tf.TensorSpec, specs, top: float) -> dict:
    record = {
        "shape": [None, *spec.shape[1:]],
        "dtype": spec.dtype.name,
        "accepted_dtypes": [accepted.dtype.name for accepted in specs],
    }
    if spec.dtype.is_floating and spec.shape.rank == 4:
        record["value_range"] = [0.0, top]
    if any(accepted.dtype == tf.uint8 for accepted in specs):
        record["uint8"] = "images in [0, 255], divided by 255 as training read them"
    return record


__all__ = ["export_encoder"]
