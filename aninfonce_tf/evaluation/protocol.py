"""The evaluator protocol: what `callbacks.EvaluationCallback` and the runner call on
every evaluator (`IdentifiabilityEvaluator`, `ImageProbeEvaluator`, `LatentEvaluator`
or one of your own).

Example:

>>> class Constant:
...     def evaluate(self, model):
...         return {"mcc": 0.9}
...     def score_names(self, anisotropic):
...         return {"mcc"}
>>> isinstance(Constant(), Evaluator)
True
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Evaluator(Protocol):
    """Scores a model on held-out data, during `fit` (`EvaluationCallback`) and after.

    Any object with these two methods is an evaluator; `isinstance(obj, Evaluator)`
    checks that it has them (not their signatures). An evaluator may also declare
    `lower_is_better`, the set of its score names of which lower is better (an
    error, a loss; every other is higher-is-better): a `--stop-at` target `name=value`
    then waits for a lower-is-better score to fall to `value`, for any other to rise to
    it. Without it, targets of its scores need a direction: `name>=value` or
    `name<=value` (`targets.natural_direction`), as do those of the scores it
    declares in `undirected_scores`, of which neither higher nor lower is better (the
    augmentation readout: one side of a trade-off, not a quality). It may also declare
    `summary_scores`, the few score names TensorBoard shows by default
    (`callbacks.EvaluationCallback`); without it, TensorBoard shows every score. And
    `classes`, the number of classes its class probes tell apart: the figures draw
    their chance line at 1 / `classes`.
    """

    def evaluate(self, model: Any) -> dict[str, Any]:
        """Scores `model`.

        Args:
            model: the model to score, typically a `ContrastiveModel`.

        Returns:
            `{score name: value}`, each value a number, a list of numbers or a dict
            of them; the numbers of nested dicts are logged as `outer/inner`.
        """
        ...

    def score_names(self, anisotropic: bool) -> set[str]:
        """The scalar scores `evaluate` returns, which `--stop-at` may name.

        Args:
            anisotropic: whether the model learns a per-dimension Lambda_hat
                (AnInfoNCE; not InfoNCE nor the learned isotropic control): the
                scores comparing it with the true concentrations exist only then.

        Returns:
            The names, nested ones as `outer/inner`.
        """
        ...


__all__ = ["Evaluator"]
