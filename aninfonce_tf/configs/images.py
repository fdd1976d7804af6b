"""The real-image experiment shared by the photos, CIFAR10 and ImageNet recipes:
SimCLR views that return their parameters, an encoder with a projection head and
Lambda_hat on the projector output, and frozen-feature probes (class accuracy,
kNN, augmentation readout: `evaluation.probes` defines each score) at the backbone
and at the projector.

The probes' images are drawn stratified by class in a seeded random order, from the
first `PROBE_POOL` times as many examples of a split as they need (all of the
photos, of CIFAR10 and of ImageNet's validation split): the class probes fit on
`probe_size` training images and are scored on `probe_size` test images, the
readout takes views of `readout_size` test images. `results.json` holds each set's
images per class (`probe_train_class_counts`, `probe_test_class_counts`,
`readout_class_counts`). ImageNet's class probes on 10,000 images see 10 per class
(the validation images exactly, the training images about).

Each recipe's config module holds its `PRESETS` and `SMOKE` over `ImageConfig`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings

import numpy as np
import tensorflow as tf

from aninfonce_tf.config import RunConfig, option, split_list
from aninfonce_tf.data.augment import PRESETS as AUGMENTATIONS
from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.datasets import PHOTO_NAMES, pair_batches, photo_patches, tfds_images
from aninfonce_tf.encoders import resnet18_cifar, resnet50, small_cnn
from aninfonce_tf.evaluation.probes import ImageProbeEvaluator, stratified_order
from aninfonce_tf.experiment import Experiment
from aninfonce_tf.layers import projection_head

DATASETS = ("photos", "cifar10", "imagenet2012")
ENCODERS = ("small_cnn", "resnet18_cifar", "resnet50")
# The table's columns: the summaries; per-parameter readouts are in results.json.
SUMMARY = tuple(
    f"{level}/{score}"
    for level in ("backbone", "projector")
    for score in ImageProbeEvaluator.SCORES
)
# The probe sets are drawn from the first PROBE_POOL times as many examples of a split
# as they need: tfds writes a split's examples in a random order, so that this part
# of ImageNet's training split holds its classes in proportion.
PROBE_POOL = 5


# The optimisation and probe sizes of the CIFAR10 preset (SimSiam's), and the sizes
# of every image recipe's --smoke.
SGD_COSINE = dict(
    optimizer="sgd",
    momentum=0.9,
    learning_rate_schedule="cosine",
    projector_units="2048,128",
    probe_size=10_000,
    readout_size=10_000,
)
SMOKE = dict(
    encoder="small_cnn",
    features=32,
    projector_units="32,16",
    steps=20,
    eval_every=10,
    batch_size=32,
    probe_size=64,
    readout_size=64,
)


@dataclasses.dataclass
class ImageConfig(RunConfig):
    """Every hyperparameter of the real-image experiment (see `RunConfig` for the
    shared ones)."""

    dataset: str = option("photos", "images to learn from", DATASETS)
    data_dir: str = option("", "tfds data directory (cifar10, imagenet2012)")
    augmentation: str = option("simclr_cifar10", "view preset", tuple(AUGMENTATIONS))
    encoder: str = option("small_cnn", "backbone", ENCODERS)
    synchronized_batch_norm: bool = option(
        False, "batch norm statistics over all replicas (ResNets, projector)"
    )
    features: int = option(256, "backbone features (small_cnn)")
    projector_units: str = option("512,128", "projection head widths, the last its output")
    projector_batch_norm: bool = option(
        False, "batch norm after each projector layer, as SimCLR's ImageNet head"
    )
    patches_per_photo: int = option(400, "training patches cut from each photo (photos)")
    probe_size: int = option(2000, "images the class probes fit on (and as many scored)")
    readout_size: int = option(2000, "augmented views the readout probes use")
    mock_data: bool = option(False, "random tfds examples instead of the dataset (--smoke)")

    @property
    def test_size(self) -> int:
        """Test images the probes need: the class probe's and the readout's."""
        return max(self.probe_size, self.readout_size)


@contextlib.contextmanager
def _data_source(config: ImageConfig):
    if config.mock_data:
        import tensorflow_datasets as tfds

        with tfds.testing.mock_data(num_examples=max(64, config.batch_size)):
            yield
    else:
        yield


def _examples(config: ImageConfig, split: str) -> tf.data.Dataset:
    if config.dataset == "photos":
        test_per_photo = config.test_size // len(PHOTO_NAMES) + 1
        per_photo = config.patches_per_photo if split == "train" else test_per_photo
        images, labels = photo_patches(per_photo, 48, split, seed=config.seed)
        return tf.data.Dataset.from_tensor_slices({"image": images, "label": labels})
    tfds_split = {"train": "train", "test": "test" if config.dataset == "cifar10" else "validation"}
    return tfds_images(config.dataset, tfds_split[split], config.data_dir or None)


def _stratified_arrays(dataset: tf.data.Dataset, count: int, sizes, seed):
    """`count` examples of the first `PROBE_POOL * count` of `dataset` in the order
    of `stratified_order` (each prefix holds the classes in proportion), each resized
    to every side in `sizes` (a centre square first): two passes, the first over the
    labels alone.

    Returns:
        `{size: [n, size, size, 3] float32 images in [0, 1]}`, their `[n]` labels and
        the pool's labels.
    """
    pool = dataset.take(PROBE_POOL * count)
    pool_labels = np.concatenate(
        [labels.numpy() for labels in pool.map(lambda example: example["label"]).batch(4096)]
    )
    drawn = stratified_order(pool_labels, seed)[:count]
    wanted = np.zeros(len(pool_labels), bool)
    wanted[drawn] = True

    def squares(example):
        image = tf.cast(example["image"], tf.float32) / 255.0
        shorter = tf.reduce_min(tf.shape(image)[:2])
        image = tf.image.resize_with_crop_or_pad(image, shorter, shorter)
        resized = [tf.image.resize(image, [side, side], antialias=True) for side in sizes]
        return example["label"], tuple(resized)

    kept = pool.enumerate().filter(lambda index, _: tf.gather(wanted, index))
    # The k-th example kept (in the pool's order) is the destination[k]-th drawn.
    destination = np.argsort(drawn)
    images = {side: np.empty((len(drawn), side, side, 3), "float32") for side in sizes}
    labels = np.empty(len(drawn), pool_labels.dtype)
    start = 0
    for batch_labels, resized in kept.map(lambda _, example: squares(example)).batch(256):
        rows = destination[start : start + len(batch_labels)]
        labels[rows] = batch_labels.numpy()
        for side, batch in zip(sizes, resized, strict=True):
            images[side][rows] = batch.numpy()
        start += len(rows)
    return images, labels, pool_labels


def _class_counts(labels, pool_labels) -> dict[int, int]:
    """Examples of each class of the pool among `labels` (0 for the classes left out)."""
    return {int(label): int(np.sum(labels == label)) for label in np.unique(pool_labels)}


def build(config: ImageConfig) -> Experiment:
    """Pairs of SimCLR views, the encoder and projector, and the probes."""
    augment: SimCLRAugment = AUGMENTATIONS[config.augmentation]
    size = augment.image_size
    crop_to = int(size * 256 / 224) if config.dataset == "imagenet2012" else None
    with _data_source(config):
        train = _examples(config, "train")
        test = _examples(config, "test")
        train_images, train_labels, train_pool = _stratified_arrays(
            train, config.probe_size, [size], [config.seed, 0]
        )
        # The readout's views crop the larger image (ImageNet).
        sides = sorted({size, crop_to or size})
        test_images, test_labels, test_pool = _stratified_arrays(
            test, config.test_size, sides, [config.seed, 1]
        )
        if len(test_labels) < config.test_size:
            warnings.warn(
                f"The {config.dataset} test split holds {len(test_labels)} images, fewer than "
                f"probe_size={config.probe_size} / readout_size={config.readout_size}: the "
                "probes use all of them.",
                stacklevel=2,
            )
        probe_test = test_images[size][: config.probe_size], test_labels[: config.probe_size]
        readout_images = test_images[crop_to or size][: config.readout_size]
        views, params = augment(readout_images, seed=[config.seed, 123])
        if config.mock_data:  # materialise while the mock is active
            train = train.take(max(64, config.batch_size)).cache()
            list(train)
    evaluator = ImageProbeEvaluator(
        train_images[size],
        train_labels,
        *probe_test,
        views.numpy(),
        {k: v.numpy() for k, v in params.items()},
        # ImageNet's probes (10,000 images, 1,000 classes) want every core of an
        # accelerator host; on a few CPU cores one BLAS thread is much faster.
        blas_threads=None if config.dataset == "imagenet2012" else 1,
    )
    class_counts = {
        "probe_train_class_counts": _class_counts(train_labels, train_pool),
        "probe_test_class_counts": _class_counts(probe_test[1], test_pool),
        "readout_class_counts": _class_counts(test_labels[: config.readout_size], test_pool),
    }
    units = split_list(config.projector_units, int)
    shape = (size, size, 3)
    encoders = {
        "small_cnn": lambda: small_cnn(shape, config.features),
        "resnet18_cifar": lambda: resnet18_cifar(shape, config.synchronized_batch_norm),
        "resnet50": lambda: resnet50(shape, config.synchronized_batch_norm),
    }

    def worker_train_data(start: int, context: tf.distribute.InputContext) -> tf.data.Dataset:
        # Each worker reads its own shard (tfds: an even part of the split) in
        # per-replica batches, with its own augmentation stream.
        index, count = context.input_pipeline_id, context.num_input_pipelines
        if config.dataset == "photos" or config.mock_data:
            shard = train.shard(count, index)
        else:
            shard = tfds_images(config.dataset, "train", config.data_dir or None, (index, count))
        local_replicas = context.num_replicas_in_sync // context.num_input_pipelines
        return pair_batches(
            shard,
            augment,
            context.get_per_replica_batch_size(config.batch_size),
            seed=config.seed,
            crop_to=crop_to,
            start=start * local_replicas,
            stream=context.input_pipeline_id,
        )

    return Experiment(
        train_data=lambda start: pair_batches(
            train, augment, config.batch_size, seed=config.seed, crop_to=crop_to, start=start
        ),
        worker_train_data=worker_train_data,
        encoder=encoders[config.encoder],
        projector=lambda: projection_head(
            units[:-1],
            units[-1],
            batch_norm=config.projector_batch_norm,
            synchronized_batch_norm=config.synchronized_batch_norm,
        ),
        evaluators=[evaluator],
        curve_keys=("backbone/class_accuracy", "backbone/augmentation_readout"),
        table_columns=SUMMARY,
        metadata={"augmentation": dataclasses.asdict(augment), **class_counts},
    )


__all__ = [
    "DATASETS",
    "ENCODERS",
    "PROBE_POOL",
    "SGD_COSINE",
    "SMOKE",
    "ImageConfig",
    "SUMMARY",
    "build",
]
