"""The real-image experiment of the photos, CIFAR10 and ImageNet recipes.
Details: docs/method.md#the-image-experiments-probe-sets-and-schedule"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import warnings
from collections.abc import Callable

import keras
import tensorflow as tf

from aninfonce_tf import plots
from aninfonce_tf.configs import image_data, readout_check
from aninfonce_tf.configs.base import (
    CONVOLUTIONAL_JIT_HELP,
    RunConfig,
    at_least,
    layer_widths,
    not_negative,
    option,
    split_list,
)
from aninfonce_tf.configs.learning_rates import (
    LEARNING_RATE_SCALINGS,
    check_learning_rate_scaling,
    scaled_learning_rate,
)
from aninfonce_tf.configs.linear_eval_settings import (
    LinearEvaluationConfig,
    linear_evaluation_record,
)
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.configs.readout_check import CHECK_SEED, CHECK_VIEWS_SEED, ReadoutCheckConfig
from aninfonce_tf.data.augment import AUGMENTATION_PRESETS, VIEW_DTYPES, SimCLRAugment
from aninfonce_tf.data.datasets import (
    PHOTO_NAMES,
    jpeg_encoded,
    pair_batches,
    require_prepared,
    tfds_image_decoder,
)
from aninfonce_tf.data.probe_sets import (
    centre_squares,
    centre_squares_and_views,
    class_counts,
    stratified_arrays,
)
from aninfonce_tf.encoders import resnet18_cifar, resnet50, small_cnn
from aninfonce_tf.evaluation.determinable import DeterminableProbeEvaluator
from aninfonce_tf.evaluation.features import LEVELS
from aninfonce_tf.evaluation.probes import FOLDS, ImageProbeEvaluator
from aninfonce_tf.layers import projection_head
from aninfonce_tf.parsing import strict_int

DATASETS = ("photos", "cifar10", "imagenet2012")
ENCODERS = ("small_cnn", "resnet18_cifar", "resnet50")
# The table's columns and the primary scores, read at the final step: the summaries;
# per-parameter readouts are in results.json.
SUMMARY = tuple(f"{level}/{score}" for level in LEVELS for score in ImageProbeEvaluator.SCORES)
# Training examples of the tfds datasets (the photos': patches_per_photo per photo).
TRAIN_EXAMPLES = {"cifar10": 50_000, "imagenet2012": 1_281_167}
# The canvas side per 224 pixels of view: ImageNet's photos (~500 x 375) fit it whole.
CANVAS_PER_224 = 512


# The fields that `epochs`, `eval_epochs` and `base_learning_rate` set, left to them
# (see `ImageConfig.resolved`).
FROM_EPOCHS = dict(steps=0, eval_every=0, learning_rate=0.0)
# The CIFAR10 preset's optimisation (SimSiam's) and probe sizes (1,000 images per class).
SGD_COSINE = dict(
    optimizer="sgd",
    momentum=0.9,
    learning_rate_schedule="cosine",
    projector_units="2048,128",
    probe_size=10_000,
    readout_size=10_000,
)
# The sizes of every image recipe's --smoke.
SMOKE = dict(
    encoder="small_cnn",
    features=32,
    projector_units="32,16",
    steps=20,
    eval_every=10,
    batch_size=32,
    probe_size=64,
    readout_size=64,
    epochs=0,
    eval_epochs=0,
    warmup_epochs=0,
    linear_eval_batch_size=32,
    readout_check_steps=4,
    readout_check_batch_size=32,
)

# The sizes of `--smoke-full`: 2 steps of the preset's own parts, evaluated once.
SMOKE_FULL = dict(
    steps=2,
    eval_every=2,
    batch_size=8,
    warmup_steps=1,
    epochs=0,
    eval_epochs=0,
    warmup_epochs=0,
    probe_size=16,
    readout_size=16,
    linear_eval_epochs=1,
    linear_eval_batch_size=8,
)


# The records of the checks run in this process, by their config (seed `CHECK_SEED`).
_RECORDS: dict[str, dict] = {}


@dataclasses.dataclass
class ImageConfig(LinearEvaluationConfig, ReadoutCheckConfig):
    """Every hyperparameter of the real-image experiment (epoch fields set step fields).

    Example:

    >>> config = ImageConfig(dataset="cifar10", batch_size=500, epochs=800,
    ...     eval_epochs=100, base_learning_rate=0.03, **FROM_EPOCHS).resolved()
    >>> config.steps, config.eval_every, round(config.learning_rate, 6)
    (80000, 10000, 0.058594)
    """

    jit_compile: bool = option(False, CONVOLUTIONAL_JIT_HELP)

    dataset: str = option("photos", "images to learn from", DATASETS)
    data_dir: str = option("", "tfds data directory (cifar10, imagenet2012)")
    augmentation: str = option("simclr_cifar10", "view preset", tuple(AUGMENTATION_PRESETS))
    encoder: str = option("small_cnn", "backbone", ENCODERS)
    synchronized_batch_norm: bool = option(
        False, "batch norm statistics over all replicas (ResNets, projector)"
    )
    features: int = option(256, "backbone features (small_cnn)", rule=at_least(1))
    projector_units: str = option(
        "512,128", "projection head widths, the last its output", rule=layer_widths()
    )
    projector_batch_norm: bool = option(
        False, "batch norm after each projector layer, as SimCLR's ImageNet head"
    )
    projector_kernel_stddev: float = option(
        0.0,
        "projector kernels drawn from N(0, stddev^2), as SimCLR's head (0.01); 0: Keras' "
        "Glorot uniform",
        rule=not_negative(),
    )
    patches_per_photo: int = option(
        400, "training patches cut from each photo (photos)", rule=at_least(1)
    )
    probe_size: int = option(
        2000,
        "images the class probes fit on (and as many scored)",
        group="evaluation",
        rule=at_least(FOLDS, f"the class probe is fitted by {FOLDS}-fold cross-validation"),
    )
    readout_size: int = option(
        2000, "augmented views the readout probes use", group="evaluation", rule=at_least(1)
    )
    mock_data: bool = option(False, "random tfds examples instead of the dataset (--smoke)")
    view_dtype: str = option(
        "float32",
        "dtype of the training views sent to the devices: uint8 (a quarter of float32's "
        "bytes, read back as / 255 on the device) or float32",
        VIEW_DTYPES,
    )
    epochs: int = option(
        0,
        "training epochs; when positive, sets steps = epochs x (training examples // batch)",
        group="training",
        rule=not_negative("0: give the step field instead"),
    )
    warmup_epochs: int = option(
        0,
        "learning-rate warm-up epochs; when positive, sets warmup_steps",
        group="training",
        rule=not_negative("0: give the step field instead"),
    )
    eval_epochs: int = option(
        0,
        "epochs between evaluations; when positive, sets eval_every",
        group="evaluation",
        rule=not_negative("0: give the step field instead"),
    )
    base_learning_rate: float = option(
        0.0,
        "when positive, sets learning_rate from the batch size: base_learning_rate x "
        "batch_size / 256 (learning_rate_scaling linear) or x sqrt(batch_size) (sqrt)",
        group="training",
        rule=not_negative("0: give the step field instead"),
    )
    learning_rate_scaling: str = option(
        "linear",
        "how base_learning_rate scales with the batch size: linear (SimCLR's default, "
        "SimSiam's) or sqrt (SimCLR's choice below batch 4096)",
        LEARNING_RATE_SCALINGS,
        group="training",
    )

    @property
    def test_size(self) -> int:
        """Test images the probes need: the class probe's and the readout's."""
        return max(self.probe_size, self.readout_size)

    def image_source(self) -> image_data.ImageSource:
        """Where this config's examples come from."""
        return image_data.ImageSource(
            dataset=self.dataset,
            data_dir=self.data_dir,
            mock_data=self.mock_data,
            batch_size=self.batch_size,
            seed=self.seed,
            test_size=self.test_size,
            patches_per_photo=self.patches_per_photo,
            linear_eval_split=self.linear_eval_split,
        )

    def steps_per_epoch(self) -> int:
        """Full batches in the training split (at least 1)."""
        if self.dataset == "photos":
            examples = self.patches_per_photo * len(PHOTO_NAMES)
        else:
            examples = TRAIN_EXAMPLES.get(self.dataset, 0)
        return max(1, examples // max(1, self.batch_size))

    def resolved(self) -> ImageConfig:
        """This config with the fields the epoch fields and `base_learning_rate` set."""
        per_epoch = self.steps_per_epoch()
        rules = {
            "steps": ("epochs", self.epochs * per_epoch),
            "warmup_steps": ("warmup_epochs", self.warmup_epochs * per_epoch),
            "eval_every": ("eval_epochs", self.eval_epochs * per_epoch),
            "learning_rate": (
                "base_learning_rate",
                scaled_learning_rate(
                    self.base_learning_rate, self.batch_size, self.learning_rate_scaling
                ),
            ),
        }
        values = {}
        for name, (source, value) in rules.items():
            if getattr(self, source) <= 0:
                continue
            given = getattr(self, name)
            if given and not math.isclose(given, value, rel_tol=1e-9):
                raise ValueError(
                    f"`{name}` ({given}) contradicts `{source}` ({getattr(self, source)}), "
                    f"which sets it to {value:g} at batch_size {self.batch_size} ({per_epoch} "
                    f"steps per epoch): give one of the two, the other 0."
                )
            values[name] = value
        return dataclasses.replace(self, **values)

    def validate(self) -> None:
        """`RunConfig.validate` of `resolved()`, then its learning-rate scaling and linear
        evaluation."""
        RunConfig.validate(self.resolved())
        check_learning_rate_scaling(
            self.base_learning_rate, self.batch_size, self.learning_rate_scaling
        )
        self.validate_linear_evaluation(self.dataset, self.data_dir or None, self.mock_data)

    def check_inputs(self) -> None:
        """A tfds dataset prepared in `data_dir` (unless `mock_data`, not beside a `data_dir`)."""
        if self.dataset in TRAIN_EXAMPLES:  # tfds' datasets
            if self.mock_data and self.data_dir:
                raise ValueError(
                    f"--data-dir {self.data_dir} names your tfds data, but --mock-data (which "
                    "--smoke sets) trains on tfds' random mock examples: pass --mock-data "
                    "false to smoke-test on your data, or leave --data-dir out."
                )
            if not self.mock_data:
                require_prepared(self.dataset, self.data_dir or None)


def preset_readout_check(
    config: ImageConfig,
    encoder: Callable[[], keras.Model],
    augment: SimCLRAugment,
    canvas: int | None = None,
    decode: Callable[[dict], dict] | None = None,
) -> dict:
    """The preset's `readout_check` (within `image_data.data_source`), once per process."""
    check_config = dataclasses.replace(config, seed=CHECK_SEED)
    key = json.dumps(dataclasses.asdict(check_config), sort_keys=True, default=str)
    if key not in _RECORDS:
        views = centre_squares_and_views(
            augment, tf.constant([CHECK_SEED, CHECK_VIEWS_SEED], tf.int64), canvas
        )
        check_source = check_config.image_source()
        test = image_data.examples(check_source, "test")
        arrays, _, _ = stratified_arrays(test, config.test_size, [CHECK_SEED, 1], views)
        rows = slice(config.readout_size)
        params = {name: values[rows] for name, values in arrays["params"].items()}
        train = image_data.training_source(check_source)
        _RECORDS[key] = readout_check.readout_check(
            check_config, encoder, train, augment, arrays["view"][rows], params, canvas, decode
        )
    return copy.deepcopy(_RECORDS[key])


def readout_probes(
    config: ImageConfig,
    encoder: Callable[[], keras.Model],
    augment: SimCLRAugment,
    canvas: int | None = None,
    decode: Callable[[dict], dict] | None = None,
) -> tuple[type[ImageProbeEvaluator], dict, dict]:
    """The image probes' evaluator class, its extra keyword arguments and `run` entries."""
    if not config.readout_check_steps:
        return ImageProbeEvaluator, {}, {}
    record = preset_readout_check(config, encoder, augment, canvas, decode)
    if not record["kept"]:
        warnings.warn(
            f"The readout check ({config.readout_check_steps} steps) kept no target: "
            "augmentation_readout will be NaN (augmentation_readout_all_targets and each "
            "target's score stay). Expected of a smoke run's brief check; otherwise one "
            "view determines none of the targets, or `readout_check_steps` is too few.",
            stacklevel=2,
        )
    return DeterminableProbeEvaluator, {"kept": record["kept"]}, {"readout_determinable": record}


def build(config: ImageConfig) -> Experiment:
    """SimCLR views, the encoder and projector, the probes and the final linear evaluation."""
    # No XLA in a TPU host's input pipeline: its TensorFlow may lack XLA:CPU.
    augment = dataclasses.replace(
        AUGMENTATION_PRESETS[config.augmentation], jit_compile=config.strategy != "tpu"
    )
    size = augment.image_size
    canvas = round(size * CANVAS_PER_224 / 224) if config.dataset == "imagenet2012" else None
    readout_seed = tf.constant([config.seed, 123], tf.int64)
    test_prepare = centre_squares_and_views(augment, readout_seed, canvas)
    data_dir = config.data_dir or None
    source = config.image_source()
    with image_data.data_source(source):
        train_arrays, train_labels, train_pool = stratified_arrays(
            image_data.examples(source, "train"),
            config.probe_size,
            [config.seed, 0],
            centre_squares(size),
        )
        test = image_data.examples(source, "test")
        test_arrays, test_labels, test_pool = stratified_arrays(
            test,
            config.test_size,
            [config.seed, 1],
            test_prepare,
        )
        if len(test_labels) < config.test_size:
            warnings.warn(
                f"The {config.dataset} test split holds {len(test_labels)} images, fewer than "
                f"probe_size={config.probe_size} / readout_size={config.readout_size}: the "
                "probes use all of them.",
                stacklevel=2,
            )
        # The training images of tfds stay encoded until `pair_batches` has skipped and
        # shuffled them; JPEG files stay encoded until each view decodes its crop window.
        train = image_data.training_source(source)
        decode = (
            None if config.dataset == "photos" else tfds_image_decoder(config.dataset, data_dir)
        )
        jpeg = config.dataset != "photos" and jpeg_encoded(config.dataset, data_dir)
        train_pipeline = dict(
            canvas=None if jpeg else canvas,
            decode=None if jpeg else decode,
            view_dtype=config.view_dtype,
        )
        final = image_data.final_evaluators(config, source, size, decode)
        shape = (size, size, 3)
        encoders = {
            "small_cnn": lambda: small_cnn(shape, config.features),
            "resnet18_cifar": lambda: resnet18_cifar(shape, config.synchronized_batch_norm),
            "resnet50": lambda: resnet50(shape, config.synchronized_batch_norm),
        }
        kind, options, check = readout_probes(
            config, encoders[config.encoder], augment, canvas, decode
        )
    readout = slice(config.readout_size)
    probe_test = test_arrays["image"][: config.probe_size], test_labels[: config.probe_size]
    evaluator = kind(
        train_arrays["image"],
        train_labels,
        *probe_test,
        test_arrays["view"][readout],
        {name: values[readout] for name, values in test_arrays["params"].items()},
        # ImageNet's probes (10,000 images, 1,000 classes) want every core of an
        # accelerator host; on a few CPU cores one BLAS thread is much faster.
        blas_threads=None if config.dataset == "imagenet2012" else 1,
        **options,
    )
    counts = {
        "probe_train_class_counts": class_counts(train_labels, train_pool),
        "probe_test_class_counts": class_counts(probe_test[1], test_pool),
        "readout_class_counts": class_counts(test_labels[readout], test_pool),
    }
    final_scores = tuple(sorted(set().union(*(e.score_names(True) for e in final))))
    protocol = {"linear_evaluation": linear_evaluation_record(config, size)} if final else {}
    units = split_list(config.projector_units, strict_int)

    def worker_train_data(start: int, context: tf.distribute.InputContext) -> tf.data.Dataset:
        # Each worker reads its own shard (tfds: an even part of the split) in
        # per-replica batches, with its own augmentation stream.
        index, count = context.input_pipeline_id, context.num_input_pipelines
        shard = image_data.worker_shard(source, train, index, count)
        local_replicas = context.num_replicas_in_sync // context.num_input_pipelines
        return pair_batches(
            shard,
            augment,
            context.get_per_replica_batch_size(config.batch_size),
            seed=config.seed,
            start=start * local_replicas,
            stream=context.input_pipeline_id,
            **train_pipeline,
        )

    return Experiment(
        train_data=lambda start: pair_batches(
            train,
            augment,
            config.batch_size,
            seed=config.seed,
            start=start,
            **train_pipeline,
        ),
        worker_train_data=worker_train_data,
        encoder=encoders[config.encoder],
        projector=lambda: projection_head(
            units[:-1],
            units[-1],
            batch_norm=config.projector_batch_norm,
            synchronized_batch_norm=config.synchronized_batch_norm,
            kernel_initializer=(
                keras.initializers.RandomNormal(stddev=config.projector_kernel_stddev)
                if config.projector_kernel_stddev
                else "glorot_uniform"
            ),
        ),
        evaluators=[evaluator, *final],
        curve_keys=("backbone/class_accuracy", "backbone/augmentation_readout"),
        table_columns=SUMMARY + final_scores,
        primary_scores=SUMMARY + final_scores,
        metadata={
            "augmentation": dataclasses.asdict(augment),
            "training_views": "jpeg_crop_windows" if jpeg else "decoded_images",
            "readout_views": "decoded_images_on_canvas" if canvas else "decoded_images",
            **counts,
            **protocol,
            **check,
        },
        plots=plots.plot_lambda_hats,
    )


__all__ = [
    "DATASETS",
    "CANVAS_PER_224",
    "ENCODERS",
    "FROM_EPOCHS",
    "LEARNING_RATE_SCALINGS",
    "SGD_COSINE",
    "SMOKE",
    "SMOKE_FULL",
    "ImageConfig",
    "SUMMARY",
    "TRAIN_EXAMPLES",
    "build",
    "preset_readout_check",
    "readout_probes",
    "scaled_learning_rate",
]
