"""The evaluation callback: logging, stopping once score targets are reached, restoring
its history; and the check of targets against the evaluators' score names."""

import json
import re
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf.configs.images import SUMMARY
from aninfonce_tf.configs.rendered import table_columns
from aninfonce_tf.data.rendered_pairs import RenderedPairs
from aninfonce_tf.data.renderer import LATENT_NAMES
from aninfonce_tf.evaluation import console
from aninfonce_tf.evaluation.callbacks import (
    EvaluationCallback,
    StopOnNonFiniteLoss,
    TrainingLogger,
    scalar_items,
    targets_held,
)
from aninfonce_tf.evaluation.identifiability import IdentifiabilityEvaluator
from aninfonce_tf.evaluation.latents import LatentEvaluator
from aninfonce_tf.evaluation.probes import ImageProbeEvaluator
from aninfonce_tf.evaluation.targets import (
    Target,
    canonical_targets,
    check_targets,
    natural_direction,
    parse_targets,
    resolve_targets,
)
from tests.support import UndeclaredEvaluator, event_files


class RisingScores:
    """An evaluator whose MCC rises by 0.1 per call; every score higher-is-better."""

    lower_is_better = frozenset()

    def __init__(self):
        self.calls = 0

    def evaluate(self, model):
        self.calls += 1
        return {"mcc": 0.1 * self.calls, "linear_r2": 0.99, "block_r2": {"low": 0.5}}


def _fit(callback, epochs=10):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.zeros((8, 3), "float32")
    return model.fit(x, x[:, :1], epochs=epochs, steps_per_epoch=2, callbacks=[callback], verbose=0)


def test_parse_targets():
    assert parse_targets("mcc=0.95, linear_r2 >= 0.99,lambda_relative_error<=0.1") == {
        "mcc": Target(0.95),
        "linear_r2": Target(0.99, ">="),
        "lambda_relative_error": Target(0.1, "<="),
    }
    assert parse_targets("") == {}
    for text in ("mcc>0.9", "mcc=>0.9", "mcc==0.9", "=0.9", "mcc", "mcc=high"):
        with pytest.raises(ValueError, match="`stop_at` must look like"):
            parse_targets(text)
    for target in ("mcc=nan", "mcc=inf", "mcc=-inf"):  # never reached, or at once
        with pytest.raises(ValueError, match=f"finite numbers; got '{target}'"):
            parse_targets(f"linear_r2=0.9,{target}")


def test_texts_giving_the_same_targets_have_one_form():
    form = "linear_r2>=0.9,mcc=0.95"
    for text in (
        "mcc=0.95,linear_r2>=0.9",
        " mcc = 0.950 , linear_r2 >= .9 ",
        "linear_r2>=9e-1,mcc=0.95",
    ):
        assert canonical_targets(parse_targets(text)) == form, text
    # Other values, directions or scores; `=` is not `>=` until the evaluators say so.
    for text in (
        "mcc=0.951,linear_r2>=0.9",
        "mcc=0.95,linear_r2<=0.9",
        "mcc>=0.95,linear_r2>=0.9",
        "mcc=0.95",
    ):
        assert canonical_targets(parse_targets(text)) != form, text
    zero, negative_zero = (canonical_targets(parse_targets(t)) for t in ("mcc=0", "mcc=-0"))
    assert negative_zero == zero == "mcc=0.0"
    assert canonical_targets(parse_targets("")) == ""


def test_a_score_given_two_targets_is_refused():
    for text in ("mcc=0,mcc=0.99", "mcc>=0.5, mcc<=0.9"):
        with pytest.raises(ValueError, match="`stop_at` gives 'mcc' two targets"):
            parse_targets(text)


class FallingError:
    """An evaluator whose `error` (lower-is-better) falls by 0.1 per call from 0.9."""

    lower_is_better = frozenset({"error"})

    def __init__(self):
        self.calls = 0

    def evaluate(self, model):
        self.calls += 1
        return {"error": 1.0 - 0.1 * self.calls, "accuracy": 0.1 * self.calls}


