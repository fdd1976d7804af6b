"""The grid of runs (`aninfonce_tf.sweep`) and the rendered trade-off recipe over it:
which cells and seeds run where, the table and the figure from their summaries.
Training itself is `run_seeds`' (tested with the runner); here it is replaced by a
stand-in that records its calls and returns a summary made from the cell's values."""

import json
from pathlib import Path

import pytest

from aninfonce_tf import sweep
from aninfonce_tf.configs import rendered
from aninfonce_tf.statistics import summarize
from tests.support import load_recipe


@pytest.fixture
def fake_runs(monkeypatch):
    """`run_seeds` replaced: each call recorded; shape accuracy falls and style R^2
    rises with the crop's smallest area, AnInfoNCE's style R^2 0.1 above InfoNCE's."""
    calls = []

    def run_seeds(config, build, run_dir, seeds, context=None, **labels):
        assert context.chief  # one RunContext for the whole grid
        calls.append((config, Path(run_dir), list(seeds), labels))
        scores = {}
        for seed in seeds:
            noise = 0.01 * seed
            base = {
                "backbone/shape_accuracy": 1 - config.crop_min_scale / 2 + noise,
                "backbone/block_linear_r2/style": config.crop_min_scale + noise,
            }
            scores[seed] = {
                "aninfonce": {
                    **base,
                    "backbone/block_linear_r2/style": base["backbone/block_linear_r2/style"] + 0.1,
                },
                "infonce": base,
            }
        return summarize(scores)

    monkeypatch.setattr(sweep, "run_seeds", run_seeds)
    return calls


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


def test_a_field_the_config_lacks_is_refused_before_any_run(fake_runs, tmp_path):
    with pytest.raises(ValueError, match="crop_scale"):
        sweep.run_grid(rendered.SWEEP, rendered.build, tmp_path, {"crop_scale": [0.5]})
    assert fake_runs == []


def test_each_cell_runs_its_config_into_its_own_directory(fake_runs, tmp_path):
    grid = {"crop_min_scale": [0.9, 0.2], "jitter_strength": [0.0, 0.5, 1.0]}
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


def test_the_recipe_writes_the_table_and_figure_of_its_grid(fake_runs, tmp_path, capsys):
    cells = load_recipe("rendered_sweep").main(
        [
            "--smoke",
            "--out",
            str(tmp_path),
            "--grid-crop-min-scale",
            "0.8,0.4",
            "--grid-jitter-strength",
            "0.5",
            "--corner-seeds",
            "0,1",
        ]
    )
    assert [cell["cell"] for cell in cells] == [
        "crop_min_scale=0.8,jitter_strength=0.5",
        "crop_min_scale=0.4,jitter_strength=0.5",
    ]
    assert all(seeds == [0, 1] for _, _, seeds, _ in fake_runs)
    table = (tmp_path / "tradeoff.md").read_text().splitlines()
    assert table[0].startswith("| crop_min_scale | jitter_strength | loss |")
    # Mean +- sd over the two seeds (0.01 apart): sd 0.007; AnInfoNCE's style 0.1 higher.
    assert "| 0.8 | 0.5 | AnInfoNCE | 0.605 ± 0.007 | 0.905 ± 0.007 |" in table[2]
    assert "| 0.8 | 0.5 | InfoNCE | 0.605 ± 0.007 | 0.805 ± 0.007 |" in table[3]
    assert (tmp_path / "tradeoff.png").stat().st_size > 10_000


def test_help_shows_the_grid_flags(capsys):
    with pytest.raises(SystemExit) as stop:
        load_recipe("rendered_sweep").main(["--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--grid-crop-min-scale", "--grid-jitter-strength", "--corner-seeds", "--seeds"):
        assert flag in text
    assert "--preset {sweep,quick,latent,spike-slab}" in text


def test_a_cell_that_cannot_run_is_refused_before_the_first_run(fake_runs, tmp_path, capsys):
    out = tmp_path / "sweep"
    with pytest.raises(SystemExit) as stop:
        load_recipe("rendered_sweep").main(
            ["--smoke", "--out", str(out), "--grid-crop-min-scale", "0.9,0.5,0"]
        )
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "crop_min_scale=0," in error and "`crop_min_scale` must lie in (0, 1]" in error
    assert fake_runs == [] and not out.exists()


@pytest.mark.parametrize("flags", [["--preset", "latent"], ["--mode", "spike-slab"]])
def test_pairs_without_simclrs_views_are_refused(flags, fake_runs, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        load_recipe("rendered_sweep").main(["--smoke", *flags, "--out", str(tmp_path / "sweep")])
    assert stop.value.code == 2 and "only the augment mode" in capsys.readouterr().err
    assert fake_runs == []
