"""The rendered-images recipe: its config mapped onto the pair source, its presets end
to end at smoke size, and the paper's direction in the theory's setting at a small
size (AnInfoNCE keeps the low-concentration latents that InfoNCE discards)."""

import dataclasses

import pytest

from aninfonce_tf import runner
from aninfonce_tf.configs import rendered
from aninfonce_tf.data.effective_concentration import effective_blocks
from aninfonce_tf.data.rendered_pairs import DEFAULT_CONCENTRATION
from aninfonce_tf.data.renderer import (
    CONTINUOUS,
    DERIVED_PARTS,
    LATENT_NAMES,
    LATENTS,
    PARTS,
    part_names,
)
from aninfonce_tf.runner import run_directory
from aninfonce_tf.runner.plan import RunPlan
from tests.support import check_run, load_recipe, printed_table_columns

FIGURES = ["curves", "positive_pairs", "latent_r2", "r2_by_concentration", "lambda_hat"]


def test_help_lists_the_presets_and_the_pair_flags(capsys):
    with pytest.raises(SystemExit) as stop:
        load_recipe("rendered").main(["--help"])
    assert stop.value.code == 0
    text = "".join(capsys.readouterr().out.split())
    assert "--preset{large-objects,quick,latent,spike-slab,latent-spread}" in text
    for flag in ("--mode", "--concentration", "--change-probability", "--crop-min-scale"):
        assert flag in text
    assert "--seeds" in text and "--smoke" in text


def test_the_default_preset_is_the_main_one_with_large_objects_and_its_endpoint():
    """`python recipes/rendered.py` runs `large-objects`: objects of scale 0.16-0.2 and
    2500 steps with an evaluation at the last, its endpoint."""
    config, options = runner.cli.parse_config(rendered.PRESETS, [])
    assert options.preset == "large-objects"
    assert config.object_scale == "0.16,0.2" and config.mode == "augment"
    assert config.steps == 2500 and config.steps % config.eval_every == 0
    assert (
        dataclasses.replace(
            config,
            object_scale=rendered.QUICK.object_scale,
            steps=1500,
            eval_every=750,
            nonlinear=True,
        )
        == rendered.QUICK
    )


def test_the_config_sets_the_pairs_views_and_conditional():
    config = rendered.RenderedConfig(
        mode="spike-slab",
        size=24,
        concentration="50,40,30,4,3,2",
        change_probability="0.25",
        crop_min_scale=0.3,
        jitter_strength=1.0,
        flip_probability=0.0,
        grayscale_probability=0.7,
    )
    pairs = rendered.pairs(config)
    assert (pairs.mode, pairs.size) == ("spike-slab", 24)
    assert pairs.concentration_values.tolist() == [50, 40, 30, 4, 3, 2]
    assert pairs.change_values.tolist() == [0.25] * len(CONTINUOUS)
    augment = pairs.augmentation
    assert (augment.image_size, augment.crop_scale) == (24, (0.3, 1.0))
    assert pairs.latents == LATENTS  # the objects' default scale
    larger = rendered.pairs(dataclasses.replace(config, object_scale="0.16,0.2"))
    assert (larger.latents["scale"].low, larger.latents["scale"].high) == (0.16, 0.2)
    assert (augment.flip_probability, augment.grayscale_probability) == (0.0, 0.7)
    # SimCLR's strength 1: jitter 0.8 / 0.8 / 0.8 / 0.2.
    assert (augment.brightness, augment.contrast, augment.saturation, augment.hue) == pytest.approx(
        (0.8, 0.8, 0.8, 0.2)
    )
    default = rendered.pairs(rendered.PRESETS["latent"])
    assert default.concentration_values.tolist() == [DEFAULT_CONCENTRATION[n] for n in CONTINUOUS]
    # The augment presets crop at least 40 % of the render (the object covers 2.5-6 %).
    quick = rendered.pairs(rendered.PRESETS["quick"]).augmentation
    assert quick.crop_scale == (0.4, 1.0)
    # Flips and grayscale as SimCLR's: probabilities 0.5 and 0.2.
    assert (quick.flip_probability, quick.grayscale_probability) == (0.5, 0.2)


