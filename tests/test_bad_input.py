"""Every row of the README's "Bad input" table: the input and the error it gives.

The table lists these cases by name; `test_the_readme_table_lists_every_case`
keeps the two in step."""

import dataclasses
import re
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import AnInfoNCE, ContrastiveModel, DiagonalScaling, InfoNCE, experiment, ops
from aninfonce_tf.configs import synthetic
from aninfonce_tf.data.synthetic import SyntheticSetup, concentration_preset
from aninfonce_tf.data.vae import digit_images
from aninfonce_tf.distribute import distribute_global_batches, get_strategy
from aninfonce_tf.evaluation.callbacks import StopOnNonFiniteLoss
from aninfonce_tf.losses import loss_variant

README = Path(__file__).parent.parent / "README.md"
SMOKE = dataclasses.replace(synthetic.PRESETS["quick"], **synthetic.SMOKE)
X = np.random.default_rng(0).normal(size=(8, 6)).astype("float32")


def _model(scaling=True):
    encoder = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4)])
    return ContrastiveModel(encoder, scaling=DiagonalScaling(5.0) if scaling else None)


def _fit_dataset(dataset):
    model = _model()
    model.compile("adam", concentration_optimizer=1e-2)
    return model.fit(dataset, epochs=1, verbose=0)


def _fit(*batch):
    return _fit_dataset(tf.data.Dataset.from_tensors(batch))


def _run(tmp_path, **overrides):
    experiment.run(dataclasses.replace(SMOKE, **overrides), synthetic.build, tmp_path, verbose=0)


def _other_out(tmp_path):
    _run(tmp_path, steps=20, losses="aninfonce")
    _run(tmp_path, steps=20, losses="aninfonce", seed=1)


def _non_finite(tmp_path):
    model = _model()
    model.compile("adam", concentration_optimizer=1e-2)
    stop = StopOnNonFiniteLoss()
    bad = np.where(np.arange(6) == 2, np.nan, X).astype("float32")
    model.fit((bad, X), batch_size=4, callbacks=[stop], verbose=0)
    raise RuntimeError(f"stopped at step {stop.stopped_at}")


CASES = {
    "views of different widths": (
        lambda _: _fit(X, X[:, :5]),
        ValueError,
        "`view1` and `view2` must have the same shape",
    ),
    "a batch of one pair": (lambda _: _fit(X[:1], X[:1]), ValueError, "at least 2"),
    "embeddings of rank 3": (
        lambda _: ops.info_nce(np.zeros((4, 2, 3)), np.zeros((4, 2, 3))),
        ValueError,
        "must have rank 2",
    ),
    "observations the encoder does not take": (
        lambda _: _fit(X[:, :5], X[:, :5]),
        ValueError,
        "expected axis -1 of input shape to have value 6",
    ),
    "views that are not numbers": (
        lambda _: _fit(np.full((8, 6), "a"), np.full((8, 6), "b")),
        TypeError,
        "`view1` must hold numbers; got dtype string",
    ),
    "a batch that is not a pair": (lambda _: _fit(X, X, X), TypeError, "`\\(view1, view2\\)`"),
    "a dict without view2": (
        lambda _: _fit({"view1": X, "z": X}),
        TypeError,
        "missing \\['view2'\\]",
    ),
    "an empty dataset": (
        lambda _: _fit_dataset(tf.data.Dataset.from_tensor_slices((X[:0], X[:0])).batch(4)),
        ValueError,
        "`fit` ran no training step",
    ),
    "NaN or inf in the data": (_non_finite, RuntimeError, "stopped at step 1"),
    "a global batch that replicas cannot split": (
        lambda _: distribute_global_batches(
            get_strategy("mirrored"), lambda: tf.data.Dataset.range(1), 7
        ),
        ValueError,
        "`batch_size` \\(7\\) must be divisible by the 2 replicas",
    ),
    "a cosine InfoNCE with Lambda_hat": (
        lambda _: _model().compile("adam", loss=InfoNCE()),
        ValueError,
        "cosine InfoNCE normalises away",
    ),
    "AnInfoNCE without Lambda_hat": (
        lambda _: _model(scaling=False).compile("adam", loss=AnInfoNCE()),
        ValueError,
        "AnInfoNCE needs",
    ),
    "a non-positive temperature": (lambda _: InfoNCE(temperature=0.0), ValueError, "temperature"),
    "an unknown loss variant": (lambda _: loss_variant("simclr"), ValueError, "simclr"),
    "an unknown similarity": (lambda _: InfoNCE(similarity="dot"), ValueError, "similarity"),
    "an unknown latent space": (
        lambda _: SyntheticSetup(concentration_preset("linear"), space="torus"),
        ValueError,
        "`space` 'torus'",
    ),
    "an unknown concentration preset": (
        lambda _: concentration_preset("cubic"),
        ValueError,
        "'cubic'",
    ),
    "an unknown strategy": (lambda _: get_strategy("horovod"), ValueError, "`strategy`"),
    "an unknown optimizer": (lambda p: _run(p, optimizer="lamb"), ValueError, "`optimizer`"),
    "muon exclusions for another optimizer": (
        lambda p: _run(p, optimizer="adam", muon_exclude="hidden"),
        ValueError,
        "`muon_exclude`",
    ),
    "steps not a multiple of eval_every": (
        lambda p: _run(p, steps=30),
        ValueError,
        "`eval_every`",
    ),
    "a --stop-at score a variant lacks": (
        lambda p: _run(p, stop_at="lambda_spearman=0.9"),
        ValueError,
        "'infonce' does not produce",
    ),
    "an --out that holds another config": (_other_out, ValueError, "another config \\(seed"),
    "a dataset missing offline (MNIST for `--vae-source mnist`)": (
        lambda p: digit_images("mnist", data_dir=str(p)),
        ValueError,
        "MNIST is not prepared .*download_and_prepare.*--vae-source digits",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_gives_a_clear_error(case, tmp_path):
    call, error, message = CASES[case]
    with pytest.raises(error, match=message):
        call(tmp_path)


def test_integer_views_are_accepted_as_floats():
    history = _fit(np.arange(48).reshape(8, 6), np.arange(48).reshape(8, 6) + 1)
    assert np.isfinite(history.history["loss"][0])


def test_the_readme_table_lists_every_case():
    section = README.read_text().split("### Bad input", 1)[1]
    table = re.search(r"\n(\|.*?)\n\n", section, re.S).group(1).splitlines()
    assert all(re.fullmatch(r"\| .+ \| .+ \|", line) for line in table[2:])
    rows = [line.split("|")[1].strip() for line in table[2:]]
    assert set(CASES) | {"integer views"} == set(rows)
