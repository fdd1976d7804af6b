"""Several seeds: the summary statistics against hand-computed values, the `--seeds`
flag and its usage errors, and a two-seed run end to end (directories, summary,
resume)."""

import json
import math

import keras
import numpy as np
import pytest
from scipy import stats

from aninfonce_tf import runner
from aninfonce_tf.configs import synthetic
from aninfonce_tf.evaluation.callbacks import scalar_items
from aninfonce_tf.runner.cli import parse_config
from aninfonce_tf.statistics import describe, paired_variants, summarize, summary_table

# Student's t quantiles (0.975) from a printed table, for 1 and 2 degrees of freedom.
T_975 = {1: 12.7062, 2: 4.3027}


def test_describe_gives_mean_sd_with_ddof_1_and_the_t_interval():
    entry = describe({0: 0.5, 1: 0.7, 2: 0.9}, interval=True)
    assert entry["n"] == 3 and entry["seeds"] == [0, 1, 2]
    assert entry["mean"] == pytest.approx(0.7)
    assert entry["sd"] == pytest.approx(0.2)  # sqrt((0.04 + 0 + 0.04) / 2)
    half = T_975[2] * 0.2 / math.sqrt(3)  # 0.4968
    assert entry["ci95"] == pytest.approx([0.7 - half, 0.7 + half], abs=1e-4)
    assert "ci95" not in describe({0: 0.5})


def test_describe_leaves_out_missing_and_non_finite_values_and_says_n():
    entry = describe({0: 1.0, 1: None, 2: float("nan"), 3: 3.0, 4: float("inf")})
    assert (entry["mean"], entry["n"], entry["seeds"]) == (2.0, 2, [0, 3])
    assert entry["sd"] == pytest.approx(math.sqrt(2.0))
    one = describe({0: None, 1: 0.25}, interval=True)
    assert (one["mean"], one["sd"], one["n"], one["ci95"]) == (0.25, None, 1, None)
    none = describe({0: None, 1: float("nan")}, interval=True)
    assert (none["mean"], none["sd"], none["n"], none["ci95"]) == (None, None, 0, None)


def test_variants_are_paired_with_the_infonce_variant_of_the_same_kind():
    assert paired_variants(["aninfonce", "infonce"]) == [("aninfonce", "infonce")]
    assert paired_variants(["infonce", "aninfonce"]) == [("aninfonce", "infonce")]
    names = ["aninfonce_ensemble", "infonce_hard_negatives", "infonce_ensemble", "aninfonce"]
    assert paired_variants(names) == [("aninfonce_ensemble", "infonce_ensemble")]
    assert paired_variants(["aninfonce", "aninfonce_hard_negatives"]) == []
    assert paired_variants(["infonce"]) == []


def test_the_difference_is_taken_within_each_seed_then_summarised():
    scores = {
        0: {"aninfonce": {"mcc": 0.9, "lambda_spearman": 1.0}, "infonce": {"mcc": 0.8}},
        1: {"aninfonce": {"mcc": 0.5, "lambda_spearman": 0.5}, "infonce": {"mcc": 0.4}},
        2: {"aninfonce": {"mcc": 0.7, "lambda_spearman": None}, "infonce": {"mcc": 0.6}},
    }
    summary = summarize(scores)
    assert summary["seeds"] == [0, 1, 2]
    assert summary["variants"]["infonce"]["mcc"]["mean"] == pytest.approx(0.6)
    assert summary["variants"]["infonce"]["mcc"]["sd"] == pytest.approx(0.2)
    spearman = summary["variants"]["aninfonce"]["lambda_spearman"]
    assert (spearman["mean"], spearman["n"], spearman["seeds"]) == (0.75, 2, [0, 1])
    # Unpaired, the two sd of 0.2 would swamp a difference of 0.1; paired, it is exact.
    assert list(summary["differences"]) == ["aninfonce - infonce"]
    difference = summary["differences"]["aninfonce - infonce"]
    assert list(difference) == ["mcc"]  # a score only one of the pair has is not compared
    assert difference["mcc"]["mean"] == pytest.approx(0.1)
    assert difference["mcc"]["sd"] == pytest.approx(0.0, abs=1e-12)
    assert difference["mcc"]["ci95"] == pytest.approx([0.1, 0.1])


