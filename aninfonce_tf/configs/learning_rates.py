"""The learning rate of a base rate per batch: the scaling rules and their check.
Details: docs/method.md#the-image-experiments-probe-sets-and-schedule"""

from __future__ import annotations

import math

# How `base_learning_rate` sets the learning rate from the batch size B: linear,
# base x B / 256; sqrt, base x sqrt(B).
LEARNING_RATE_SCALINGS = ("linear", "sqrt")
# The published base rates of each rule; a base of one rule is refused under the other.
PUBLISHED_BASE_LEARNING_RATES = {"linear": (0.3, 0.03), "sqrt": (0.075,)}


def scaled_learning_rate(base: float, batch_size: int, scaling: str) -> float:
    """The learning rate of `base` at `batch_size` (`LEARNING_RATE_SCALINGS`).

    Example:

    >>> scaled_learning_rate(0.075, 1024, "sqrt"), scaled_learning_rate(0.3, 1024, "linear")
    (2.4, 1.2)
    """
    if scaling not in LEARNING_RATE_SCALINGS:
        raise ValueError(
            f"Unknown `learning_rate_scaling` {scaling!r}; expected one of "
            f"{LEARNING_RATE_SCALINGS}."
        )
    # A batch below 2 is refused by `RunConfig.validate`, which runs after this rule.
    return base * (math.sqrt(max(batch_size, 0)) if scaling == "sqrt" else batch_size / 256)


def check_learning_rate_scaling(base: float, batch_size: int, scaling: str) -> None:
    """Refuses a `scaling` without `base` or one that `base` was not tuned for.

    Example:

    >>> check_learning_rate_scaling(0.075, 1024, "linear")
    Traceback (most recent call last):
    ...
    ValueError: `learning_rate_scaling` linear with `base_learning_rate` 0.075, a base rate of the sqrt rule, sets the learning rate to 0.3 at batch_size 1024, where the sqrt rule gives 2.4: SimCLR's pairs are linear 0.3 x B / 256 and sqrt 0.075 x sqrt(B); pass --base-learning-rate for the linear rule too (e.g. 0.3).
    """
    if base == 0:
        if scaling != "linear":
            raise ValueError(
                f"`learning_rate_scaling` {scaling} does nothing without `base_learning_rate`: "
                "pass --base-learning-rate too, or leave --learning-rate-scaling out."
            )
        return
    others = [rule for rule in LEARNING_RATE_SCALINGS if rule != scaling]
    tuned_for = [
        rule
        for rule in others
        if any(math.isclose(base, tuned) for tuned in PUBLISHED_BASE_LEARNING_RATES[rule])
    ]
    if not tuned_for or any(
        math.isclose(base, tuned) for tuned in PUBLISHED_BASE_LEARNING_RATES.get(scaling, ())
    ):
        return
    rule = tuned_for[0]
    raise ValueError(
        f"`learning_rate_scaling` {scaling} with `base_learning_rate` {base:g}, a base rate "
        f"of the {rule} rule, sets the learning rate to "
        f"{scaled_learning_rate(base, batch_size, scaling):.3g} at batch_size {batch_size}, "
        f"where the {rule} rule gives {scaled_learning_rate(base, batch_size, rule):.3g}: "
        "SimCLR's pairs are linear 0.3 x B / 256 and sqrt 0.075 x sqrt(B); pass "
        f"--base-learning-rate for the {scaling} rule too (e.g. "
        f"{PUBLISHED_BASE_LEARNING_RATES[scaling][0]:g})."
    )


__all__ = [
    "LEARNING_RATE_SCALINGS",
    "PUBLISHED_BASE_LEARNING_RATES",
    "check_learning_rate_scaling",
    "scaled_learning_rate",
]
