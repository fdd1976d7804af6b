"""What a run prints while it trains, within `CONSOLE_WIDTH` columns.
Details: docs/runner.md#outputs"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import IO

import keras

# The columns every printed line and table keeps to.
CONSOLE_WIDTH = 100
# Seconds from which the line of an evaluation also gives the time it took.
LONG_EVALUATION = 5.0
# The training metrics Keras' line per epoch shows; TensorBoard has them all
# (`callbacks.TrainingLogger`).
EPOCH_METRICS = ("loss", "accuracy")


def on_terminal(stream: IO | None = None) -> bool:
    """Whether `stream` (default: `sys.stdout`) is a terminal (False: cannot say)."""
    stream = sys.stdout if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


def format_score(value: float) -> str:
    """A score as the console shows it: 3 decimals, or 3 significant digits beyond +-1000.

    Example:

    >>> format_score(0.91234), format_score(-1234.5), format_score(float("nan"))
    ('0.912', '-1.23e+03', 'nan')
    """
    return f"{value:.3f}" if not math.isfinite(value) or abs(value) < 1000 else f"{value:.3g}"


def evaluation_line(
    step: int,
    scalars: Mapping[str, float],
    columns: Sequence[str] = (),
    seconds: float = 0.0,
    width: int = CONSOLE_WIDTH,
) -> str:
    """`step 500 evaluation: mcc 0.912, ...`, broken after a comma within `width`.

    Example:

    >>> print(evaluation_line(500, {"mcc": 0.91234, "linear_r2": 0.5, "block_r2/low": 0.25}, width=40))
    step 500 evaluation: mcc 0.912,
      linear_r2 0.500, block_r2/low 0.250
    """
    shown = [name for name in columns or scalars if name in scalars]
    items = [f"{name} {format_score(scalars[name])}" for name in shown]
    items = [f"{item}," for item in items[:-1]] + items[-1:]
    if seconds >= LONG_EVALUATION:
        items.append(f"(evaluated in {seconds:.0f} s)")
    lines = [f"step {step} evaluation:"]
    for item in items:
        if len(lines[-1]) + 1 + len(item) > width:
            lines.append(f"  {item}")
        else:
            lines[-1] += f" {item}"
    return "\n".join(lines)


def note(step: int, evaluators: Sequence, index: int, stage: str = "") -> None:
    """Writes `evaluating step 500: LatentEvaluator (1 of 2), ...` over the current line."""
    count = len(evaluators)
    text = f"evaluating step {step}: {type(evaluators[index]).__name__}"
    text += f" ({index + 1} of {count})" if count > 1 else ""
    text += f", {stage}" if stage else ""
    print(f"\r{f'{text} ...'[: CONSOLE_WIDTH - 1]}\x1b[K", end="", flush=True)


def clear_note() -> None:
    """Clears the line `note` wrote (the line Keras' progress bar redraws)."""
    sys.stdout.write("\r\x1b[K")


class EpochLine(keras.callbacks.ProgbarLogger):
    """Keras' progress bar and epoch line with only the training `metrics` (put it last).

    Example:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse", metrics=["mae"])
    >>> x = np.zeros((4, 2), "float32")
    >>> _ = model.fit(x, x[:, :1], callbacks=[EpochLine(["loss"])], verbose=2)  # doctest: +ELLIPSIS
    1/1 - ... - loss: 0.0000e+00
    """

    def __init__(self, metrics: Sequence[str] = EPOCH_METRICS):
        super().__init__()
        self.metrics = tuple(metrics)

    def _shown(self, logs: Mapping | None) -> dict:
        return {name: value for name, value in (logs or {}).items() if name in self.metrics}

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, self._shown(logs))

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, self._shown(logs))


__all__ = [
    "CONSOLE_WIDTH",
    "EPOCH_METRICS",
    "EpochLine",
    "LONG_EVALUATION",
    "clear_note",
    "evaluation_line",
    "format_score",
    "note",
    "on_terminal",
]
