"""Encoders: the paper's MLP for the synthetic experiment, a small CNN for images on a
CPU, ResNet-18 with the CIFAR stem and ResNet-50 for the image recipes."""

from __future__ import annotations

from collections.abc import Sequence

import keras

PAPER_MLP_HIDDEN = (100, 500, 500, 500, 500, 100)


def mlp_encoder(
    input_dim: int,
    output_dim: int,
    hidden_units: Sequence[int] = PAPER_MLP_HIDDEN,
    negative_slope: float = 0.01,
    name: str = "mlp_encoder",
) -> keras.Model:
    """The authors' synthetic encoder: Dense + LeakyReLU blocks and a linear output.

    The default widths give their 10-100-500-500-500-500-100-10 network. The hidden
    layers are named `hidden_1`, `hidden_2`, ... and the output layer `features`.

    Example:

    >>> encoder = mlp_encoder(10, 10)
    >>> encoder.count_params()
    854210
    """
    inputs = keras.Input((input_dim,), name="observations")
    x = inputs
    for index, units in enumerate(hidden_units, start=1):
        x = keras.layers.Dense(units, name=f"hidden_{index}")(x)
        x = keras.layers.LeakyReLU(negative_slope, name=f"hidden_{index}_activation")(x)
    outputs = keras.layers.Dense(output_dim, name="features")(x)
    return keras.Model(inputs, outputs, name=name)


def small_cnn(
    input_shape: Sequence[int],
    output_dim: int,
    filters: Sequence[int] = (32, 64),
    dense_units: int = 256,
    name: str = "small_cnn",
) -> keras.Model:
    """A CNN sized for a CPU: stride-2 3x3 convolutions with ReLU, a dense layer and
    a linear output.

    Example:

    >>> small_cnn((28, 28, 1), 10).count_params()
    824458
    """
    inputs = keras.Input(tuple(input_shape), name="observations")
    x = inputs
    for width in filters:
        x = keras.layers.Conv2D(width, 3, strides=2, padding="same", activation="relu")(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(dense_units, activation="relu")(x)
    outputs = keras.layers.Dense(output_dim, name="features")(x)
    return keras.Model(inputs, outputs, name=name)


def _batch_norm(synchronized: bool) -> keras.layers.Layer:
    # Synchronised across replicas when asked: per-replica statistics over a batch
    # holding both views of each image let the network tell positives apart.
    return keras.layers.BatchNormalization(synchronized=synchronized)


def resnet18_cifar(
    input_shape: Sequence[int] = (32, 32, 3),
    synchronized_batch_norm: bool = False,
    name: str = "resnet18_cifar",
) -> keras.Model:
    """ResNet-18 with the CIFAR stem (a 3x3 convolution, no max-pool), as SimCLR and
    SimSiam train on CIFAR10; global-average-pooled 512 features.

    Example:

    >>> resnet18_cifar().count_params()
    11178432
    """

    def block(x, filters: int, stride: int):
        shortcut = x
        x = keras.layers.Conv2D(filters, 3, stride, padding="same", use_bias=False)(x)
        x = keras.layers.ReLU()(_batch_norm(synchronized_batch_norm)(x))
        x = keras.layers.Conv2D(filters, 3, padding="same", use_bias=False)(x)
        x = _batch_norm(synchronized_batch_norm)(x)
        if stride != 1 or shortcut.shape[-1] != filters:
            shortcut = keras.layers.Conv2D(filters, 1, stride, use_bias=False)(shortcut)
            shortcut = _batch_norm(synchronized_batch_norm)(shortcut)
        return keras.layers.ReLU()(keras.layers.Add()([x, shortcut]))

    inputs = keras.Input(tuple(input_shape), name="observations")
    x = keras.layers.Conv2D(64, 3, padding="same", use_bias=False)(inputs)
    x = keras.layers.ReLU()(_batch_norm(synchronized_batch_norm)(x))
    for filters, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        x = block(x, filters, stride)
        x = block(x, filters, 1)
    outputs = keras.layers.GlobalAveragePooling2D(name="features")(x)
    return keras.Model(inputs, outputs, name=name)


def resnet50(
    input_shape: Sequence[int] = (224, 224, 3),
    synchronized_batch_norm: bool = False,
    name: str = "resnet50",
) -> keras.Model:
    """`keras.applications.ResNet50` without weights or top, average-pooled 2048
    features; its batch norms synchronised across replicas when asked."""
    base = keras.applications.ResNet50(
        include_top=False, weights=None, input_shape=tuple(input_shape), pooling="avg"
    )
    if not synchronized_batch_norm:
        return keras.Model(base.inputs, base.outputs, name=name)
    config = base.get_config()
    for layer in config["layers"]:
        if layer["class_name"] == "BatchNormalization":
            layer["config"]["synchronized"] = True
    synced = keras.Model.from_config(config)
    return keras.Model(synced.inputs, synced.outputs, name=name)
