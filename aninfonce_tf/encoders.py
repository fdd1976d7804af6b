"""The recipes' encoders. Details: docs/backbones.md#the-packages-encoders"""

from __future__ import annotations

from collections.abc import Sequence

import keras

from aninfonce_tf.layers import batch_normalization
from aninfonce_tf.rotation import LearnedRotation, checked_gain

PAPER_MLP_HIDDEN = (100, 500, 500, 500, 500, 100)


def mlp_encoder(
    input_dim: int,
    output_dim: int,
    hidden_units: Sequence[int] = PAPER_MLP_HIDDEN,
    negative_slope: float = 0.01,
    name: str = "mlp_encoder",
    rotation_gain: float = 0.0,
) -> keras.Model:
    """The authors' synthetic MLP encoder. Details: docs/backbones.md#the-packages-encoders

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
    if checked_gain(rotation_gain, "rotation_gain", allow_zero=True):
        outputs = LearnedRotation(rotation_gain, name="rotation")(outputs)
    return keras.Model(inputs, outputs, name=name)


def small_cnn(
    input_shape: Sequence[int],
    output_dim: int,
    filters: Sequence[int] = (32, 64),
    dense_units: int = 256,
    name: str = "small_cnn",
) -> keras.Model:
    """A CNN sized for a CPU: stride-2 3x3 convolutions, a dense layer, a linear output.

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


def pooled_cnn(
    input_shape: Sequence[int],
    output_dim: int,
    filters: Sequence[int] = (16, 32, 48),
    where_channels: int = 8,
    dense_units: int = 256,
    name: str = "pooled_cnn",
) -> keras.Model:
    """The rendered presets' CNN. Details: docs/backbones.md#the-packages-encoders

    Example:

    >>> pooled_cnn((32, 32, 3), 64).output_shape
    (None, 64)
    """
    inputs = keras.Input(tuple(input_shape), name="observations")
    x = inputs
    for index, width in enumerate(filters):
        stride = 2 if index < 2 else 1
        x = keras.layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False)(x)
        x = keras.layers.ReLU()(batch_normalization(False)(x))
    x = keras.layers.Concatenate()(
        [
            keras.layers.GlobalMaxPooling2D()(x),
            keras.layers.GlobalAveragePooling2D()(x),
            keras.layers.Flatten()(keras.layers.Conv2D(where_channels, 1)(x)),
        ]
    )
    x = keras.layers.Dense(dense_units, activation="relu")(x)
    outputs = keras.layers.Dense(output_dim, name="features")(x)
    return keras.Model(inputs, outputs, name=name)


def _conv(x, filters: int, kernel_size: int, stride: int = 1, initializer="glorot_uniform"):
    """A convolution without bias; strided ones pad symmetrically first, as PyTorch's."""
    if stride > 1:
        before = (kernel_size - 1) // 2
        x = keras.layers.ZeroPadding2D((before, kernel_size - 1 - before))(x)
    return keras.layers.Conv2D(
        filters,
        kernel_size,
        stride,
        padding="same" if stride == 1 else "valid",
        use_bias=False,
        kernel_initializer=initializer,
    )(x)


def resnet18_cifar(
    input_shape: Sequence[int] = (32, 32, 3),
    synchronized_batch_norm: bool = False,
    name: str = "resnet18_cifar",
) -> keras.Model:
    """ResNet-18 with the CIFAR stem; 512 features. Details: docs/backbones.md#the-packages-encoders

    Example:

    >>> resnet18_cifar().count_params()
    11178432
    """
    initializer = keras.initializers.VarianceScaling(2.0, "fan_out", "untruncated_normal")

    def conv_bn(x, filters: int, kernel_size: int, stride: int = 1):
        x = _conv(x, filters, kernel_size, stride, initializer)
        return batch_normalization(synchronized_batch_norm)(x)

    def block(x, filters: int, stride: int):
        shortcut = x
        x = keras.layers.ReLU()(conv_bn(x, filters, 3, stride))
        x = conv_bn(x, filters, 3)
        if stride != 1 or shortcut.shape[-1] != filters:
            shortcut = conv_bn(shortcut, filters, 1, stride)
        return keras.layers.ReLU()(keras.layers.Add()([x, shortcut]))

    inputs = keras.Input(tuple(input_shape), name="observations")
    x = keras.layers.ReLU()(conv_bn(inputs, 64, 3))
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
    """ResNet-50 v1.5 as in SimCLR; 2048 features. Details: docs/backbones.md#the-packages-encoders

    Example:

    >>> resnet50((32, 32, 3)).output_shape
    (None, 2048)
    """
    initializer = keras.initializers.VarianceScaling()

    def conv_bn(x, filters: int, kernel_size: int, stride: int = 1, last: bool = False):
        x = _conv(x, filters, kernel_size, stride, initializer)
        gamma = "zeros" if last else "ones"
        return batch_normalization(synchronized_batch_norm, gamma_initializer=gamma)(x)

    def bottleneck(x, filters: int, stride: int):
        shortcut = x
        if stride != 1 or x.shape[-1] != 4 * filters:
            shortcut = conv_bn(x, 4 * filters, 1, stride)
        x = keras.layers.ReLU()(conv_bn(x, filters, 1))
        x = keras.layers.ReLU()(conv_bn(x, filters, 3, stride))
        x = conv_bn(x, 4 * filters, 1, last=True)
        return keras.layers.ReLU()(keras.layers.Add()([x, shortcut]))

    inputs = keras.Input(tuple(input_shape), name="observations")
    x = keras.layers.ReLU()(conv_bn(inputs, 64, 7, 2))
    x = keras.layers.MaxPooling2D(3, 2, padding="same")(x)
    for filters, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        x = bottleneck(x, filters, stride)
        for _ in range(blocks - 1):
            x = bottleneck(x, filters, 1)
    outputs = keras.layers.GlobalAveragePooling2D(name="features")(x)
    return keras.Model(inputs, outputs, name=name)
