"""Each image experiment's training step against this CPU's matmul rate: the rendered,
VAE and photos presets' steps on a fixed batch and through their `tf.data` pipelines,
their FLOPs counted from the traced step, and the fraction of the matmul rate measured
in the same run that they reach.

    python benchmarks/image_steps.py
    python benchmarks/image_steps.py --experiments rendered --steps 10 --repeats 9

Per experiment (`EXPERIMENTS`: the recipe's main preset, AnInfoNCE, the preset's batch
size, model and compiled step): the FLOPs of one training step (forward, backward and
the optimizer's update) are counted by TensorFlow's graph profiler over the step's
traced graph, split into the dense part (convolutions and matmuls, forward and both
backward ops) and the rest (normalisation, activations, the loss's elementwise ops,
the optimizer); a VAE batch also costs its frozen decoder's forward pass inside the
pipeline, counted apart. The step then runs in windows of `--steps` calls
(`model.train_function`, the preset's `steps_per_execution` steps a call) on one batch
repeated from memory and on the preset's pipeline, taking turns with a [2000, 500] x
[500, 500] fp32 matmul (graph mode), so that the three share the machine's load. The
table gives each step's median steps/s, the GFLOP/s its FLOPs make at that rate, that
rate over the matmul's median GFLOP/s, and tf.data / fixed.

What bounds the pipeline: after the windows, `--steps` more fixed-batch calls and
`ALONE` batches of the pipeline read alone (no training) are timed in wall and in CPU
seconds of this process (all its threads). A step through `tf.data` needs both CPU
costs, so on this machine's cores it runs at about cores / (step CPU + batch CPU)
steps/s at most: the "sharing bound", an estimate (CPU seconds measured alone include
threads' spinning and may shrink when shared), beside the measured tf.data rate.

`--profile DIR` also profiles `--steps` fixed-batch steps per experiment with
TensorFlow's profiler (the trace stays in DIR) and prints where their op time goes
(`PARTS`): the ops' summed durations on TensorFlow's compute threads, per part, and
each part's share (ops that run at once on different threads are all counted, so the
shares, not the sums, are what compares), beside the dense ops' share of the FLOPs.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import itertools
import os
import re
import time
from pathlib import Path

import numpy as np
import tensorflow as tf
from rendered import step_rates  # this directory's benchmarks
from tensorflow.python.framework import ops as framework_ops
from tensorflow.tsl.profiler.protobuf import xplane_pb2
from train_step import matmul_gflops

from aninfonce_tf.configs import mnist_vae, photos, rendered
from aninfonce_tf.data.options import without_autotune
from aninfonce_tf.runner import build_model

# Per experiment: its config module, its main preset, and the fields that make the
# evaluation sets (not timed) as small as the config accepts.
EXPERIMENTS = {
    "rendered": (rendered, "large-objects", dict(eval_size=100, readout_size=16)),
    "vae": (mnist_vae, "digits", dict(eval_size=256)),
    "photos": (photos, "photos", dict(probe_size=90, readout_size=16, readout_check_steps=0)),
}
# Op types whose FLOPs are dense multiply-adds: what the matmul rate bounds.
DENSE_OPS = (
    "Conv2D",
    "Conv2DBackpropInput",
    "Conv2DBackpropFilter",
    "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter",
    "MatMul",
    "BatchMatMulV2",
    "BatchMatMulV3",
)
MATMUL = dict(rows=2000, width=500)
# At least the batches a pipeline holds ready (its parallel map's and its prefetch's):
# read untimed before each timing, so no window counts batches made before it.
AHEAD = 8
# Batches of a pipeline read alone, timed for its CPU cost.
ALONE = 60
# The kinds of a step's op time, each op in the first whose name matches; names are
# TensorFlow's op types (graph steps) or XLA's thunk names (compiled steps).
KINDS = {
    "convolutions and matmuls": re.compile(r"conv|dot|matmul", re.I),
    "layout (transposes, copies)": re.compile(r"transpose|copy", re.I),
    "reductions (norm statistics, pooling, sums)": re.compile(r"reduce|batchnorm|mean|sum", re.I),
    "other (elementwise, optimizer)": re.compile(""),
}
# Profiler events that time a whole step or an executor's bookkeeping, not an op.
BOOKKEEPING = re.compile(r"::|^BlockUntilReady$|^MemoryAllocation$|^MemoryDeallocation$")


def graph_flops(graph: tf.Graph) -> collections.Counter:
    """FLOPs per op type of `graph` and of the functions it calls (each call counted
    once per call site), as TensorFlow's op statistics register them; ops without
    registered statistics count 0."""
    flops = collections.Counter()
    for op in graph.get_operations():
        try:
            stats = framework_ops.get_stats_for_node_def(graph, op.node_def, "flops")
        except (ValueError, KeyError, TypeError):
            stats = None
        if stats is not None and stats.value:
            flops[op.type] += stats.value
        for attr in ("f", "then_branch", "else_branch", "body"):
            if attr in op.node_def.attr and op.node_def.attr[attr].func.name:
                function = graph._get_function(op.node_def.attr[attr].func.name)
                if function is not None:
                    flops.update(graph_flops(function.graph))
    return flops


def step_flops(model, batch) -> collections.Counter:
    """FLOPs per op type of one training step of `model` on `batch`."""
    specs = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), batch)
    step = tf.function(model.train_step)
    return graph_flops(step.get_concrete_function(specs).graph)


def dense_and_other(flops: collections.Counter) -> tuple[float, float]:
    """(dense, other) FLOPs of `flops` (`DENSE_OPS`)."""
    dense = sum(value for op, value in flops.items() if op in DENSE_OPS)
    return float(dense), float(sum(flops.values()) - dense)


def setup(name: str, jit_compile: bool | None = None):
    """`(config, model, pipeline, fixed, batch, decoder_flops)` for experiment `name`,
    its step compiled by XLA or not as its preset says, or as `jit_compile` says."""
    module, preset, small = EXPERIMENTS[name]
    config = dataclasses.replace(module.PRESETS[preset], **small)
    if jit_compile is not None:
        config = dataclasses.replace(config, jit_compile=jit_compile)
    experiment = module.build(config)
    pipeline = experiment.train_data(0)
    batch = next(iter(pipeline))
    fixed = without_autotune(tf.data.Dataset.from_tensors(batch).repeat())
    model = build_model(config, experiment, "aninfonce")
    decoder_flops = 0.0
    if name == "vae":
        decoder, _ = mnist_vae.trained_decoder(
            config.dim, config.vae_source, config.vae_steps, config.vae_beta, config.seed
        )
        images = 2 * config.batch_size
        forward = tf.function(lambda z: decoder(z, training=False))
        spec = tf.TensorSpec([images, config.dim], tf.float32)
        decoder_flops = float(sum(graph_flops(forward.get_concrete_function(spec).graph).values()))
    return config, model, pipeline, fixed, batch, decoder_flops


def matmul_rate(calls: int) -> float:
    """Median GFLOP/s of `MATMUL` over three windows of `calls` calls."""
    return matmul_gflops("float32", False, repeats=3, calls=calls, **MATMUL)[0]


def rates(
    model, datasets: dict, steps: int, repeats: int, calls: int, per_call: int
) -> dict[str, list[float]]:
    """`rendered.step_rates` of `model` (`per_call` steps a call: the preset's
    `steps_per_execution`) on `datasets`, each window after the `AHEAD` batches a
    pipeline made while waiting, and under `"matmul"` the matmul's GFLOP/s measured
    after each round, taking its turn."""
    matmul = []
    measured = step_rates(
        model,
        datasets,
        steps,
        repeats,
        per_call,
        lambda: matmul.append(matmul_rate(calls)),
        untimed=-(-AHEAD // per_call),
    )
    return {**measured, "matmul": matmul}


def wall_and_cpu(function, calls: int) -> tuple[float, float]:
    """(wall, CPU) seconds a call of `function` over `calls` calls after one untimed
    call; CPU is this process's time on all its threads."""
    function()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        function()
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def step_and_batch_costs(model, fixed, pipeline, calls: int, per_call: int):
    """`wall_and_cpu` of one step of `model` on the fixed batch (over `calls` calls of
    `per_call` steps) and of one batch of `pipeline` read alone (`ALONE` batches after
    `AHEAD` untimed ones), each per step."""

    def step(iterator):
        float(model.train_function(iterator)["loss"])

    step_costs = wall_and_cpu(functools.partial(step, iter(fixed)), calls)
    batches = iter(pipeline)
    for _ in range(AHEAD):
        next(batches)
    batch_costs = wall_and_cpu(functools.partial(next, batches), ALONE)
    return tuple(value / per_call for value in step_costs), batch_costs


