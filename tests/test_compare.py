"""Arms of several run directories compared, paired by seed, with Holm's correction."""

import json

import pytest

from aninfonce_tf.compare import arm_scores, compare, main, parse_arm
from aninfonce_tf.statistics import holm, paired_p_value


def _run_directory(path, variant, values, steps=10):
    """A run directory as `--seeds` writes it: `values` {seed: style R^2} of `variant`."""
    for seed, value in values.items():
        seed_dir = path / f"seed_{seed}"
        seed_dir.mkdir(parents=True)
        result = {"backbone": {"block_r2": {"style": value}, "shape": 0.5}, "steps": steps}
        run = {"blocks": {"style": ["x"]}}
        (seed_dir / "results.json").write_text(
            json.dumps({"run": run, "variants": {variant: result}})
        )
    return path


def test_arms_from_two_directories_are_paired_over_their_shared_seeds(tmp_path, capsys):
    first = _run_directory(tmp_path / "a", "aninfonce", {0: 0.9, 1: 0.8, 2: 0.7, 3: 0.9})
    second = _run_directory(tmp_path / "b", "infonce", {0: 0.5, 1: 0.6, 2: 0.4})
    out = tmp_path / "summary.json"
    summary = main(
        [
            f"--arm=ours={first}:aninfonce",
            f"--arm=tau 0.05={second}:infonce",
            "--pair=ours:tau 0.05",
            "--scores=backbone/block_r2/style,backbone/shape",
            f"--out={out}",
        ]
    )
    saved = json.loads(out.read_text())
    assert saved["differences"] == json.loads(json.dumps(summary["differences"]))
    style = summary["differences"]["ours - tau 0.05"]["backbone/block_r2/style"]
    # Seed 3 has no partner: the difference rests on seeds 0-2.
    assert style["seeds"] == [0, 1, 2] and style["n"] == 3
    assert style["mean"] == pytest.approx((0.4 + 0.2 + 0.3) / 3)
    assert style["by_seed"] == pytest.approx({0: 0.4, 1: 0.2, 2: 0.3})
    # Each arm's mean over the paired seeds, not over all of its own.
    assert style["first_mean"] == pytest.approx(0.8) and style["second_mean"] == pytest.approx(0.5)
    assert style["p"] == pytest.approx(paired_p_value([0.4, 0.2, 0.3]))
    # Shape's differences are all 0: p 1, still one of Holm's family of two.
    shape = summary["differences"]["ours - tau 0.05"]["backbone/shape"]
    assert shape["p"] == 1.0 and shape["p_holm"] == 1.0
    assert style["p_holm"] == pytest.approx(2 * style["p"])
    assert summary["variants"]["ours"]["backbone/block_r2/style"]["n"] == 4
    assert summary["endpoint_mismatches"] == []
    assert "'--arm=tau 0.05=" in summary["command"]
    assert "ours - tau 0.05" in capsys.readouterr().out


def test_runs_of_other_endpoints_are_not_paired_unless_allowed(tmp_path):
    first = _run_directory(tmp_path / "a", "aninfonce", {0: 0.9, 1: 0.8})
    second = _run_directory(tmp_path / "b", "infonce", {0: 0.5, 1: 0.6}, steps=5)
    argv = [f"--arm=a={first}:aninfonce", f"--arm=b={second}:infonce", "--pair=a:b"]
    with pytest.raises(SystemExit):
        main(argv)
    summary = main([*argv, "--allow-other-endpoints"])
    assert summary["endpoint_mismatches"][0] == "a - b, seed 0: steps 10 against 5"


def test_holm_adjusts_step_down_and_keeps_the_order():
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5})
    assert adjusted == pytest.approx({"a": 0.04, "c": 0.09, "b": 0.09, "d": 0.5})
    assert holm({}) == {}


def test_bad_arms_and_pairs_are_refused_with_the_fix(tmp_path):
    with pytest.raises(ValueError, match="LABEL=DIRECTORY:VARIANT"):
        parse_arm("runs/quick")
    directory = _run_directory(tmp_path / "a", "aninfonce", {0: 0.9})
    with pytest.raises(ValueError, match="has finished the variant 'infonce'"):
        arm_scores(directory, "infonce")
    arms = {"a": arm_scores(directory, "aninfonce")}
    with pytest.raises(ValueError, match="unknown arms"):
        compare(arms, [("a", "b")])
    with pytest.raises(ValueError, match="no arm has: \\['shape'\\]"):
        compare(arms, [], scores=["shape"])
    with pytest.raises(SystemExit):
        main([f"--arm=a={directory}:aninfonce", "--pair=a"])


