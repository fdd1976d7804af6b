"""What every figure shares: labels, each score's fixed range and chance level, saving."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from aninfonce_tf.data.renderer import LATENTS  # noqa: E402

# Words for the scores the evaluators return (`outer/inner` keys by their last part
# when the whole key is not listed), for axis labels.
LABELS = {
    "loss": "training loss",
    "linear_r2": "linear R² (held-out, mean over latents)",
    "nonlinear_r2": "kernel-ridge R² (held-out, mean over latents)",
    "mcc": "mean correlation coefficient (MCC)",
    "mcc_spearman": "MCC of the rank correlations",
    "min_linear_r2": "smallest per-latent linear R²",
    "mcc_floor": "MCC of a random rotation of the true latents",
    "block_r2/high": "linear R², high-concentration latents",
    "block_r2/low": "linear R², low-concentration latents",
    "lambda_spearman": "rank correlation of learned and true Λ",
    "lambda_relative_error": "mean relative error of the learned Λ",
    "class_accuracy": "class accuracy (linear probe)",
    "linear_eval_accuracy": "class accuracy (linear evaluation, every training image)",
    "augmentation_readout": "augmentation readout",
    "block_linear_r2/style": "linear R², style latents",
    "block_linear_r2/content": "linear R², content latents",
    "shape_accuracy": "shape accuracy (linear probe)",
}
LEARNED = r"learned concentration $\hat{\Lambda}$"
# Chance level of a score, by its last part: a guess among the rendered shapes; a
# readout of binary targets (balanced accuracy).
CHANCE = {
    "shape_accuracy": 1 / LATENTS["shape"].classes,
    "augmentation_readout": 0.5,
}
# Scores whose chance level is one over the number of classes.
CLASS_SCORES = re.compile(r"class_accuracy|knn_k\d+_accuracy|linear_eval_accuracy")


def score_label(key: str) -> str:
    """Axis label of a score, in words.

    Example:

    >>> score_label("block_r2/low"), score_label("backbone/knn_k20_accuracy")
    ('linear R², low-concentration latents', 'backbone: kNN accuracy, k = 20')
    >>> score_label("projector/block_linear_r2/style")
    'projector: linear R², style latents'
    """
    parts = key.split("/")
    # The longest listed ending names the score; the parts before it its level.
    start = next((i for i in range(len(parts)) if "/".join(parts[i:]) in LABELS), len(parts) - 1)
    outer, name = parts[:start], "/".join(parts[start:])
    knn = re.fullmatch(r"knn_k(\d+)_accuracy", name)
    words = f"kNN accuracy, k = {knn.group(1)}" if knn else LABELS.get(name, name.replace("_", " "))
    return f"{'/'.join(outer)}: {words}" if outer else words


def variant_label(name: str) -> str:
    """A loss variant as a legend names it.

    Example:

    >>> variant_label("aninfonce"), variant_label("infonce_hard_negatives")
    ('AnInfoNCE', 'InfoNCE (hard negatives)')
    """
    loss, _, kind = name.partition("_")
    if loss not in ("aninfonce", "infonce"):
        return name  # a user's loss keeps its registered name
    loss = {"aninfonce": "AnInfoNCE", "infonce": "InfoNCE"}[loss]
    return f"{loss} ({kind.replace('_', ' ')})" if kind else loss


def score_limits(key: str) -> tuple[float, float] | None:
    """The fixed axis range of a score, the same in every figure; None: scaled to the data.

    Example:

    >>> score_limits("backbone/knn_k20_accuracy"), score_limits("lambda_spearman")
    ((0.0, 1.0), (-1.0, 1.0))
    >>> score_limits("loss") is None
    True
    """
    if key.endswith("lambda_spearman"):
        return (-1.0, 1.0)
    unit = ("r2", "accuracy", "readout", "mcc")
    return (0.0, 1.0) if any(word in part for part in key.split("/") for word in unit) else None


def chance_level(key: str, classes: int | None = None) -> float | None:
    """A score's chance level (1/`classes` for a class probe), or None.

    Example:

    >>> chance_level("projector/shape_accuracy"), chance_level("backbone/class_accuracy", 10)
    (0.2, 0.1)
    """
    name = key.rsplit("/", 1)[-1]
    if classes and CLASS_SCORES.fullmatch(name):
        return 1 / classes
    return CHANCE.get(name)


def chance_line(axis, level: float, vertical: bool = False) -> None:
    """A dotted grey line at `level`, labelled "chance", across `axis`."""
    line = axis.axvline if vertical else axis.axhline
    line(level, color="0.4", ls=":", lw=1.2, label="chance", zorder=1)


def fix_range(axis, key: str, classes: int | None = None, vertical: bool = False) -> None:
    """The score `key`'s fixed range and chance line, if any, on `axis`'s y (x: `vertical`).

    Example:

    >>> figure, axis = plt.subplots()
    >>> fix_range(axis, "backbone/class_accuracy", classes=10)
    >>> [float(limit) for limit in axis.get_ylim()], [line.get_ydata()[0] for line in axis.lines]
    ([0.0, 1.0], [0.1])
    >>> plt.close(figure)
    """
    limits = score_limits(key)
    if limits:
        (axis.set_xlim if vertical else axis.set_ylim)(*limits)
    chance = chance_level(key, classes)
    if chance is not None:
        chance_line(axis, chance, vertical)


def title(what: str, run: str) -> str:
    """`what` a figure shows, over the run it shows it of (when given)."""
    return f"{what}\n{run}" if run else what


def save(figure, path: str | Path) -> Path:
    """Writes `figure` to the PNG `path` (its folders made) and closes it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
