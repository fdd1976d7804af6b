"""The Keras callbacks of `fit`: evaluation, a stop at a non-finite loss, TensorBoard logs.
Details: docs/method.md#evaluation-during-training"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf.checkpoints import replace_atomically
from aninfonce_tf.errors import is_integer
from aninfonce_tf.evaluation import console
from aninfonce_tf.evaluation.protocol import Evaluator, takes_argument
from aninfonce_tf.evaluation.targets import (
    Target,
    check_stop_patience,
    parse_targets,
    resolve_targets,
    targets_reached,
)
from aninfonce_tf.optimizers import averaged_weights


def scalar_items(scores: dict, prefix: str = "") -> dict[str, float]:
    """The scalar entries of a scores dict, block scores flattened to `block_r2/NAME`."""
    flat = {}
    for name, value in scores.items():
        if isinstance(value, dict):
            flat.update(scalar_items(value, prefix=f"{prefix}{name}/"))
        elif np.isscalar(value):
            flat[prefix + name] = float(value)
    return flat


def write_history(path: str | Path, history: list[dict]) -> None:
    """Writes `history` to `path` as JSON, making its directory if missing; atomic, so that
    a kill never leaves half a file for the resumed run to read. NaN stays NaN (Python's
    JSON), so that a resumed curve equals an uninterrupted one."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(history)
    replace_atomically(path, lambda temporary: temporary.write_text(text))


def targets_held(
    history: Sequence[Mapping], targets: Mapping[str, Target], patience: int = 1
) -> bool:
    """Whether every one of `targets` is reached at each of the last `patience`
    evaluations of `history` (`EvaluationCallback.history`'s entries); a `ValueError`
    for a `patience` that is not a positive int.

    Example:

    >>> targets = parse_targets("mcc>=0.9")
    >>> history = [{"step": 100, "mcc": 0.95}, {"step": 200, "mcc": 0.92}]
    >>> targets_held(history, targets, 2), targets_held(history[:1] * 3, targets, 3)
    (True, True)
    >>> targets_held([{"step": 100, "mcc": 0.85}, *history], targets, 3)
    False
    """
    if not (is_integer(patience) and patience >= 1):
        raise ValueError(f"`patience` must be a positive int; got {patience!r}.")
    last = history[-patience:] if len(history) >= patience else ()
    return bool(last) and all(targets_reached(scalar_items(entry), targets) for entry in last)


def evaluate_all(
    evaluators: Sequence[Evaluator],
    model,
    progress: Callable[[int, str], None] | None = None,
    directory: str | None = None,
) -> dict:
    """Every evaluator's scores merged into one dict.

    Args:
        evaluators: run in order.
        model: the model they score.
        progress: called as `progress(i, stage)` ("" as the i-th evaluator starts).
        directory: given to the evaluators whose `evaluate` takes it.
    """
    scores = {}
    for index, evaluator in enumerate(evaluators):
        options = {}
        if directory is not None and takes_argument(evaluator, "directory"):
            options["directory"] = directory
        if progress is not None:
            progress(index, "")
            if takes_argument(evaluator, "progress"):
                options["progress"] = functools.partial(progress, index)
        scores = merge_scores(scores, evaluator.evaluate(model, **options))
    return scores


def merge_scores(scores: dict, more: dict, prefix: str = "") -> dict:
    """`scores` with the entries of `more`, dicts merged key by key (ValueError: a clash).

    Example:

    >>> merge_scores({"backbone": {"a": 1.0}}, {"backbone": {"b": 2.0}, "c": 3.0})
    {'backbone': {'a': 1.0, 'b': 2.0}, 'c': 3.0}
    """
    merged = dict(scores)
    for name, value in more.items():
        if isinstance(value, dict) and isinstance(merged.get(name), dict):
            merged[name] = merge_scores(merged[name], value, f"{prefix}{name}/")
        elif name in merged:
            raise ValueError(f"Two evaluators both return the score '{prefix}{name}'.")
        else:
            merged[name] = value
    return merged


def summary_scores(evaluators: Sequence[Evaluator]) -> frozenset[str] | None:
    """The scores the evaluators name as their summary; None when one names none.

    Example:

    >>> from aninfonce_tf.evaluation.probes import ImageProbeEvaluator
    >>> sorted(summary_scores([ImageProbeEvaluator([], [], [], [], [], {})]))[:2]
    ['backbone/augmentation_readout', 'backbone/class_accuracy']
    """
    declared = [getattr(evaluator, "summary_scores", None) for evaluator in evaluators]
    return None if None in declared else frozenset().union(*declared)


