"""The synthetic recipe end to end (smoke size) and its command-line overrides."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import config as config_module
from aninfonce_tf import experiment
from aninfonce_tf import presets as recipe_presets
from aninfonce_tf.data.synthetic import concentration_blocks

ROOT = Path(__file__).parent.parent


def test_every_field_can_be_overridden_from_the_command_line():
    preset = config_module.SyntheticConfig()
    config, options = config_module.parse_config(
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
    "first": config_module.SyntheticConfig(steps=100),
    "second": config_module.SyntheticConfig(steps=200, dim=6),
}


def test_the_preset_and_smoke_flags_set_the_defaults_that_flags_override():
    config, options = config_module.parse_config(PRESETS, [], smoke={"steps": 5})
    assert (config.steps, options.preset, options.smoke) == (100, "first", False)
    config, _ = config_module.parse_config(PRESETS, ["--preset", "second"], smoke={"steps": 5})
    assert (config.steps, config.dim) == (200, 6)
    config, options = config_module.parse_config(
        PRESETS, ["--smoke", "--dim", "4", "--preset=second"], smoke={"steps": 5}
    )
    assert (config.steps, config.dim, options.smoke) == (5, 4, True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--learning-rat", "0.1"], "unrecognized arguments: --learning-rat"),
        (["--preset", "paper"], "invalid choice: 'paper'"),
        (["--steps", "many"], "--steps: invalid int value"),
        (["--jit-compile", "maybe"], "expected true or false"),
        (["--smoke"], "unrecognized arguments: --smoke"),  # no smoke overrides given
    ],
)
def test_mistyped_flags_and_values_stop_with_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        config_module.parse_config(PRESETS, argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_help_lists_every_field_with_its_text_and_the_presets_value(capsys):
    with pytest.raises(SystemExit):
        config_module.parse_config(PRESETS, ["--preset", "second", "--help"])
    # Compared without whitespace: argparse wraps lines, also at hyphens.
    text = "".join(capsys.readouterr().out.split())
    for field in dataclasses.fields(config_module.SyntheticConfig):
        assert "--" + field.name.replace("_", "-") in text
        assert "".join(field.metadata["help"].split()) in text
    assert "trainingstepsperloss(default:200)" in text
    assert "(default:None)" not in text


def test_every_preset_separates_a_high_and_a_low_concentration_block():
    presets = recipe_presets.PRESETS
    assert {"quick", "paper-linear", "paper-two-valued", "content-style"} <= set(presets)
    for name, config in presets.items():
        concentration = config.true_concentration()
        assert concentration.shape == (config.dim,), name
        blocks = concentration_blocks(concentration)
        assert concentration[blocks["low"]].max() < concentration[blocks["high"]].min(), name
        assert config.loss_names() == ["aninfonce", "infonce"], name
    # content-style: content 100..200 and style 10..20 (content at 200..400 folded a latent).
    content_style = presets["content-style"].true_concentration()
    np.testing.assert_allclose(content_style[[0, 4, 5, 9]], [100, 200, 10, 20])


def test_config_errors_name_the_argument():
    with pytest.raises(ValueError, match="losses"):
        config_module.SyntheticConfig(losses="aninfonce,simclr").loss_names()
    with pytest.raises(ValueError, match="concentration"):
        config_module.SyntheticConfig(concentration="1,2,3", dim=4).true_concentration()
    with pytest.raises(ValueError, match="concentration"):
        config_module.SyntheticConfig(concentration="cubic").true_concentration()
    custom = config_module.SyntheticConfig(concentration=".5,2,8", dim=3).true_concentration()
    assert custom.tolist() == [0.5, 2.0, 8.0]
    with pytest.raises(ValueError, match="eval_every"):
        experiment.run_synthetic(
            config_module.SyntheticConfig(steps=30, eval_every=20), Path("/tmp/unused")
        )


TINY = config_module.SyntheticConfig(
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
    config = dataclasses.replace(TINY, stop_at="linear_r2=-100,mcc=-1")
    result = experiment.run_synthetic(config, tmp_path, verbose=0)["aninfonce"]
    assert result["steps"] == 20
    assert result["target_reached"]["step"] == 20
    assert [point["step"] for point in result["curve"]] == [20]
    with pytest.raises(ValueError, match="stop_at"):
        experiment.run_synthetic(dataclasses.replace(config, stop_at="mcc"), tmp_path)


def test_a_wider_embedding_learns_one_lambda_hat_per_feature_and_matches_each_latent(tmp_path):
    config = dataclasses.replace(TINY, steps=20, embedding_dim=6)
    assert experiment.build_model(config, "aninfonce").encoder.output_shape == (None, 6)
    result = experiment.run_synthetic(config, tmp_path, verbose=0)["aninfonce"]
    assert len(result["lambda_hat"]) == 6
    assert len(result["lambda_hat_matched"]) == 4
    # Each latent is matched to a different feature, so its Lambda_hat is one of the six.
    assert set(np.round(result["lambda_hat_matched"], 6)) <= set(np.round(result["lambda_hat"], 6))
    assert len(set(np.round(result["lambda_hat_matched"], 6))) == 4
    with pytest.raises(ValueError, match="embedding_dim"):
        experiment.build_model(dataclasses.replace(TINY, embedding_dim=3), "aninfonce")


@pytest.mark.slow
def test_smoke_run_writes_results_plots_and_logs(tmp_path):
    losses = ",".join(config_module.LOSS_VARIANTS)
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "recipes" / "synthetic.py"),
            "--smoke",
            "--losses",
            losses,
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    for name in config_module.LOSS_VARIANTS:
        entry = results[name]
        assert {"linear_r2", "mcc", "block_r2", "steps", "wall_seconds"} <= set(entry)
        assert set(entry["block_r2"]) == {"high", "low"}
        assert entry["steps"] == 40
        assert name in result.stdout
    assert {"lambda_spearman", "lambda_hat"} <= set(results["aninfonce"])
    assert "lambda_hat" not in results["infonce"]
    for png in ("per_latent_r2.png", "curves.png", "lambda_aninfonce.png"):
        assert (tmp_path / png).stat().st_size > 1000
    tags = set()
    for event_file in (tmp_path / "tensorboard" / "aninfonce").rglob("events.out.tfevents.*"):
        for record in tf.data.TFRecordDataset(str(event_file)):
            tags.update(v.tag for v in tf.compat.v1.Event.FromString(record.numpy()).summary.value)
    assert {"lambda_hat/0", "lambda_hat/5", "linear_r2", "block_r2/low", "epoch_loss"} <= tags
