"""The figures say what they show: titles with the run, axes labelled in words, the
concentrations on log axes, R^2 and accuracies on fixed 0-1 axes with their chance
levels, legends off the data, readable labels of a sweep's cells."""

import numpy as np
import pytest

from aninfonce_tf import plots
from aninfonce_tf.configs import synthetic
from aninfonce_tf.evaluation.probes import ImageProbeEvaluator
from aninfonce_tf.runner import Experiment, figure_title
from aninfonce_tf.runner.report import write_plots, write_seeds_figures


@pytest.fixture
def saved_figures(monkeypatch):
    """The figures the plot functions save, kept open for inspection."""
    figures = []

    def keep(figure, path):
        figures.append(figure)
        return path

    monkeypatch.setattr(plots.style, "save", keep)
    return figures


def test_the_title_names_the_preset_and_seed():
    config = synthetic.PRESETS["quick"]
    assert figure_title(config, "quick", smoke=True) == f"preset quick (smoke), seed {config.seed}"


def test_the_concentration_figure_is_on_log_axes_with_words(saved_figures, tmp_path):
    plots.plot_concentration([4.0, 90.0, 410.0], [5.0, 100.0, 400.0], tmp_path / "c.png", "seed 3")
    (axis,) = saved_figures[0].axes
    assert axis.get_xscale() == axis.get_yscale() == "log"
    assert "true concentration" in axis.get_xlabel() and "learned" in axis.get_ylabel()
    assert axis.get_title() == "seed 3"
    low, high = axis.get_xlim()
    assert low < 5.0 and high > 410.0  # every point inside


def test_the_lambda_hat_figure_shows_each_dimension_on_a_log_axis(saved_figures, tmp_path):
    plots.plot_lambda_hat_dimensions(
        {"aninfonce": [3.0, 50.0, 7.0]}, tmp_path / "l.png", [5.0, 100.0], title="preset x, seed 0"
    )
    (axis,) = saved_figures[0].axes
    assert axis.get_yscale() == "log" and "preset x, seed 0" in axis.get_title()
    (line,) = [line for line in axis.get_lines() if line.get_marker() == "o"]
    np.testing.assert_array_equal(line.get_ydata(), [50.0, 7.0, 3.0])  # sorted, largest first


def _chance_lines(axis) -> list[float]:
    return [line.get_ydata()[0] for line in axis.get_lines() if line.get_label() == "chance"]


def test_scores_over_training_have_fixed_ranges_and_chance_lines(saved_figures, tmp_path):
    curves = {
        "aninfonce": [
            {"step": 10, "mcc": 0.23, "backbone": {"shape_accuracy": 0.24, "class_accuracy": 0.5}},
            {"step": 20, "mcc": 0.25, "backbone": {"shape_accuracy": 0.25, "class_accuracy": 0.6}},
        ]
    }
    keys = ["mcc", "backbone/shape_accuracy", "backbone/class_accuracy"]
    plots.plot_curves(curves, tmp_path / "c.png", keys, classes=10)
    (figure,) = saved_figures
    mcc, shape, classes = figure.axes[:3]
    assert mcc.get_ylim() == shape.get_ylim() == classes.get_ylim() == (0.0, 1.0)
    assert _chance_lines(mcc) == [] and _chance_lines(shape) == [pytest.approx(0.2)]
    assert _chance_lines(classes) == [pytest.approx(0.1)]
    assert all(axis.get_legend() is None for axis in figure.axes)  # one, outside them
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["AnInfoNCE", "chance"]


def _three_class_experiment() -> Experiment:
    labels = np.arange(12) % 3
    images = np.zeros((12, 4, 4, 3), "float32")
    evaluator = ImageProbeEvaluator(images, labels, images, labels, images, {})
    experiment = Experiment(lambda start: None, lambda: None, [evaluator])
    experiment.curve_keys = ("backbone/class_accuracy", "backbone/augmentation_readout")
    return experiment


def test_a_runs_curves_draw_the_chance_of_its_class_probes(saved_figures, tmp_path):
    points = [{"step": 10, "backbone": {"class_accuracy": 0.5, "augmentation_readout": 0.6}}]
    write_plots({"aninfonce": {"curve": points}}, _three_class_experiment(), tmp_path)
    (figure,) = saved_figures
    accuracy, readout = figure.axes
    assert _chance_lines(accuracy) == [pytest.approx(1 / 3)]
    assert _chance_lines(readout) == [pytest.approx(0.5)]


