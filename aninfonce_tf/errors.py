"""The error types every tier raises (`UsageError`, `OutOfSpace`, `Diverged`,
`WorkerLost`) and the tests of a value their checks share (`is_integer`, `is_number`,
`is_finite`, `check_flag`); this module imports nothing of the package."""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import numpy as np


def is_integer(value) -> bool:
    """Whether `value` is an integer (Python's or NumPy's) and not a bool.

    Example:

    >>> [is_integer(v) for v in (3, np.int64(3), True, 3.0, "3")]
    [True, True, False, False, False]
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_flag(name: str, value) -> bool:
    """`value` as a bool (or 0 or 1), or a `TypeError` naming `name` (text such as "no"
    reads as True).

    Example:

    >>> check_flag("normalize", False)
    False
    >>> check_flag("normalize", "no")
    Traceback (most recent call last):
    ...
    TypeError: `normalize` must be True or False; got 'no'.
    """
    if not (isinstance(value, (bool, np.bool_)) or (is_integer(value) and value in (0, 1))):
        raise TypeError(f"`{name}` must be True or False; got {value!r}.")
    return bool(value)


def is_number(value) -> bool:
    """Whether `value` is a real number (Python's, NumPy's, or a 0-d array or tensor of
    one) and not a bool.

    Example:

    >>> [is_number(v) for v in (0.5, np.float32(0.5), 2, np.array(0.5), True, np.True_, "0.5")]
    [True, True, True, True, False, False, False]
    """
    if isinstance(value, numbers.Real):
        return not isinstance(value, bool)
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is None or shape is None or len(shape) != 0:
        return False
    return np.dtype(getattr(dtype, "as_numpy_dtype", dtype)).kind in ("i", "u", "f")


def is_finite(value) -> bool:
    """Whether `value` is a number (`is_number`) that is finite as a float: not NaN, not
    infinite, not a whole number beyond a float.

    Example:

    >>> [is_finite(v) for v in (0.5, np.float32(2), 10**400, float("nan"), True)]
    [True, True, False, False, False]
    """
    try:
        return is_number(value) and math.isfinite(float(value))
    except OverflowError:
        return False


class UsageError(ValueError):
    """A setting that cannot run, found before training: one line, exit status 2.

    Example:

    >>> raise UsageError("`steps` (0) must be a positive multiple of `eval_every` (500).")
    Traceback (most recent call last):
    ...
    aninfonce_tf.errors.UsageError: `steps` (0) must be a positive multiple of `eval_every` (500).
    """


class OutOfSpace(UsageError):
    """A write the disk has no room for: exit status 1. Details: docs/runner.md#a-full-disk

    Args:
        path: the file (or directory) that was to be written.
        needed: the bytes it needs (an estimate; 0: unknown).
        free: the bytes free on its disk.

    Example:

    >>> print(OutOfSpace(Path("run/aninfonce/model.keras"), 2_000_000, 1_000))
    No space left in run/aninfonce for model.keras: it needs about 2,000,000 bytes and 1,000 are free. Free space or pass another --out; the run resumes.
    >>> error = OutOfSpace(Path("run/seed_0/results.json"), 0, 512)
    >>> isinstance(error, UsageError), str(error)
    (True, 'No space left in run/seed_0 for results.json: 512 are free. Free space or pass another --out; the run resumes.')
    """

    def __init__(self, path: Path, needed: int, free: int):
        self.path, self.needed, self.free = path, needed, free
        room = f"it needs about {needed:,} bytes and {free:,} are" if needed else f"{free:,} are"
        super().__init__(
            f"No space left in {path.parent} for {path.name}: {room} free. Free space or "
            "pass another --out; the run resumes."
        )


class Diverged(RuntimeError):
    """A run that finished with a variant stopped at a non-finite loss: exit status 1.

    Example:

    >>> print(Diverged("the loss of aninfonce turned non-finite by step 10"))
    the loss of aninfonce turned non-finite by step 10
    """


class WorkerLost(RuntimeError):
    """A worker of a multi-worker run that stopped answering: exit status 1.

    Example:

    >>> isinstance(WorkerLost("worker 1 is gone"), RuntimeError)
    True
    """


__all__ = [
    "Diverged",
    "OutOfSpace",
    "UsageError",
    "WorkerLost",
    "check_flag",
    "is_finite",
    "is_integer",
    "is_number",
]
