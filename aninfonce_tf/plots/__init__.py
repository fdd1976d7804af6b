"""Matplotlib figures of an experiment's results (PNG, fixed ranges, chance lines).
Modules: docs/api.md#the-library-module-by-module (the `plots.*` rows)"""

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
