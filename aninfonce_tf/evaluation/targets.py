"""Score targets (`--stop-at`): parsed, given directions, checked before training, tested
after each evaluation. Details: docs/runner.md#checks-before-and-during-training"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence

from aninfonce_tf.errors import is_integer
from aninfonce_tf.evaluation.protocol import Evaluator
from aninfonce_tf.parsing import strict_float

# A target as `--stop-at` writes it: a score name, `>=`, `<=` or `=`, and a number.
_TARGET = re.compile(r"(?P<name>[^<>=]+?)\s*(?P<direction>[<>]?=)\s*(?P<value>[^<>=]+)")


@dataclasses.dataclass(frozen=True)
class Target:
    """A score's target: reached at `value` or beyond in its `direction` (`">="`, `"<="`, `"="`).

    Example:

    >>> Target(0.05, "<="), parse_targets("mcc=0.9")["mcc"]
    (Target(value=0.05, direction='<='), Target(value=0.9, direction='='))
    """

    value: float
    direction: str = "="

    def __post_init__(self):
        if self.direction not in (">=", "<=", "="):
            raise ValueError(f"`direction` must be '>=', '<=' or '='; got {self.direction!r}.")


def parse_targets(text: str) -> dict[str, Target]:
    """`--stop-at` text as `{score: Target}` ("" -> {}).

    Example:

    >>> parse_targets("mcc=0.95, lambda_relative_error<=0.1")
    {'mcc': Target(value=0.95, direction='='), \
'lambda_relative_error': Target(value=0.1, direction='<=')}
    """
    targets = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _TARGET.fullmatch(item)
        try:
            name, target = match["name"], Target(strict_float(match["value"]), match["direction"])
        except (TypeError, ValueError):  # no match, or not a number
            raise ValueError(
                "`stop_at` must look like 'mcc=0.95,linear_r2>=0.99,lambda_relative_error<=0.1' "
                f"(= in the score's own direction); got {text!r}."
            ) from None
        if not math.isfinite(target.value):
            raise ValueError(f"`stop_at` targets must be finite numbers; got {item!r}.")
        if name in targets:
            raise ValueError(
                f"`stop_at` gives {name!r} two targets ({text!r}): give each score one."
            )
        targets[name] = target
    return targets


def canonical_targets(targets: Mapping[str, Target]) -> str:
    """Parsed `--stop-at` targets in their one text form, which a resume compares.

    Example:

    >>> canonical_targets(parse_targets(" mcc = 0.950, linear_r2>=1"))
    'linear_r2>=1.0,mcc=0.95'
    """
    # + 0.0 turns -0.0 into 0.0, the same target.
    return ",".join(f"{name}{t.direction}{t.value + 0.0!r}" for name, t in sorted(targets.items()))


def natural_direction(name: str, evaluators: Sequence[Evaluator]) -> str | None:
    """`"<="` for `lower_is_better` scores, `">="` for other declared ones, else None.

    Example:

    >>> from aninfonce_tf.evaluation.identifiability import IdentifiabilityEvaluator
    >>> evaluator = IdentifiabilityEvaluator(np.zeros((4, 2)), np.zeros((4, 2)))
    >>> natural_direction("lambda_relative_error", [evaluator]), natural_direction("mcc", [evaluator])
    ('<=', '>=')
    """
    if _undirected(name, evaluators):
        return None
    declared = [getattr(evaluator, "lower_is_better", None) for evaluator in evaluators]
    if any(name in names for names in declared if names is not None):
        return "<="
    return ">=" if all(names is not None for names in declared) else None


def _undirected(name: str, evaluators: Sequence[Evaluator]) -> bool:
    return any(name in getattr(evaluator, "undirected_scores", ()) for evaluator in evaluators)


def resolve_targets(
    stop_at: Mapping[str, Target | float], evaluators: Sequence[Evaluator]
) -> dict[str, Target]:
    """`stop_at` with each `=` target in its score's `natural_direction` (or ValueError)."""
    resolved = {}
    for name, target in stop_at.items():
        if not isinstance(target, Target):
            target = Target(float(target))
        if not math.isfinite(target.value):
            raise ValueError(
                f"`stop_at` targets must be finite numbers; got {name}={target.value}."
            )
        if target.direction == "=":
            direction = natural_direction(name, evaluators)
            if direction is None:
                why = (
                    "neither higher nor lower is better for it (its evaluator's "
                    "`undirected_scores`)"
                    if _undirected(name, evaluators)
                    else "an evaluator does not say which of its scores are lower-is-better "
                    "(`lower_is_better`)"
                )
                raise ValueError(
                    f"`stop_at` target {name}={target.value} has no direction: {why}; write "
                    f"{name}>={target.value} or {name}<={target.value}."
                )
            target = Target(target.value, direction)
        resolved[name] = target
    return resolved


