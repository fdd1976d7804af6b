"""Encoders: the paper's MLP for the synthetic experiment, a small CNN for images on a CPU."""

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

    The default widths give their 10-100-500-500-500-500-100-10 network.

    Example:

    >>> encoder = mlp_encoder(10, 10)
    >>> encoder.count_params()
    854210
    """
    inputs = keras.Input((input_dim,), name="observations")
    x = inputs
    for units in hidden_units:
        x = keras.layers.Dense(units)(x)
        x = keras.layers.LeakyReLU(negative_slope)(x)
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