@pytest.mark.parametrize(
    "stop_at, evaluator, step",
    [
        ("error=0.65", FallingError, 8),  # its natural direction: down
        ("error=0.65,accuracy=0.25", FallingError, 8),
        ("error<=0.65", FallingError, 8),
        ("error>=0.85", FallingError, 2),  # at once: 0.9 >= 0.85
        ("mcc<=0.25", RisingScores, 2),
        ("mcc>=0.25", RisingScores, 6),
        ("mcc=0.25", RisingScores, 6),
    ],
)
def test_each_target_is_reached_in_its_direction(stop_at, evaluator, step):
    callback = EvaluationCallback(evaluator(), stop_at=parse_targets(stop_at))
    _fit(callback)
    assert callback.reached["step"] == step


def test_a_target_without_a_known_direction_is_refused_before_training():
    undeclared = UndeclaredEvaluator()
    message = "`stop_at` target score=0.5 has no direction.*write score>=0.5 or score<=0.5"
    with pytest.raises(ValueError, match=message):
        EvaluationCallback(undeclared, stop_at=parse_targets("score=0.5"))
    with pytest.raises(ValueError, match=message):
        check_targets(parse_targets("score=0.5"), [undeclared], {"aninfonce": True})
    check_targets(parse_targets("score>=0.5"), [undeclared], {"aninfonce": True})
    callback = EvaluationCallback(undeclared, stop_at=parse_targets("score<=0.5"))
    _fit(callback)
    assert callback.reached["step"] == 2  # the first epoch: 2 steps
    # The targets' text, as `--stop-at` takes it, is parsed by the callback.
    assert EvaluationCallback(undeclared, stop_at="score<=0.5").stop_at == callback.stop_at


def test_the_augmentation_readout_has_no_direction_so_its_targets_need_one():
    # One side of AnInfoNCE's trade-off against InfoNCE, not a quality.
    images, labels = np.zeros((4, 8, 8, 3), "float32"), np.zeros(4)
    params = {"grayscale": np.zeros(4, "float32")}
    for evaluator in (
        ImageProbeEvaluator(images, labels, images, labels, images, params),
        LatentEvaluator(images, {"shape": labels}, views=images, view_params=params),
    ):
        for level in ("backbone", "projector"):
            assert natural_direction(f"{level}/augmentation_readout", [evaluator]) is None
        assert natural_direction("backbone/shape_accuracy", [evaluator]) == ">="
        message = (
            "`stop_at` target backbone/augmentation_readout=0.6 has no direction: neither "
            "higher nor lower is better.*write backbone/augmentation_readout>=0.6 or "
            "backbone/augmentation_readout<=0.6"
        )
        with pytest.raises(ValueError, match=message):
            check_targets(
                parse_targets("backbone/augmentation_readout=0.6"), [evaluator], {"a": True}
            )
        for text in ("backbone/augmentation_readout>=0.6", "projector/augmentation_readout<=0.6"):
            check_targets(parse_targets(text), [evaluator], {"a": True})
            assert resolve_targets(parse_targets(text), [evaluator]) == parse_targets(text)


def test_training_stops_at_the_first_evaluation_reaching_every_target():
    callback = EvaluationCallback(RisingScores(), stop_at={"mcc": 0.35, "block_r2/low": 0.5})
    history = _fit(callback)
    assert len(history.history["loss"]) == 4
    assert [entry["step"] for entry in callback.history] == [2, 4, 6, 8]
    assert callback.reached["step"] == 8
    assert callback.reached["seconds"] == callback.history[-1]["seconds"] >= 0
    assert history.history["mcc"][-1] == pytest.approx(0.4)


class ScriptedScores:
    """An evaluator whose MCC is the next of `values` at each call."""

    lower_is_better = frozenset()

    def __init__(self, values):
        self.values = iter(values)

    def evaluate(self, model):
        return {"mcc": next(self.values)}


@pytest.mark.parametrize("patience, step", [(1, 4), (2, 10), (3, 12)])
def test_with_patience_training_stops_once_the_targets_held_at_that_many_evaluations_in_a_row(
    patience, step
):
    # Evaluations at steps 2, 4, ...: the target is reached at 4, lost at 6, then held.
    scripted = ScriptedScores([0.5, 0.9, 0.7, 0.9, 0.95, 0.96, 0.97, 0.98])
    callback = EvaluationCallback(scripted, stop_at="mcc>=0.8", stop_patience=patience)
    _fit(callback)
    assert callback.reached["step"] == step
    assert callback.history[-1]["step"] == step