def test_the_seeds_figure_draws_the_chance_of_the_class_probes_too(saved_figures, tmp_path):
    entry = {"mean": 0.5, "sd": 0.01, "n": 3}
    scores = {"backbone/class_accuracy": entry, "backbone/augmentation_readout": entry}
    summary = {"seeds": [0, 1, 2], "variants": {"aninfonce": scores}}
    write_seeds_figures(summary, _three_class_experiment(), tmp_path, "photos", False)
    (figure,) = saved_figures
    accuracy, readout = figure.axes
    assert _chance_lines(accuracy) == [pytest.approx(1 / 3)]
    assert _chance_lines(readout) == [pytest.approx(0.5)]


def test_the_latent_bars_are_on_a_fixed_axis_with_the_shapes_chance(saved_figures, tmp_path):
    scores = {level: {"aninfonce": {"x": 0.22, "y": -3.0}} for level in ("backbone", "projector")}
    accuracy = {level: {"aninfonce": 0.24} for level in scores}
    plots.plot_latent_r2_levels(scores, ["x", "y"], tmp_path / "l.png", accuracy=accuracy)
    (figure,) = saved_figures
    for axis in figure.axes:
        assert axis.get_ylim() == (0.0, 1.0) and axis.get_legend() is None
        (chance,) = [c for c in axis.collections if c.get_label() == "chance (shape)"]
        assert chance.get_segments()[0][0][1] == pytest.approx(0.2)
        heights = [bar.get_height() for bar in axis.patches]
        assert heights == [pytest.approx(0.22), 0.0, pytest.approx(0.24)]  # R^2 < 0 at 0
    assert "chance (shape)" in [t.get_text() for t in figure.legends[0].get_texts()]


def _cell(changed, concentration, r2):
    entry = {"mean": r2, "sd": 0.01, "n": 3}
    values = {"crop_min_scale": 0.4, "jitter_strength": 0.5, **changed}
    scores = {
        f"{level}/{score}": entry
        for level in ("backbone", "projector")
        for score in ("shape_accuracy", "part_linear_r2/x", "part_linear_r2/y")
    }
    return {
        "values": values,
        "changed": changed,
        "summary": {"variants": {"aninfonce": scores, "infonce": scores}},
        "run": {"effective_concentration": {"parts": concentration}},
    }


def test_a_sweeps_parts_are_drawn_against_their_concentration_on_fixed_axes(
    saved_figures, tmp_path
):
    cells = [
        _cell({}, {"x": 0.6, "y": 2.0}, 0.5),
        _cell({"crop_min_scale": 0.8}, {"x": 1.2, "y": 25.0}, -0.2),  # R^2 < 0: drawn at 0
        _cell({"jitter_strength": 1.0}, {"x": 0.6, "y": 1e4}, 0.7),  # y never changed
    ]
    plots.plot_tradeoff(cells, tmp_path / "t.png", title="rendered")
    (figure,) = saved_figures
    panels = figure.axes
    assert len(panels) == 2 * 3  # a row per level: the two axes and the shape accuracy
    crop, jitter, shape = panels[:3]
    # The measured Lambda_eff, 0.6 to 25, widened by 1.5; the parts no pair changes in a
    # slot 4 times further out, behind a shaded break.
    low, high, slot = 0.4, 37.5, 150.0
    for axis in (crop, jitter):
        assert axis.get_xscale() == "log"
        assert axis.get_xlim() == pytest.approx((low, slot * 1.5))
        assert axis.get_ylim() == pytest.approx((-0.03, 1.0))
        assert [line.get_ydata()[0] for line in axis.lines if line.get_label() == "chance"] == [0]
        (gap,) = axis.patches
        assert gap.get_x() == pytest.approx(high) and gap.get_width() == pytest.approx(100 - high)
        *measured, never = axis.get_xticks()
        assert never == pytest.approx(slot) and all(low <= tick <= high for tick in measured)
        assert axis.get_xticklabels()[-1].get_text() == "never\nchanged"
    assert "smallest crop area" in crop.get_title() and "colour-jitter" in jitter.get_title()
    # The crop moves both parts, the jitter only y (x stays at 0.6): a line per part and loss.
    drawn = [container.lines[0] for container in crop.containers]  # each errorbar's line
    assert len(drawn) == 4 and list(drawn[0].get_xdata()) == [0.6, 1.2]
    assert list(drawn[0].get_ydata()) == pytest.approx([0.5, 0.0])
    # y's measured point joined by a line, its never-changed one hollow in the slot,
    # the two joined only by a dotted line.
    drawn = [container.lines[0] for container in jitter.containers]
    assert [list(line.get_xdata()) for line in drawn] == [[2.0], [slot]] * 2
    assert [line.get_markerfacecolor() for line in drawn[1::2]] == ["white"] * 2
    dotted = [
        line for line in jitter.lines if line.get_ls() == ":" and line.get_label() != "chance"
    ]
    assert [list(line.get_xdata()) for line in dotted] == [[2.0, slot]] * 2
    assert [t.get_text() for t in shape.get_xticklabels()] == ["preset", "crop 0.8", "jitter 1"]
    assert shape.get_ylim() == (0.0, 1.0)
    assert [line.get_ydata()[0] for line in shape.lines if line.get_label() == "chance"] == [
        pytest.approx(0.2)
    ]
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels == ["AnInfoNCE", "InfoNCE", "x", "y", labels[4], "chance"]
    assert "no pair changes" in labels[4] and "∞" in labels[4]


