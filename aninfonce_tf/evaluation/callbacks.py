"""The Keras callbacks: the one that runs evaluators during `fit`, logs to TensorBoard
and stops at score targets; the stop at a non-finite loss; the logger of the training
metrics and Lambda_hat.

TensorBoard tags, each against the training step: `scores/<name>` (evaluations: the
evaluators' `summary_scores`, or every scalar score with `log_all_scores`),
`train/<metric>` (training metrics, the learning rate), `lambda_hat/<dimension>` and
the histogram `lambda_hat`.

The evaluators live beside their metrics (`identifiability.IdentifiabilityEvaluator`,
`probes.ImageProbeEvaluator`, `latents.LatentEvaluator`), each a `protocol.Evaluator`:
the runner checks `--stop-at` against their `score_names` before training, and a
target's direction against their `lower_is_better` (`targets`).
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf.checkpoints import replace_atomically
from aninfonce_tf.evaluation.protocol import Evaluator
from aninfonce_tf.evaluation.targets import Target, resolve_targets, targets_reached
from aninfonce_tf.optimizers import averaged_weights

# Seconds from which the line of an evaluation also gives the time it took.
LONG_EVALUATION = 5.0


def scalar_items(scores: dict, prefix: str = "") -> dict[str, float]:
    """The scalar entries of a scores dict, block scores flattened to `block_r2/NAME`."""
    flat = {}
    for name, value in scores.items():
        if isinstance(value, dict):
            flat.update(scalar_items(value, prefix=f"{prefix}{name}/"))
        elif np.isscalar(value):
            flat[prefix + name] = float(value)
    return flat


def evaluate_all(
    evaluators: Sequence[Evaluator], model, progress: Callable[[int], None] | None = None
) -> dict:
    """The scores of every evaluator, merged into one dict; `progress(i)`, if given, is
    called before the i-th evaluator (from 0) runs.

    Raises:
        ValueError: when two evaluators return the same score name.
    """
    scores = {}
    for index, evaluator in enumerate(evaluators):
        if progress:
            progress(index)
        result = evaluator.evaluate(model)
        shared = sorted(set(scores) & set(result))
        if shared:
            raise ValueError(f"Two evaluators both return the scores {shared}.")
        scores.update(result)
    return scores


def summary_scores(evaluators: Sequence[Evaluator]) -> frozenset[str] | None:
    """The scores every evaluator names as its summary (`summary_scores`), None when
    one names none.

    Example:

    >>> from aninfonce_tf.evaluation.probes import ImageProbeEvaluator
    >>> sorted(summary_scores([ImageProbeEvaluator([], [], [], [], [], {})]))[:2]
    ['backbone/augmentation_readout', 'backbone/class_accuracy']
    """
    declared = [getattr(evaluator, "summary_scores", None) for evaluator in evaluators]
    return None if None in declared else frozenset().union(*declared)


class EvaluationCallback(keras.callbacks.Callback):
    """Runs evaluators every `every_epochs` epochs, adds their scalars to the logs
    (so `History` and later callbacks see them) and writes their summary scores to
    TensorBoard under `log_dir`, as `scores/<name>` against the training step.

    The summary scores are those an evaluator names in its optional `summary_scores`
    (a few per level of the features: `IdentifiabilityEvaluator`'s linear R^2, MCC,
    block R^2 and Lambda_hat's rank correlation; `ImageProbeEvaluator`'s class
    accuracies and readout; `LatentEvaluator`'s block R^2, class accuracy and
    readout); with `log_all_scores`, or when an evaluator names none, every scalar
    score is written.

    It calls each evaluator's `evaluate` (`protocol.Evaluator`); the numbers of
    nested dicts are logged as `outer/inner`. With `stop_at`, training stops at
    the first evaluation where every named score reaches its target (`Target`, in
    the score's direction); `reached`
    then holds that step and the seconds since training began (evaluations
    included). Each `history` entry has the step, those seconds and the scores;
    with `history_path` the history is also written there as JSON after every
    evaluation, so that a resumed run can restore it (`history`).
    When the model's optimizer keeps a moving average of the weights
    (`use_ema=True`), the evaluators score the average, which is what `fit` leaves
    in the model at its end (also when `stop_at` ends it early).

    Args:
        evaluators: one evaluator or a list of them.
        log_dir: TensorBoard directory; None logs nothing to disk. Its event file
            is created at the first evaluation.
        every_epochs: evaluation period in epochs.
        steps_per_epoch: to log against the training step rather than the epoch.
        stop_at: `{score name: target}`, names as in the logs (`mcc`,
            `linear_r2`, `block_r2/low`, ...), as `parse_targets` returns them; a
            plain number is a target in the score's natural direction.
        history: evaluations restored from an interrupted run; their seconds
            carry on into this one's.
        history_path: JSON file the history is written to.
        verbose: 1 prints a line per evaluation: the step and the scores in
            `columns` (and its time, from `LONG_EVALUATION` seconds), after Keras'
            progress line of that epoch; on a terminal, while it runs, a line
            rewritten in place names the step and the evaluator at work.
        columns: the scores that line shows (default: every scalar score).
        scores_in_logs: add the scores to the logs (with `/` as `_`: what
            `History`, `EarlyStopping` and Keras' progress bar see).
        log_all_scores: write every scalar score to TensorBoard, not only the
            summary scores.

    Example:

    >>> class Constant:
    ...     def evaluate(self, model):
    ...         return {"mcc": 0.9, "block_r2": {"low": 0.75}}
    >>> from aninfonce_tf.evaluation.targets import parse_targets
    >>> callback = EvaluationCallback(Constant(), stop_at=parse_targets("mcc>=0.5"), verbose=1)
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> x = np.zeros((4, 2), "float32")
    >>> _ = model.fit(x, x[:, :1], epochs=5, callbacks=[callback], verbose=0)
    step 1 evaluation: mcc 0.900, block_r2/low 0.750
    >>> callback.reached["step"], len(callback.history)
    (1, 1)
    """

    def __init__(
        self,
        evaluators: Evaluator | Sequence[Evaluator],
        log_dir: str | None = None,
        every_epochs: int = 1,
        steps_per_epoch: int = 1,
        stop_at: Mapping[str, Target | float] | None = None,
        history: list[dict] | None = None,
        history_path: str | None = None,
        verbose: int = 0,
        columns: Sequence[str] = (),
        scores_in_logs: bool = True,
        log_all_scores: bool = False,
    ):
        super().__init__()
        self.evaluators = (
            list(evaluators) if isinstance(evaluators, (list, tuple)) else [evaluators]
        )
        self.every_epochs = every_epochs
        self.steps_per_epoch = steps_per_epoch
        self.stop_at = resolve_targets(stop_at or {}, self.evaluators)
        self.log_dir = log_dir
        self.history: list[dict] = list(history or [])
        self.history_path = history_path
        self.verbose = verbose
        self.columns = tuple(columns)
        self.scores_in_logs = scores_in_logs
        self.tensorboard_scores = None if log_all_scores else summary_scores(self.evaluators)
        self.reached: dict | None = None
        self._start = time.perf_counter()
        self._writer = None
        self._line = None  # the last evaluation's line, printed after Keras' progress line

    def on_train_begin(self, logs=None):
        restored_seconds = self.history[-1]["seconds"] if self.history else 0.0
        self._start = time.perf_counter() - restored_seconds

    def on_epoch_begin(self, epoch, logs=None):
        self._print_line()

    def on_train_end(self, logs=None):
        self._print_line()

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every_epochs:
            return
        if logs and not np.isfinite(logs.get("loss", 0.0)):
            return  # diverged: nothing to score (see `StopOnNonFiniteLoss`)
        step = (epoch + 1) * self.steps_per_epoch
        started = time.perf_counter()
        on_terminal = self.verbose and sys.stdout.isatty()
        progress = functools.partial(self._note, step) if on_terminal else None
        with averaged_weights(self.model):
            scores = evaluate_all(self.evaluators, self.model, progress)
        if progress:
            sys.stdout.write("\r\x1b[K")  # the line Keras' progress bar redraws
        evaluated = time.perf_counter() - started
        seconds = round(time.perf_counter() - self._start, 1)
        self.history.append({"step": step, "seconds": seconds, **scores})
        if self.history_path:
            # Atomic, so that a kill never leaves half a file for the resumed run to read;
            # NaN stays NaN (Python's JSON), so that a resumed curve equals an uninterrupted one.
            text = json.dumps(self.history)
            replace_atomically(self.history_path, lambda temporary: temporary.write_text(text))
        scalars = scalar_items(scores)
        if self.verbose:
            shown = [name for name in self.columns or scalars if name in scalars]
            values = ", ".join(f"{name} {format_score(scalars[name])}" for name in shown)
            took = f" (evaluated in {evaluated:.0f} s)" if evaluated >= LONG_EVALUATION else ""
            self._line = f"step {step} evaluation: {values}{took}"
        self._check_targets(scalars, step)
        if logs is not None and self.scores_in_logs:
            logs.update({name.replace("/", "_"): value for name, value in scalars.items()})
        if self.log_dir is None:
            return
        if self._writer is None:  # no event file without an evaluation
            self._writer = tf.summary.create_file_writer(self.log_dir)
        with self._writer.as_default(step=step):
            for name, value in scalars.items():
                if self.tensorboard_scores is None or name in self.tensorboard_scores:
                    tf.summary.scalar(f"scores/{name}", value)
        self._writer.flush()

    def _note(self, step: int, index: int) -> None:
        """Over the terminal's current line, within 100 columns: `evaluating step 500:
        ImageProbeEvaluator (1 of 2) ...` (the count with several evaluators)."""
        count = len(self.evaluators)
        name = type(self.evaluators[index]).__name__
        name += f" ({index + 1} of {count})" if count > 1 else ""
        print(f"\r{f'evaluating step {step}: {name} ...'[:99]}\x1b[K", end="", flush=True)

    def _print_line(self):
        if self._line:
            print(self._line, flush=True)
            self._line = None

    def _check_targets(self, scalars: dict[str, float], step: int) -> None:
        unknown = sorted(set(self.stop_at) - set(scalars))
        if unknown:
            raise ValueError(f"`stop_at` names unknown scores {unknown}; known: {sorted(scalars)}.")
        if targets_reached(scalars, self.stop_at, self.evaluators):
            self.reached = {"step": step, "seconds": self.history[-1]["seconds"]}
            self.model.stop_training = True


def format_score(value: float) -> str:
    """A score as the console shows it: 3 decimals, or 3 significant digits beyond
    +-1000 (an R^2 of a feature that predicts nothing can be -1.2e+03).

    Example:

    >>> format_score(0.91234), format_score(-1234.5), format_score(float("nan"))
    ('0.912', '-1.23e+03', 'nan')
    """
    return f"{value:.3f}" if not math.isfinite(value) or abs(value) < 1000 else f"{value:.3g}"


class _StepCounter(keras.callbacks.Callback):
    """A callback that counts the training steps as `EvaluationCallback` and
    `checkpoints.Backup` do, from the batches of `fit`: `step` is the steps trained by
    the end of the last batch, the epochs before the current one (`initial_epoch`
    included) times the steps per epoch, plus its batches. `optimizer.iterations`
    would lag: a `LossScaleOptimizer` does not advance it on a step it skips for
    overflow. (When `fit` does not know the length of its epochs, the epochs before
    this `fit` are not counted.)"""

    def __init__(self):
        super().__init__()
        self.step = self._epoch_start = 0

    def on_epoch_begin(self, epoch, logs=None):
        steps_per_epoch = (self.params or {}).get("steps")
        self._epoch_start = self.step = epoch * steps_per_epoch if steps_per_epoch else self.step

    def on_train_batch_end(self, batch, logs=None):
        self.step = self._epoch_start + batch + 1  # the last step of the compiled call


class StopOnNonFiniteLoss(_StepCounter):
    """Stops training at the first step whose loss is NaN or infinite and says which
    step it was (`stopped_at`, also printed). With `steps_per_execution` k, Keras
    reports every k steps: `stopped_at` is then the last step of the call in which
    the loss turned non-finite. Steps are counted from the batches of `fit`, skipped
    ones (loss-scale overflow) included.

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
        super().on_train_batch_end(batch, logs)
        loss = (logs or {}).get("loss")
        if loss is None or np.isfinite(float(loss)):
            return
        self.stopped_at = self.step
        print(f"Non-finite loss ({float(loss)}) by step {self.stopped_at}: training stopped.")
        self.model.stop_training = True


class TrainingLogger(_StepCounter):
    """Writes the training metrics to TensorBoard every `every_steps` steps, against
    the training step, and keeps the loss of each write in `history`.

    Each write holds, as `train/<name>`: for the model's `keras.metrics.Mean`
    metrics (the loss; `ContrastiveModel`'s accuracy, alignment and uniformity) their
    mean over the steps since the last write, for the other metrics (Lambda_hat's
    minimum and maximum) their latest value, and the learning rate; for a model with
    a Lambda_hat (`ContrastiveModel.concentration`), each dimension of it
    (`lambda_hat/0`, `lambda_hat/1`, ...) and their histogram (`lambda_hat`). Steps
    are counted from the batches of `fit`, as `EvaluationCallback` counts them.

    Keras reports the metrics once per call of the compiled step: with
    `steps_per_execution` k, a write falls on the first report at or after each
    multiple of `every_steps`. Keras resets its metrics at each epoch, so a mean
    spans at most the epoch: choose `every_steps` dividing the epoch's steps (the
    runner does, `RunConfig.log_steps`).

    Args:
        log_dir: TensorBoard directory, its event file created at the first write;
            None writes nothing to disk.
        every_steps: steps between two writes.
        history: writes restored from an interrupted run (`{"step", "loss"}` each).
        history_path: JSON file `history` is written to at the end of each epoch.

    Example:

    >>> logger = TrainingLogger(every_steps=2)
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> x = np.ones((8, 2), "float32")
    >>> _ = model.fit(x, x[:, :1], batch_size=2, epochs=2, callbacks=[logger], verbose=0)
    >>> [point["step"] for point in logger.history]
    [2, 4, 6, 8]
    """

    def __init__(
        self,
        log_dir: str | None = None,
        every_steps: int = 50,
        history: list[dict] | None = None,
        history_path: str | None = None,
    ):
        super().__init__()
        if isinstance(every_steps, bool) or not isinstance(every_steps, int) or every_steps < 1:
            raise ValueError(f"`every_steps` must be a positive int; got {every_steps!r}.")
        self.log_dir = log_dir
        self.every_steps = every_steps
        self.history: list[dict] = list(history or [])
        self.history_path = history_path
        self._writer = None
        self._written_count = 0
        self._written: dict[str, float] = {}

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self._written_count, self._written = 0, {}

    def on_train_batch_end(self, batch, logs=None):
        reported = self.step
        super().on_train_batch_end(batch, logs)
        count, step = batch + 1, self.step  # steps into the epoch and in all
        crossed = step // self.every_steps > reported // self.every_steps
        if not crossed or not logs:
            return
        latest = {name: float(np.asarray(value).reshape(-1)[0]) for name, value in logs.items()}
        means = {m.name for m in self.model.metrics if isinstance(m, keras.metrics.Mean)}
        values = dict(latest)
        for name in means & set(self._written):
            # Keras' value is the mean since the epoch began: this write's own steps.
            total = latest[name] * count - self._written[name] * self._written_count
            values[name] = total / (count - self._written_count)
        self._written, self._written_count = latest, count
        if "loss" in values:
            self.history.append({"step": step, "loss": values["loss"]})
        if self.log_dir is not None:
            self._write(step, values)

    def _write(self, step: int, values: dict[str, float]) -> None:
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self.log_dir)
        learning_rate = keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)
        with self._writer.as_default(step=step):
            for name, value in {**values, "learning_rate": float(learning_rate)}.items():
                tf.summary.scalar(f"train/{name}", value)
            concentration = getattr(self.model, "concentration", None)
            if concentration is not None:
                concentration = keras.ops.convert_to_numpy(concentration)
                for index, value in enumerate(concentration):
                    tf.summary.scalar(f"lambda_hat/{index}", value)
                tf.summary.histogram("lambda_hat", concentration)

    def on_epoch_end(self, epoch, logs=None):
        if self.history_path:
            text = json.dumps(self.history)
            replace_atomically(self.history_path, lambda temporary: temporary.write_text(text))
        if self._writer is not None:
            self._writer.flush()