def test_patience_counts_the_restored_evaluations_of_an_interrupted_run():
    restored = [{"step": 2, "seconds": 1.0, "mcc": 0.5}, {"step": 4, "seconds": 2.0, "mcc": 0.9}]
    callback = EvaluationCallback(
        ScriptedScores([0.9, 0.95]), stop_at="mcc>=0.8", stop_patience=2, history=restored
    )
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.zeros((8, 3), "float32")
    model.fit(x, x[:, :1], steps_per_epoch=2, epochs=5, initial_epoch=2, callbacks=[callback])
    assert callback.reached["step"] == 6  # steps 4 (restored) and 6
    assert [entry["step"] for entry in callback.history] == [2, 4, 6]


@pytest.mark.parametrize("patience", [0, -1, 1.5, True, "2"])
def test_a_patience_that_is_not_a_positive_int_is_refused(patience):
    with pytest.raises(ValueError, match="`stop_patience` must be a positive int"):
        EvaluationCallback(RisingScores(), stop_at="mcc>=0.8", stop_patience=patience)
    with pytest.raises(ValueError, match="`patience` must be a positive int"):
        targets_held([{"step": 2, "mcc": 0.9}], parse_targets("mcc>=0.8"), patience)


def test_a_patience_without_targets_is_refused():
    with pytest.raises(ValueError, match=r"`stop_patience` \(2\) counts evaluations at the"):
        EvaluationCallback(RisingScores(), stop_patience=2)


def test_a_history_path_in_a_missing_directory_is_written_there(tmp_path):
    evaluation = EvaluationCallback(RisingScores(), history_path=str(tmp_path / "a" / "h.json"))
    training = TrainingLogger(every_steps=1, history_path=str(tmp_path / "b" / "c" / "l.json"))
    _fit(evaluation, epochs=1)
    _fit(training, epochs=1)
    assert json.loads((tmp_path / "a" / "h.json").read_text()) == evaluation.history
    assert json.loads((tmp_path / "b" / "c" / "l.json").read_text()) == training.history != []


def test_without_targets_training_runs_to_the_end():
    callback = EvaluationCallback(RisingScores(), every_epochs=2)
    assert len(_fit(callback, epochs=6).history["loss"]) == 6
    assert len(callback.history) == 3 and callback.reached is None


def test_unknown_target_names_raise():
    callback = EvaluationCallback(RisingScores(), stop_at={"r2": 0.9})
    with pytest.raises(ValueError, match="stop_at.*r2"):
        _fit(callback)


def test_the_history_restored_from_an_interrupted_run_is_continued_and_saved(tmp_path):
    path = tmp_path / "history.json"
    restored = [{"step": 2, "seconds": 100.0, "mcc": 0.05}]
    callback = EvaluationCallback(RisingScores(), history=restored, history_path=str(path))
    _fit(callback, epochs=2)
    assert [entry["step"] for entry in callback.history] == [2, 2, 4]
    assert callback.history[1]["seconds"] >= 100.0  # the restored run's time carries on
    assert json.loads(path.read_text()) == callback.history


def test_two_evaluators_merge_and_must_not_share_a_score_name():
    class Other:
        def evaluate(self, model):
            return {"knn": 0.5}

    callback = EvaluationCallback([RisingScores(), Other()])
    history = _fit(callback, epochs=1)
    assert history.history["knn"] == [0.5] and history.history["mcc"] == [pytest.approx(0.1)]
    with pytest.raises(ValueError, match="mcc"):
        _fit(EvaluationCallback([RisingScores(), RisingScores()]), epochs=1)


class _Model:
    """Features equal to the latents; a Lambda_hat only when anisotropic."""

    def __init__(self, anisotropic):
        self.scaling = (
            type("S", (), {"concentration": np.array([1.0, 2.0, 3.0])})() if anisotropic else None
        )

    def embed(self, x, training=False, scaled=True):
        return x


