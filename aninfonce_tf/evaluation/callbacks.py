"""The Keras callbacks: the one that runs evaluators during `fit`, logs to TensorBoard
and stops at score targets; the stop at a non-finite loss; the Lambda_hat logger.

The evaluators live beside their metrics (`identifiability.IdentifiabilityEvaluator`,
`probes.ImageProbeEvaluator`). An evaluator is any object with `evaluate(model) -> {score name: value}` and
`score_names(anisotropic) -> set[str]`, the scalar names (nested as `outer/inner`)
it returns for an AnInfoNCE (`anisotropic=True`) or InfoNCE model: the runner
checks `--stop-at` against them before training.
"""

from __future__ import annotations

import json
import time

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf.checkpoints import replace_atomically
from aninfonce_tf.models import averaged_weights


def scalar_items(scores: dict, prefix: str = "") -> dict[str, float]:
    """The scalar entries of a scores dict, block scores flattened to `block_r2/NAME`."""
    flat = {}
    for name, value in scores.items():
        if isinstance(value, dict):
            flat.update(scalar_items(value, prefix=f"{prefix}{name}/"))
        elif np.isscalar(value):
            flat[prefix + name] = float(value)
    return flat


def parse_targets(text: str) -> dict[str, float]:
    """`"mcc=0.95,linear_r2=0.99"` -> `{"mcc": 0.95, "linear_r2": 0.99}` ("" -> {})."""
    targets = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        try:
            targets[name.strip()] = float(value)
        except ValueError:
            raise ValueError(
                f"`stop_at` must look like 'mcc=0.95,linear_r2=0.99'; got {text!r}."
            ) from None
    return targets


def evaluate_all(evaluators, model) -> dict:
    """The scores of every evaluator, merged into one dict.

    Raises:
        ValueError: when two evaluators return the same score name.
    """
    scores = {}
    for evaluator in evaluators:
        result = evaluator.evaluate(model)
        shared = sorted(set(scores) & set(result))
        if shared:
            raise ValueError(f"Two evaluators both return the scores {shared}.")
        scores.update(result)
    return scores


def check_targets(stop_at: dict[str, float], evaluators, variants: dict[str, bool]) -> None:
    """Raises `ValueError`, before any training, when a `stop_at` target names a score
    that an evaluator does not produce for one of the variants.

    Args:
        stop_at: `{score name: target}`.
        evaluators: objects with `score_names(anisotropic) -> set[str]`.
        variants: `{variant name: anisotropic}`; only AnInfoNCE variants have a
            Lambda_hat to score.
    """
    for name, anisotropic in variants.items():
        known = set().union(*(e.score_names(anisotropic) for e in evaluators))
        unknown = sorted(set(stop_at) - known)
        if unknown:
            raise ValueError(
                f"`stop_at` names {unknown}, which the loss variant {name!r} does not "
                f"produce; its scores: {sorted(known)}. Stop at scores every variant has, "
                "or train the variant alone (--losses)."
            )


