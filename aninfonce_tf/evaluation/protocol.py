"""The evaluator protocol: what `EvaluationCallback` and the runner call on every
evaluator. Details: docs/method.md#the-evaluator-protocol"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

# A Lambda_hat dimension below this fraction of the median is counted as low: the shape
# that tells a learned temperature with a few free dimensions from a graded Lambda_hat.
LOW_CONCENTRATION_FRACTION = 0.1


@runtime_checkable
class Evaluator(Protocol):
    """Scores a model on held-out data; any object with these two methods is one.

    Example:

    >>> class Alignment:
    ...     lower_is_better = frozenset({"alignment"})
    ...     def evaluate(self, model, progress=None):
    ...         return {"alignment": 0.25}
    ...     def score_names(self, anisotropic):
    ...         return {"alignment"}
    >>> isinstance(Alignment(), Evaluator), takes_argument(Alignment(), "progress")
    (True, True)
    """

    def evaluate(self, model: Any) -> dict[str, Any]:
        """Scores `model`.

        Args:
            model: the model to score, typically a `ContrastiveModel`.

        Returns:
            `{score name: value}`: numbers, lists of numbers or dicts (`outer/inner`).
        """
        ...

    def score_names(self, anisotropic: bool) -> set[str]:
        """The scalar scores `evaluate` returns, which `--stop-at` may name.

        Args:
            anisotropic: whether the model learns a per-dimension Lambda_hat.

        Returns:
            The names, nested ones as `outer/inner`.
        """
        ...


def takes_argument(evaluator: Evaluator, name: str) -> bool:
    """Whether `evaluator.evaluate` takes the argument `name` (or `**kwargs`).

    Example:

    >>> class Quiet:
    ...     def evaluate(self, model):
    ...         return {}
    >>> takes_argument(Quiet(), "progress")
    False
    """
    try:
        parameters = inspect.signature(evaluator.evaluate).parameters.values()
    except (TypeError, ValueError):  # a callable without a signature Python can read
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in parameters)


def level_stages(progress: Callable[[str], None] | None, level: str) -> Callable[[str], None]:
    """The `progress` of one level: `stage` -> `progress("level: stage")` (or nothing).

    Example:

    >>> stages = []
    >>> level_stages(stages.append, "backbone")("features")
    >>> stages
    ['backbone: features']
    """

    def stage(text: str) -> None:
        if progress is not None:
            progress(f"{level}: {text}")

    return stage


def concentration_scores(model) -> dict[str, Any]:
    """A model's `lambda_hat` and `lambda_hat_low_dimensions`, the entries below
    `LOW_CONCENTRATION_FRACTION` of their median; empty for a model without one.

    Example:

    >>> class Scaling:
    ...     concentration = np.array([0.12, 40.0, 41.0, 60.0])
    >>> class Model:
    ...     scaling = Scaling()
    >>> concentration_scores(Model())["lambda_hat_low_dimensions"]
    1
    """
    if getattr(model, "scaling", None) is None:
        return {}
    learned = np.asarray(model.scaling.concentration, "float64")
    if getattr(model.scaling, "tied", False):
        return {"lambda_hat": learned.tolist()}
    finite = bool(np.all(np.isfinite(learned)))
    low = int(np.sum(learned < LOW_CONCENTRATION_FRACTION * np.median(learned))) if finite else None
    return {"lambda_hat": learned.tolist(), "lambda_hat_low_dimensions": low}


__all__ = [
    "LOW_CONCENTRATION_FRACTION",
    "Evaluator",
    "concentration_scores",
    "level_stages",
    "takes_argument",
]
