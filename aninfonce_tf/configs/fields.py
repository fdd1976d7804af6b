"""The checks and parsers of config field values that every experiment's `validate`
shares: a lower bound, comma-separated layer widths, comma-separated lists.

`configs.base` re-exports them.
"""

from __future__ import annotations

import typing

if typing.TYPE_CHECKING:
    from aninfonce_tf.configs.base import RunConfig


def split_list(text: str, kind: type = str) -> list:
    """`"a, b,c"` -> `["a", "b", "c"]`, each converted by `kind`; empty items dropped."""
    return [kind(item.strip()) for item in text.split(",") if item.strip()]


def require_at_least(config: RunConfig, name: str, minimum: int, why: str = "") -> None:
    """Raises `ValueError` naming the field `name` of `config` when it is below `minimum`
    (`why`: what the minimum is for).

    Example:

    >>> from aninfonce_tf.configs.base import RunConfig
    >>> require_at_least(RunConfig(steps=0), "steps", 1, "0 trains nothing")
    Traceback (most recent call last):
    ...
    ValueError: `steps` must be at least 1 (0 trains nothing); got 0.
    """
    value = getattr(config, name)
    if value < minimum:
        reason = f" ({why})" if why else ""
        raise ValueError(f"`{name}` must be at least {minimum}{reason}; got {value}.")


def layer_widths(config: RunConfig, name: str, allow_empty: bool = False) -> list[int]:
    """The comma-separated layer widths of the field `name` of `config`.

    Raises:
        ValueError: naming the field unless every width is a positive integer and,
            unless `allow_empty`, there is one.
    """
    text = getattr(config, name)
    try:
        widths = split_list(text, int)
    except ValueError:
        widths = None
    if widths is None or any(width < 1 for width in widths) or not (widths or allow_empty):
        raise ValueError(
            f"`{name}` must be comma-separated positive widths such as '64,32'"
            f"{' (or empty)' if allow_empty else ''}; got {text!r}."
        )
    return widths


__all__ = ["layer_widths", "require_at_least", "split_list"]
