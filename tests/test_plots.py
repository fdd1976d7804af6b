"""The figures say what they show: titles with the run, axes labelled in words, the
concentrations on log axes."""

import numpy as np
import pytest

from aninfonce_tf import plots
from aninfonce_tf.configs import synthetic
from aninfonce_tf.runner import figure_title


@pytest.fixture
def saved_figures(monkeypatch):
    """The figures the plot functions save, kept open for inspection."""
    figures = []

    def keep(figure, path):
        figures.append(figure)
        return path

    monkeypatch.setattr(plots, "_save", keep)
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
