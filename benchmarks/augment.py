"""Images/s of the SimCLR pipeline that returns its parameters against a pipeline of
stock Keras 3 preprocessing layers that returns none, both at 32x32, batched.

    python benchmarks/augment.py
    python benchmarks/augment.py --batch-size 512 --batches 100

Both pipelines draw two views per image from the same uint8 images (random 40x40
crops of scikit-learn's sample photos) inside `Dataset.map` with AUTOTUNE
parallelism; the Keras one is RandomCrop (no resized crop exists in Keras core),
RandomFlip, RandomColorJitter and RandomGrayscale. Prints the median of `--repeats`
passes over `--batches` batches.
"""

from __future__ import annotations

import argparse
import time

import keras
import numpy as np
import tensorflow as tf
from sklearn.datasets import load_sample_images

from aninfonce_tf.data.augment import SimCLRAugment, augment_pairs


def images(count: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    photos = load_sample_images().images
    patches = []
    for _ in range(count):
        photo = photos[rng.integers(len(photos))]
        y, x = rng.integers(0, photo.shape[0] - 40), rng.integers(0, photo.shape[1] - 40)
        patches.append(photo[y : y + 40, x : x + 40])
    return np.stack(patches)


def keras_pipeline(dataset: tf.data.Dataset) -> tf.data.Dataset:
    layers = keras.Sequential(
        [
            keras.layers.Rescaling(1 / 255),
            keras.layers.RandomCrop(32, 32),
            keras.layers.RandomFlip("horizontal"),
            keras.layers.RandomColorJitter(
                value_range=(0, 1),
                brightness_factor=0.4,
                contrast_factor=0.4,
                saturation_factor=0.4,
                hue_factor=0.1,
            ),
            keras.layers.RandomGrayscale(0.2),
        ]
    )
    return dataset.map(
        lambda batch: {
            "view1": layers(batch, training=True),
            "view2": layers(batch, training=True),
        },
        num_parallel_calls=tf.data.AUTOTUNE,
    )


def rate(dataset: tf.data.Dataset, batches: int, batch_size: int, repeats: int) -> float:
    for _ in dataset.take(2):
        pass
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in dataset.take(batches).prefetch(tf.data.AUTOTUNE):
            pass
        seconds.append(time.perf_counter() - start)
    return batches * batch_size / float(np.median(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = (
        tf.data.Dataset.from_tensor_slices(images(4096))
        .repeat()
        .batch(args.batch_size, drop_remainder=True)
    )
    ours = augment_pairs(data, SimCLRAugment.preset("simclr_cifar10"))
    theirs = keras_pipeline(data)
    for name, dataset in (("with parameters (ours)", ours), ("stock Keras layers", theirs)):
        images_per_second = rate(dataset, args.batches, args.batch_size, args.repeats)
        print(f"{name:>24}: {images_per_second:,.0f} images/s (two views each)", flush=True)


if __name__ == "__main__":
    main()