class EvaluationCallback(keras.callbacks.Callback):
    """Runs evaluators every `every_epochs` epochs, adds their scalars to the logs
    (so `History` and later callbacks see them) and writes them to TensorBoard
    under `log_dir`.

    An evaluator is any object with `evaluate(model) -> {name: number, list or
    dict of numbers}`; nested dicts are logged as `outer/inner`. With `stop_at`,
    training stops at the first evaluation where every named score reaches its
    target; `reached` then holds that step and the seconds since training began
    (evaluations included). Each `history` entry has the step, those seconds and
    the scores; with `history_path` the history is also written there as JSON
    after every evaluation, so that a resumed run can restore it (`history`).
    When the model's optimizer keeps a moving average of the weights
    (`use_ema=True`), the evaluators score the average, which is what `fit` leaves
    in the model at its end (also when `stop_at` ends it early).

    Args:
        evaluators: one evaluator or a list of them.
        log_dir: TensorBoard directory; None logs nothing to disk.
        every_epochs: evaluation period in epochs.
        steps_per_epoch: to log against the training step rather than the epoch.
        stop_at: `{score name: target}`, names as in the logs (`mcc`,
            `linear_r2`, `block_r2/low`, ...).
        history: evaluations restored from an interrupted run; their seconds
            carry on into this one's.
        history_path: JSON file the history is written to.

    Example:

    >>> class Constant:
    ...     def evaluate(self, model):
    ...         return {"mcc": 0.9}
    >>> callback = EvaluationCallback(Constant(), stop_at={"mcc": 0.5})
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> x = np.zeros((4, 2), "float32")
    >>> _ = model.fit(x, x[:, :1], epochs=5, callbacks=[callback], verbose=0)
    >>> callback.reached["step"], len(callback.history)
    (1, 1)
    """

    def __init__(
        self,
        evaluators,
        log_dir: str | None = None,
        every_epochs: int = 1,
        steps_per_epoch: int = 1,
        stop_at: dict[str, float] | None = None,
        history: list[dict] | None = None,
        history_path: str | None = None,
    ):
        super().__init__()
        self.evaluators = (
            list(evaluators) if isinstance(evaluators, (list, tuple)) else [evaluators]
        )
        self.every_epochs = every_epochs
        self.steps_per_epoch = steps_per_epoch
        self.stop_at = dict(stop_at or {})
        self.writer = tf.summary.create_file_writer(log_dir) if log_dir else None
        self.history: list[dict] = list(history or [])
        self.history_path = history_path
        self.reached: dict | None = None
        self._start = time.perf_counter()

    def on_train_begin(self, logs=None):
        restored_seconds = self.history[-1]["seconds"] if self.history else 0.0
        self._start = time.perf_counter() - restored_seconds

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every_epochs:
            return
        if logs and not np.isfinite(logs.get("loss", 0.0)):
            return  # diverged: nothing to score (see `StopOnNonFiniteLoss`)
        with averaged_weights(self.model):
            scores = evaluate_all(self.evaluators, self.model)
        step = (epoch + 1) * self.steps_per_epoch
        seconds = round(time.perf_counter() - self._start, 1)
        self.history.append({"step": step, "seconds": seconds, **scores})
        if self.history_path:
            # Atomic, so that a kill never leaves half a file for the resumed run to read;
            # NaN stays NaN (Python's JSON), so that a resumed curve equals an uninterrupted one.
            text = json.dumps(self.history)
            replace_atomically(self.history_path, lambda temporary: temporary.write_text(text))
        scalars = scalar_items(scores)
        self._check_targets(scalars, step)
        if logs is not None:
            logs.update({name.replace("/", "_"): value for name, value in scalars.items()})
        if self.writer is None:
            return
        with self.writer.as_default(step=step):
            for name, value in scalars.items():
                tf.summary.scalar(name, value)
        self.writer.flush()

    def _check_targets(self, scalars: dict[str, float], step: int) -> None:
        unknown = sorted(set(self.stop_at) - set(scalars))
        if unknown:
            raise ValueError(f"`stop_at` names unknown scores {unknown}; known: {sorted(scalars)}.")
        if self.stop_at and all(scalars[k] >= v for k, v in self.stop_at.items()):
            self.reached = {"step": step, "seconds": self.history[-1]["seconds"]}
            self.model.stop_training = True


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training at the first step whose loss is NaN or infinite and says which
    step it was (`stopped_at`, also printed). With `steps_per_execution` k, Keras
    reports every k steps: `stopped_at` is then the last step of the call in which
    the loss turned non-finite.

    Example:

    >>> callback = StopOnNonFiniteLoss()
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile(keras.optimizers.SGD(1e30), "mse")
    >>> x = np.ones((64, 1), "float32") * 1e10
    >>> _ = model.fit(x, x, batch_size=8, callbacks=[callback], verbose=0)  # doctest: +ELLIPSIS
    Non-finite loss ... by step ...: training stopped.
    >>> callback.stopped_at is not None
    True
    """

    def __init__(self):
        super().__init__()
        self.stopped_at: int | None = None

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None or np.isfinite(float(loss)):
            return
        self.stopped_at = int(self.model.optimizer.iterations.numpy())
        print(f"Non-finite loss ({float(loss)}) by step {self.stopped_at}: training stopped.")
        self.model.stop_training = True


class ConcentrationLogger(keras.callbacks.Callback):
    """Writes every dimension of a `ContrastiveModel`'s Lambda_hat to TensorBoard
    (`lambda_hat/0`, `lambda_hat/1`, ... and a histogram) at the end of each epoch.

    Args:
        log_dir: TensorBoard directory.
        steps_per_epoch: to log against the training step rather than the epoch.
    """

    def __init__(self, log_dir: str, steps_per_epoch: int = 1):
        super().__init__()
        self.writer = tf.summary.create_file_writer(log_dir)
        self.steps_per_epoch = steps_per_epoch

    def on_epoch_end(self, epoch, logs=None):
        concentration = getattr(self.model, "concentration", None)
        if concentration is None:
            return
        with self.writer.as_default(step=(epoch + 1) * self.steps_per_epoch):
            for index, value in enumerate(np.asarray(concentration)):
                tf.summary.scalar(f"lambda_hat/{index}", value)
            tf.summary.histogram("lambda_hat", concentration)
        self.writer.flush()
