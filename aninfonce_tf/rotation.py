"""A learned rotation of an embedding, whose angles Adam turns as fast for latents of
close concentration as for far ones. Details: docs/tuning.md (point 10)

Example:

>>> rotation = LearnedRotation()
>>> z = np.array([[1.0, 2.0, 3.0]], "float32")
>>> [float(v) for v in rotation(z)[0]]
[1.0, 2.0, 3.0]
>>> _ = rotation.angles.assign([np.pi / 2, 0.0, 0.0])
>>> [round(float(v), 5) + 0.0 for v in rotation(z)[0]]
[-2.0, 1.0, 3.0]
"""

from __future__ import annotations

import keras
import numpy as np
from keras import ops

from aninfonce_tf import memory
from aninfonce_tf.errors import is_number
from aninfonce_tf.optimizers import ROTATION_ANGLES

# exp(A) as (Taylor series of exp(A / 2^SQUARINGS) to order TAYLOR_ORDER)^(2^SQUARINGS),
# then one Newton-Schulz step towards the nearest orthogonal matrix: matmuls only.
# Accuracy: docs/tuning.md (point 10).
SQUARINGS = 6
TAYLOR_ORDER = 8
# The [d, d] matrices a forward and backward pass of the rotation keep.
KEPT_MATRICES = 20
# The largest `gain`: exp(A) above stays orthogonal in float32 for generators of norm
# up to about 100, and Adam's first step at a rate of 1e-2 gives norm sqrt(d (d - 1)).
MAX_GAIN = 100.0


def checked_gain(gain, name: str = "gain", allow_zero: bool = False) -> float:
    """`gain` as a float, or a `ValueError` naming `name` unless in (0, `MAX_GAIN`].

    Example:

    >>> checked_gain(6)
    6.0
    """
    number = float(gain) if is_number(gain) else float("nan")
    if allow_zero and number == 0:
        return 0.0
    if not (np.isfinite(number) and np.float32(number) > 0 and number <= MAX_GAIN):
        zero = ", or 0 (no rotation)" if allow_zero else ""
        raise ValueError(
            f"`{name}` must be a finite number above 0 and at most {MAX_GAIN:g}{zero}; got "
            f"{gain!r} (a larger gain turns the rotation so far in Adam's first steps that "
            "it is no longer orthogonal in float32, and the loss turns NaN)."
        )
    return number


def skew_index(dim: int) -> tuple[np.ndarray, np.ndarray]:
    """`(index, sign)`: where each of the `dim * (dim - 1) / 2` angles sits in a `[dim, dim]`
    skew matrix (positions into `[0, *angles]`), and its sign (+1 above the diagonal).

    Example:

    >>> index, sign = skew_index(3)
    >>> index.tolist(), sign.tolist()
    ([[0, 1, 2], [1, 0, 3], [2, 3, 0]], [[0.0, 1.0, 1.0], [-1.0, 0.0, 1.0], [-1.0, -1.0, 0.0]])
    """
    upper_rows, upper_columns = np.triu_indices(dim, k=1)
    index = np.zeros((dim, dim), "int32")
    index[upper_rows, upper_columns] = np.arange(1, len(upper_rows) + 1)
    index[upper_columns, upper_rows] = index[upper_rows, upper_columns]
    sign = np.triu(np.ones((dim, dim), "float32"), k=1)
    return index, sign - sign.T


def rotation_matrix(generator):
    """The `[d, d]` rotation exp(`generator`), in the generator's dtype.

    Args:
        generator: a `[d, d]` float tensor with `generator == -generator.T`.

    Example:

    >>> quarter = np.array([[0.0, np.pi / 2], [-np.pi / 2, 0.0]], "float32")
    >>> np.round(np.asarray(rotation_matrix(quarter)), 5) + 0.0
    array([[ 0.,  1.],
           [-1.,  0.]], dtype=float32)
    """
    generator = ops.convert_to_tensor(generator)
    scaled = generator / float(2**SQUARINGS)
    identity = ops.eye(ops.shape(generator)[0], dtype=generator.dtype)
    matrix, term = identity, identity
    for order in range(1, TAYLOR_ORDER + 1):
        term = ops.matmul(term, scaled) / float(order)
        matrix = matrix + term
    for _ in range(SQUARINGS):
        matrix = ops.matmul(matrix, matrix)
    return ops.matmul(matrix, 1.5 * identity - 0.5 * ops.matmul(ops.transpose(matrix), matrix))


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class LearnedRotation(keras.layers.Layer):
    """Multiplies features by a trainable rotation exp(A), the identity at the start: A
    skew-symmetric with `gain * angles[k]` above the diagonal, in float32.

    Args:
        gain: angle per unit of each variable, in (0, `MAX_GAIN`].

    Example:

    >>> rotation = LearnedRotation(gain=6.0)
    >>> z = np.eye(4, dtype="float32")
    >>> matrix = np.asarray(rotation(z))
    >>> bool(np.allclose(matrix, np.eye(4)))
    True
    >>> tuple(rotation.angles.shape)
    (6,)
    """

    def __init__(self, gain: float = 1.0, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.gain = checked_gain(gain)

    def build(self, input_shape):
        dim = input_shape[-1]
        if dim is None:
            raise ValueError("`LearnedRotation` needs a known last dimension.")
        memory.check_fits(
            KEPT_MATRICES * dim * dim * 4,
            f"A LearnedRotation of {dim} dimensions",
            "give it a narrower embedding",
        )
        self.index, self.sign = skew_index(dim)
        self.angles = self.add_weight(
            name=ROTATION_ANGLES, shape=(dim * (dim - 1) // 2,), initializer="zeros"
        )

    def matrix(self):
        """The `[d, d]` rotation features are multiplied by (on the right)."""
        angles = ops.cast(self.angles, "float32")
        angles = ops.concatenate([ops.zeros((1,), "float32"), angles])
        generator = self.gain * ops.take(angles, self.index) * self.sign
        return rotation_matrix(generator)

    def call(self, features):
        return ops.matmul(ops.cast(features, "float32"), self.matrix())

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "gain": self.gain}


__all__ = ["MAX_GAIN", "LearnedRotation", "checked_gain", "rotation_matrix", "skew_index"]
