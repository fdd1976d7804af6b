"""Backbones by name for images in [0, 1]: the package's encoders, `keras.applications`
models, KerasHub presets, or `file.py:function`. Details: docs/backbones.md#backbones---backbone

Example:

>>> encoder = backbone("MobileNetV3Small", (32, 32, 3))
>>> expects_pixel_values(encoder), [layer.name for layer in encoder.layers][:2]
(False, ['images', 'pixel_values'])
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np

from aninfonce_tf.encoders import resnet18_cifar, resnet50, small_cnn

# The package's own encoders by name.
PACKAGE_BACKBONES = ("small_cnn", "resnet18_cifar", "resnet50")
# The prefix of a KerasHub preset (`hub:resnet_50_imagenet`).
HUB_PREFIX = "hub:"
# The backbone files `FILE.py:FUNCTION` loaded, part of the code a run is trained by.
LOADED_FILES: list[Path] = []
# A Rescaling first layer with a scale at most this expects pixel values in [0, 255]
# (1/255 and 1/127.5 in keras.applications); one near 1 expects [0, 1].
PIXEL_SCALE = 1 / 50


def expects_pixel_values(encoder: keras.layers.Layer) -> bool:
    """Whether `encoder`'s first layer is a `Rescaling` by at most `PIXEL_SCALE` ([0, 255] input).

    Example:

    >>> rescaling = keras.Sequential([keras.Input((4, 4, 3)), keras.layers.Rescaling(1 / 255)])
    >>> expects_pixel_values(rescaling), expects_pixel_values(for_unit_images(rescaling))
    (True, False)
    """
    layer = encoder
    while isinstance(layer, keras.Model) and layer.layers:
        inner = [child for child in layer.layers if not isinstance(child, keras.layers.InputLayer)]
        if not inner:
            return False
        layer = inner[0]
    if not isinstance(layer, keras.layers.Rescaling):
        return False
    scale = float(np.max(np.abs(np.asarray(layer.scale, "float64"))))  # per channel too
    return 0 < scale <= PIXEL_SCALE


def for_unit_images(encoder: keras.Model, name: str | None = None) -> keras.Model:
    """`encoder` behind a `Rescaling(255)` if it `expects_pixel_values`, else itself.

    Example:

    >>> mobilenet = keras.applications.MobileNetV3Small(
    ...     input_shape=(32, 32, 3), weights=None, include_top=False, pooling="avg")
    >>> expects_pixel_values(mobilenet), expects_pixel_values(for_unit_images(mobilenet))
    (True, False)
    """
    if not expects_pixel_values(encoder):
        return encoder
    inputs = keras.Input(encoder.input_shape[1:], name="images")
    features = encoder(keras.layers.Rescaling(255.0, name="pixel_values")(inputs))
    return keras.Model(inputs, features, name=name or f"{encoder.name}_on_unit_images")


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class ApplicationPreprocessing(keras.layers.Layer):
    """`keras.applications.<module>.preprocess_input` of `255 x` (for [0, 1] images).

    Args:
        module: a module of `keras.applications` with `preprocess_input`.

    Example:

    >>> import numpy as np
    >>> layer = ApplicationPreprocessing("mobilenet_v2")  # [0, 255] -> [-1, 1]
    >>> keras.ops.convert_to_numpy(layer(np.ones((1, 2, 2, 3), "float32")))[0, 0, 0].tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, module: str, **kwargs):
        super().__init__(**kwargs)
        found = getattr(keras.applications, module, None)
        if not hasattr(found, "preprocess_input"):
            raise ValueError(
                f"`module` must be a keras.applications module with `preprocess_input` "
                f"(e.g. 'resnet', 'mobilenet_v2'); got {module!r}."
            )
        self.module = module
        self._preprocess = found.preprocess_input

    def call(self, inputs):
        return self._preprocess(inputs * 255.0)

    def get_config(self):
        return {**super().get_config(), "module": self.module}


def application_names() -> list[str]:
    """The model constructors of `keras.applications`."""
    return sorted(
        name
        for name, value in vars(keras.applications).items()
        if name[:1].isupper() and callable(value)
    )


def _application_module(constructor) -> str | None:
    """The `keras.applications` module whose `preprocess_input` belongs to a model."""
    source = inspect.getmodule(constructor).__name__.rsplit(".", 1)[-1]
    return (
        source if hasattr(getattr(keras.applications, source, None), "preprocess_input") else None
    )


