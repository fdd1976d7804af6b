"""What a `ContrastiveModel` step logs (loss, alignment, uniformity, ...) as Keras metrics."""

from __future__ import annotations

import keras
from keras import ops

# What every step logs as means, and Lambda_hat's extremes (with a Lambda_hat); a
# loss's own statistics take other names.
MEAN_NAMES = ("loss", "alignment", "uniformity")
CONCENTRATION_NAMES = ("lambda_min", "lambda_max")
RESERVED_LOG_NAMES = MEAN_NAMES + CONCENTRATION_NAMES


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class LatestValue(keras.metrics.Metric):
    """A metric that reports the last value it was given (of the first replica).

    Example:

    >>> metric = LatestValue(name="lambda_max")
    >>> metric.update_state(3.0); metric.update_state(5.0)
    >>> float(metric.result())
    5.0
    """

    def __init__(self, name: str = "latest_value", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.value = self.add_variable(
            shape=(), initializer="zeros", name="value", aggregation="only_first_replica"
        )

    def update_state(self, value):
        self.value.assign(ops.cast(value, self.dtype))

    def result(self):
        return ops.convert_to_tensor(self.value)


class StepMetrics:
    """The metrics of a model's training and test steps.

    Args:
        concentration: whether the model holds a Lambda_hat (`lambda_min`, `lambda_max`).

    Example:

    >>> metrics = StepMetrics(concentration=False)
    >>> metrics.track_statistics(("accuracy",))
    >>> logs = metrics.update({"loss": 2.0, "alignment": 0.1, "uniformity": -1.0, "accuracy": 0.5})
    >>> sorted(logs), float(logs["loss"])
    (['accuracy', 'alignment', 'loss', 'uniformity'], 2.0)
    """

    def __init__(self, concentration: bool):
        self.built_in = {name: keras.metrics.Mean(name=name) for name in MEAN_NAMES}
        if concentration:
            self.built_in.update({name: LatestValue(name=name) for name in CONCENTRATION_NAMES})
        self.statistics = {}

    def track_statistics(self, stat_names) -> None:
        """A mean metric per statistic of the compiled loss, replacing earlier ones."""
        reserved = set(stat_names) & set(RESERVED_LOG_NAMES)
        if reserved:
            raise ValueError(
                f"The loss's `stat_names` use {sorted(reserved)}, which the model logs "
                "itself; rename those statistics."
            )
        if list(self.statistics) != list(stat_names):
            self.statistics = {name: keras.metrics.Mean(name=name) for name in stat_names}

    @property
    def metrics(self) -> list[keras.metrics.Metric]:
        return [*self.built_in.values(), *self.statistics.values()]

    def update(self, values: dict, concentration=None, multi_worker: bool = False) -> dict:
        """Updates the metrics with one step's `values` and returns the logs."""
        if concentration is not None:
            values = dict(values, lambda_min=ops.min(concentration))
            values["lambda_max"] = ops.max(concentration)
        metrics = {**self.built_in, **self.statistics}
        for name, value in values.items():
            metrics[name].update_state(value)
        logs = {name: metric.result() for name, metric in metrics.items()}
        if multi_worker:
            # Keras 3 reduces step outputs of a multi-worker strategy along axis 0,
            # which fails on scalars (tensorflow/tensorflow#72388): give them one.
            logs = {name: ops.reshape(value, [1]) for name, value in logs.items()}
        return logs


def refuse_compile_metrics(compile_kwargs: dict) -> None:
    """Raises `ValueError` for `compile(metrics=...)`: the steps log their own."""
    for name in ("metrics", "weighted_metrics"):
        if compile_kwargs.get(name):
            raise ValueError(
                f"`{name}` cannot be used: Keras metrics compare outputs with targets, "
                "which contrastive pairs do not have. The logs already hold `loss`, "
                "`accuracy` (how often the positive ranks first), `alignment` and "
                "`uniformity`; to score the representation during `fit`, pass an "
                "evaluator to `aninfonce_tf.EvaluationCallback`."
            )


__all__ = ["RESERVED_LOG_NAMES", "LatestValue", "StepMetrics", "refuse_compile_metrics"]