class StepCounter(keras.callbacks.Callback):
    """A callback whose `step` counts the training steps from the batches of `fit`."""

    def __init__(self):
        super().__init__()
        self.step = self._epoch_start = 0

    def on_epoch_begin(self, epoch, logs=None):
        steps_per_epoch = (self.params or {}).get("steps")
        self._epoch_start = self.step = epoch * steps_per_epoch if steps_per_epoch else self.step

    def on_train_batch_end(self, batch, logs=None):
        self.step = self._epoch_start + batch + 1  # the last step of the compiled call


class EvaluationCallback(StepCounter):
    """Runs evaluators every `every_epochs` epochs, logs their scores, stops at `stop_at`.

    Args:
        evaluators: one evaluator or a list of them.
        log_dir: TensorBoard directory; None logs nothing to disk.
        every_epochs: evaluation period in epochs.
        stop_at: `{score name: target}` as `parse_targets` returns them, or its text
            (`"mcc>=0.95"`).
        stop_patience: evaluations in a row at which every `stop_at` target must hold
            before training stops (1: the first that reaches them).
        history: evaluations restored from an interrupted run.
        history_path: JSON file the history is written to (its directory made if missing).
        verbose: 1 prints a line per evaluation, within 100 columns.
        columns: the scores that line shows (default: the summary scores).
        scores_in_logs: add the scores to the logs (`/` as `_`).
        log_all_scores: write every scalar score to TensorBoard, not only the summary.
        chief: whether this process runs the final-only evaluators (once, at the end).
        work_dir: the `directory` the final-only evaluators get for their large files.

    Example:

    >>> class Constant:
    ...     def evaluate(self, model):
    ...         return {"mcc": 0.9, "block_r2": {"low": 0.75}}
    >>> callback = EvaluationCallback(Constant(), stop_at="mcc>=0.5", verbose=1)
    >>> import keras
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
        stop_at: Mapping[str, Target | float] | str | None = None,
        stop_patience: int = 1,
        history: list[dict] | None = None,
        history_path: str | None = None,
        verbose: int = 0,
        columns: Sequence[str] = (),
        scores_in_logs: bool = True,
        log_all_scores: bool = False,
        chief: bool = True,
        work_dir: str | None = None,
    ):
        super().__init__()
        self.evaluators = (
            list(evaluators) if isinstance(evaluators, (list, tuple)) else [evaluators]
        )
        if not (is_integer(every_epochs) and every_epochs >= 1):
            raise ValueError(f"`every_epochs` must be a positive int; got {every_epochs!r}.")
        self.every_epochs = int(every_epochs)
        if isinstance(stop_at, str):
            stop_at = parse_targets(stop_at)
        self.stop_at = resolve_targets(stop_at or {}, self.evaluators)
        self.stop_patience = check_stop_patience(stop_patience, self.stop_at)
        self.log_dir = log_dir
        self.history: list[dict] = list(history or [])
        self.history_path = history_path
        self.verbose = verbose
        self.columns = tuple(columns)
        self._shown = None if columns else summary_scores(self.evaluators)
        self.scores_in_logs = scores_in_logs
        self.tensorboard_scores = None if log_all_scores else summary_scores(self.evaluators)
        self.reached: dict | None = None
        self.chief, self.work_dir = chief, work_dir
        self._epoch_ended = False  # whether an epoch of this `fit` ran
        self._diverged = False
        self._start = time.perf_counter()
        self._writer = None
        self._line = None  # the last evaluation's line, printed after Keras' progress line

    def on_train_begin(self, logs=None):
        self._epoch_ended = False
        restored_seconds = self.history[-1]["seconds"] if self.history else 0.0
        self._start = time.perf_counter() - restored_seconds

    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self._print_line()

    def on_train_end(self, logs=None):
        self._print_line()
        final = [e for e in self.evaluators if getattr(e, "final_only", False)]
        if not final or not self.chief or self._diverged:
            return
        # No epoch ran: `fit` resumed at its end.
        epoch_steps = self.params.get("steps")
        if self._epoch_ended or not epoch_steps:
            step = self.step
        else:
            step = self.params["epochs"] * epoch_steps
        last = self.history[-1] if self.history and self.history[-1]["step"] == step else None
        names = set().union(*(e.score_names(a) for e in final for a in (False, True)))
        if last is not None and names & set(scalar_items(last)):
            return  # scored by the run this one resumes
        # `fit` has left the weights' moving average (`use_ema`) in the model already.
        started = time.perf_counter()
        scores = self._evaluate(final, step, self.work_dir)
        evaluated = time.perf_counter() - started
        if last is None:
            last = {"step": step, "seconds": round(time.perf_counter() - self._start, 1)}
            self.history.append(last)
        self.history[-1] = merge_scores(last, scores)
        self._write_history()
        scalars = scalar_items(scores)
        if self.verbose:
            shown = [name for name in self._columns(scalars) if name in scalars]
            print(console.evaluation_line(step, scalars, shown, evaluated), flush=True)
        self._log_scalars(step, scalars)

    def on_epoch_end(self, epoch, logs=None):
        self._epoch_ended = True
        # Diverged: nothing to score (see `StopOnNonFiniteLoss`).
        self._diverged = bool(logs) and not np.isfinite(logs.get("loss", 0.0))
        if (epoch + 1) % self.every_epochs or self._diverged:
            return
        step = self.step
        started = time.perf_counter()
        with averaged_weights(self.model):
            monitors = [e for e in self.evaluators if not getattr(e, "final_only", False)]
            scores = self._evaluate(monitors, step)
        evaluated = time.perf_counter() - started
        seconds = round(time.perf_counter() - self._start, 1)
        self.history.append({"step": step, "seconds": seconds, **scores})
        self._write_history()
        scalars = scalar_items(scores)
        if self.verbose:
            self._line = console.evaluation_line(step, scalars, self._columns(scalars), evaluated)
        self._check_targets(scalars, step)
        if logs is not None and self.scores_in_logs:
            logs.update({name.replace("/", "_"): value for name, value in scalars.items()})
        self._log_scalars(step, scalars)

    def _evaluate(self, evaluators: list, step: int, directory: str | None = None) -> dict:
        on_terminal = self.verbose and console.on_terminal()
        progress = functools.partial(console.note, step, evaluators) if on_terminal else None
        scores = evaluate_all(evaluators, self.model, progress, directory)
        if on_terminal:
            console.clear_note()
        return scores

    def _columns(self, scalars: dict) -> tuple[str, ...]:
        """The evaluation line's scores: `columns`, else the summary scores as returned."""
        if self.columns or self._shown is None:
            return self.columns
        return tuple(name for name in scalars if name in self._shown)

    def _write_history(self) -> None:
        if self.history_path:
            write_history(self.history_path, self.history)

    def _log_scalars(self, step: int, scalars: dict[str, float]) -> None:
        if self.log_dir is None:
            return
        if self._writer is None:  # no event file without an evaluation
            self._writer = tf.summary.create_file_writer(self.log_dir)
        with self._writer.as_default(step=step):
            for name, value in scalars.items():
                if self.tensorboard_scores is None or name in self.tensorboard_scores:
                    tf.summary.scalar(f"scores/{name}", value)
        self._writer.flush()

    def _print_line(self):
        if self._line:
            print(self._line, flush=True)
            self._line = None

    def _check_targets(self, scalars: dict[str, float], step: int) -> None:
        unknown = sorted(set(self.stop_at) - set(scalars))
        if unknown:
            raise ValueError(f"`stop_at` names unknown scores {unknown}; known: {sorted(scalars)}.")
        if targets_held(self.history, self.stop_at, self.stop_patience):
            self.reached = {"step": step, "seconds": self.history[-1]["seconds"]}
            self.model.stop_training = True


class StopOnNonFiniteLoss(StepCounter):
    """Stops training at the first non-finite loss (`stopped_at`: its step).

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


class TrainingLogger(StepCounter):
    """Writes the training metrics and Lambda_hat to TensorBoard every `every_steps` steps.

    Args:
        log_dir: TensorBoard directory (created at the first write); None: no files.
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
        if not (is_integer(every_steps) and every_steps >= 1):
            raise ValueError(f"`every_steps` must be a positive int; got {every_steps!r}.")
        self.log_dir = log_dir
        self.every_steps = int(every_steps)
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
            write_history(self.history_path, self.history)
        if self._writer is not None:
            self._writer.flush()


__all__ = [
    "EvaluationCallback",
    "StepCounter",
    "StopOnNonFiniteLoss",
    "TrainingLogger",
    "evaluate_all",
    "merge_scores",
    "scalar_items",
    "targets_held",
    "write_history",
    "summary_scores",
]