def _image_run(path, kept_by_seed, check_seed=None):
    """An image run's seeds: per-target readouts a 0.7, b 0.5, c 0.6; its check's kept,
    the check run at `check_seed` (default: each run's own seed)."""
    for seed, kept in kept_by_seed.items():
        seed_dir = path / f"seed_{seed}"
        seed_dir.mkdir(parents=True)
        readout = {"a": 0.7, "b": 0.5, "c": 0.6}
        result = {"projector": {"readout": readout}, "steps": 10}
        check = {"kept": kept, "targets": {}, "seed": seed if check_seed is None else check_seed}
        run = {"readout_determinable": check}
        (seed_dir / "results.json").write_text(json.dumps({"run": run, "variants": {"x": result}}))
    return path


def test_a_common_readout_averages_the_targets_kept_in_every_seed(tmp_path):
    # Seed 1's check also kept c: its own readout averages other targets than seed 0's.
    directory = _image_run(tmp_path / "run", {0: ["a", "b"], 1: ["a", "b", "c"]})
    other = _image_run(tmp_path / "other", {0: ["a", "b"], 1: ["a", "b"]})
    argv = [f"--arm=x={directory}:x", f"--arm=y={other}:x", "--pair=x:y"]
    with pytest.raises(SystemExit):  # seed 1's targets differ between the arms
        main(argv)
    summary = main([*argv, "--common-readout"])
    assert summary["common_readout_targets"] == ["a", "b"]
    entry = summary["variants"]["x"]["projector/augmentation_readout_common"]
    assert entry["mean"] == pytest.approx(0.6) and entry["n"] == 2
    with pytest.raises(SystemExit):
        main([f"--arm=x={_run_directory(tmp_path / 'plain', 'x', {0: 0.5})}:x", "--common-readout"])


def test_a_common_readout_of_one_seed_averages_that_seeds_targets_in_every_run(tmp_path, capsys):
    directory = _image_run(tmp_path / "run", {0: ["a", "c"], 1: ["a"]})
    other = _image_run(tmp_path / "other", {0: ["a", "c"], 1: ["a", "b"]})
    argv = [f"--arm=x={directory}:x", f"--arm=y={other}:x", "--pair=x:y", "--common-readout"]
    summary = main([*argv, "--readout-check-seed=0"])
    assert summary["common_readout_targets"] == ["a", "c"]
    assert summary["common_readout_rule"] == "kept by the check of seed 0"
    entry = summary["variants"]["x"]["projector/augmentation_readout_common"]
    assert entry["mean"] == pytest.approx(0.65) and entry["n"] == 2
    assert main(argv)["common_readout_targets"] == ["a"]
    short = _image_run(tmp_path / "short", {1: ["a"]})
    preset = _image_run(tmp_path / "preset", {0: ["a"], 1: ["a"]}, check_seed=0)
    for bad, message in (
        (["--readout-check-seed=1"], "The arms' runs of seed 1 kept other readout targets"),
        (["--readout-check-seed=5"], "no run of seed 5 in the arms ['x', 'y']"),
        ([f"--arm=z={short}:x", "--readout-check-seed=0"], "no run of seed 0 in the arms ['z']"),
        (
            [f"--arm=z={preset}:x", "--readout-check-seed=1"],
            "hold the checks of seeds [0, 1], not their own",
        ),
    ):
        capsys.readouterr()
        with pytest.raises(SystemExit):
            main([*argv, *bad])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the seed alone, without --common-readout
        main([*argv[:-1], "--readout-check-seed=0"])
    assert "needs `--common-readout`" in capsys.readouterr().err


def test_a_listed_readout_averages_the_given_targets_whatever_the_checks_kept(tmp_path, capsys):
    # The two arms' checks kept other targets in seed 1; the list puts both on a and c.
    directory = _image_run(tmp_path / "run", {0: ["a"], 1: ["a", "b"]})
    other = _image_run(tmp_path / "other", {0: ["a"], 1: ["b"]})
    argv = [f"--arm=x={directory}:x", f"--arm=y={other}:x", "--pair=x:y"]
    summary = main([*argv, "--readout-targets=a, c,a"])
    assert summary["common_readout_targets"] == ["a", "c"]
    assert summary["common_readout_rule"] == "listed by --readout-targets"
    assert summary["endpoint_mismatches"] == []
    entry = summary["variants"]["x"]["projector/augmentation_readout_common"]
    assert entry["mean"] == pytest.approx(0.65) and entry["n"] == 2
    plain = _run_directory(tmp_path / "plain", "x", {0: 0.5})
    for bad, message in (
        (["--readout-targets=a,blur"], "seed 0 of the arm 'x' scored no projector readout of"),
        (["--readout-targets=,"], "`--readout-targets` names no target"),
        (["--readout-targets=a", "--common-readout"], "two rules for the readout's targets"),
        ([f"--arm=z={plain}:x", "--readout-targets=a"], "seed 0 of the arm 'z' scored no readout"),
    ):
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            main([*argv, *bad])
        assert stop.value.code == 2 and message in capsys.readouterr().err
