"""Features of a model over many inputs, computed in batches.

Example:

>>> batched_features(lambda x: 2 * x, np.arange(5.0)[:, None], batch_size=2).ravel().tolist()
[0.0, 2.0, 4.0, 6.0, 8.0]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def batched_features(function: Callable, inputs, batch_size: int) -> np.ndarray:
    """`function` applied to `inputs` in batches of `batch_size` rows, the outputs
    concatenated as one float32 NumPy array."""
    return np.concatenate(
        [
            np.asarray(function(inputs[start : start + batch_size]), "float32")
            for start in range(0, len(inputs), batch_size)
        ]
    )


__all__ = ["batched_features"]