def test_a_seed_without_a_score_drops_out_of_that_difference_only():
    scores = {
        0: {"aninfonce": {"mcc": 0.9, "r2": 0.9}, "infonce": {"mcc": 0.5, "r2": 0.2}},
        1: {"aninfonce": {"mcc": 0.8, "r2": 0.8}, "infonce": {"mcc": 0.6}},
        2: {"aninfonce": {"mcc": 0.6, "r2": 0.7}, "infonce": {"mcc": 0.4, "r2": 0.4}},
    }
    difference = summarize(scores)["differences"]["aninfonce - infonce"]
    assert (difference["mcc"]["n"], difference["r2"]["n"]) == (3, 2)
    assert difference["r2"]["seeds"] == [0, 2]
    # r2 differences 0.7 and 0.3: mean 0.5, sd sqrt(0.08) = 0.2828, half 12.706 * 0.2.
    assert difference["r2"]["mean"] == pytest.approx(0.5)
    assert difference["r2"]["sd"] == pytest.approx(math.sqrt(0.08))
    assert difference["r2"]["ci95"] == pytest.approx([0.5 - 2.5412, 0.5 + 2.5412], abs=1e-3)
    # mcc differences 0.4, 0.2, 0.2: mean 0.2667, sd 0.1155, half 4.3027 * 0.1155 / sqrt(3).
    half = T_975[2] * math.sqrt(0.04 / 3) / math.sqrt(3)
    assert difference["mcc"]["ci95"] == pytest.approx([0.8 / 3 - half, 0.8 / 3 + half], abs=1e-4)


def test_the_summary_table_has_a_row_per_score_and_variant_and_pair():
    scores = {
        0: {"aninfonce": {"mcc": 0.9, "lambda_spearman": 0.4}, "infonce": {"mcc": 0.5}},
        1: {"aninfonce": {"mcc": 0.8, "lambda_spearman": None}, "infonce": {"mcc": 0.6}},
    }
    lines = summary_table(summarize(scores)).splitlines()
    assert lines[0].split()[:8] == [
        "score",
        "variant",
        "mean",
        "sd",
        "n",
        "95%",
        "interval",
        "Holm",
    ]
    # An unresolved difference (its 95 % interval holds 0) with its 90 % interval and
    # the smallest difference two seeds could detect.
    assert [line.split() for line in lines[2:]] == [
        ["mcc", "aninfonce", "0.850", "0.071", "2"],
        ["mcc", "infonce", "0.550", "0.071", "2"],
        ["mcc", "aninfonce", "-", "infonce", "+0.300", "0.141", "2", "[-0.971,", "+1.571]"]
        + ["-", "[-0.331,", "+0.931],", "1.408"],
        ["lambda_spearman", "aninfonce", "0.400", "-", "1"],
    ]
    resolved = {
        seed: {"aninfonce": {"mcc": 0.9 + seed / 100}, "infonce": {"mcc": 0.5}} for seed in range(3)
    }
    assert summary_table(summarize(resolved)).splitlines()[-1].split()[-3:] == [
        "[+0.385,",
        "+0.435]",
        "-",
    ]
    # The columns asked for (an experiment's `table_columns`), in their order.
    lines = summary_table(summarize(scores), ["lambda_spearman", "absent", "mcc"]).splitlines()
    assert [line.split()[:2] for line in lines[2:]] == [
        ["lambda_spearman", "aninfonce"],
        ["mcc", "aninfonce"],
        ["mcc", "infonce"],
        ["mcc", "aninfonce"],
    ]


PRESETS = {"quick": synthetic.PRESETS["quick"]}


def test_the_seeds_flag_reads_a_list_and_is_unset_by_default():
    _, options = parse_config(PRESETS, ["--seeds", "0, 1,2"])
    assert options.seeds == [0, 1, 2]
    config, options = parse_config(PRESETS, ["--seed", "3"])
    assert (options.seeds, config.seed) == (None, 3)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seeds", ""], "argument --seeds: expected distinct non-negative integers"),
        (["--seeds", "a"], "argument --seeds: expected distinct non-negative integers"),
        (["--seeds", "0,1,0"], "got '0,1,0'"),
        (["--seeds", "0,-1"], "got '0,-1'"),
        (["--seeds", "0,,1"], "got '0,,1'"),
        (["--seed", "1", "--seeds", "0,1"], "--seed and --seeds exclude each other"),
        (["--seeds", "0,1", "--seed=1"], "--seed and --seeds exclude each other"),
    ],
)
def test_bad_seed_lists_and_seed_with_seeds_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        parse_config(PRESETS, argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]  # after argparse's usage
    assert ": error: " in error and message in error


class CrashInTheSecondInfoNCE(keras.callbacks.Callback):
    infonce_runs = 0

    def on_train_begin(self, logs=None):
        if self.model.name == "infonce":
            self.infonce_runs += 1
            if self.infonce_runs == 2:
                raise RuntimeError("crash")


def _scores(results: dict, variant: str) -> dict:
    return scalar_items(
        {k: v for k, v in results["variants"][variant].items() if k not in runner.RUN_ENTRIES}
    )


