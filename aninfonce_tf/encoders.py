"""Encoders: the paper's MLP for the synthetic experiment."""

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
