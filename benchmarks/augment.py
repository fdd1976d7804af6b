"""Images/s of the SimCLR pipeline that returns its parameters against a pipeline of
stock Keras 3 preprocessing layers that returns none, at 32x32 and at 224x224 with
Gaussian blur, batched.

    python benchmarks/augment.py
    python benchmarks/augment.py --sizes 224 --repeats 7

Both pipelines draw two views per image from the same uint8 images (random crops of
scikit-learn's sample photos: 40x40 for the 32 px views, 256x256 for the 224 px ones)
inside `Dataset.map` with AUTOTUNE parallelism. Ours is the `simclr_cifar10` /
`simclr_imagenet` preset: antialiased random resized crop, flip, colour jitter in a
random order per image, grayscale and, at 224 px, blur with probability 0.5 (kernel
23). The Keras one is RandomCrop (no resized crop exists in Keras core), RandomFlip,
RandomColorJitter, RandomGrayscale and, at 224 px, RandomGaussianBlur (probability
0.5, kernel 23, one sigma per batch), at the same jitter strengths. Passes over
`batches` batches alternate between the two pipelines; the script prints the median
images/s of each over `--repeats` passes and their ratio, as Markdown rows.

    python benchmarks/augment.py --compare paths --sizes 224
    taskset -c 0 python benchmarks/augment.py --compare paths --sizes 224  # one core

`--compare paths` times instead the two ways from a JPEG file to the training pair of
`datasets.pair_batches` (the epoch's shuffle, both views, uint8 views, as ImageNet's
preset): the whole file decoded and put on a canvas of 512 pixels per 224 of view
(ImageNet's probe views, and its training views before the JPEG path), against the
JPEG path, which decodes only each view's crop window. The files: 64 ImageNet-like
375 x 500 crops of scikit-learn's two photos at JPEG quality 90. Images/s counts
source images, two views each.

    taskset -c 0 python benchmarks/augment.py --compare xla --sizes 224

`--compare xla` times the JPEG path with the pixel ops after the crop XLA-compiled (as
on GPU hosts) against the same ops without XLA (as on TPU hosts, `jit_compile=False`:
TPU VMs' TensorFlow builds may lack XLA:CPU), from the same files.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import keras
import numpy as np
import tensorflow as tf
from sklearn.datasets import load_sample_images

from aninfonce_tf.configs.images import CANVAS_PER_224
from aninfonce_tf.data.augment import SimCLRAugment, augment_pairs
from aninfonce_tf.data.datasets import pair_batches


@dataclasses.dataclass(frozen=True)
class Row:
    preset: str
    source: int  # side of the source images
    batch_size: int
    batches: int  # per pass


ROWS = {
    32: Row("simclr_cifar10", source=40, batch_size=256, batches=60),
    224: Row("simclr_imagenet", source=256, batch_size=32, batches=16),
}


def images(count: int, side: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    photos = load_sample_images().images
    patches = []
    for _ in range(count):
        photo = photos[rng.integers(len(photos))]
        y = rng.integers(0, photo.shape[0] - side)
        x = rng.integers(0, photo.shape[1] - side)
        patches.append(photo[y : y + side, x : x + side])
    return np.stack(patches)


def jpeg_files(count: int, shape: tuple[int, int] = (375, 500)) -> np.ndarray:
    """`count` JPEG files (quality 90) of random `shape` crops of the sample photos."""
    rng = np.random.default_rng(0)
    photos = load_sample_images().images
    files = []
    for _ in range(count):
        photo = photos[rng.integers(len(photos))]
        y = rng.integers(0, photo.shape[0] - shape[0] + 1)
        x = rng.integers(0, photo.shape[1] - shape[1] + 1)
        crop = photo[y : y + shape[0], x : x + shape[1]]
        files.append(tf.io.encode_jpeg(crop, quality=90).numpy())
    return np.array(files, object)


def _examples() -> dict[str, np.ndarray]:
    files = jpeg_files(64)
    return {"image": files, "label": np.arange(len(files))}


def path_pipelines(row: Row) -> dict[str, tf.data.Dataset]:
    """The canvas path and the JPEG path of `pair_batches` from the same files."""
    augment = SimCLRAugment.preset(row.preset)
    examples = _examples()
    canvas = round(augment.image_size * CANVAS_PER_224 / 224)

    def decode(example):
        return {**example, "image": tf.io.decode_jpeg(example["image"], channels=3)}

    common = dict(batch_size=row.batch_size, view_dtype="uint8")
    return {
        f"whole file decoded, on a {canvas} px canvas": pair_batches(
            examples, augment, canvas=canvas, decode=decode, **common
        ),
        "JPEG path: each view's crop window decoded": pair_batches(examples, augment, **common),
    }


def xla_pipelines(row: Row) -> dict[str, tf.data.Dataset]:
    """The JPEG path of `pair_batches` with and without XLA, from the same files."""
    augment = SimCLRAugment.preset(row.preset)
    examples = _examples()
    return {
        f"JPEG path, {name}": pair_batches(
            examples,
            dataclasses.replace(augment, jit_compile=jit_compile),
            batch_size=row.batch_size,
            view_dtype="uint8",
        )
        for name, jit_compile in (("XLA (GPU hosts)", True), ("no XLA (TPU hosts)", False))
    }


def keras_pipeline(dataset: tf.data.Dataset, augment: SimCLRAugment) -> tf.data.Dataset:
    size = augment.image_size
    blur = (
        [
            keras.layers.RandomGaussianBlur(
                factor=(augment.blur_probability, augment.blur_probability),
                kernel_size=augment.blur_kernel_size,
                sigma=augment.blur_sigma,
                value_range=(0, 1),
            )
        ]
        if augment.blur_probability
        else []
    )
    layers = keras.Sequential(
        [
            keras.layers.Rescaling(1 / 255),
            keras.layers.RandomCrop(size, size),
            keras.layers.RandomFlip("horizontal"),
            keras.layers.RandomColorJitter(
                value_range=(0, 1),
                brightness_factor=augment.brightness,
                contrast_factor=augment.contrast,
                saturation_factor=augment.saturation,
                hue_factor=augment.hue,
            ),
            keras.layers.RandomGrayscale(augment.grayscale_probability),
            *blur,
        ]
    )
    return dataset.map(
        lambda batch: {
            "view1": layers(batch, training=True),
            "view2": layers(batch, training=True),
        },
        num_parallel_calls=tf.data.AUTOTUNE,
    )


def seconds(dataset: tf.data.Dataset, batches: int) -> float:
    start = time.perf_counter()
    for _ in dataset.take(batches).prefetch(tf.data.AUTOTUNE):
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="32,224", help="view sides, of " + str(list(ROWS)))
    parser.add_argument("--repeats", type=int, default=5, help="passes per pipeline")
    parser.add_argument(
        "--compare",
        default="keras",
        choices=("keras", "paths", "xla"),
        help="keras: ours against stock Keras layers; paths: the canvas path against the JPEG "
        "path; xla: the JPEG path with XLA against without",
    )
    args = parser.parse_args()
    print("| views | pipeline | images/s (median) | ratio |\n|---|---|---|---|")
    for size in (int(size) for size in args.sizes.split(",")):
        row = ROWS[size]
        augment = SimCLRAugment.preset(row.preset)
        if args.compare == "paths":
            pipelines = path_pipelines(row)
        elif args.compare == "xla":
            pipelines = xla_pipelines(row)
        else:
            data = (
                tf.data.Dataset.from_tensor_slices(images(16 * row.batch_size, row.source))
                .repeat()
                .batch(row.batch_size, drop_remainder=True)
            )
            pipelines = {
                f"`{row.preset}`, with parameters": augment_pairs(data, augment),
                "stock Keras layers, no parameters": keras_pipeline(data, augment),
            }
        for dataset in pipelines.values():  # compile and warm up
            seconds(dataset, 2)
        times = {name: [] for name in pipelines}
        for _ in range(args.repeats):
            for name, dataset in pipelines.items():
                times[name].append(seconds(dataset, row.batches))
        rates = {
            name: row.batches * row.batch_size / float(np.median(taken))
            for name, taken in times.items()
        }
        first = next(iter(rates.values()))
        baseline = list(rates.values())[1] if args.compare == "keras" else first
        for name, rate in rates.items():
            print(f"| {size} px | {name} | {rate:,.0f} | {rate / baseline:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
