"""The standard linear evaluation: SimCLR's classifier on frozen features streamed from
disk, run at the final evaluation only, and the test crop of its images."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import ContrastiveModel, EvaluationCallback, disk_space
from aninfonce_tf.checkpoints import Backup
from aninfonce_tf.data.probe_sets import centre_square
from aninfonce_tf.evaluation.callbacks import merge_scores
from aninfonce_tf.evaluation.linear_evaluation import (
    SCORE,
    LinearEvaluator,
    features_on_disk,
    shuffled_batches,
)
from aninfonce_tf.evaluation.targets import check_targets, parse_targets


def _examples(count: int, seed: int = 0) -> tf.data.Dataset:
    """Two classes of 4 x 4 images, told apart by their brightness."""
    rng = np.random.default_rng(seed)
    labels = np.arange(count) % 2
    images = rng.uniform(size=(count, 4, 4, 3)) * 0.3 + labels[:, None, None, None] * 0.6
    return tf.data.Dataset.from_tensor_slices({"image": images.astype("float32"), "label": labels})


def _model() -> ContrastiveModel:
    encoder = keras.Sequential(
        [keras.Input((4, 4, 3)), keras.layers.Flatten(), keras.layers.Dense(6)]
    )
    return ContrastiveModel(encoder)


def test_the_features_are_the_frozen_backbones_written_to_disk_batch_by_batch(tmp_path):
    model = _model()
    before = [weight.numpy() for weight in model.weights]
    features, labels = features_on_disk(model, _examples(50), tmp_path / "f32", batch_size=16)
    assert features.shape == (50, 6) and isinstance(features, np.memmap)
    assert (tmp_path / "f32").stat().st_size == 50 * 6 * 4
    images = np.stack([example["image"] for example in _examples(50).as_numpy_iterator()])
    np.testing.assert_allclose(features, model(images), rtol=1e-5, atol=1e-6)
    assert labels.tolist() == [k % 2 for k in range(50)]
    assert all(np.array_equal(w, v.numpy()) for w, v in zip(before, model.weights, strict=True))


def test_the_classifier_is_simclrs_linear_head():
    evaluator = LinearEvaluator(
        _examples(40),
        _examples(20),
        2,
        epochs=3,
        batch_size=16,
        learning_rate=0.5,
        weight_decay=1e-6,
    )
    features = np.random.default_rng(0).normal(size=(40, 6)).astype("float32")
    classifier = evaluator.fit_classifier(features, np.arange(40) % 2)
    (dense,) = classifier.layers
    assert dense.units == 2 and dense.use_bias
    # SGD with Nesterov momentum 0.9, cosine-decayed to 0 over every step, no warm-up.
    optimizer = classifier.optimizer
    assert optimizer.nesterov and optimizer.momentum == 0.9
    schedule = optimizer._learning_rate
    assert isinstance(schedule, keras.optimizers.schedules.CosineDecay)
    assert (schedule.initial_learning_rate, schedule.decay_steps) == (0.5, 3 * 3)
    # SimCLR's weight decay times tf.nn.l2_loss: 1e-6 x ||w||^2 / 2.
    assert dense.kernel_regularizer.l2 == pytest.approx(5e-7)
    # Every row once per pass, in a new order each pass.
    batches = shuffled_batches(features, np.arange(40), 16, seed=0)
    passes = [np.concatenate([labels for _, labels in batches]) for _ in range(2)]
    assert sorted(passes[0]) == sorted(passes[1]) == list(range(40))
    assert passes[0].tolist() != passes[1].tolist()


def test_the_linear_evaluation_tells_apart_what_the_features_separate():
    evaluator = LinearEvaluator(_examples(64), _examples(32, seed=1), 2, 20, 16, 0.5)
    scores = evaluator.evaluate(_model())
    assert scores["backbone"]["linear_eval_accuracy"] >= 0.9
    assert scores["linear_eval"] == {"train_examples": 64, "test_examples": 32}
    assert evaluator.score_names(anisotropic=False) == {SCORE} == evaluator.summary_scores


def test_the_feature_files_need_room_and_go_to_a_directory_emptied_each_attempt(
    tmp_path, monkeypatch
):
    directory = tmp_path / "seed_0" / "infonce" / "linear_eval"
    directory.mkdir(parents=True)
    (directory / "train.f32").write_bytes(b"left by a killed attempt")
    evaluator = LinearEvaluator(_examples(64), _examples(32), 2, 2, 16, 0.5)
    # (64 + 32) rows of the backbone's 6 float32 features.
    monkeypatch.setattr(disk_space, "free_bytes", lambda path: 96 * 6 * 4 - 1)
    with pytest.raises(disk_space.OutOfSpace, match=f"No space left in {directory} .*2,304"):
        evaluator.evaluate(_model(), directory=directory)
    monkeypatch.undo()
    written = []
    monkeypatch.setattr(
        "aninfonce_tf.evaluation.linear_evaluation.features_on_disk",
        _recording(written, features_on_disk),
    )
    scores = evaluator.evaluate(_model(), directory=directory)
    assert scores["linear_eval"] == {"train_examples": 64, "test_examples": 32}
    assert written == [directory / "train.f32", directory / "test.f32"]
    assert not directory.exists()


def _recording(paths: list, function):
    def recorded(model, examples, path, *args):
        assert not path.exists()  # the stale file was removed before the attempt
        paths.append(path)
        return function(model, examples, path, *args)

    return recorded


class _Counting:
    """An evaluator that records the steps it scores."""

    lower_is_better = frozenset()

    def __init__(self, name: str, final_only: bool = False):
        self.name, self.final_only, self.calls = name, final_only, 0

    def evaluate(self, model, directory=None):
        self.calls += 1
        self.directory = directory
        return {"backbone": {self.name: float(self.calls)}}

    def score_names(self, anisotropic):
        return {f"backbone/{self.name}"}


def _fit(callback: EvaluationCallback, epochs: int = 4) -> None:
    _fit_with([callback], epochs)


def _fit_with(callbacks: list, epochs: int) -> None:
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.zeros((4, 2), "float32")
    model.fit(x, x[:, :1], epochs=epochs, callbacks=callbacks, verbose=0)


def test_a_final_only_evaluator_scores_the_last_evaluation_alone():
    monitor, final = _Counting("probe"), _Counting("linear", final_only=True)
    callback = EvaluationCallback([monitor, final])
    _fit(callback)
    assert (monitor.calls, final.calls) == (4, 1)
    # Both evaluators' `backbone` scores in one dict, at the last step only for the final.
    assert [sorted(point["backbone"]) for point in callback.history] == [["probe"]] * 3 + [
        ["linear", "probe"]
    ]
    # Where targets stop training early, that evaluation is the last.
    monitor, final = _Counting("probe"), _Counting("linear", final_only=True)
    callback = EvaluationCallback([monitor, final], stop_at=parse_targets("backbone/probe>=2"))
    _fit(callback)
    assert (monitor.calls, final.calls, callback.reached["step"]) == (2, 1, 2)
    assert "linear" in callback.history[-1]["backbone"]


def test_final_only_evaluators_run_once_when_fit_ends_on_the_chief_alone():
    # Also when the last epoch is not an evaluation epoch: a point of its own.
    monitor, final = _Counting("probe"), _Counting("linear", final_only=True)
    callback = EvaluationCallback([monitor, final], every_epochs=2, work_dir="scratch")
    _fit(callback, epochs=3)
    assert (monitor.calls, final.calls, final.directory) == (1, 1, "scratch")
    assert [(point["step"], sorted(point["backbone"])) for point in callback.history] == [
        (2, ["probe"]),
        (3, ["linear"]),
    ]
    # A run resumed at its end whose history holds the final scores does not rerun them;
    # one killed during the final evaluation (its history without them) does.
    for history, calls in (([callback.history[-1]], 0), ([{"step": 4, "seconds": 1.0}], 1)):
        final = _Counting("linear", final_only=True)
        callback = EvaluationCallback([final], every_epochs=2, history=history)
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        x = np.zeros((4, 2), "float32")
        step = history[0]["step"]
        model.fit(x, x[:, :1], epochs=step, initial_epoch=step, callbacks=[callback], verbose=0)
        assert final.calls == calls
    assert "linear" in callback.history[-1]["backbone"]
    # Every worker but the chief skips them.
    final = _Counting("linear", final_only=True)
    _fit(EvaluationCallback([_Counting("probe"), final], chief=False))
    assert final.calls == 0


def test_the_final_step_is_backed_up_before_the_final_only_evaluators_run(tmp_path):
    backup = Backup(tmp_path, steps_per_epoch=1)

    class Final(_Counting):
        def evaluate(self, model, directory=None):
            self.newest = backup.checkpoints()[0][0]
            return super().evaluate(model, directory)

    final = Final("linear", final_only=True)
    _fit_with([EvaluationCallback([_Counting("probe"), final]), backup], epochs=3)
    assert final.newest == 3


def test_stop_at_may_not_name_a_final_only_score_nor_two_evaluators_the_same_score():
    evaluators = [_Counting("probe"), _Counting("linear", final_only=True)]
    with pytest.raises(ValueError, match="final step only"):
        check_targets(parse_targets("backbone/linear>=0.5"), evaluators, {"infonce": False})
    check_targets(parse_targets("backbone/probe>=0.5"), evaluators, {"infonce": False})
    with pytest.raises(ValueError, match="both return the score 'backbone/probe'"):
        merge_scores({"backbone": {"probe": 1.0}}, {"backbone": {"probe": 2.0}})


def test_simclrs_test_crop_is_the_centre_square_of_seven_eighths_of_the_shorter_side():
    image = np.random.default_rng(0).integers(0, 256, (64, 48, 3), dtype=np.uint8)
    # 0.875 x 48 = 42 pixels, centred: rows 11-52, columns 3-44; at 42 pixels, no resize.
    np.testing.assert_array_equal(centre_square(image, 42, 0.875), image[11:53, 3:45])
    np.testing.assert_array_equal(centre_square(image, 48), image[8:56])