def targets_reached(scores: Mapping[str, float], targets: Mapping[str, Target]) -> bool:
    """Whether there are `targets` and `scores` reach every one (a NaN or missing: none).

    Example:

    >>> class Errors:
    ...     lower_is_better = frozenset({"error"})
    >>> targets = resolve_targets(parse_targets("error=0.1,accuracy=0.9"), [Errors()])
    >>> [targets_reached(s, targets) for s in ({"error": 0.2, "accuracy": 0.95},
    ...                                        {"error": 0.05, "accuracy": 0.95})]
    [False, True]
    """
    return bool(targets) and all(
        name in scores
        and (scores[name] >= t.value if t.direction == ">=" else scores[name] <= t.value)
        for name, t in targets.items()
    )


def check_stop_patience(patience, stop_at) -> int:
    """`patience`, the evaluations in a row at which the `stop_at` targets must hold, as
    an int; a `ValueError` unless it is a positive int, and 1 when there are no targets.

    Example:

    >>> check_stop_patience(2, "mcc=0.95"), check_stop_patience(1, "")
    (2, 1)
    """
    if not (is_integer(patience) and patience >= 1):
        raise ValueError(f"`stop_patience` must be a positive int; got {patience!r}.")
    if patience > 1 and not stop_at:
        raise ValueError(
            f"`stop_patience` ({patience}) counts evaluations at the `stop_at` targets: give "
            "`stop_at` too, or leave `stop_patience` at 1."
        )
    return int(patience)


def check_targets(
    stop_at: Mapping[str, Target | float],
    evaluators: Sequence[Evaluator],
    variants: dict[str, bool],
) -> dict[str, Target]:
    """`stop_at` in its directions (`resolve_targets`), checked before any training.

    Args:
        stop_at: `{score name: target}`, as `parse_targets` returns it.
        evaluators: the `Evaluator`s whose `score_names` the targets may name.
        variants: `{variant name: anisotropic}` (whether it has a per-dimension Lambda_hat).

    Raises:
        ValueError: for a score a variant lacks, a final-only score, or no direction.
    """
    for name, anisotropic in variants.items():
        final = set().union(
            *(e.score_names(anisotropic) for e in evaluators if getattr(e, "final_only", False))
        )
        if set(stop_at) & final:
            raise ValueError(
                f"`stop_at` names {sorted(set(stop_at) & final)}, which are scored at the "
                "final step only, after training: stop at the scores of every evaluation "
                "instead."
            )
        known = set().union(*(e.score_names(anisotropic) for e in evaluators))
        unknown = sorted(set(stop_at) - known)
        if unknown:
            raise ValueError(
                f"`stop_at` names {unknown}, which the loss variant {name!r} does not "
                f"produce; its scores: {sorted(known)}. Stop at scores every variant has, "
                "or train the variant alone (--losses)."
            )
    return resolve_targets(stop_at, evaluators)


__all__ = [
    "Target",
    "canonical_targets",
    "check_stop_patience",
    "check_targets",
    "natural_direction",
    "parse_targets",
    "resolve_targets",
    "targets_reached",
]
