"""The rendered trade-off map end to end at smoke size: a star of two cells (the
preset's point and a larger crop), one seed, both losses, really trained; each cell's
pairs' effective concentration read back from its results.json into grid.json, the
table with its paired differences and the figure written. The cells' choice, the
limits, the table's numbers and the figure's axes: tests/test_sweep.py and
tests/test_plots.py."""

import dataclasses
import json

import pytest

from aninfonce_tf.configs import rendered
from tests.support import load_recipe


@pytest.mark.slow
def test_a_smoke_star_trains_each_cell_and_writes_its_table_and_figure(tmp_path, capsys):
    others = [
        f"--grid-{f.replace('_', '-')}=" for f in rendered.SWEEP_AXES if f != "crop_min_scale"
    ]
    records = load_recipe("rendered_sweep").main(
        ["--smoke", "--seeds", "0", "--export", "false", "--out", str(tmp_path)]
        + ["--grid-crop-min-scale", "0.4,0.6"]
        + others
    )
    assert [record["changed"] for record in records] == [{}, {"crop_min_scale": 0.6}]
    grid = json.loads((tmp_path / "grid.json").read_text())
    for record in grid:
        results = json.loads((tmp_path / record["cell"] / "seed_0" / "results.json").read_text())
        assert record["run"]["effective_concentration"] == results["run"]["effective_concentration"]
        assert record["run"]["blocks"] == results["run"]["blocks"]
        assert {results["variants"][name]["steps"] for name in ("aninfonce", "infonce")} == {
            rendered.SMOKE["steps"]
        }
        assert set(record["summary"]["differences"]) == {"aninfonce - infonce"}
    # The larger crop changes the object's place and size less: a higher Lambda_eff.
    preset, crop = (record["run"]["effective_concentration"]["parts"] for record in grid)
    assert crop["scale"] > 2 * preset["scale"] and crop["rotation_sin"] == preset["rotation_sin"]
    config = json.loads((tmp_path / grid[1]["cell"] / "seed_0" / "config.json").read_text())
    smoke = dataclasses.replace(rendered.SWEEP, **rendered.SMOKE)
    assert config["crop_min_scale"] == 0.6 and config["steps"] == smoke.steps
    table = (tmp_path / "tradeoff.md").read_text()
    assert "| crop 0.6 | AnInfoNCE − InfoNCE |" in table and "uncorrected" in table
    assert (tmp_path / "tradeoff.png").stat().st_size > 10_000
    out = capsys.readouterr().out
    assert f"figure: {tmp_path / 'tradeoff.png'}" in out
