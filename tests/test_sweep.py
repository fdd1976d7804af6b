"""The sweep (`aninfonce_tf.sweep`) and the rendered trade-off recipe over it: which
cells and seeds run where (a star through the preset's point by default, the product
grid behind a flag), the refusal of crops that lose the object, the table with its
paired intervals and the figure from the cells' summaries. Training itself is
`run_seeds`' (tested with the runner); here it is replaced by a stand-in that records
its calls, writes each seed's results.json `run` record and returns a summary made
from the cell's values."""

import json
from pathlib import Path

import pytest

from aninfonce_tf import sweep
from aninfonce_tf.checkpoints import write_json
from aninfonce_tf.configs import rendered
from aninfonce_tf.configs.base import UsageError
from aninfonce_tf.data.effective_concentration import effective_blocks
from aninfonce_tf.statistics import summarize
from aninfonce_tf.sweep_tables import tradeoff_table
from tests.support import load_recipe

CENTER = {field: getattr(rendered.SWEEP, field) for field in rendered.SWEEP_AXES}
# Only the crop axis: the other axes' flags empty (their preset values).
CROP_ONLY = [f"--grid-{f.replace('_', '-')}=" for f in rendered.SWEEP_AXES if f != "crop_min_scale"]


def _concentration(config) -> dict[str, float]:
    """A stand-in effective concentration: x rises with the crop's smallest area."""
    return {"x": 1.5 * config.crop_min_scale, "y": 2.0, "object_hue_cos": 20.0}


@pytest.fixture
def fake_runs(monkeypatch):
    """`run_seeds` replaced: each call recorded; shape accuracy falls and style R^2
    rises with the crop's smallest area, AnInfoNCE's style R^2 0.1 above InfoNCE's
    plus 0.01 seed^2 (paired differences that vary over the seeds)."""
    calls = []

    def run_seeds(config, build, run_dir, seeds, context=None, **labels):
        assert context.chief  # one RunContext for the whole grid
        calls.append((config, Path(run_dir), list(seeds), labels))
        parts = _concentration(config)
        run = {"effective_concentration": {"parts": parts}, "blocks": effective_blocks(parts)}
        scores = {}
        for seed in seeds:
            (Path(run_dir) / f"seed_{seed}").mkdir(parents=True, exist_ok=True)
            write_json(Path(run_dir) / f"seed_{seed}" / "results.json", {"run": run})
            noise = 0.01 * seed
            base = {
                "backbone/shape_accuracy": 1 - config.crop_min_scale / 2 + noise,
                "backbone/block_linear_r2/style": config.crop_min_scale + noise,
                "backbone/part_linear_r2/x": config.crop_min_scale / 2,
            }
            style = base["backbone/block_linear_r2/style"] + 0.1 + 0.01 * seed**2
            scores[seed] = {
                "aninfonce": {**base, "backbone/block_linear_r2/style": style},
                "infonce": base,
            }
        return summarize(scores)

    monkeypatch.setattr(sweep, "run_seeds", run_seeds)
    return calls


def _refused(out, flags, capsys) -> str:
    """The recipe's `--smoke` run into `out` with `flags`: the one line it exits with
    (status 2), leaving no `out` behind."""
    with pytest.raises(SystemExit) as stop:
        load_recipe("rendered_sweep").main(["--smoke", "--out", str(out), *flags])
    assert stop.value.code == 2 and not out.exists()
    return capsys.readouterr().err


def test_corners_get_their_seeds_and_the_inner_cells_theirs():
    grid = {"a": [1, 2, 3], "b": [0.5, 1.0]}
    cells = sweep.grid_cells(grid, seeds=[7], corner_seeds=[0, 1])
    assert len(cells) == 6
    seeds = {sweep.cell_name(values): cell_seeds for values, cell_seeds in cells}
    assert seeds == {
        "a=1,b=0.5": [0, 1],
        "a=1,b=1": [0, 1],
        "a=2,b=0.5": [7],
        "a=2,b=1": [7],
        "a=3,b=0.5": [0, 1],
        "a=3,b=1": [0, 1],
    }


@pytest.mark.parametrize(
    "grid, seeds, corner_seeds",
    [({}, [0], [0]), ({"a": []}, [0], [0]), ({"a": [1]}, [], [0]), ({"a": [1]}, [0], [])],
)
def test_an_empty_grid_or_seed_list_is_refused(grid, seeds, corner_seeds):
    with pytest.raises(ValueError, match="grid|seeds"):
        sweep.grid_cells(grid, seeds, corner_seeds)