def op_time(trace_dir: Path) -> collections.Counter:
    """Seconds of op time per op in the profile under `trace_dir`: the durations of the
    op events on TensorFlow's compute and Eigen threads, summed over threads, by op
    type (a graph op's "name:type") or XLA thunk (its name without the ".N" suffix)."""
    seconds = collections.Counter()
    for path in trace_dir.rglob("*.xplane.pb"):
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        for plane in space.planes:
            names = {key: value.name for key, value in plane.event_metadata.items()}
            for line in plane.lines:
                if not line.name.startswith(("tf_Compute", "tf_numa")):
                    continue
                for event in line.events:
                    name = names[event.metadata_id]
                    if BOOKKEEPING.search(name):
                        continue
                    op = name.rsplit(":", 1)[-1] if ":" in name else re.sub(r"\.\d+$", "", name)
                    seconds[op] += event.duration_ps * 1e-12
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", default=",".join(EXPERIMENTS))
    parser.add_argument("--steps", type=int, default=5, help="training steps per window")
    parser.add_argument("--repeats", type=int, default=7, help="windows per measurement")
    parser.add_argument("--calls", type=int, default=10, help="matmul calls per window")
    parser.add_argument(
        "--jit-compile",
        default="preset",
        help="comma-separated step compilations to time: preset (the preset's), xla, graph",
    )
    parser.add_argument("--profile", help="a directory for TensorBoard profiles")
    args = parser.parse_args()
    print(
        "| experiment | step | batch, side | step GFLOP (dense + other) | fixed steps/s "
        "| GFLOP/s | matmul GFLOP/s | fraction | tf.data steps/s | tf.data / fixed "
        "| step CPU s (cores busy) | batch alone CPU s (cores busy) | sharing bound, steps/s "
        "| bound / fixed | tf.data / bound |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    cores = len(os.sched_getaffinity(0))
    profiles = {}
    modes = {"preset": None, "xla": True, "graph": False}
    for name, mode in itertools.product(args.experiments.split(","), args.jit_compile.split(",")):
        config, model, pipeline, fixed, batch, decoder_flops = setup(name, modes[mode])
        step = "XLA" if config.jit_compile else "graph"
        dense, other = (value / 1e9 for value in dense_and_other(step_flops(model, batch)))
        per_call = config.steps_per_execution
        datasets = {"fixed": fixed, "tf.data": pipeline}
        measured = rates(model, datasets, args.steps, args.repeats, args.calls, per_call)
        median = {key: float(np.median(values)) for key, values in measured.items()}
        gflops = (dense + other) * median["fixed"]
        side = batch["view1"].shape[1]
        decoder = f"; decoder {decoder_flops / 1e9:.2f} in tf.data" if decoder_flops else ""
        (step_wall, step_cpu), (batch_wall, batch_cpu) = step_and_batch_costs(
            model, fixed, pipeline, args.steps, per_call
        )
        bound = cores / (step_cpu + batch_cpu)
        print(
            f"| {name} | {step} | {config.batch_size}, {side} px | {dense + other:.2f} ({dense:.2f} + "
            f"{other:.2f}){decoder} | {median['fixed']:.2f} | {gflops:.1f} | "
            f"{median['matmul']:.0f} | {gflops / median['matmul']:.2f} | "
            f"{median['tf.data']:.2f} | {median['tf.data'] / median['fixed']:.2f} | "
            f"{step_cpu:.3f} ({step_cpu / step_wall:.1f}) | {batch_cpu:.3f} "
            f"({batch_cpu / batch_wall:.1f}) | {bound:.2f} | {bound / median['fixed']:.2f} | "
            f"{median['tf.data'] / bound:.2f} |",
            flush=True,
        )
        if args.profile:
            trace_dir = Path(args.profile) / f"{name}-{step}"
            seconds = profile(model, fixed, args.steps, per_call, trace_dir)
            profiles[f"{name}, {step}"] = (seconds, dense, other)
    for name, (seconds, dense, other) in profiles.items():
        total = sum(seconds.values())
        print(f"\n{name}: op time a step {total * 1e3:.0f} ms, summed over threads")
        kinds = collections.Counter()
        for op, value in seconds.items():
            kinds[next(kind for kind, pattern in KINDS.items() if pattern.search(op))] += value
        for kind, value in kinds.most_common():
            print(f"  {kind}: {value * 1e3:.1f} ms ({value / total:.0%})")
        print(f"  convolutions and matmuls: {dense / (dense + other):.0%} of the FLOPs")
        print(
            "  the 8 largest: "
            + ", ".join(f"{op} {value / total:.0%}" for op, value in seconds.most_common(8))
        )


def profile(model, fixed, steps: int, per_call: int, trace_dir: Path) -> collections.Counter:
    """`op_time` of `steps` fixed-batch calls of `model`'s step (`per_call` steps
    each), per step."""
    iterator = iter(fixed)
    tf.profiler.experimental.start(str(trace_dir))
    for _ in range(steps):
        logs = model.train_function(iterator)
    float(logs["loss"])
    tf.profiler.experimental.stop()
    per_step = 1 / (steps * per_call)
    return collections.Counter({op: value * per_step for op, value in op_time(trace_dir).items()})


if __name__ == "__main__":
    main()
