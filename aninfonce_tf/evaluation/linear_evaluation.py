"""SimCLR's linear evaluation: a linear classifier on frozen backbone features streamed
from disk, at the final step only. Details: docs/method.md#linear-evaluation

Example:

>>> import keras
>>> import tensorflow as tf
>>> from aninfonce_tf import ContrastiveModel
>>> rng = np.random.default_rng(0)
>>> labels = np.arange(64) % 2
>>> images = (rng.uniform(size=(64, 4, 4, 3)) * 0.2 + labels[:, None, None, None] * 0.8)
>>> examples = tf.data.Dataset.from_tensor_slices({"image": images.astype("float32"),
...                                               "label": labels})
>>> encoder = keras.Sequential([keras.Input((4, 4, 3)), keras.layers.GlobalAveragePooling2D()])
>>> evaluator = LinearEvaluator(examples, examples, classes=2, epochs=20, batch_size=16,
...                             learning_rate=0.5)
>>> scores = evaluator.evaluate(ContrastiveModel(encoder))
>>> scores["backbone"]["linear_eval_accuracy"], scores["linear_eval"]["train_examples"]
(1.0, 64)
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf.disk_space import room_for
from aninfonce_tf.evaluation.features import batched_features, on_devices
from aninfonce_tf.evaluation.protocol import level_stages

# The score it records, at the backbone: top-1 test accuracy.
SCORE = "backbone/linear_eval_accuracy"


def backbone_pass(
    model, batch_size: int, jit_compile: bool = False
) -> Callable[[np.ndarray], np.ndarray]:
    """One compiled function: `model`'s float32 backbone features of `batch_size` images."""

    def forward(images: tf.Tensor) -> tf.Tensor:
        unit = tf.cast(images, tf.float32)
        if images.dtype == tf.uint8:
            unit = unit / 255
        return tf.cast(model(unit, training=False), tf.float32)

    return on_devices(model, forward, batch_size, jit_compile)


def feature_bytes(model, examples: tf.data.Dataset) -> int:
    """The bytes of `examples`' float32 backbone features (0 when their count is unknown)."""
    rows = int(examples.cardinality())
    if rows <= 0:
        return 0
    shape = model.encoder.compute_output_shape((None, *examples.element_spec["image"].shape))
    return 4 * rows * int(shape[-1])