@pytest.mark.parametrize("nonlinear, aligned", [(False, False), (True, False), (False, True)])
def test_identifiability_score_names_are_the_scalars_it_returns(nonlinear, aligned):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 3))
    pairs = (z, z + rng.normal(size=z.shape) * [0.1, 0.2, 0.3]) if aligned else None
    evaluator = IdentifiabilityEvaluator(
        z,
        z,
        {"high": np.array([2]), "low": np.array([0, 1]), "none": np.array([], int)},
        np.array([1.0, 2.0, 4.0]),
        nonlinear=nonlinear,
        alignment_pairs=pairs,
    )
    for anisotropic in (False, True):
        scores = evaluator.evaluate(_Model(anisotropic))
        assert evaluator.score_names(anisotropic) == set(scalar_items(scores))


def test_targets_a_variant_does_not_produce_fail_before_training():
    z = np.zeros((10, 2))
    evaluator = IdentifiabilityEvaluator(z, z, true_concentration=np.array([1.0, 2.0]))
    check_targets({"mcc": 0.9}, [evaluator], {"aninfonce": True, "infonce": False})
    check_targets({"lambda_spearman": 0.9}, [evaluator], {"aninfonce": True})
    with pytest.raises(ValueError, match="'infonce'.*--losses"):
        check_targets({"lambda_spearman": 0.9}, [evaluator], {"aninfonce": True, "infonce": False})
    with pytest.raises(ValueError, match="r2"):
        check_targets({"r2": 0.9}, [evaluator], {"aninfonce": True})


def test_each_evaluation_prints_its_columns_after_the_progress_line(tmp_path, capsys):
    callback = EvaluationCallback(
        RisingScores(),
        str(tmp_path),
        verbose=1,
        columns=("block_r2/low", "mcc", "absent"),
        scores_in_logs=False,
    )
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x = np.zeros((8, 3), "float32")
    history = model.fit(x, x[:, :1], epochs=2, steps_per_epoch=2, callbacks=[callback], verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" - ")[0] for line in lines[0::3]] == ["Epoch 1/2", "Epoch 2/2"]
    assert all(line.startswith("2/2 - ") for line in lines[1::3])
    assert lines[2::3] == [
        "step 2 evaluation: block_r2/low 0.500, mcc 0.100",
        "step 4 evaluation: block_r2/low 0.500, mcc 0.200",
    ]
    assert "mcc" not in history.history and len(history.history["loss"]) == 2
    (events,) = event_files(tmp_path).values()
    assert events == {
        (f"scores/{name}", "scalars"): [2, 4] for name in ("mcc", "linear_r2", "block_r2/low")
    }


@pytest.mark.parametrize("verbose, terminal", [(1, True), (1, False), (0, True)])
def test_a_terminal_sees_which_evaluator_is_at_work_in_verbose_mode(
    verbose, terminal, capsys, monkeypatch
):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: terminal)
    monkeypatch.setattr(console, "LONG_EVALUATION", 0.0)  # every evaluation is long
    evaluators = [RisingScores(), UndeclaredEvaluator()]
    _fit(EvaluationCallback(evaluators, verbose=verbose, columns=("mcc",)), epochs=1)
    out = capsys.readouterr().out
    notes = re.findall(r"\r([^\r\n]*?)\x1b\[K", out)
    if not verbose:
        assert out == ""
    elif terminal:  # each evaluator named over one line, which is then cleared
        assert notes == [
            "evaluating step 2: RisingScores (1 of 2) ...",
            "evaluating step 2: UndeclaredEvaluator (2 of 2) ...",
            "",
        ]
    else:
        assert notes == [] and "\r" not in out
    if verbose:
        assert out.split("\x1b[K")[-1] == "step 2 evaluation: mcc 0.100 (evaluated in 0 s)\n"
    assert max(map(len, re.split(r"[\r\n]", out))) <= 100


class StagedScores:
    """An evaluator that reports the stages of its evaluation (`progress`)."""

    lower_is_better = frozenset()

    def evaluate(self, model, progress=None):
        for stage in ("backbone: features", "backbone: kernel ridge"):
            progress(stage)
        return {"knn": 0.5}


