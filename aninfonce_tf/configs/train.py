"""Contrastive pre-training on the user's own images and backbone (`aninfonce-tf
train`), with the image probes when the images have labels. Details: docs/backbones.md

Example:

>>> config = PRESETS["default"]
>>> config.backbone, config.image_size, config.loss_names()
('small_cnn', 32, ['aninfonce'])
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from aninfonce_tf import plots
from aninfonce_tf.backbones import backbone, check_backbone
from aninfonce_tf.configs.base import (
    CONVOLUTIONAL_JIT_HELP,
    RunConfig,
    as_usage_errors,
    at_least,
    layer_widths,
    option,
    split_list,
)
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.data.augment import AUGMENTATION_PRESETS
from aninfonce_tf.data.datasets import pair_batches
from aninfonce_tf.data.probe_sets import centre_squares, centre_squares_and_views, stratified_arrays
from aninfonce_tf.data.user_images import check_images_source, read_images
from aninfonce_tf.evaluation.features import LEVELS
from aninfonce_tf.evaluation.probes import FOLDS, ImageProbeEvaluator
from aninfonce_tf.layers import projection_head
from aninfonce_tf.parsing import strict_int

# Random examples of `--mock-data`: 2 classes of noise images.
MOCK_EXAMPLES = 256
VALUE_RANGES = ("auto", "1", "255")
# The printed table's columns with probes: class accuracy, kNN and readout per level.
SUMMARY = tuple(f"{level}/{score}" for level in LEVELS for score in ImageProbeEvaluator.SCORES)


def _no_probes_or_folds(name: str, value: int) -> None:
    if value and value < FOLDS:
        raise ValueError(
            f"`{name}` must be 0 or at least {FOLDS} (the probe's cross-validation); got {value}."
        )


@dataclasses.dataclass
class TrainConfig(RunConfig):
    """Every setting of `aninfonce-tf train` (the shared ones: `RunConfig`).

    Example:

    >>> TrainConfig(data="").check_inputs()
    Traceback (most recent call last):
    ...
    ValueError: `data` is empty: pass --data with an image folder, a .npy/.npz file or \
tfds:NAME[:SPLIT] (prepared with `tfds build NAME --data_dir DIR`).
    """

    data: str = option(
        "", "an image folder (labels from its subfolders), a .npy/.npz file or tfds:NAME[:SPLIT]"
    )
    data_dir: str = option("", "tfds data directory of a tfds:NAME dataset, prepared")
    mock_data: bool = option(False, f"{MOCK_EXAMPLES} random images instead of --data")
    value_range: str = option(
        "auto", "float arrays' range: auto reads [0, 1] (uint8: [0, 255])", VALUE_RANGES
    )
    backbone: str = option(
        "small_cnn",
        "small_cnn, resnet18_cifar, resnet50, a keras.applications model (MobileNetV3Small, "
        "ResNet50, ...), hub:PRESET or FILE.py:FUNCTION",
    )
    weights: str = option("none", "a keras.applications backbone's local weights file, or none")
    image_size: int = option(
        32,
        "side of the square views (and of the images as read)",
        rule=at_least(8, "SimCLR's crops of smaller images"),
    )
    augmentation: str = option(
        "simclr_cifar10", "view preset, at --image-size", tuple(AUGMENTATION_PRESETS)
    )
    features: int = option(256, "backbone features (small_cnn)", rule=at_least(1))
    projector_units: str = option(
        "512,128", "projection head widths, the last its output", rule=layer_widths()
    )
    probe_size: int = option(
        500,
        "labelled images held out of training for the probes (and as many training images "
        "they fit on); 0: no probes",
        group="evaluation",
        rule=_no_probes_or_folds,
    )
    # The shared fields, for a first run on a CPU.
    losses: str = option("aninfonce", "loss variants, comma-separated")
    steps: int = option(1000, "training steps per loss")
    parametrization: str = option(
        "exp", "Lambda_hat as a function of its variable", ("softplus", "exp")
    )
    jit_compile: bool = option(False, CONVOLUTIONAL_JIT_HELP)

    def validate(self) -> None:
        """`RunConfig.validate`, then the backbone's name and weights."""
        super().validate()
        check_backbone(self.backbone, None if self.weights == "none" else self.weights)

    def check_inputs(self) -> None:
        """Checks the data (found, readable, in range, above a batch) and the backbone."""
        if self.mock_data:
            if self.data:
                raise ValueError(
                    f"--mock-data true trains on random images, and --data {self.data} would "
                    "be ignored: give one of the two."
                )
            count, labelled = MOCK_EXAMPLES, True
        else:
            count, labelled = check_images_source(self.data, self.data_dir, self.value_range)
        weights = None if self.weights == "none" else self.weights
        shape = (self.image_size, self.image_size, 3)
        check_backbone(self.backbone, weights)  # its own message for a name or a file
        try:
            backbone(self.backbone, shape, weights, self.features)
        except Exception as error:  # e.g. a keras.applications model too small for its input
            raise ValueError(
                f"--backbone {self.backbone} cannot be built for {shape} images: "
                f"{str(error).splitlines()[0]}"
            ) from None
        training = count - (held_out(self.probe_size, count) if labelled else 0)
        if training < self.batch_size:
            raise ValueError(
                f"`batch_size` {self.batch_size} is more than the {training} training images "
                f"(of {count}): pass a smaller --batch-size."
            )


