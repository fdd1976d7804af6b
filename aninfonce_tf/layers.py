"""Keras layers of the contrastive head: Lambda_hat, sphere, alignment, projection head."""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from aninfonce_tf import functional, memory
from aninfonce_tf.errors import check_flag, is_integer, is_number

PARAMETRIZATIONS = ("softplus", "exp")
# Concentrations are inverse temperatures: outside this range the scaled embeddings
# overflow or vanish in float32 within a few steps.
CONCENTRATION_RANGE = (1e-6, 1e6)
MAX_INITIAL_NOISE = 3.0
# Bytes per dimension of a DiagonalScaling: three float64 arrays while it is built, then
# the float32 variable, its gradient and Adam's two moments.
_SCALING_BYTES = 3 * 8 + memory.STATE_COPIES * 4


def _inverse(parametrization: str, value: np.ndarray) -> np.ndarray:
    if parametrization == "exp":
        return np.log(value)
    # softplus^-1(y) = log(expm1(y)), written stably for large y.
    return value + np.log(-np.expm1(-value))


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class DiagonalScaling(keras.layers.Layer):
    """Multiplies embeddings by sqrt(Lambda_hat), trainable. Details: docs/method.md#the-loss-family

    Args:
        initial_concentration: positive float, or one value per dimension.
        trainable: `False` gives a fixed Lambda.
        parametrization: `"softplus"` or `"exp"`.
        initial_noise: standard deviation of Gaussian noise added to theta at the start.
        seed: seed of that noise.
        tied: one value shared by every dimension (`losses.IsotropicAnInfoNCE`).

    Example:

    >>> scaling = DiagonalScaling(initial_concentration=[4.0, 9.0])
    >>> [round(float(v), 3) for v in scaling(np.ones((1, 2), "float32"))[0]]
    [2.0, 3.0]
    >>> tied = DiagonalScaling(4.0, tied=True)
    >>> [round(float(v), 3) for v in tied(np.ones((1, 3), "float32"))[0]]
    [2.0, 2.0, 2.0]
    """

    def __init__(
        self,
        initial_concentration: float | Sequence[float] = 1.0,
        trainable: bool = True,
        parametrization: str = "softplus",
        initial_noise: float = 0.0,
        seed: int | None = None,
        tied: bool = False,
        **kwargs,
    ):
        kwargs.setdefault("dtype", "float32")
        super().__init__(trainable=trainable, **kwargs)
        items = (
            initial_concentration
            if isinstance(initial_concentration, (list, tuple, np.ndarray))
            else [initial_concentration]
        )
        all_numbers = all(is_number(v) for v in np.ravel(np.asarray(items, dtype=object)))
        values = np.asarray(initial_concentration if all_numbers else np.nan, dtype="float64")
        low, high = CONCENTRATION_RANGE
        if values.ndim > 1 or not np.all((values >= low) & (values <= high)):
            raise ValueError(
                "`initial_concentration` must be a positive float or a 1-D sequence of "
                f"positive floats, each in [{low}, {high}]; got {initial_concentration!r}."
            )
        if not (is_number(initial_noise) and 0 <= initial_noise <= MAX_INITIAL_NOISE):
            raise ValueError(
                f"`initial_noise` must be a number in [0, {MAX_INITIAL_NOISE}] (the standard "
                f"deviation of the start's log); got {initial_noise!r}."
            )
        if parametrization not in PARAMETRIZATIONS:
            raise ValueError(
                f"Unknown `parametrization` {parametrization!r}; expected one of {PARAMETRIZATIONS}."
            )
        self.initial_concentration = (
            float(values) if values.ndim == 0 else [float(v) for v in values]
        )
        self.parametrization = parametrization
        self.initial_noise = float(initial_noise)
        if seed is not None and not (is_integer(seed) and seed >= 0):
            raise ValueError(f"`seed` must be None or a non-negative integer; got {seed!r}.")
        self.seed = None if seed is None else int(seed)
        self.tied = check_flag("tied", tied)
        if self.tied and values.ndim == 1:
            raise ValueError(
                "A `tied` DiagonalScaling learns one value: give `initial_concentration` as "
                f"one float; got {initial_concentration!r}."
            )

    def build(self, input_shape):
        dim = input_shape[-1]
        if dim is None:
            raise ValueError("`DiagonalScaling` needs a known last dimension.")
        if np.ndim(self.initial_concentration) == 1 and len(self.initial_concentration) != dim:
            raise ValueError(
                f"`initial_concentration` has {len(self.initial_concentration)} values for "
                f"embeddings of dimension {dim}."
            )
        self.dim = dim
        size = 1 if self.tied else dim
        memory.check_fits(
            size * _SCALING_BYTES,
            f"A DiagonalScaling of {size} dimensions",
            "give the encoder fewer outputs, or pass `tied=True` (one value)",
        )
        values = np.broadcast_to(np.asarray(self.initial_concentration, "float64"), (size,))
        theta = _inverse(self.parametrization, values)
        if self.initial_noise:
            theta = theta + self.initial_noise * np.random.default_rng(self.seed).standard_normal(
                size
            )
        self.theta = self.add_weight(
            name="theta",
            shape=(size,),
            initializer=keras.initializers.Constant(theta.astype("float32")),
            trainable=self.trainable,
        )

    @property
    def concentration(self):
        """The current Lambda_hat, shape `[d]`."""
        positive = ops.exp if self.parametrization == "exp" else ops.softplus
        values = positive(self.theta)
        return ops.broadcast_to(values, (self.dim,)) if self.tied else values

    def call(self, z):
        width = z.shape[-1]
        if width is not None and width != self.dim:
            raise ValueError(
                f"This DiagonalScaling was built for embeddings of width {self.dim} and is "
                f"called on embeddings of width {width}: a Lambda_hat holds one value per "
                "embedding dimension; pass a new `DiagonalScaling` for this width."
            )
        return ops.cast(z, self.compute_dtype) * ops.sqrt(self.concentration)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            initial_concentration=self.initial_concentration,
            parametrization=self.parametrization,
            initial_noise=self.initial_noise,
            seed=self.seed,
            tied=self.tied,
        )
        return config


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class SphereNormalization(keras.layers.Layer):
    """L2-normalises the last axis in float32 (zero vectors stay zero).

    Example:

    >>> [float(v) for v in SphereNormalization()(np.array([[3.0, 4.0]], "float32"))[0]]
    [0.6000000238418579, 0.800000011920929]
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)

    def call(self, z):
        return functional.l2_normalize(z)

    def compute_output_shape(self, input_shape):
        return input_shape


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class LinearAlignment(keras.layers.Layer):
    """Multiplies embeddings by a fixed `[d, d]` matrix, the slow-feature alignment.

    Example:

    >>> alignment = LinearAlignment()
    >>> z = np.array([[1.0, 2.0]], "float32")
    >>> [float(v) for v in alignment(z)[0]]
    [1.0, 2.0]
    >>> alignment.set_matrix([[0.0, 1.0], [1.0, 0.0]])
    >>> [float(v) for v in alignment(z)[0]]
    [2.0, 1.0]
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("dtype", "float32")
        # Never trained, whatever `trainable` a model sets (and saves in configs).
        kwargs.pop("trainable", None)
        super().__init__(trainable=False, **kwargs)

    def build(self, input_shape):
        dim = input_shape[-1]
        if dim is None:
            raise ValueError("`LinearAlignment` needs a known last dimension.")
        memory.check_fits(
            dim * dim * 4, f"A LinearAlignment of {dim} dimensions", "give it a narrower embedding"
        )
        self.matrix = self.add_weight(
            name="matrix", shape=(dim, dim), initializer="identity", trainable=False
        )

    def set_matrix(self, matrix) -> None:
        """Sets the finite `[d, d]` matrix embeddings are multiplied by (on the right)."""
        matrix = np.asarray(matrix, dtype="float64")
        dim = self.matrix.shape[0] if self.built else None
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or dim not in (None, len(matrix)):
            expected = f"[{dim}, {dim}]" if dim else "square [d, d]"
            raise ValueError(f"`matrix` must be {expected}; got shape {matrix.shape}.")
        if not np.isfinite(matrix).all():
            raise ValueError("`matrix` must be finite; it holds NaN or infinite values.")
        if not self.built:
            self.build((None, len(matrix)))
        self.matrix.assign(matrix.astype(self.matrix.dtype))

    def call(self, z):
        return ops.matmul(ops.cast(z, self.compute_dtype), self.matrix)

    def compute_output_shape(self, input_shape):
        return input_shape


