"""Numbers as a command line writes them (`strict_float`, `strict_int`, and the argparse
types `INTEGER_FLAG`, `NUMBER_FLAG`): `1_0` is refused. Imports nothing of the package."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

# A number as it is written: no `_` between digits, which Python's `float` accepts.
_NUMBER = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|infinity|nan)", re.I)
_INTEGER = re.compile(r"[-+]?\d+")


def strict_float(text: str) -> float:
    """`text` as a float; a ValueError unless written as a plain number (not `1_0`).

    Args:
        text: a number such as `0.95`, `-1e-3` or `inf` (spaces around it allowed).

    Example:

    >>> strict_float(" 0.95"), strict_float("1e-3")
    (0.95, 0.001)
    >>> strict_float("1_0")
    Traceback (most recent call last):
    ...
    ValueError: '1_0' is not a number such as 0.95 or 1e-3.
    """
    if not _NUMBER.fullmatch(text.strip()):
        raise ValueError(f"{text!r} is not a number such as 0.95 or 1e-3.")
    return float(text)


def strict_int(text: str) -> int:
    """`text` as an int, refused (ValueError) unless digits with an optional sign.

    Example:

    >>> strict_int(" 4096"), strict_int("-1")
    (4096, -1)
    >>> strict_int("1_0")
    Traceback (most recent call last):
    ...
    ValueError: '1_0' is not an integer such as 4096.
    """
    if not _INTEGER.fullmatch(text.strip()):
        raise ValueError(f"{text!r} is not an integer such as 4096.")
    return int(text)


def number_flag(read: Callable[[str], float], example: str) -> Callable[[str], float]:
    """An argparse type that reads a number as `read` does, naming `example` when it cannot.

    Example:

    >>> number_flag(strict_int, "an integer such as 4096")("1_0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer such as 4096; got '1_0'
    """

    def number(text: str) -> float:
        try:
            return read(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {example}; got {text!r}") from None

    return number


# The argparse types of an integer flag and of a number flag.
INTEGER_FLAG = number_flag(strict_int, "an integer such as 4096")
NUMBER_FLAG = number_flag(strict_float, "a number such as 0.95 or 1e-3")

__all__ = ["INTEGER_FLAG", "NUMBER_FLAG", "number_flag", "strict_float", "strict_int"]