def test_the_star_runs_the_center_once_and_changes_each_axis_alone():
    axes = {"a": [1, 2, 3], "b": [0.5, 1.0], "c": [7]}
    cells = sweep.star_cells(axes, {"a": 2, "b": 0.5, "c": 7, "d": 0}, seeds=[0, 1, 2])
    assert [values for values, _ in cells] == [
        {"a": 2, "b": 0.5, "c": 7},  # the center, once although every axis holds it
        {"a": 1, "b": 0.5, "c": 7},
        {"a": 3, "b": 0.5, "c": 7},
        {"a": 2, "b": 1.0, "c": 7},
    ]
    assert all(seeds == [0, 1, 2] for _, seeds in cells)
    with pytest.raises(ValueError, match="center"):
        sweep.star_cells(axes, {"a": 2, "b": 0.5}, seeds=[0])
    with pytest.raises(ValueError, match="seeds"):
        sweep.star_cells(axes, {"a": 2, "b": 0.5, "c": 7}, seeds=[])


def test_the_default_map_is_a_star_of_six_cells_each_the_presets_training():
    cells = sweep.star_cells(rendered.SWEEP_AXES, CENTER, seeds=[0, 1, 2])
    changed = [sweep.changed_values(values, CENTER) for values, _ in cells]
    assert changed == [
        {},
        {"crop_min_scale": 0.6},
        {"crop_min_scale": 0.8},
        {"jitter_strength": 0.0},
        {"jitter_strength": 1.0},
        {"flip_probability": 0.0},
    ]
    assert CENTER == {
        "crop_min_scale": 0.4,
        "jitter_strength": 0.5,
        "flip_probability": 0.5,
        "grayscale_probability": 0.2,
    }
    assert rendered.SWEEP.steps == rendered.PRESETS["quick"].steps == 1500
    assert rendered.SWEEP.losses == "aninfonce,infonce"
    assert min(rendered.SWEEP_AXES["crop_min_scale"]) >= rendered.SWEEP_LIMITS["crop_min_scale"][0]


def test_a_field_the_config_lacks_is_refused_before_any_run(fake_runs, tmp_path):
    with pytest.raises(ValueError, match="crop_scale"):
        sweep.run_grid(rendered.SWEEP, rendered.build, tmp_path, {"crop_scale": [0.5]})
    assert fake_runs == []


def test_each_cell_runs_its_config_into_its_own_directory(fake_runs, tmp_path):
    grid = {"crop_min_scale": [0.9, 0.4], "jitter_strength": [0.0, 0.5, 1.0]}
    cells = sweep.run_grid(
        rendered.SWEEP,
        rendered.build,
        tmp_path,
        grid,
        seeds=[0],
        corner_seeds=[0, 1, 2],
        preset="sweep",
    )
    assert len(fake_runs) == 6
    for config, run_dir, seeds, labels in fake_runs:
        values = {
            "crop_min_scale": config.crop_min_scale,
            "jitter_strength": config.jitter_strength,
        }
        assert run_dir == tmp_path / sweep.cell_name(values)
        assert config.steps == rendered.SWEEP.steps and labels == {"preset": "sweep"}
        assert seeds == ([0] if config.jitter_strength == 0.5 else [0, 1, 2])
    saved = json.loads((tmp_path / "grid.json").read_text())
    assert [cell["cell"] for cell in saved] == [cell["cell"] for cell in cells]
    assert saved[0]["values"] == {"crop_min_scale": 0.9, "jitter_strength": 0.0}
    assert saved[0]["changed"] == {"crop_min_scale": 0.9, "jitter_strength": 0.0}
    assert saved[4]["changed"] == {}  # the preset's point: crop 0.4, jitter 0.5
    # The cell's pairs, as its first seed's results.json records them.
    parts = saved[0]["run"]["effective_concentration"]["parts"]
    assert parts["x"] == pytest.approx(1.35) and saved[0]["run"]["blocks"]["style"] == ["x", "y"]


def test_a_crop_that_loses_the_object_is_refused_saying_why(fake_runs, tmp_path, capsys):
    cells = [({"crop_min_scale": 0.2}, [0])]
    with pytest.raises(UsageError, match=r"`crop_min_scale` 0.2, below 0.4: smaller crops lose"):
        sweep.run_cells(rendered.SWEEP, rendered.build, tmp_path, cells, rendered.SWEEP_LIMITS)
    out = tmp_path / "sweep"
    error = _refused(out, ["--grid-crop-min-scale", "0.4,0.39"], capsys)
    assert "below 0.4" in error and "object" in error and "--allow-below-limits" in error
    assert fake_runs == []
    load_recipe("rendered_sweep").main(
        ["--smoke", "--out", str(out), "--grid-crop-min-scale", "0.2", "--allow-below-limits"]
        + CROP_ONLY
    )
    assert sorted(config.crop_min_scale for config, *_ in fake_runs) == [0.2, 0.4]


def test_the_table_gives_each_paired_difference_with_its_interval():
    scores = {
        seed: {
            "aninfonce": {"acc": 0.5 + difference, "r2": 0.3},
            "infonce": {"acc": 0.5, "r2": 0.3},
        }
        for seed, difference in enumerate([0.10, 0.12, 0.14])
    }
    cell = {"changed": {"jitter_strength": 1.0}, "summary": summarize(scores)}
    rows = tradeoff_table([cell], ["acc", "r2"]).splitlines()
    assert rows[0] == "| cell | loss | acc | r2 | seeds |"
    assert rows[2] == "| jitter 1 | AnInfoNCE | 0.620 ± 0.020 | 0.300 ± 0.000 | 3 |"
    # Mean 0.12, sd 0.02: t(0.975, 2) x 0.02 / sqrt(3) = 0.0497 either side.
    assert (
        rows[4]
        == "| jitter 1 | AnInfoNCE − InfoNCE | +0.120 [+0.070, +0.170] | +0.000 [+0.000, +0.000] | 3 |"
    )