def test_the_table_shows_each_block_the_shape_and_in_augment_mode_the_readout():
    latent = rendered.table_columns(rendered.pairs(rendered.PRESETS["latent"]))
    assert latent == tuple(
        f"{level}/{score}"
        for level in ("backbone", "projector")
        for score in ("block_linear_r2/content", "block_linear_r2/style", "shape_accuracy")
    )
    augment = rendered.table_columns(rendered.pairs(rendered.PRESETS["quick"]))
    assert augment[:4] == (
        "backbone/block_linear_r2/content",
        "backbone/block_linear_r2/style",
        "backbone/shape_accuracy",
        "backbone/augmentation_readout",
    )


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(mode="crop"), "mode"),
        (dict(concentration="1,2,3"), "concentration"),
        (dict(concentration="1,2,x,4,5,6"), "concentration"),
        (dict(mode="spike-slab", change_probability="1.5"), "change_probability"),
        (dict(conditional="cauchy"), "conditional"),
        (dict(crop_min_scale=0.0), "crop_min_scale"),
        (dict(jitter_strength=2.0), "jitter_strength"),
        (dict(flip_probability=1.5), "flip_probability"),
        (dict(flip_probability=-0.1), "flip_probability"),
        (dict(grayscale_probability=float("nan")), "grayscale_probability"),
        (dict(size=16), "size"),
        (dict(object_scale="0.1"), "object_scale"),
        (dict(object_scale="0.15,0.3"), "object_scale"),
        (dict(object_scale="0.2,0.1"), "object_scale"),
        (dict(encoder_filters="8,x"), "encoder_filters"),
        (dict(projector_units=""), "projector_units"),
        (dict(eval_size=50), "eval_size"),
    ],
)
def test_bad_fields_stop_the_run_naming_them_before_anything_is_written(overrides, field, tmp_path):
    config = dataclasses.replace(rendered.PRESETS["latent"], **{**rendered.SMOKE, **overrides})
    with pytest.raises(ValueError, match=f"`{field}`"):
        runner.run(config, rendered.build, tmp_path)
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("preset", list(rendered.PRESETS))
def test_each_preset_runs_its_smoke_config(preset, tmp_path, capsys):
    results = runner.main(rendered, ["--smoke", "--preset", preset, "--out", str(tmp_path)])
    saved = check_run(tmp_path, FIGURES)  # its schema, its TensorBoard logs
    run = saved["run"]
    mode = rendered.PRESETS[preset].mode
    assert (run["preset"], run["smoke"], run["mode"]) == (preset, True, mode)
    assert run["latents"] == list(LATENT_NAMES) and run["continuous_latents"] == list(CONTINUOUS)
    scale = [float(value) for value in rendered.PRESETS[preset].object_scale.split(",")]
    assert run["latent_ranges"]["scale"] == scale
    kinds = ("linear_r2", "nonlinear_r2") if rendered.PRESETS[preset].nonlinear else ("linear_r2",)
    estimate = run["effective_concentration"]
    assert list(estimate["parts"]) == list(PARTS) and estimate["sample_size"] == 8192
    source = rendered.pairs(dataclasses.replace(rendered.PRESETS[preset], **rendered.SMOKE))
    distinct = rendered.distinct_concentrations(source)
    blocks = (  # with a distinct Lambda per latent each latent is its own block
        {latent: part_names([latent]) for latent in CONTINUOUS}
        if distinct
        else effective_blocks(estimate["correlation"])
    )
    assert run["blocks"] == {block: list(parts) for block, parts in blocks.items()}
    assert set(estimate["correlation"]) == {*PARTS, *DERIVED_PARTS}
    for name in ("aninfonce", "infonce"):
        for level in ("backbone", "projector"):
            scores = results[name][level]
            for kind in kinds:
                assert list(scores[kind]) == list(CONTINUOUS)
                assert all(value <= 1 for value in scores[kind].values())
                assert set(scores[f"block_{kind}"]) == {b for b, m in blocks.items() if m}
                assert list(scores[f"part_{kind}"]) == [*PARTS, *DERIVED_PARTS]
            assert 0 <= scores["shape_accuracy"] <= 1
            assert ("augmentation_readout" in scores) == (mode == "augment")
        assert results[name]["steps"] == rendered.SMOKE["steps"]
        assert (tmp_path / name / "model.keras").exists()
    # Lambda_hat on the projector output.
    output = int(rendered.SMOKE["projector_units"].split(",")[-1])
    assert len(results["aninfonce"]["lambda_hat"]) == output
    assert "lambda_hat" not in results["infonce"]
    if mode == "augment":
        assert "true_concentration" not in run
        assert run["augmentation"]["crop_scale"] == [rendered.AUGMENT_CROP_SCALE, 1.0]
    else:
        truth = [DEFAULT_CONCENTRATION[latent] for latent in CONTINUOUS]
        assert run["true_concentration"] == (
            source.concentration_values.tolist() if distinct else truth
        )
        if not distinct:
            assert run["blocks"]["content"] == ["x", "y", "scale"]
    assert ("change_probability" in run) == (mode == "spike-slab")
    for figure in FIGURES:
        assert (tmp_path / f"{figure}.png").stat().st_size > 1000
    out = capsys.readouterr().out
    # Every line of the console within 100 columns, not only the tables (the path: the user's).
    assert max(map(len, out.replace(str(tmp_path), "TMP").splitlines())) <= 100
    printed = printed_table_columns(out)
    columns = rendered.table_columns(source, blocks)
    assert printed == ["variant", *columns, "steps", "seconds"]


