"""Positive pairs/s of the synthetic sampler (latents only, and full tf.data batches).

    python benchmarks/sampler.py                # Box-Muller normals (the library's)
    python benchmarks/sampler.py --philox       # tf.random.stateless_normal instead

Rates are "median / best" over `--repeats` timed calls: on a shared machine the best
call is the least disturbed one.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import tensorflow as tf

from aninfonce_tf.data import latent_distributions, synthetic


def rates(function, pairs: int, repeats: int) -> tuple[float, float]:
    function(0)
    seconds = []
    for i in range(1, repeats + 1):
        start = time.perf_counter()
        function(i)
        seconds.append(time.perf_counter() - start)
    return pairs / float(np.median(seconds)), pairs / min(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch-sizes", default="1000,100000")
    parser.add_argument(
        "--philox", action="store_true", help="draw normals with tf.random.stateless_normal"
    )
    args = parser.parse_args()
    if args.philox:
        latent_distributions.standard_normal = lambda shape, seed: tf.random.stateless_normal(
            shape, seed
        )
    print(
        f"{'Lambda':>10} {'conditional':>17} {'batch':>7} {'latent pairs/s':>21} {'tf.data pairs/s':>21}"
    )
    for preset in ("linear", "two_valued"):
        for conditional in ("projected_normal", "vmf"):
            setup = synthetic.SyntheticSetup(
                synthetic.concentration_preset(preset),
                conditional=conditional,
                generator_draws=100,
            )
            for batch in (int(b) for b in args.batch_sizes.split(",")):
                sample = tf.function(setup.sample_latent_pairs).get_concrete_function(
                    batch, tf.TensorSpec([2], tf.int64)
                )
                latent = rates(
                    lambda i, sample=sample: sample(tf.constant([0, i], tf.int64)),
                    batch,
                    args.repeats,
                )
                steps = max(2, 200_000 // batch)
                iterator = iter(setup.dataset(batch, seed=0).repeat())

                def pull(_, iterator=iterator, steps=steps):
                    for _ in range(steps):
                        next(iterator)

                data = rates(pull, steps * batch, repeats=max(3, args.repeats // 2))
                print(
                    f"{preset:>10} {conditional:>17} {batch:>7} "
                    f"{latent[0]:>10,.0f} /{latent[1]:>9,.0f} {data[0]:>10,.0f} /{data[1]:>9,.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