def test_a_terminal_sees_the_stage_an_evaluator_reports(capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _fit(EvaluationCallback([StagedScores(), RisingScores()], verbose=1, columns=("mcc",)), 1)
    notes = re.findall(r"\r([^\r\n]*?)\x1b\[K", capsys.readouterr().out)
    assert notes == [
        "evaluating step 2: StagedScores (1 of 2) ...",
        "evaluating step 2: StagedScores (1 of 2), backbone: features ...",
        "evaluating step 2: StagedScores (1 of 2), backbone: kernel ridge ...",
        "evaluating step 2: RisingScores (2 of 2) ...",
        "",
    ]


def test_the_line_of_an_evaluation_with_many_scores_keeps_to_100_columns(capsys):
    class ManyScores:
        lower_is_better = frozenset()

        def evaluate(self, model):
            return {"projector": {f"block_linear_r2/latent_{i}": 0.5 for i in range(30)}}

    _fit(EvaluationCallback(ManyScores(), verbose=1), epochs=1)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 3 and max(map(len, lines)) <= 100
    assert lines[0].startswith("step 2 evaluation: projector/block_linear_r2/latent_0 0.500,")
    assert all(line.startswith("  projector/") for line in lines[1:])
    assert " ".join(lines).count("0.500") == 30


def test_a_stdout_that_cannot_say_whether_it_is_a_terminal_gets_the_plain_lines(monkeypatch):
    class Writer:  # a wrapper with `write` and `flush` alone
        text = ""

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", Writer())
    _fit(EvaluationCallback(RisingScores(), verbose=1, columns=("mcc",)), epochs=1)
    assert sys.stdout.text == "step 2 evaluation: mcc 0.100\n"


def test_an_evaluation_callback_that_never_evaluates_writes_no_event_file(tmp_path):
    _fit(EvaluationCallback(RisingScores(), str(tmp_path), every_epochs=5), epochs=2)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("steps_per_execution", [1, 2])
def test_the_training_logger_writes_the_mean_loss_of_the_steps_since_its_last_write(
    tmp_path, steps_per_execution
):
    # Batches of one row, a model that predicts 0 and never learns: step i's loss is y_i^2.
    targets = np.arange(1.0, 9.0, dtype="float32")[:, None]
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    model.compile(keras.optimizers.SGD(0.0), "mse", steps_per_execution=steps_per_execution)
    logger = TrainingLogger(str(tmp_path), every_steps=3)
    model.fit(
        targets, targets, batch_size=1, epochs=2, shuffle=False, callbacks=[logger], verbose=0
    )
    losses = np.tile(targets[:, 0] ** 2, 2).astype("float64")  # steps 1..16
    # A write at the first report at or after each multiple of 3, each the mean since the
    # previous write or since its epoch began (Keras resets the metrics at each epoch).
    reports = range(steps_per_execution, 17, steps_per_execution)
    written, last, starts = [], 0, []
    for step in reports:
        if step // 3 > (step - steps_per_execution) // 3:
            start = max(last, 8 if step > 8 else 0)
            written.append(step)
            starts.append(start)
            last = step
    expected = [losses[a:b].mean() for a, b in zip(starts, written, strict=True)]
    assert [p["step"] for p in logger.history] == written
    np.testing.assert_allclose([p["loss"] for p in logger.history], expected, rtol=1e-6)
    (events,) = event_files(tmp_path).values()
    assert (
        events[("train/loss", "scalars")] == events[("train/learning_rate", "scalars")] == written
    )
    for every_epochs in (0, 2.5, True, "2"):
        with pytest.raises(ValueError, match=f"`every_epochs` must be .*; got {every_epochs!r}"):
            EvaluationCallback([], every_epochs=every_epochs)
    for every_steps in (0, 2.0, True):
        with pytest.raises(ValueError, match="every_steps"):
            TrainingLogger(every_steps=every_steps)
    # NumPy's integers are read as Python's: a uint8 does not overflow at step 256.
    assert type(TrainingLogger(every_steps=np.uint8(3)).every_steps) is int


def test_the_callbacks_count_the_steps_a_loss_scale_optimizer_skips():
    # A loss scale that overflows at every step: the LossScaleOptimizer skips them all
    # and its `iterations` stays 0, but each is a step of the run, as Backup counts it.
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1), 2.0**127)
    model.compile(optimizer, "mse")
    rows = np.full((8, 2), 100.0, "float32")
    rows[3] = np.nan  # the 4th batch: step 6 of a fit resumed at epoch 1 of 2 steps
    data = tf.data.Dataset.from_tensor_slices((rows, rows[:, :1])).batch(1).repeat()
    callbacks = [
        StopOnNonFiniteLoss(),
        TrainingLogger(every_steps=1),
        EvaluationCallback(RisingScores()),
    ]
    model.fit(data, steps_per_epoch=2, epochs=4, initial_epoch=1, callbacks=callbacks, verbose=0)
    assert int(model.optimizer.iterations) == 0
    stop, logger, evaluation = callbacks
    assert stop.stopped_at == logger.step == 6
    assert [point["step"] for point in logger.history] == [3, 4, 5, 6]
    assert [point["step"] for point in evaluation.history] == [4]