def batch_normalization(synchronized: bool = False, **kwargs) -> keras.layers.BatchNormalization:
    """Batch norm as SimCLR's ResNets (momentum 0.9, epsilon 1e-5); `synchronized`: all replicas.

    Example:

    >>> layer = batch_normalization()
    >>> layer.momentum, layer.epsilon
    (0.9, 1e-05)
    """
    return keras.layers.BatchNormalization(
        momentum=0.9, epsilon=1e-5, synchronized=synchronized, **kwargs
    )


def projection_head(
    hidden_units: Sequence[int],
    output_dim: int,
    activation: str = "relu",
    batch_norm: bool = False,
    synchronized_batch_norm: bool = False,
    name: str = "projector",
    kernel_initializer: str | keras.initializers.Initializer = "glorot_uniform",
) -> keras.Sequential:
    """SimCLR's projection head: Dense-activation blocks, then a linear output layer.

    Args:
        hidden_units: widths of the hidden layers.
        output_dim: width of the output.
        activation: of the hidden layers.
        batch_norm: SimCLR's ImageNet head: batch norm after each bias-free Dense.
        synchronized_batch_norm: its statistics over every replica.
        name: of the head.
        kernel_initializer: of every Dense layer (default Glorot uniform).

    Example:

    >>> head = projection_head([64], 16)
    >>> tuple(head(np.zeros((2, 32), "float32")).shape)
    (2, 16)
    >>> [type(layer).__name__ for layer in projection_head([64], 16, batch_norm=True).layers]
    ['Dense', 'BatchNormalization', 'Activation', 'Dense', 'BatchNormalization']
    """

    listed = (isinstance(hidden_units, np.ndarray) and hidden_units.ndim == 1) or (
        isinstance(hidden_units, Sequence) and not isinstance(hidden_units, str)
    )
    widths = [*hidden_units, output_dim] if listed else None
    if not (widths and all(is_integer(units) and units >= 1 for units in widths)):
        raise ValueError(
            "`hidden_units` must be a list of positive widths and `output_dim` a positive "
            f"width; got hidden_units={hidden_units!r}, output_dim={output_dim!r}."
        )
    check_flag("batch_norm", batch_norm)
    check_flag("synchronized_batch_norm", synchronized_batch_norm)

    def dense(units, **kwargs):
        # Copied per layer: one unseeded instance draws the same values at every call.
        initializer = kernel_initializer
        if isinstance(initializer, keras.initializers.Initializer):
            initializer = initializer.from_config(initializer.get_config())
        return keras.layers.Dense(int(units), kernel_initializer=initializer, **kwargs)

    if not batch_norm:
        blocks = [dense(units, activation=activation) for units in hidden_units]
        return keras.Sequential([*blocks, dense(output_dim)], name=name)
    layers = []
    for units in hidden_units:
        layers += [
            dense(units, use_bias=False),
            batch_normalization(synchronized_batch_norm),
            keras.layers.Activation(activation),
        ]
    layers += [
        dense(output_dim, use_bias=False),
        batch_normalization(synchronized_batch_norm, center=False),
    ]
    return keras.Sequential(layers, name=name)