@pytest.mark.slow
def test_in_the_theorys_setting_aninfonce_keeps_the_style_latents_that_infonce_discards(
    tmp_path,
):
    """Pairs from the conditional (x, y, scale at Lambda 100; rotation and both hues at
    5), 300 steps at 24 pixels. Style block R^2 (AnInfoNCE / InfoNCE), seeds 0 and 1:
    projector 0.42 / 0.01 and 0.30 / -0.01, backbone 0.54 / 0.35 and 0.43 / 0.23
    (26-55 s each on the busy 2-core CPU, 30 s of CPU time; 2026-11-27)."""
    config = dataclasses.replace(
        rendered.PRESETS["latent"],
        size=24,
        batch_size=128,
        steps=300,
        eval_every=300,
        encoder_filters="16,32",
        features=64,
        projector_units="64,16",
        eval_size=800,
        nonlinear=False,
        export=False,
    )
    results = runner.run(config, rendered.build, tmp_path, verbose=0)

    def style(name, level):
        return results[name][level]["block_linear_r2"]["style"]

    assert style("aninfonce", "projector") > style("infonce", "projector") + 0.15, results
    assert style("aninfonce", "backbone") > style("infonce", "backbone")
    # Both keep the content latents.
    for name in ("aninfonce", "infonce"):
        assert results[name]["backbone"]["block_linear_r2"]["content"] > 0.8


def test_the_seeds_figure_plots_each_parts_mean_against_its_concentration(tmp_path):
    config = dataclasses.replace(rendered.RenderedConfig(), **rendered.SMOKE)
    experiment = rendered.build(config)
    parts = experiment.metadata["effective_concentration"]["parts"]
    summary = {
        "variants": {
            variant: {
                f"{level}/part_linear_r2/{part}": {"mean": 0.5, "sd": sd, "n": 2}
                for level in ("backbone", "projector")
                for part in parts
            }
            for variant, sd in (("aninfonce", 0.1), ("infonce", None))
        }
    }
    (path,) = experiment.seeds_plots(summary, tmp_path, title="preset quick")
    assert path == tmp_path / "r2_by_concentration.png" and path.stat().st_size > 1000
    # A rerun with more seeds into the directory accepts the figure as the run's own.
    (tmp_path / "seed_0").mkdir()
    run_directory.SeedsDirectory.claim(tmp_path, RunPlan.create(config, seeds=[1]))


def test_every_training_seed_of_a_preset_is_scored_on_the_same_blocks():
    config = dataclasses.replace(rendered.RenderedConfig(), **rendered.SMOKE)
    first, other = (
        rendered.build(dataclasses.replace(config, seed=seed)).metadata for seed in (0, 7)
    )
    assert first["blocks"] == other["blocks"]
    assert first["effective_concentration"] == other["effective_concentration"]
