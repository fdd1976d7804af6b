"""The sweep (`aninfonce_tf.sweep`) and the rendered trade-off recipe over it: which
cells and seeds run where (a star through the preset's point by default, the product
grid behind a flag), the refusal of crops that lose the object, the tables from the
cells' per-seed scores (columns that mean the same in every cell, only the seeds every
loss shares, each difference's change from the preset's point paired by seed) and the
figure from the cells' summaries. Training itself is `run_seeds`' (tested with the
runner); here it is replaced by a stand-in that records its calls, writes each seed's
results.json (its `run` record and scores) and returns a summary made from the cell's
values."""

import json
from pathlib import Path

import pytest
import tensorflow as tf

from aninfonce_tf import sweep
from aninfonce_tf.checkpoints import write_json
from aninfonce_tf.configs import rendered
from aninfonce_tf.configs.base import UsageError
from aninfonce_tf.runner import RunContext
from aninfonce_tf.runner.lock import lock_run_directory
from aninfonce_tf.statistics import summarize
from aninfonce_tf.sweep_tables import (
    change_table,
    difference_changes,
    table_scores,
    tradeoff_markdown,
    tradeoff_table,
)
from tests.support import load_recipe

CENTER = {field: getattr(rendered.SWEEP, field) for field in rendered.SWEEP_AXES}
# Only the crop axis: the other axes' flags empty (their preset values).
CROP_ONLY = [f"--grid-{f.replace('_', '-')}=" for f in rendered.SWEEP_AXES if f != "crop_min_scale"]


def _concentration(config) -> dict[str, float]:
    """A stand-in effective concentration: x rises with the crop's smallest area."""
    return {"x": 1.5 * config.crop_min_scale, "y": 2.0, "object_hue_cos": 20.0}


@pytest.fixture
def fake_runs(monkeypatch):
    """`run_seeds` replaced: each call recorded, each seed's scores written to its
    results.json; shape accuracy falls and style R^2 rises with the crop's smallest
    area, AnInfoNCE's style R^2 0.1 above InfoNCE's plus 0.01 seed^2 (paired
    differences that vary over the seeds), and AnInfoNCE's R^2 of x, the part the
    crop moves, above InfoNCE's by a lead that grows with the crop."""
    calls = []

    def run_seeds(config, build, run_dir, seeds, context=None, **labels):
        assert context.chief  # one RunContext for the whole grid
        calls.append((config, Path(run_dir), list(seeds), labels))
        parts = _concentration(config)
        blocks = {"content": ("object_hue_cos",), "style": ("x", "y")}
        run = {"effective_concentration": {"parts": parts}, "blocks": blocks}
        scores = {}
        for seed in seeds:
            noise = 0.01 * seed
            base = {
                "backbone/shape_accuracy": 1 - config.crop_min_scale / 2 + noise,
                "backbone/block_linear_r2/style": config.crop_min_scale + noise,
                "backbone/part_linear_r2/x": config.crop_min_scale / 2,
            }
            style = base["backbone/block_linear_r2/style"] + 0.1 + 0.01 * seed**2
            # AnInfoNCE's lead on x grows with the crop, by 0.25 + 0.05 seed per unit.
            lead = 0.05 + noise + (config.crop_min_scale - 0.4) * (0.25 + 0.05 * seed)
            x = base["backbone/part_linear_r2/x"] + lead
            scores[seed] = {
                "aninfonce": {
                    **base,
                    "backbone/block_linear_r2/style": style,
                    "backbone/part_linear_r2/x": x,
                },
                "infonce": base,
            }
            (Path(run_dir) / f"seed_{seed}").mkdir(parents=True, exist_ok=True)
            results = {"run": run, "variants": scores[seed]}
            write_json(Path(run_dir) / f"seed_{seed}" / "results.json", results)
        return summarize(scores)

    monkeypatch.setattr(sweep, "run_seeds", run_seeds)
    return calls


def _tables(text: str) -> list[list[str]]:
    """The Markdown tables of a tradeoff.md, each as its lines."""
    return [block.splitlines() for block in text.split("\n\n") if block.startswith("| cell |")]


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