@pytest.mark.slow
def test_two_seeds_run_into_their_directories_resume_and_are_summarised(tmp_path, capsys):
    argv = ["--smoke", "--steps", "10", "--eval-every", "10", "--jit-compile", "false"]
    argv += ["--export", "false", "--seeds", "0,1", "--out", str(tmp_path)]
    config, options = parse_config(synthetic.PRESETS, argv, smoke=synthetic.SMOKE)
    with pytest.raises(RuntimeError, match="crash"):
        runner.run_seeds(
            config, synthetic.build, tmp_path, options.seeds, 0, [CrashInTheSecondInfoNCE()]
        )
    assert not (tmp_path / "summary.json").exists()
    capsys.readouterr()
    # Rerun: seed 0 and seed 1's AnInfoNCE are finished, seed 1's InfoNCE trains.
    summary = runner.main(synthetic, argv)
    output = capsys.readouterr().out
    assert output.count("not trained again") == 3
    assert output.count("steps of 128 pairs") == 1 and "== infonce: 10 steps" in output

    results = {k: json.loads((tmp_path / f"seed_{k}" / "results.json").read_text()) for k in (0, 1)}
    for k in (0, 1):
        assert json.loads((tmp_path / f"seed_{k}" / "config.json").read_text())["seed"] == k
    assert _scores(results[0], "infonce")["mcc"] != _scores(results[1], "infonce")["mcc"]
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert summary["seeds"] == [0, 1]
    for variant in ("aninfonce", "infonce"):
        per_seed = [_scores(results[k], variant) for k in (0, 1)]
        assert list(summary["variants"][variant]) == list(per_seed[0])
        for score, entry in summary["variants"][variant].items():
            values = [scores[score] for scores in per_seed]
            assert entry["n"] == 2
            assert entry["mean"] == pytest.approx(np.mean(values), rel=1e-12)
            assert entry["sd"] == pytest.approx(np.std(values, ddof=1), rel=1e-9)
    assert "lambda_spearman" in summary["variants"]["aninfonce"]
    assert not {"steps", "final_loss", "lambda_hat"} & set(summary["variants"]["aninfonce"])
    difference = summary["differences"]["aninfonce - infonce"]
    assert "lambda_spearman" not in difference and "block_r2/low" in difference
    for score, entry in difference.items():
        d = [
            _scores(results[k], "aninfonce")[score] - _scores(results[k], "infonce")[score]
            for k in (0, 1)
        ]
        half = T_975[1] * abs(d[0] - d[1]) / 2  # sd = |d0 - d1| / sqrt(2); / sqrt(n = 2)
        assert entry["mean"] == pytest.approx(np.mean(d), abs=1e-12)
        assert entry["ci95"] == pytest.approx([np.mean(d) - half, np.mean(d) + half], abs=1e-4)
    assert "aninfonce - infonce" in output and "summary.json" in output

    # A finished multi-seed run is not trained again.
    assert runner.main(synthetic, argv) == summary
    output = capsys.readouterr().out
    assert output.count("not trained again") == 4 and "steps of 128 pairs" not in output


def test_a_difference_carries_its_bounds_test_and_detectable_effect():
    entry = describe({0: 0.1, 1: 0.3, 2: 0.2, 3: 0.4, 4: 0.0}, interval=True)
    error = np.std([0.1, 0.3, 0.2, 0.4, 0.0], ddof=1) / np.sqrt(5)
    assert entry["ci90"] == pytest.approx([0.2 - 2.1318 * error, 0.2 + 2.1318 * error], abs=1e-4)
    assert entry["p"] == pytest.approx(stats.ttest_1samp([0.1, 0.3, 0.2, 0.4, 0.0], 0).pvalue)
    # Power 0.8 at a two-sided 0.05 with df 4: (2.776 + 0.941) standard errors.
    assert entry["detectable"] == pytest.approx((2.7764 + 0.9410) * error, abs=1e-3)
    assert entry["values"] == [0.1, 0.3, 0.2, 0.4, 0.0]


def test_holm_counts_every_comparison_of_the_family_constant_ones_too():
    scores = {
        seed: {
            "aninfonce": {"mcc": 0.9 + 0.01 * seed, "r2": 0.5, "other": 0.1 * seed},
            "infonce": {"mcc": 0.5, "r2": 0.5, "other": 0.0},
        }
        for seed in range(3)
    }
    summary = summarize(scores, family=["mcc", "r2"])
    differences = summary["differences"]["aninfonce - infonce"]
    assert differences["r2"]["p"] == 1.0  # zero in every seed
    p = differences["mcc"]["p"]
    assert differences["mcc"]["p_holm"] == pytest.approx(min(1.0, 2 * p))
    assert "p_holm" not in differences["other"]  # outside the family
    assert summary["family"] == ["mcc", "r2"]