def test_the_recipe_writes_the_table_and_figure_of_its_star(fake_runs, tmp_path, capsys):
    cells = load_recipe("rendered_sweep").main(
        ["--smoke", "--out", str(tmp_path), "--grid-crop-min-scale", "0.4,0.8", "--seeds", "0,1"]
        + CROP_ONLY
    )
    assert [cell["changed"] for cell in cells] == [{}, {"crop_min_scale": 0.8}]
    assert [cell["cell"] for cell in cells][1] == (
        "crop_min_scale=0.8,jitter_strength=0.5,flip_probability=0.5,grayscale_probability=0.2"
    )
    assert all(seeds == [0, 1] for _, _, seeds, _ in fake_runs)
    assert all(config.steps == rendered.SMOKE["steps"] for config, *_ in fake_runs)
    text = (tmp_path / "tradeoff.md").read_text()
    assert "uncorrected" in text
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0] == "| cell | loss | " + " | ".join(rendered.SWEEP_SCORES) + " | seeds |"
    # Mean +- sd over the two seeds (0.01 apart): sd 0.007; AnInfoNCE's style 0.1 (and
    # 0.01 seed^2) higher, the paired difference's interval t(0.975, 1) x 0.007 / sqrt(2).
    assert [row.split(" | ")[:2] for row in table[1:4]] == [
        ["| preset", "AnInfoNCE"],
        ["| preset", "InfoNCE"],
        ["| preset", "AnInfoNCE − InfoNCE"],
    ]
    assert table[4].startswith("| crop 0.8 | AnInfoNCE | 0.605 ± 0.007 | - | 0.910 ± 0.014 |")
    assert table[5].startswith("| crop 0.8 | InfoNCE | 0.605 ± 0.007 | - | 0.805 ± 0.007 |")
    assert table[6].startswith("| crop 0.8 | AnInfoNCE − InfoNCE | +0.000 [+0.000, +0.000]")
    assert "| +0.105 [+0.041, +0.169] |" in table[6]
    assert table[-1] == "| crop 0.8 | object_hue_cos 20 | x 1.2, y 2 |"  # the blocks
    assert (tmp_path / "tradeoff.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "grid.json").read_text())[1]["changed"] == {"crop_min_scale": 0.8}


def test_the_product_design_runs_every_combination(fake_runs, tmp_path):
    cells = load_recipe("rendered_sweep").main(
        [
            "--smoke",
            "--design",
            "product",
            "--out",
            str(tmp_path),
            "--grid-crop-min-scale",
            "0.4,0.8",
            "--grid-jitter-strength",
            "0,1",
            "--grid-flip-probability",
            "",
            "--seeds",
            "0",
            "--corner-seeds",
            "0,1",
        ]
    )
    assert [cell["changed"] for cell in cells] == [
        {"jitter_strength": 0.0},
        {"jitter_strength": 1.0},
        {"crop_min_scale": 0.8, "jitter_strength": 0.0},
        {"crop_min_scale": 0.8, "jitter_strength": 1.0},
    ]
    assert all(seeds == [0, 1] for _, _, seeds, _ in fake_runs)  # all four are corners


def test_corner_seeds_are_refused_for_the_star(fake_runs, tmp_path, capsys):
    assert "--design product only" in _refused(tmp_path / "s", ["--corner-seeds", "0,1"], capsys)
    assert fake_runs == []


def test_help_shows_the_sweep_flags(capsys):
    with pytest.raises(SystemExit) as stop:
        load_recipe("rendered_sweep").main(["--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--design {star,product}", "--corner-seeds", "--seeds", "--allow-below-limits"):
        assert flag in text
    for field in rendered.SWEEP_AXES:
        assert f"--grid-{field.replace('_', '-')}" in text
    assert "(default: 0.4,0.6,0.8)" in text and "~2 h" in text
    assert "--preset {sweep,quick,latent,spike-slab}" in text


def test_a_cell_that_cannot_run_is_refused_before_the_first_run(fake_runs, tmp_path, capsys):
    error = _refused(tmp_path / "sweep", ["--grid-crop-min-scale", "0.9,0.5,0"], capsys)
    assert "crop_min_scale=0," in error and "`crop_min_scale` must lie in (0, 1]" in error
    assert fake_runs == []


@pytest.mark.parametrize("flags", [["--preset", "latent"], ["--mode", "spike-slab"]])
def test_pairs_without_simclrs_views_are_refused(flags, fake_runs, tmp_path, capsys):
    assert "only the augment mode" in _refused(tmp_path / "sweep", flags, capsys)
    assert fake_runs == []
