"""The final linear evaluation's settings, evaluator and `results.json` record.
Details: docs/method.md#linear-evaluation"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable

import tensorflow as tf

from aninfonce_tf.configs.base import RunConfig, at_least, option, positive
from aninfonce_tf.data.datasets import IMAGENET_10PCT, require_prepared
from aninfonce_tf.data.probe_sets import centre_square
from aninfonce_tf.evaluation.linear_evaluation import SCORE, LinearEvaluator

# SimCLR's test crop: the centre square of 87.5 % of the shorter side, for images
# above 32 pixels (its CIFAR10 images are taken whole).
CROP_PROPORTION = 0.875
# What the classifier trains on: the whole training split, or SimCLR's 10 % subset of
# ImageNet's training images (tfds' `imagenet2012_subset/10pct`, SimCLR's image list).
LINEAR_EVAL_SPLITS = ("train", "10pct")


@dataclasses.dataclass
class LinearEvaluationConfig(RunConfig):
    """A run config with the final linear evaluation's settings (a resume may change them).

    Example:

    >>> config = LinearEvaluationConfig(linear_eval_epochs=100)
    >>> config.linear_eval_learning_rate(), "linear_eval_epochs" in config.resume_key()
    (0.2, False)
    """

    linear_eval_epochs: int = option(
        0,
        "epochs of the final linear evaluation: a linear classifier on frozen backbone "
        "features of every training image, at the final step only (SimCLR's protocol; "
        "0: none)",
        group="evaluation",
        rule=at_least(0, "0: no final linear evaluation"),
    )
    linear_eval_batch_size: int = option(
        512,
        "batch of the final linear evaluation's classifier",
        group="evaluation",
        rule=at_least(1),
    )
    linear_eval_base_learning_rate: float = option(
        0.1,
        "learning rate per 256 examples of the final linear evaluation's classifier, "
        "x linear_eval_batch_size / 256 (SGD, Nesterov momentum 0.9, cosine to 0)",
        group="evaluation",
        rule=positive,
    )
    linear_eval_weight_decay: float = option(
        0.0,
        "L2 penalty of the final linear evaluation's classifier, x ||w||^2 / 2",
        group="evaluation",
        rule=at_least(0),
    )
    linear_eval_split: str = option(
        "train",
        "what the final linear evaluation's classifier fits on: the whole training split, "
        "or 10pct, SimCLR's subset of a tenth of ImageNet's training images (ImageNet only)",
        LINEAR_EVAL_SPLITS,
        group="evaluation",
    )

    resume_exempt: typing.ClassVar[tuple[str, ...]] = (
        "linear_eval_epochs",
        "linear_eval_batch_size",
        "linear_eval_base_learning_rate",
        "linear_eval_weight_decay",
        "linear_eval_split",
    )

    def linear_eval_learning_rate(self) -> float:
        """The classifier's peak learning rate: its base x batch / 256."""
        return self.linear_eval_base_learning_rate * self.linear_eval_batch_size / 256

    def validate_linear_evaluation(
        self, dataset: str, data_dir: str | None = None, mock_data: bool = False
    ) -> None:
        """Raises `ValueError` naming a linear-evaluation field that cannot run on `dataset`."""
        if self.linear_eval_split != "10pct":
            return
        if dataset != "imagenet2012":
            raise ValueError(
                "`linear_eval_split` 10pct is SimCLR's subset of ImageNet's training "
                f"images, which {dataset} lacks: pass --linear-eval-split train."
            )
        if self.linear_eval_epochs and not mock_data:
            try:
                require_prepared(IMAGENET_10PCT, data_dir)
            except ValueError as missing:
                raise ValueError(f"`linear_eval_split` 10pct: {missing}") from None


def crop_proportion(image_size: int) -> float:
    """SimCLR's test crop at `image_size`: `CROP_PROPORTION` above 32 pixels, else 1."""
    return CROP_PROPORTION if image_size > 32 else 1.0


def linear_evaluator(
    config: LinearEvaluationConfig,
    train: tf.data.Dataset,
    test: tf.data.Dataset,
    image_size: int,
    classes: int,
    decode: Callable[[dict], dict] | None = None,
) -> LinearEvaluator:
    """The final linear evaluation of `config` on `{image, label}` examples."""
    proportion = crop_proportion(image_size)

    def crop(example: dict) -> dict:
        example = decode(example) if decode else example
        image = centre_square(example["image"], image_size, proportion)
        return {"image": image, "label": example["label"]}

    train, test = (
        examples.map(crop, num_parallel_calls=tf.data.AUTOTUNE) for examples in (train, test)
    )
    return LinearEvaluator(
        train,
        test,
        classes=classes,
        epochs=config.linear_eval_epochs,
        batch_size=config.linear_eval_batch_size,
        learning_rate=config.linear_eval_learning_rate(),
        weight_decay=config.linear_eval_weight_decay,
        seed=config.seed,
        jit_compile=config.jit_compile,
    )


def linear_evaluation_record(config: LinearEvaluationConfig, image_size: int) -> dict:
    """The final linear evaluation's protocol, as `run["linear_evaluation"]` records it.

    Example:

    >>> record = linear_evaluation_record(LinearEvaluationConfig(linear_eval_epochs=100), 32)
    >>> record["train_split"], record["crop_proportion"], record["learning_rate"]
    ('train', 1.0, 0.2)
    """
    fitted_on = (
        "every training image"
        if config.linear_eval_split == "train"
        else "SimCLR's 10 % subset of ImageNet's training images (its semi-supervised "
        "list; not comparable with the paper's linear evaluation, which fits on every one)"
    )
    return {
        "protocol": (
            "SimCLR's linear evaluation: a linear classifier on frozen backbone features "
            f"of each image's centre crop, computed once (SimCLR crops and flips the "
            f"training images at every epoch), fitted on {fitted_on}"
        ),
        "score": SCORE,
        "train_split": config.linear_eval_split,
        "crop_proportion": crop_proportion(image_size),
        "epochs": config.linear_eval_epochs,
        "batch_size": config.linear_eval_batch_size,
        "learning_rate": config.linear_eval_learning_rate(),
        "optimizer": "SGD, Nesterov momentum 0.9, cosine decay to 0, no warm-up",
        "weight_decay": config.linear_eval_weight_decay,
    }


__all__ = [
    "CROP_PROPORTION",
    "LINEAR_EVAL_SPLITS",
    "LinearEvaluationConfig",
    "crop_proportion",
    "linear_evaluation_record",
    "linear_evaluator",
]