def held_out(probe_size: int, count: int) -> int:
    """The labelled images held out for the probes: `probe_size`, at most a fifth."""
    return min(probe_size, count // 5)


def images(config: TrainConfig) -> dict:
    """The images of `config`: `read_images` of `data`, or `--mock-data`'s noise."""
    if config.mock_data:
        rng = np.random.default_rng(config.seed)
        shape = (MOCK_EXAMPLES, config.image_size, config.image_size, 3)
        labels = np.arange(MOCK_EXAMPLES) % 2
        return {"image": rng.integers(0, 256, shape, dtype="uint8"), "label": labels, "classes": []}
    return read_images(config.data, config.image_size, config.data_dir, config.value_range)


def build(config: TrainConfig) -> Experiment:
    """SimCLR views of the user's images, the backbone and projector, and the probes."""
    augment = dataclasses.replace(
        AUGMENTATION_PRESETS[config.augmentation],
        image_size=config.image_size,
        jit_compile=config.strategy != "tpu",  # a TPU host's TensorFlow may lack XLA:CPU
    )
    with as_usage_errors():  # an unreadable image: one line, as `check_inputs`' refusals
        read = images(config)
    count, labels = len(read["image"]), read["label"]
    print(f"data: {count} images{' (--mock-data: random, not yours)' if config.mock_data else ''}")
    order = np.random.default_rng([config.seed, 7]).permutation(count)
    labelled = config.probe_size and len(np.unique(labels[labels >= 0])) >= 2
    if config.probe_size and not labelled:
        print(
            "probes: off, the images have no labels (a folder needs every image in one of two "
            "or more class subfolders; arrays, a labels array)"
        )
    held = order[: held_out(config.probe_size, count)] if labelled else order[:0]
    train = {"image": read["image"][order[len(held) :]], "label": labels[order[len(held) :]]}
    evaluators = []
    if len(held):
        evaluators.append(_probes(config, augment, train, read, held))
    shape = (config.image_size, config.image_size, 3)
    units = split_list(config.projector_units, strict_int)
    weights = None if config.weights == "none" else config.weights
    return Experiment(
        train_data=lambda start: pair_batches(
            train, augment, config.batch_size, seed=config.seed, start=start
        ),
        encoder=lambda: backbone(config.backbone, shape, weights, config.features),
        projector=lambda: projection_head(units[:-1], units[-1]),
        evaluators=evaluators,
        table_columns=SUMMARY if evaluators else (),
        metadata={"images": count, "held_out": len(held), "classes": read["classes"]},
        plots=plots.plot_lambda_hats,
    )


def _probes(config, augment, train, read, held) -> ImageProbeEvaluator:
    size = config.image_size
    fit_source = tf.data.Dataset.from_tensor_slices(train)
    fit, fit_labels, _ = stratified_arrays(
        fit_source, len(held), [config.seed, 0], centre_squares(size)
    )
    test_source = tf.data.Dataset.from_tensor_slices(
        {"image": read["image"][held], "label": read["label"][held]}
    )
    seed = tf.constant([config.seed, 123], tf.int64)
    test, test_labels, _ = stratified_arrays(
        test_source, len(held), [config.seed, 1], centre_squares_and_views(augment, seed)
    )
    return ImageProbeEvaluator(
        fit["image"], fit_labels, test["image"], test_labels, test["view"], test["params"]
    )


PRESETS = {"default": TrainConfig()}
SMOKE = dict(
    steps=20,
    eval_every=10,
    batch_size=32,
    features=32,
    projector_units="32,16",
    probe_size=40,
    export=True,
)

__all__ = ["PRESETS", "SMOKE", "TrainConfig", "build", "images"]