def features_on_disk(
    model, examples: tf.data.Dataset, path: Path, batch_size: int, jit_compile: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """`(features, labels)`: every example's backbone features, written batch by batch to
    the float32 file `path` (the features: a read-only memory map of it)."""
    labels, width = [], 0
    forward = backbone_pass(model, batch_size, jit_compile)
    with open(path, "wb") as file:
        for batch in examples.batch(batch_size).prefetch(tf.data.AUTOTUNE):
            features = forward(batch["image"].numpy())
            file.write(np.ascontiguousarray(features).tobytes())
            labels.append(batch["label"].numpy())
            width = features.shape[1]
    if not labels:
        raise ValueError("The linear evaluation's examples are empty.")
    labels = np.concatenate(labels).astype("int64")
    return np.memmap(path, "float32", "r", shape=(len(labels), width)), labels


def shuffled_batches(features, labels, batch_size: int, seed: int = 0) -> tf.data.Dataset:
    """`(features, labels)` batches in a new seeded order each pass.

    Example:

    >>> features = np.arange(10, dtype="float32")[:, None]
    >>> batches = list(shuffled_batches(features, np.arange(10), 4))
    >>> [len(labels) for _, labels in batches]
    [4, 4, 2]
    >>> sorted(np.concatenate([labels for _, labels in batches]).tolist())
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """
    rows, width = features.shape

    def read(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        indices = np.sort(indices)
        return np.asarray(features[indices], "float32"), np.asarray(labels[indices], "int64")

    batches = tf.data.Dataset.range(rows).shuffle(rows, seed=seed).batch(batch_size)
    batches = batches.map(
        lambda indices: tf.numpy_function(read, [indices], (tf.float32, tf.int64))
    )
    return batches.map(
        lambda x, y: (tf.ensure_shape(x, [None, width]), tf.ensure_shape(y, [None]))
    ).prefetch(tf.data.AUTOTUNE)


@contextlib.contextmanager
def feature_directory(directory: str | Path | None) -> Iterator[Path]:
    """`directory` emptied, created and removed at the end; else a temporary one."""
    if directory is None:
        with tempfile.TemporaryDirectory() as temporary:
            yield Path(temporary)
        return
    directory = Path(directory)
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class LinearEvaluator:
    """SimCLR's linear evaluation of a `ContrastiveModel`'s backbone, at the final step only.

    Args:
        train: finite `tf.data.Dataset` of `{image, label}` examples (uint8 or [0, 1]).
        test: those it is scored on.
        classes: the number of classes.
        epochs: passes of the classifier over the training features.
        batch_size: the classifier's batch.
        learning_rate: its peak learning rate, cosine-decayed to 0.
        weight_decay: its L2 penalty, times ||w||^2 / 2.
        momentum: its Nesterov momentum.
        feature_batch_size: images per forward pass of the backbone.
        seed: of the order of the classifier's batches.
        jit_compile: XLA-compile the backbone's forward pass.

    Example:

    >>> examples = tf.data.Dataset.from_tensor_slices(
    ...     {"image": np.zeros((8, 4, 4, 3), "float32"), "label": np.arange(8) % 2})
    >>> evaluator = LinearEvaluator(examples, examples, classes=2, epochs=1, batch_size=4,
    ...                             learning_rate=0.1)
    >>> evaluator.final_only, sorted(evaluator.score_names(anisotropic=True))
    (True, ['backbone/linear_eval_accuracy'])
    """

    # Its score is computed once, at the final evaluation (`EvaluationCallback`).
    final_only = True
    lower_is_better = frozenset()
    summary_scores = frozenset({SCORE})

    def __init__(
        self,
        train: tf.data.Dataset,
        test: tf.data.Dataset,
        classes: int,
        epochs: int,
        batch_size: int,
        learning_rate: float,
        weight_decay: float = 0.0,
        momentum: float = 0.9,
        feature_batch_size: int = 256,
        seed: int = 0,
        jit_compile: bool = False,
    ):
        self.train, self.test = train, test
        self.classes = classes
        self.epochs, self.batch_size = epochs, batch_size
        self.learning_rate, self.weight_decay, self.momentum = learning_rate, weight_decay, momentum
        self.feature_batch_size = feature_batch_size
        self.seed = seed
        self.jit_compile = jit_compile

    def score_names(self, anisotropic: bool) -> set[str]:
        """`backbone/linear_eval_accuracy`."""
        del anisotropic
        return {SCORE}

    def evaluate(
        self,
        model,
        progress: Callable[[str], None] | None = None,
        directory: str | Path | None = None,
    ) -> dict[str, Any]:
        """`backbone/linear_eval_accuracy` and `linear_eval`'s example counts."""
        stage = level_stages(progress, "backbone")
        with feature_directory(directory) as directory:
            stage("features")
            needed = feature_bytes(model, self.train) + feature_bytes(model, self.test)
            with room_for(directory / "train.f32", directory, needed):
                train, test = (
                    features_on_disk(
                        model, examples, directory / name, self.feature_batch_size, self.jit_compile
                    )
                    for examples, name in ((self.train, "train.f32"), (self.test, "test.f32"))
                )
            stage("linear classifier")
            classifier = self.fit_classifier(*train)
            logits = batched_features(classifier, test[0], self.batch_size)
            accuracy = float(np.mean(np.argmax(logits, axis=1) == test[1]))
            counts = {"train_examples": len(train[1]), "test_examples": len(test[1])}
            del train, test  # the memory maps, before their files go
        return {"backbone": {"linear_eval_accuracy": accuracy}, "linear_eval": counts}

    def fit_classifier(self, features, labels) -> keras.Model:
        """The linear classifier trained on `features` (`[N, d]`) and `labels`."""
        rows, width = features.shape
        steps = math.ceil(rows / self.batch_size)
        penalty = keras.regularizers.L2(self.weight_decay / 2) if self.weight_decay else None
        classifier = keras.Sequential(
            [
                keras.Input((width,), name="linear_eval_features"),
                keras.layers.Dense(
                    self.classes,
                    kernel_initializer="zeros",
                    kernel_regularizer=penalty,
                    bias_regularizer=penalty,
                    name="linear_eval_logits",
                ),
            ],
            name="linear_eval_classifier",
        )
        schedule = keras.optimizers.schedules.CosineDecay(
            self.learning_rate, decay_steps=max(1, self.epochs * steps)
        )
        classifier.compile(
            keras.optimizers.SGD(schedule, momentum=self.momentum, nesterov=True),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        batches = shuffled_batches(features, labels, self.batch_size, self.seed)
        classifier.fit(batches, epochs=self.epochs, verbose=0, shuffle=False)  # shuffled already
        return classifier


__all__ = [
    "SCORE",
    "LinearEvaluator",
    "backbone_pass",
    "feature_bytes",
    "feature_directory",
    "features_on_disk",
    "shuffled_batches",
]