def test_a_sweep_whose_every_part_is_measured_has_no_never_changed_entry(saved_figures, tmp_path):
    cells = [_cell({}, {"x": 0.6}, 0.5), _cell({"crop_min_scale": 0.8}, {"x": 1.2}, 0.4)]
    plots.plot_tradeoff(cells, tmp_path / "t.png", levels=["backbone"])
    (figure,) = saved_figures
    crop = figure.axes[0]
    assert crop.get_xlim()[0] == pytest.approx(0.4) and crop.get_xlim()[1] < 30
    assert [line.get_label() for line in crop.lines if line.get_ls() == ":"] == ["chance"]
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert labels == ["AnInfoNCE", "InfoNCE", "x", "chance"]


def test_the_seeds_figure_shows_mean_and_sd_per_variant(saved_figures, tmp_path):
    summary = {
        "seeds": [0, 1, 2],
        "variants": {
            name: {
                "mcc": {"mean": mean, "sd": 0.05, "n": 3},
                "backbone/augmentation_readout": {"mean": 0.55, "sd": 0.01, "n": 3},
                "loss": {"mean": 3.0, "sd": 0.1, "n": 3},
            }
            for name, mean in (("aninfonce", 0.9), ("infonce", 0.4))
        },
    }
    plots.plot_seeds(summary, tmp_path / "s.png", ["mcc", "backbone/augmentation_readout"])
    (figure,) = saved_figures
    mcc, readout = figure.axes
    assert mcc.get_ylim() == readout.get_ylim() == (0.0, 1.0)
    assert _chance_lines(readout) == [0.5] and _chance_lines(mcc) == []
    assert [t.get_text() for t in mcc.get_xticklabels()] == ["AnInfoNCE", "InfoNCE"]
    means = [c.lines[0].get_ydata()[0] for c in mcc.containers]
    assert means == [0.9, 0.4]
    assert "seeds 0, 1, 2" in figure.texts[0].get_text()


def test_the_lambda_hat_figure_of_a_run_without_a_true_lambda(tmp_path):
    results = {"aninfonce": {"lambda_hat": [2.0, 5.0]}, "infonce": {}}
    (path,) = plots.plot_lambda_hats(results, tmp_path, title="preset photos, seed 0")
    assert path == tmp_path / "lambda_hat.png" and path.exists()
    assert plots.plot_lambda_hats({"infonce": {}}, tmp_path) == []


def test_r2_against_effective_concentration_puts_each_part_at_its_lambda(saved_figures, tmp_path):
    concentration = {"x": 0.6, "rotation_cos": 1e4, "object_hue_cos": 22.0}
    means = {
        level: {"aninfonce": {"x": 0.8, "rotation_cos": 0.1, "object_hue_cos": 0.9}}
        for level in ("backbone", "projector")
    }
    sds = {level: {"aninfonce": {"x": 0.05, "rotation_cos": 0.0}} for level in means}
    plots.plot_r2_by_concentration(means, concentration, tmp_path / "r.png", "seeds 0-4", sds)
    (figure,) = saved_figures
    backbone, projector = figure.axes
    assert backbone.get_xscale() == "log" and backbone.get_ylim() == (0.0, 1.0)
    (points,) = backbone.containers
    line = points.lines[0]
    np.testing.assert_array_equal(line.get_xdata(), [0.6, 22.0, 1e4])  # by Lambda_eff
    np.testing.assert_array_equal(line.get_ydata(), [0.8, 0.9, 0.1])
    assert points.has_yerr and "seeds 0-4" in figure.texts[0].get_text()
    assert "effective concentration" in backbone.get_xlabel()
    assert {t.get_text() for t in backbone.texts} == {"x", "rotation cos", "object hue cos"}
