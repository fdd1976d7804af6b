"""The Keras callbacks of the training itself: `StopOnNonFiniteLoss` and `TrainingLogger`
(training metrics and Lambda_hat to TensorBoard), both counting steps from `fit`'s
batches. Details: docs/method.md#the-trainings-own-callbacks.
"""

from __future__ import annotations

import json

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf.checkpoints import replace_atomically


class StepCounter(keras.callbacks.Callback):
    """A callback whose `step` counts the training steps from the batches of `fit`,
    skipped ones included (docs/method.md#the-trainings-own-callbacks)."""

    def __init__(self):
        super().__init__()
        self.step = self._epoch_start = 0

    def on_epoch_begin(self, epoch, logs=None):
        steps_per_epoch = (self.params or {}).get("steps")
        self._epoch_start = self.step = epoch * steps_per_epoch if steps_per_epoch else self.step

    def on_train_batch_end(self, batch, logs=None):
        self.step = self._epoch_start + batch + 1  # the last step of the compiled call


class StopOnNonFiniteLoss(StepCounter):
    """Stops training at the first step whose loss is NaN or infinite and says which
    step it was (`stopped_at`, also printed; with `steps_per_execution` k, the last
    step of that call).

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
    """Writes the training metrics to TensorBoard every `every_steps` steps, against
    the training step, and keeps the loss of each write in `history`.

    Each write holds `train/<name>` (mean metrics over the steps since the last write),
    the learning rate, and Lambda_hat per dimension with its histogram. Choose
    `every_steps` dividing the epoch's steps: Keras resets its metrics at each epoch
    (docs/method.md#the-trainings-own-callbacks).

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


__all__ = ["StopOnNonFiniteLoss", "TrainingLogger"]