def check_backbone(name: str, weights: str | None = None) -> None:
    """Raises ValueError, naming `--backbone` or `weights`, for a backbone that cannot build.

    Example:

    >>> check_backbone("NoSuchNet")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Unknown backbone 'NoSuchNet': give one of small_cnn, resnet18_cifar, ...
    """
    if weights is not None and not Path(weights).is_file():
        raise ValueError(
            f"`weights` must be a local weights file (nothing is downloaded); {weights} is "
            "not a file: pass --weights none for random weights."
        )
    if name in PACKAGE_BACKBONES:
        if weights is not None:
            raise ValueError(f"`weights` applies to keras.applications backbones, not {name}.")
        return
    if name.startswith(HUB_PREFIX):
        if importlib.util.find_spec("keras_hub") is None:
            raise ValueError(
                f"--backbone {name} needs KerasHub: `pip install keras-hub`, with the preset "
                "on disk (a directory of its files)."
            )
        if not Path(name[len(HUB_PREFIX) :]).is_dir():
            raise ValueError(
                f"--backbone {name}: give the directory of a KerasHub preset on disk "
                "(nothing is downloaded at run time)."
            )
        return
    if ".py:" in name:
        path = name.rpartition(":")[0]
        if not Path(path).is_file():
            raise ValueError(f"The backbone file {path} does not exist (from --backbone {name}).")
        return
    if name not in application_names():
        raise ValueError(
            f"Unknown backbone {name!r}: give one of {', '.join(PACKAGE_BACKBONES)}, a "
            f"keras.applications model ({', '.join(application_names()[:4])}, ...), "
            "hub:PRESET or FILE.py:FUNCTION."
        )


def backbone(
    name: str,
    input_shape: Sequence[int],
    weights: str | None = None,
    features: int = 256,
) -> keras.Model:
    """A backbone for `[B, *input_shape]` images in [0, 1] that returns `[B, d]` features.

    Args:
        name: a package encoder, `keras.applications` constructor, `hub:DIR` or `FILE.py:FUNCTION`.
        input_shape: `(height, width, channels)`.
        weights: a `keras.applications` model's weights: None (random) or a local file.
        features: `small_cnn`'s feature width.

    Example:

    >>> backbone("small_cnn", (32, 32, 3), features=16).output_shape
    (None, 16)
    >>> backbone("ResNet50", (32, 32, 3)).layers[1].name  # its own preprocess_input
    'pixel_values'
    """
    input_shape = tuple(int(size) for size in input_shape)
    check_backbone(name, weights)
    if name in PACKAGE_BACKBONES:
        return {
            "small_cnn": lambda: small_cnn(input_shape, features),
            "resnet18_cifar": lambda: resnet18_cifar(input_shape),
            "resnet50": lambda: resnet50(input_shape),
        }[name]()
    if name.startswith(HUB_PREFIX):
        return _hub_backbone(name[len(HUB_PREFIX) :], input_shape)
    if ".py:" in name:
        return _file_backbone(name, input_shape)
    constructor = getattr(keras.applications, name)
    options = {
        "include_top": False,
        "pooling": "avg",
        "weights": weights,
        "input_shape": input_shape,
    }
    if "include_preprocessing" in inspect.signature(constructor).parameters:
        options["include_preprocessing"] = True
    model = constructor(**options)
    if expects_pixel_values(model):
        return for_unit_images(model, name=f"{name}_backbone")
    module = _application_module(constructor)
    inputs = keras.Input(input_shape, name="images")
    x = ApplicationPreprocessing(module, name="pixel_values")(inputs) if module else inputs
    return keras.Model(inputs, model(x), name=f"{name}_backbone")


def _file_backbone(name: str, input_shape: tuple) -> keras.Model:
    path, _, function = name.rpartition(":")
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's file: say which and why, in one line
        raise ValueError(f"The backbone file {path} fails to import: {error!r}.") from None
    if Path(path).resolve() not in LOADED_FILES:
        LOADED_FILES.append(Path(path).resolve())
    build = getattr(module, function, None)
    if not callable(build):
        raise ValueError(f"{path} has no function {function!r} (from --backbone {name}).")
    model = build(input_shape)
    if not isinstance(model, keras.layers.Layer):
        raise ValueError(f"{name} must return a Keras model; it returned {type(model).__name__}.")
    return for_unit_images(model) if isinstance(model, keras.Model) else model


def _hub_backbone(preset: str, input_shape: tuple) -> keras.Model:
    import keras_hub

    try:
        hub_model = keras_hub.models.Backbone.from_preset(preset)
        # The preset's own scaling of pixel values (mean, std), not a guess.
        converter = keras_hub.layers.ImageConverter.from_preset(preset, image_size=None)
    except Exception as error:  # a preset that is not a backbone, in one line
        raise ValueError(f"The KerasHub preset {preset!r} cannot be loaded: {error}") from None
    inputs = keras.Input(input_shape, name="images")
    pixels = keras.layers.Rescaling(255.0, name="pixel_values")(inputs)
    features = hub_model(converter(pixels))
    pooled = (
        keras.layers.GlobalAveragePooling2D()(features) if len(features.shape) == 4 else features
    )
    return keras.Model(inputs, pooled, name=f"{preset}_backbone")


__all__ = [
    "ApplicationPreprocessing",
    "PACKAGE_BACKBONES",
    "application_names",
    "backbone",
    "check_backbone",
    "expects_pixel_values",
    "for_unit_images",
]