def test_the_default_map_is_a_star_of_seven_cells_each_the_presets_training():
    cells = sweep.star_cells(rendered.SWEEP_AXES, CENTER, seeds=[0, 1, 2])
    changed = [sweep.changed_values(values, CENTER) for values, _ in cells]
    assert changed == [
        {},
        {"crop_min_scale": 0.6},
        {"crop_min_scale": 0.8},
        {"jitter_strength": 0.0},
        {"jitter_strength": 1.0},
        {"flip_probability": 0.0},
        {"grayscale_probability": 0.0},
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
    # Each seed's scores, as its results.json holds them, for the tables to pair.
    assert sorted(saved[0]["seed_scores"]) == ["0", "1", "2"] and sorted(
        saved[1]["seed_scores"]
    ) == ["0"]
    accuracy = saved[0]["seed_scores"]["2"]["infonce"]["backbone/shape_accuracy"]
    assert accuracy == pytest.approx(1 - 0.9 / 2 + 0.02)


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
    cell = {"changed": {"jitter_strength": 1.0}, "seed_scores": scores}
    rows = tradeoff_table([cell], ["acc", "r2"]).splitlines()
    assert rows[0] == "| cell | loss | acc | r2 | seeds |"
    assert rows[2] == "| jitter 1 | AnInfoNCE | 0.620 ± 0.020 | 0.300 ± 0.000 | 3 |"
    # Mean 0.12, sd 0.02: t(0.975, 2) x 0.02 / sqrt(3) = 0.0497 either side.
    assert (
        rows[4]
        == "| jitter 1 | AnInfoNCE − InfoNCE | +0.120 [+0.070, +0.170] | +0.000 [+0.000, +0.000] | 3 |"
    )


def _record(changed, differences, isotropic=(), parts=None):
    """A cell's record: InfoNCE's `acc` 0.5 at every seed, AnInfoNCE's `differences`
    (`{seed: d}`, None: a diverged run) above it, the isotropic control's `isotropic`
    (`{seed: d}`) above it; `r2` 0.3 for every loss and seed."""
    scores = {}
    for seed, difference in differences.items():
        acc = None if difference is None else 0.5 + difference
        scores[seed] = {"aninfonce": {"acc": acc, "r2": 0.3}, "infonce": {"acc": 0.5, "r2": 0.3}}
        if seed in dict(isotropic):
            scores[seed]["aninfonce_isotropic"] = {"acc": 0.5 + dict(isotropic)[seed], "r2": 0.3}
    run = {"effective_concentration": {"parts": parts or {}}, "blocks": {}}
    values = {"crop_min_scale": 0.4, "jitter_strength": 0.5, **changed}
    # As grid.json gives it back: the seeds as text.
    seeds = {str(seed): per_seed for seed, per_seed in scores.items()}
    return {"changed": changed, "values": values, "seed_scores": seeds, "run": run}


def test_the_change_from_the_center_pairs_each_seed_with_itself():
    center = _record({}, {0: 0.1, 1: 0.3, 2: 0.5}, isotropic={0: 0.0, 1: 0.1, 2: 0.2})
    crop = _record({"crop_min_scale": 0.8}, {0: 0.2, 1: 0.5})  # seed 2 not run
    jitter = _record({"jitter_strength": 1.0}, {0: 0.2, 1: 0.5, 2: 0.5}, {0: 0.1, 1: 0.1, 2: 0.1})
    crop_change = difference_changes(crop, center, ["acc"])["aninfonce - infonce"]["acc"]
    # Seeds 0 and 1 only: (0.2 - 0.1, 0.5 - 0.3) = (0.1, 0.2). Unpaired, the means'
    # difference would be 0.35 - 0.3 = 0.05.
    assert crop_change["seeds"] == [0, 1] and crop_change["mean"] == pytest.approx(0.15)
    # t(0.975, 1) 12.706 x sd 0.0707 / sqrt(2) = 0.635 either side.
    assert crop_change["ci95"] == pytest.approx([-0.485, 0.785], abs=1e-3)
    changes = difference_changes(jitter, center, ["acc"])
    # Against InfoNCE: (0.1, 0.2, 0.0), mean 0.1, sd 0.1, t(0.975, 2) 4.303 x 0.1 / sqrt(3).
    assert changes["aninfonce - infonce"]["acc"]["mean"] == pytest.approx(0.1)
    assert changes["aninfonce - infonce"]["acc"]["ci95"] == pytest.approx([-0.148, 0.348], abs=1e-3)
    # Against the isotropic control: (0.1 - 0.1, 0.4 - 0.2, 0.4 - 0.3) = (0, 0.2, 0.1).
    assert changes["aninfonce - aninfonce_isotropic"]["acc"]["mean"] == pytest.approx(0.1)
    rows = change_table([center, crop, jitter], ["acc", "r2"]).splitlines()
    assert rows[0] == "| cell | loss | acc | r2 | seeds |"
    assert rows[2:] == [
        "| crop 0.8 | AnInfoNCE − InfoNCE | +0.150 [-0.485, +0.785] | +0.000 [+0.000, +0.000] | 2 |",
        "| jitter 1 | AnInfoNCE − InfoNCE | +0.100 [-0.148, +0.348] | +0.000 [+0.000, +0.000] | 3 |",
        "| jitter 1 | AnInfoNCE − AnInfoNCE (isotropic) | +0.100 [-0.148, +0.348] "
        "| +0.000 [+0.000, +0.000] | 3 |",
    ]
    assert change_table([crop, jitter], ["acc"]) == ""  # no centre cell


def test_a_loss_with_fewer_seeds_leaves_the_others_to_the_shared_ones():
    # AnInfoNCE diverged at seed 2: every loss's acc rests on seeds 0 and 1, r2 on all three.
    cell = _record({"jitter_strength": 1.0}, {0: 0.1, 1: 0.3, 2: None})
    cell["seed_scores"]["2"]["infonce"]["acc"] = 0.9  # left out with AnInfoNCE's
    rows = tradeoff_table([cell], ["acc", "r2"]).splitlines()
    assert rows[2:] == [
        "| jitter 1 | AnInfoNCE | 0.700 ± 0.141 (n 2) | 0.300 ± 0.000 | 3 |",
        "| jitter 1 | InfoNCE | 0.500 ± 0.000 (n 2) | 0.300 ± 0.000 | 3 |",
        "| jitter 1 | AnInfoNCE − InfoNCE | +0.200 [-1.071, +1.471] (n 2) "
        "| +0.000 [+0.000, +0.000] | 3 |",
    ]


def test_each_column_is_the_same_score_in_every_cell():
    # The crop moves x, the jitter y; z moves nowhere. Each cell has its own blocks.
    cells = [
        _record({}, {0: 0.1}, parts={"x": 0.6, "y": 2.0, "z": 20.0}),
        _record({"crop_min_scale": 0.8}, {0: 0.1}, parts={"x": 1.2, "y": 2.0, "z": 20.0}),
        _record({"jitter_strength": 1.0}, {0: 0.1}, parts={"x": 0.6, "y": 9.0, "z": 20.0}),
    ]
    for cell, style in zip(cells, (["x", "y"], ["x"], ["y"]), strict=True):
        cell["run"]["blocks"] = {"content": ["z"], "style": style}
    columns = table_scores(cells, ["backbone/shape_accuracy", "backbone/block_linear_r2/style"])
    assert columns == [
        "backbone/shape_accuracy",
        "backbone/part_linear_r2/x",
        "backbone/part_linear_r2/y",
    ]
    scores, changes, blocks = _tables(tradeoff_markdown(cells, columns, "a test"))
    assert (
        scores[0]
        == "| cell | loss | backbone shape accuracy | backbone R² x | backbone R² y | seeds |"
    )
    assert {row.count("|") for row in scores + changes} == {7}  # six columns in every row
    # The blocks, kept in their own table: a block's parts differ from cell to cell.
    assert blocks[2:] == [
        "| preset | z 20 | x 0.6, y 2 |",
        "| crop 0.8 | z 20 | x 1.2 |",
        "| jitter 1 | z 20 | y 9 |",
    ]


def test_a_record_without_its_seeds_scores_says_how_to_get_them():
    cell = _record({}, {0: 0.1})
    del cell["seed_scores"]
    with pytest.raises(ValueError, match="rerun the sweep's command"):
        tradeoff_table([cell], ["acc"])


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
    assert "uncorrected" in text and "not comparable across cells" in text
    scores, changes, blocks = _tables(text)
    # No block columns: shape accuracy, then the backbone R^2 of x, the part the crop moves.
    assert scores[0] == (
        "| cell | loss | backbone shape accuracy | projector shape accuracy | backbone R² x "
        "| seeds |"
    )
    assert changes[0] == scores[0]
    # Mean +- sd over the two seeds (0.01 apart): sd 0.007.
    assert [row.split(" | ")[:2] for row in scores[2:5]] == [
        ["| preset", "AnInfoNCE"],
        ["| preset", "InfoNCE"],
        ["| preset", "AnInfoNCE − InfoNCE"],
    ]
    assert scores[5] == "| crop 0.8 | AnInfoNCE | 0.605 ± 0.007 | - | 0.565 ± 0.021 | 2 |"
    assert scores[6] == "| crop 0.8 | InfoNCE | 0.605 ± 0.007 | - | 0.400 ± 0.000 | 2 |"
    # x: AnInfoNCE's lead 0.15 + 0.03 seed, over seeds 0 and 1: 0.165, sd 0.0212;
    # t(0.975, 1) x 0.0212 / sqrt(2) = 0.191 either side.
    assert scores[7].startswith("| crop 0.8 | AnInfoNCE − InfoNCE | +0.000 [+0.000, +0.000] |")
    assert "| +0.165 [-0.026, +0.356] | 2 |" in scores[7]
    # The lead's change from the preset's point: 0.4 x (0.25 + 0.05 seed) = 0.10, 0.12;
    # mean 0.11, sd 0.0141, t(0.975, 1) x 0.0141 / sqrt(2) = 0.127 either side.
    assert changes[2:] == [
        "| crop 0.8 | AnInfoNCE − InfoNCE | +0.000 [+0.000, +0.000] | - "
        "| +0.110 [-0.017, +0.237] | 2 |"
    ]
    assert blocks[-1] == "| crop 0.8 | object_hue_cos 20 | x 1.2, y 2 |"
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
            "--grid-grayscale-probability",
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
    assert "--preset {sweep,large-objects,quick,latent,spike-slab,latent-spread}" in text


def test_a_cell_that_cannot_run_is_refused_before_the_first_run(fake_runs, tmp_path, capsys):
    error = _refused(tmp_path / "sweep", ["--grid-crop-min-scale", "0.9,0.5,0"], capsys)
    assert "crop_min_scale=0," in error and "`crop_min_scale` must lie in (0, 1]" in error
    assert fake_runs == []


@pytest.mark.parametrize("flags", [["--preset", "latent"], ["--mode", "spike-slab"]])
def test_pairs_without_simclrs_views_are_refused(flags, fake_runs, tmp_path, capsys):
    assert "only the augment mode" in _refused(tmp_path / "sweep", flags, capsys)
    assert fake_runs == []


def test_cells_whose_values_agree_to_six_digits_get_directories_of_their_own(fake_runs, tmp_path):
    cells = [({"crop_min_scale": 0.5000001}, [0]), ({"crop_min_scale": 0.50000001}, [0])]
    sweep.run_cells(rendered.SWEEP, rendered.build, tmp_path, cells)
    assert [run_dir.name for _, run_dir, _, _ in fake_runs] == [
        "crop_min_scale=0.5000001",
        "crop_min_scale=0.50000001",
    ]
    assert sweep.cell_name({"crop_min_scale": 0.5}) == "crop_min_scale=0.5"  # as before


def test_cells_sharing_a_directory_are_refused_before_any_runs(fake_runs, tmp_path):
    cells = [({"crop_min_scale": 0.5}, [0]), ({"crop_min_scale": 0.5}, [1])]
    with pytest.raises(UsageError, match="share the directory crop_min_scale=0.5: give each"):
        sweep.run_cells(rendered.SWEEP, rendered.build, tmp_path, cells)
    assert fake_runs == []


def test_a_second_worker_of_a_sweep_locks_its_own_directory(monkeypatch, tmp_path):
    worker = RunContext(tf.distribute.get_strategy(), chief=False, multi_worker=True)
    monkeypatch.setattr(RunContext, "work_dir", lambda self, run_dir: run_dir / "workers" / "w")
    monkeypatch.setattr(sweep.RunContext, "create", lambda *args: worker)
    calls = []

    def run_seeds(config, build, run_dir, seeds, context=None, **labels):
        assert context is worker
        calls.append(run_dir)
        return {}

    monkeypatch.setattr(sweep, "run_seeds", run_seeds)
    with lock_run_directory(tmp_path):  # the chief's lock, held meanwhile
        sweep.run_cells(rendered.SWEEP, rendered.build, tmp_path, [({"crop_min_scale": 0.5}, [0])])
    assert calls == [tmp_path / "crop_min_scale=0.5"]
    assert (tmp_path / "workers" / "w").is_dir()
