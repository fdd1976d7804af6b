"""Matplotlib figures of an experiment's results (written to PNG, no display needed),
titled with what they show and the run (preset, seed), their axes labelled in words,
R^2 and accuracies on fixed 0-1 axes with their chance levels.

`style`: the words, ranges, chance levels and saving every figure shares; `runs`:
the figures of one run; `summaries`: those over seeds; `tradeoff`: a sweep's.
"""

from aninfonce_tf.plots.runs import (
    plot_concentration,
    plot_curves,
    plot_identifiability,
    plot_image_grid,
    plot_lambda_hat_dimensions,
    plot_lambda_hats,
    plot_latent_r2_levels,
    plot_per_latent_r2,
)
from aninfonce_tf.plots.style import (
    CHANCE,
    LABELS,
    LEARNED,
    chance_level,
    score_label,
    score_limits,
    variant_label,
)
from aninfonce_tf.plots.summaries import plot_r2_by_concentration, plot_seeds
from aninfonce_tf.plots.tradeoff import cell_label, plot_tradeoff

__all__ = [
    "CHANCE",
    "LABELS",
    "LEARNED",
    "cell_label",
    "chance_level",
    "plot_concentration",
    "plot_curves",
    "plot_identifiability",
    "plot_image_grid",
    "plot_lambda_hat_dimensions",
    "plot_lambda_hats",
    "plot_latent_r2_levels",
    "plot_per_latent_r2",
    "plot_r2_by_concentration",
    "plot_seeds",
    "plot_tradeoff",
    "score_label",
    "score_limits",
    "variant_label",
]
