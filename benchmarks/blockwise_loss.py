"""Forward + backward time and peak memory of the InfoNCE loss, dense against
blockwise (`block_size`), next to a plain matmul of the logits' size.

    python benchmarks/blockwise_loss.py                       # the grid below
    python benchmarks/blockwise_loss.py --batch-sizes 1024 --dims 128 --block-size 512

Each row runs in its own process, so that its peak resident memory (`ru_maxrss`)
is its own; the process's baseline (TensorFlow loaded, inputs built) is
subtracted. Times are the median of `--repeats` XLA-compiled calls. The matmul
row is one `[2B, d] x [d, 2B]` product: the loss's forward pass needs one and its
backward two more, so ~3x that time is the loss's floor.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

GRID = [(1024, 128), (1024, 2048), (4096, 128), (4096, 2048), (16384, 128), (16384, 2048)]


def measure(kind: str, batch: int, dim: int, block_size: int, repeats: int) -> dict:
    """Runs in a child process: seconds per call and peak memory above baseline."""
    import numpy as np
    import tensorflow as tf

    from aninfonce_tf import functional

    rng = np.random.default_rng(0)
    z1 = tf.constant(rng.normal(size=(batch, dim)).astype("float32"))
    z2 = tf.constant(rng.normal(size=(batch, dim)).astype("float32"))
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    if kind == "matmul":
        rows = tf.concat([z1, z2], 0)

        @tf.function(jit_compile=True)
        def call(z1, z2):
            return tf.reduce_sum(tf.matmul(rows, rows, transpose_b=True))

    else:

        @tf.function(jit_compile=True)
        def call(z1, z2):
            with tf.GradientTape() as tape:
                tape.watch([z1, z2])
                options = {"block_size": block_size} if kind == "blockwise" else {}
                loss = tf.reduce_mean(functional.info_nce(z1, z2, similarity="cosine", **options))
            return tape.gradient(loss, [z1, z2])

    tf.nest.map_structure(lambda t: t.numpy(), call(z1, z2))  # compile
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        tf.nest.map_structure(lambda t: t.numpy(), call(z1, z2))
        seconds.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": float(np.median(seconds)), "peak_mib": (peak - baseline) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="")
    parser.add_argument("--dims", default="")
    parser.add_argument("--block-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", default="matmul,dense,blockwise")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, batch, dim = args.child.split(",")
        print(json.dumps(measure(kind, int(batch), int(dim), args.block_size, args.repeats)))
        return
    grid = GRID
    if args.batch_sizes or args.dims:
        grid = [
            (int(b), int(d))
            for b in (args.batch_sizes or "1024").split(",")
            for d in (args.dims or "128").split(",")
        ]
    print(f"{'B':>6} {'d':>5} {'kind':>10} {'seconds':>9} {'peak MiB':>9}")
    for batch, dim in grid:
        for kind in args.kinds.split(","):
            child = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    f"{kind},{batch},{dim}",
                    "--block-size",
                    str(args.block_size),
                    "--repeats",
                    str(args.repeats),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if child.returncode:
                print(f"{batch:>6} {dim:>5} {kind:>10}   failed: {child.stderr.strip()[-200:]}")
                continue
            row = json.loads(child.stdout.strip().splitlines()[-1])
            print(
                f"{batch:>6} {dim:>5} {kind:>10} {row['seconds']:>9.3f} {row['peak_mib']:>9.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
