"""The synthetic recipe end to end (smoke size) and its command-line overrides."""

import dataclasses
import importlib

import numpy as np
import pytest

from aninfonce_tf import runner
from aninfonce_tf.configs import synthetic
from aninfonce_tf.data.synthetic import concentration_blocks
from aninfonce_tf.loss_variants import LOSS_VARIANTS
from aninfonce_tf.runner import cli
from tests.support import check_run, load_recipe


def test_every_field_can_be_overridden_from_the_command_line():
    preset = synthetic.SyntheticConfig()
    config, options = cli.parse_config(
        {"default": preset},
        [
            "--batch-size",
            "64",
            "--learning-rate",
            "0.01",
            "--mixed-precision",
            "true",
            "--high",
            "50",
            "--out",
            "x",
        ],
    )
    assert (config.batch_size, config.learning_rate, config.mixed_precision, config.high) == (
        64,
        0.01,
        True,
        50.0,
    )
    assert (options.out, options.preset) == ("x", "default")
    assert config.steps == preset.steps


PRESETS = {
    "first": synthetic.SyntheticConfig(steps=100),
    "second": synthetic.SyntheticConfig(steps=200, dim=6),
}


def test_the_preset_and_smoke_flags_set_the_defaults_that_flags_override():
    config, options = cli.parse_config(PRESETS, [], smoke={"steps": 5})
    assert (config.steps, options.preset, options.smoke) == (100, "first", False)
    config, _ = cli.parse_config(PRESETS, ["--preset", "second"], smoke={"steps": 5})
    assert (config.steps, config.dim) == (200, 6)
    config, options = cli.parse_config(
        PRESETS, ["--smoke", "--dim", "4", "--preset=second"], smoke={"steps": 5}
    )
    assert (config.steps, config.dim, options.smoke) == (5, 4, True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--learning-rat", "0.1"], "unrecognized arguments: --learning-rat"),
        (["--preset", "paper"], "invalid choice: 'paper'"),
        (["--steps", "many"], "--steps: expected an integer"),
        (["--jit-compile", "maybe"], "expected true or false"),
        (["--smoke"], "unrecognized arguments: --smoke"),  # no smoke overrides given
        (["--strategy", "horovod"], "invalid choice: 'horovod'"),
        (["--space", "torus"], "invalid choice: 'torus'"),
    ],
)
def test_mistyped_flags_and_values_stop_with_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.parse_config(PRESETS, argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_help_lists_every_field_with_its_text_and_the_presets_value(capsys):
    with pytest.raises(SystemExit):
        cli.parse_config(PRESETS, ["--preset", "second", "--help"])
    # Compared without whitespace: argparse wraps lines, also at hyphens.
    text = "".join(capsys.readouterr().out.split())
    for field in dataclasses.fields(synthetic.SyntheticConfig):
        assert "--" + field.name.replace("_", "-") in text
        assert "".join(field.metadata["help"].split()) in text
    assert "trainingstepsperloss(default:200)" in text
    assert "(default:None)" not in text
    assert "from" + ",".join(LOSS_VARIANTS) + "(default" in text  # names, not their reprs


def test_every_preset_separates_a_high_and_a_low_concentration_block():
    presets = synthetic.PRESETS
    assert {"quick", "paper-linear", "paper-two-valued", "content-style"} <= set(presets)
    for name, config in presets.items():
        concentration = config.true_concentration()
        assert concentration.shape == (config.dim,), name
        blocks = concentration_blocks(concentration)
        assert concentration[blocks["low"]].max() < concentration[blocks["high"]].min(), name
        controls = ["aninfonce_isotropic"] if name == "dose-response" else []
        assert config.loss_names() == ["aninfonce", *controls, "infonce"], name
    # content-style: content 100..200 and style 10..20 (content at 200..400 folded a latent).
    content_style = presets["content-style"].true_concentration()
    np.testing.assert_allclose(content_style[[0, 4, 5, 9]], [100, 200, 10, 20])


def test_paper_linear_fast_keeps_the_papers_data_encoder_and_evaluation():
    # The time-to-target preset differs from the paper's setting in its batch and the
    # learned rotation alone: its data, encoder layers, optimiser and held-out
    # evaluation (4096 samples, the plain MCC) are `paper-linear`'s.
    fast, paper = synthetic.PRESETS["paper-linear-fast"], synthetic.PRESETS["paper-linear"]
    changed = {
        field.name
        for field in dataclasses.fields(paper)
        if getattr(fast, field.name) != getattr(paper, field.name)
    }
    assert changed == {"batch_size", "rotation_gain"}
    assert fast.eval_size >= 4096 and not fast.alignment_pairs


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(losses="aninfonce,simclr"), "losses"),
        (dict(steps=30, eval_every=20), "eval_every"),
        (dict(steps=1000, warmup_steps=1000), "warmup_steps"),  # never peaks nor decays
        (dict(batch_size=1), "batch_size"),
        (dict(strategy="horovod"), "strategy"),
        (dict(optimizer="lamb"), "optimizer"),
        (dict(learning_rate_schedule="step"), "learning_rate_schedule"),
        (dict(ema_momentum=1.0), "ema_momentum"),
        (dict(steps_per_execution=3), "steps_per_execution"),
        (dict(save_every=300), "save_every"),  # does not divide eval_every
        (dict(learning_rate=float("nan")), "learning_rate"),
        (dict(concentration_learning_rate=-0.05), "concentration_learning_rate"),
        (dict(weight_decay=1e-4), "weight_decay"),  # Adam takes none
        # Every variant's loss settings, before the first variant trains.
        (dict(infonce_temperature=0.0), "infonce_temperature"),
        (dict(infonce_temperature=float("inf")), "infonce_temperature"),
        (
            dict(losses="aninfonce,infonce_ensemble", ensemble_temperatures=""),
            "ensemble_temperatures",
        ),
        (dict(losses="aninfonce_ensemble", ensemble_temperatures="0.1,x"), "ensemble_temperatures"),
        (dict(losses="aninfonce,infonce_hard_negatives", loss_block_size=64), "loss_block_size"),
        (dict(initial_concentration=-1.0), "initial_concentration"),
        (dict(generator_draws=0), "generator_draws"),
        (dict(alignment_pairs=100), "alignment_pairs"),  # 0 or enough pairs
        # An embedding wider than the layer before it has dependent dimensions.
        (dict(alignment_pairs=2000, embedding_dim=200), "alignment_pairs"),
    ],
)
def test_run_config_errors_name_the_field(overrides, field, tmp_path):
    with pytest.raises(ValueError, match=f"`{field}`"):
        runner.run(synthetic.SyntheticConfig(**overrides), synthetic.build, tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_field_a_config_declares_again_keeps_the_rule_of_the_field_it_replaces():
    # MnistVaeConfig declares `batch_size` and `steps` again with its own defaults.
    config = importlib.import_module("aninfonce_tf.configs.mnist_vae").MnistVaeConfig
    with pytest.raises(ValueError, match="`batch_size` must be at least 2; got 1"):
        config(batch_size=1).validate()
    config(batch_size=2).validate()


def test_a_value_no_rule_can_compare_is_one_value_error_naming_its_field():
    for overrides, message in [
        (dict(batch_size=None), "`batch_size` must be a number; got None"),
        (dict(hidden_units=64), "`hidden_units` must be text; got 64"),
        (dict(generator_draws=np.float32("nan")), "`generator_draws` must be a finite number"),
        (dict(log_every=0.5), "`log_every` must be positive; got 0.5"),
    ]:
        with pytest.raises(ValueError, match=message):
            synthetic.SyntheticConfig(**overrides).validate()


def test_a_value_of_another_type_than_its_field_declares_is_refused():
    # From Python, not the command line: a float count is not truncated, a bool is not 1.
    for overrides, message in [
        (dict(batch_size=100.5), "`batch_size` must be an integer; got 100.5"),
        (dict(dim=10.0), "`dim` must be an integer; got 10.0"),
        (dict(steps=True, eval_every=1), "`steps` must be an integer; got True"),
        (dict(infonce_temperature=True), "`infonce_temperature` must be a number; got True"),
        (dict(export="yes"), "`export` must be True or False; got 'yes'"),
        (dict(stop_at=None), "`stop_at` must be text; got None"),
        (dict(stop_at="mcc=0.9", stop_patience=2.0), "`stop_patience` must be an integer"),
        # A whole number beyond a float: not an OverflowError.
        (dict(stop_at="mcc=0.9", stop_patience=10**400), "`stop_patience` must be a finite"),
        (dict(learning_rate=10**400), "`learning_rate` must be a finite number"),
        (dict(high="200"), "`high` must be a number; got '200'"),
        # NumPy's would stop the run at config.json, after its directory is claimed.
        (dict(batch_size=np.int64(128)), r"an integer \(Python's int: config.json is JSON\)"),
    ]:
        with pytest.raises(ValueError, match=message):
            synthetic.SyntheticConfig(**overrides).validate()
    # An integer is a number; an optional field may be None.
    synthetic.SyntheticConfig(learning_rate=1, high=None).validate()


def test_every_preset_of_every_recipe_validates_with_and_without_smoke():
    for name in ("synthetic", "cifar10", "imagenet", "photos", "mnist_vae", "rendered"):
        module = importlib.import_module(f"aninfonce_tf.configs.{name}")
        for preset in module.PRESETS.values():
            for config in (preset, dataclasses.replace(preset, **module.SMOKE)):
                config.validate()
                assert config.eval_every % config.epoch_steps() == 0


def test_config_errors_name_the_argument():
    with pytest.raises(ValueError, match="concentration"):
        synthetic.SyntheticConfig(concentration="1,2,3", dim=4).true_concentration()
    with pytest.raises(ValueError, match="concentration"):
        synthetic.SyntheticConfig(concentration="cubic").true_concentration()
    for spec in ("inf,1,1", "nan,1,1", "0,1,1"):  # refused by `validate`, before any run
        with pytest.raises(ValueError, match="`concentration` values must be positive and finite"):
            synthetic.SyntheticConfig(concentration=spec, dim=3).validate()
    custom = synthetic.SyntheticConfig(concentration=".5,2,8", dim=3).true_concentration()
    assert custom.tolist() == [0.5, 2.0, 8.0]


TINY = synthetic.SyntheticConfig(
    dim=4,
    steps=60,
    eval_every=20,
    batch_size=32,
    hidden_units="16",
    eval_size=256,
    generator_draws=20,
    losses="aninfonce",
)


def test_stop_at_ends_training_at_the_first_evaluation_reaching_the_targets(tmp_path):
    full = runner.run(TINY, synthetic.build, tmp_path / "full", verbose=0)["aninfonce"]
    r2 = [point["linear_r2"] for point in full["curve"]]
    first = next(i for i, value in enumerate(r2) if value >= max(r2[:2]))
    config = dataclasses.replace(TINY, stop_at=f"linear_r2={max(r2[:2])},mcc=0")
    result = runner.run(config, synthetic.build, tmp_path / "stop", verbose=0)["aninfonce"]
    step = 20 * (first + 1)
    assert (result["steps"], result["target_reached"]["step"]) == (step, step)
    assert result["curve"] == [
        {**point, "seconds": mine["seconds"]}
        for point, mine in zip(full["curve"][: first + 1], result["curve"], strict=True)
    ]


def test_a_wider_embedding_learns_one_lambda_hat_per_feature_and_matches_each_latent(tmp_path):
    config = dataclasses.replace(TINY, steps=20, embedding_dim=6)
    model = runner.build_model(config, synthetic.build(config), "aninfonce")
    assert model.encoder.output_shape == (None, 6)
    result = runner.run(config, synthetic.build, tmp_path, verbose=0)["aninfonce"]
    assert len(result["lambda_hat"]) == 6
    assert len(result["lambda_hat_matched"]) == 4
    # Each latent is matched to a different feature, so its Lambda_hat is one of the six.
    assert set(np.round(result["lambda_hat_matched"], 6)) <= set(np.round(result["lambda_hat"], 6))
    assert len(set(np.round(result["lambda_hat_matched"], 6))) == 4
    with pytest.raises(ValueError, match="embedding_dim"):
        dataclasses.replace(TINY, embedding_dim=3).validate()


@pytest.mark.slow
def test_smoke_run_writes_results_plots_and_logs(tmp_path, capsys):
    # The recipe's script, called as its command line calls it (in this process: no
    # second start of TensorFlow); `python recipes/synthetic.py`: tests/test_command_line.py.
    losses = ",".join(LOSS_VARIANTS)
    load_recipe("synthetic").main(["--smoke", "--losses", losses, "--out", str(tmp_path)])
    stdout = capsys.readouterr().out
    anisotropic = [name for name, variant in LOSS_VARIANTS.items() if variant.anisotropic]
    figures = ["per_latent_r2", "curves", *(f"lambda_{name}" for name in anisotropic)]
    # results.json follows its schema; TensorBoard has each scalar once, against the
    # step, and the figures as images (`tests/support.py`).
    saved = check_run(tmp_path, figures)
    results = saved["variants"]
    assert saved["run"]["preset"] == "quick" and saved["run"]["smoke"] is True
    assert len(saved["run"]["true_concentration"]) == 6
    assert saved["run"]["config"]["losses"] == losses
    for name in LOSS_VARIANTS:
        entry = results[name]
        assert {"linear_r2", "mcc", "block_r2", "steps", "wall_seconds"} <= set(entry)
        assert set(entry["block_r2"]) == {"high", "low"}
        assert entry["steps"] == 40
        assert [point["step"] for point in entry["loss_curve"]] == [20, 40]
        assert name in stdout
    assert {"lambda_spearman", "lambda_hat"} <= set(results["aninfonce"])
    assert "lambda_hat" not in results["infonce"]
    for png in figures:
        assert (tmp_path / f"{png}.png").stat().st_size > 1000
    # The console: a line per evaluation with the table's columns, no raw scores.
    evaluation = next(line for line in stdout.splitlines() if "evaluation:" in line)
    assert evaluation.startswith("step 20 evaluation: linear_r2 ")
    assert "linear_r2_per_latent" not in stdout