class SummarisedScores(RisingScores):
    """`RisingScores` with MCC as its one summary score."""

    summary_scores = frozenset({"mcc"})


@pytest.mark.parametrize(
    "evaluators, log_all_scores, logged",
    [
        ([SummarisedScores()], False, {"mcc"}),
        ([SummarisedScores()], True, {"mcc", "linear_r2", "block_r2/low"}),
        # An evaluator that names no summary has every score written.
        (
            [SummarisedScores(), UndeclaredEvaluator()],
            False,
            {"mcc", "linear_r2", "block_r2/low", "score"},
        ),
    ],
)
def test_tensorboard_shows_the_summary_scores_unless_asked_for_all(
    tmp_path, evaluators, log_all_scores, logged
):
    callback = EvaluationCallback(evaluators, str(tmp_path), log_all_scores=log_all_scores)
    history = _fit(callback, epochs=2)
    assert "linear_r2" in history.history  # the logs and the history keep every score
    (events,) = event_files(tmp_path).values()
    assert events == {(f"scores/{name}", "scalars"): [2, 4] for name in logged}


def test_the_evaluators_summary_scores_are_the_tables_scores():
    z = np.random.default_rng(0).normal(size=(300, 3))
    blocks = {"high": np.array([2]), "low": np.array([0, 1]), "none": np.array([], int)}
    evaluator = IdentifiabilityEvaluator(z, z, blocks, np.array([1.0, 2.0, 4.0]), nonlinear=True)
    assert evaluator.summary_scores == {
        "linear_r2",
        "mcc",
        "block_r2/high",
        "block_r2/low",
        "subspace_r2/high",
        "subspace_r2/low",
        "lambda_spearman",
    }
    assert IdentifiabilityEvaluator(z, z).summary_scores == {"linear_r2", "mcc"}
    probe = ImageProbeEvaluator([], [], [], [], [], {})
    assert probe.summary_scores == set(SUMMARY)  # the photos' table
    latents = {name: np.zeros(12) for name in LATENT_NAMES}
    for mode, views in (("augment", np.zeros((4, 8, 8, 3))), ("latent", None)):
        source = RenderedPairs(mode=mode, size=16)
        evaluator = LatentEvaluator(
            np.zeros((12, 16, 16, 3)),
            latents,
            source.blocks(),
            views,
            None if views is None else {},
        )
        assert evaluator.summary_scores == set(table_columns(source)), mode


def test_a_plain_fit_logs_evaluations_at_the_training_step(tmp_path):
    callback = EvaluationCallback(RisingScores(), str(tmp_path))
    logger = TrainingLogger(str(tmp_path), every_steps=25)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    data = tf.data.Dataset.from_tensors((np.zeros((4, 3), "float32"), np.zeros((4, 1)))).repeat()
    history = model.fit(data, steps_per_epoch=25, epochs=2, callbacks=[callback, logger], verbose=0)
    assert [entry["step"] for entry in callback.history] == [25, 50]
    assert logger.step == 50 and len(history.history["loss"]) == 2


def test_a_dataset_that_ends_early_is_labelled_by_the_steps_it_ran():
    callback = EvaluationCallback(RisingScores())
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    rows = np.zeros((12, 3), "float32")
    data = tf.data.Dataset.from_tensor_slices((rows, rows[:, :1])).batch(1)  # 12 steps in all
    model.fit(data, steps_per_epoch=5, epochs=3, callbacks=[callback], verbose=0)
    assert int(model.optimizer.iterations) == 12
    assert [entry["step"] for entry in callback.history] == [5, 10, 12]
