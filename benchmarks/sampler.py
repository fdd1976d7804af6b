"""Positive pairs/s of the synthetic sampler (latents only, and full tf.data batches).

python benchmarks/sampler.py
"""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf

from aninfonce_tf.data.synthetic import SyntheticSetup, concentration_preset


def median_rate(function, pairs: int, repeats: int = 5) -> float:
    function(0)
    rates = []
    for i in range(1, repeats + 1):
        start = time.perf_counter()
        function(i)
        rates.append(pairs / (time.perf_counter() - start))
    return float(np.median(rates))


def main() -> None:
    print(
        f"{'Lambda':>10} {'conditional':>17} {'batch':>7} {'latent pairs/s':>15} {'tf.data pairs/s':>16}"
    )
    for preset in ("linear", "two_valued"):
        for conditional in ("projected_normal", "vmf"):
            setup = SyntheticSetup(
                concentration_preset(preset), conditional=conditional, generator_draws=100
            )
            for batch in (1000, 100_000):
                sample = tf.function(setup.sample_latent_pairs).get_concrete_function(
                    batch, tf.TensorSpec([2], tf.int64)
                )
                latent_rate = median_rate(
                    lambda i, sample=sample: sample(tf.constant([0, i], tf.int64)), batch
                )
                steps = max(2, 200_000 // batch)
                iterator = iter(setup.dataset(batch, seed=0).repeat())

                def pull(_, iterator=iterator, steps=steps):
                    for _ in range(steps):
                        next(iterator)

                data_rate = median_rate(pull, steps * batch, repeats=3)
                print(
                    f"{preset:>10} {conditional:>17} {batch:>7} {latent_rate:>15,.0f} {data_rate:>16,.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
