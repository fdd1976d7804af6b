"""`tf.distribute` strategies by name, and the cross-replica gather of negatives."""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Callable

import keras
import tensorflow as tf

from aninfonce_tf.errors import is_integer

STRATEGIES = ("default", "one_device", "mirrored", "multiworker", "tpu")
# The task types of a `MultiWorkerMirroredStrategy` cluster.
WORKER_TASKS = ("chief", "worker")
_TF_CONFIG_FIX = (
    'set it on each worker to JSON such as {"cluster": {"worker": ["host1:port", '
    '"host2:port"]}, "task": {"type": "worker", "index": 0}}, each worker with '
    'its own index (docs/runner.md, "Several devices and machines")'
)


def get_strategy(name: str = "default", tpu_address: str = "local") -> tf.distribute.Strategy:
    """A `tf.distribute.Strategy` by name, created once per process (but "default").

    Args:
        name: one of `STRATEGIES`.
        tpu_address: `"tpu"`'s TPU: `"local"`, a Cloud TPU name, or `grpc://ADDRESS`.

    Example:

    >>> get_strategy("default").num_replicas_in_sync
    1
    """
    if name == "default":
        return tf.distribute.get_strategy()
    return _create_strategy(name, tpu_address)


@functools.cache
def _create_strategy(name: str, tpu_address: str) -> tf.distribute.Strategy:
    # One strategy of each kind per process (docs/runner.md#several-devices-and-machines).
    if name == "one_device":
        device = "/gpu:0" if tf.config.list_logical_devices("GPU") else "/cpu:0"
        return tf.distribute.OneDeviceStrategy(device)
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multiworker":
        check_tf_config()
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address)
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (tf.errors.OpError, ValueError, RuntimeError, ImportError) as error:
            reason = str(getattr(error, "message", error)).strip().split("\n")[0].split(". ")[0]
            raise ValueError(
                f"`strategy` 'tpu' found no TPU at `tpu` {tpu_address!r} ({type(error).__name__}: "
                f"{reason[:200]}): run on a TPU VM (`tpu` local), name a Cloud TPU or "
                "grpc://ADDRESS as `tpu`, or pass another `strategy`."
            ) from None
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"Unknown `strategy` {name!r}; expected one of {STRATEGIES}.")


def check_tf_config(text: str | None = None) -> None:
    """Raises `ValueError` naming TF_CONFIG and the fix unless it is unset or valid.

    Args:
        text: the TF_CONFIG to check (default: the environment's).

    Example:

    >>> check_tf_config('{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", '
    ...                 '"index": 2}}')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: TF_CONFIG's task is worker 2, beyond the cluster's 2 workers (indices 0 to 1): ...
    """
    text = os.environ.get("TF_CONFIG", "") if text is None else text
    if not text.strip():
        return
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not JSON ({error}): {_TF_CONFIG_FIX}.") from None
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    if not (
        isinstance(cluster, dict)
        and cluster
        and all(isinstance(hosts, list) and hosts for hosts in cluster.values())
    ):
        raise ValueError(
            f'TF_CONFIG names no cluster (a "cluster" of task types, each a list of '
            f"host:port): {_TF_CONFIG_FIX}."
        )
    unknown = sorted(set(cluster) - set(WORKER_TASKS))
    if unknown:
        raise ValueError(
            f"TF_CONFIG's cluster has the task types {unknown}, which "
            f"`MultiWorkerMirroredStrategy` does not run (only {' and '.join(WORKER_TASKS)}): "
            f"{_TF_CONFIG_FIX}."
        )
    task = spec.get("task")
    if not isinstance(task, dict):
        raise ValueError(
            f'TF_CONFIG names no task ("task": {{"type": ..., "index": ...}}, this '
            f"worker's place in the cluster): {_TF_CONFIG_FIX}."
        )
    kind, index = task.get("type"), task.get("index", 0)
    if kind not in cluster:
        raise ValueError(
            f"TF_CONFIG's task type {kind!r} is not one of its cluster's {sorted(cluster)}: "
            f"{_TF_CONFIG_FIX}."
        )
    count = len(cluster[kind])
    if not (is_integer(index) and 0 <= index < count):
        raise ValueError(
            f"TF_CONFIG's task is {kind} {index!r}, beyond the cluster's {count} {kind}"
            f"{'s' if count != 1 else ''} (indices 0 to {count - 1}): {_TF_CONFIG_FIX}."
        )


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that writes results (a single host, `chief`, or worker 0).

    Example:

    >>> is_chief(get_strategy("default"))
    True
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.cluster_spec().as_dict():
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return not has_chief and resolver.task_type == "worker" and resolver.task_id == 0


def distribute_global_batches(
    strategy: tf.distribute.Strategy,
    make_dataset: Callable[[], tf.data.Dataset],
    global_batch_size: int,
):
    """A distributed dataset for `Model.fit` splitting every global batch of
    `make_dataset()` among all replicas. Details: docs/runner.md#several-devices-and-machines

    Args:
        strategy: a strategy with one or more replicas.
        make_dataset: builds the dataset of global batches (static row shapes).
        global_batch_size: rows per global batch; divisible by the replicas.
    """
    replicas = strategy.num_replicas_in_sync
    if global_batch_size % replicas:
        raise ValueError(
            f"`batch_size` ({global_batch_size}) must be divisible by the {replicas} replicas."
        )
    per_replica = global_batch_size // replicas

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local

        def own_rows(batch):
            def split(tensor):
                rows = tf.reshape(tensor, [replicas, per_replica, *tensor.shape[1:]])
                return rows[first : first + local]

            return tf.data.Dataset.from_tensor_slices(tf.nest.map_structure(split, batch))

        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        return make_dataset().flat_map(own_rows).with_options(options)

    return strategy.distribute_datasets_from_function(dataset_fn)


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    """True for a `MultiWorkerMirroredStrategy` spanning several workers."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and (
        strategy.extended._in_multi_worker_mode()  # noqa: SLF001 (no public query)
    )


def gather_from_workers(strategy: tf.distribute.Strategy, value: int) -> list[int]:
    """Every replica's `value` in replica order (a collective: every worker calls it).

    Example:

    >>> gather_from_workers(get_strategy("default"), 7)
    [7]
    """
    values = strategy.experimental_distribute_values_from_function(
        lambda _: tf.constant([value], tf.int64)
    )
    return strategy.gather(values, axis=0).numpy().tolist()


def supports_jit(strategy: tf.distribute.Strategy) -> bool:
    """False for several replicas or a TPUStrategy (docs/runner.md#several-devices-and-machines).

    Example:

    >>> supports_jit(get_strategy("default"))
    True
    """
    tpu = (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy)
    return not isinstance(strategy, tpu) and strategy.num_replicas_in_sync == 1


def jit_off_reason(strategy: tf.distribute.Strategy) -> str:
    """Why `supports_jit(strategy)` is False, for logs and warnings."""
    if isinstance(strategy, (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy)):
        return f"{type(strategy).__name__} compiles each replica's step itself"
    return f"{strategy.num_replicas_in_sync} replicas (distribute.supports_jit)"


def supports_multi_step(strategy: tf.distribute.Strategy) -> bool:
    """False for `MultiWorkerMirroredStrategy` (keras-team/keras#19246), else True."""
    return not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def supported_execution(strategy, jit_compile, steps_per_execution: int) -> tuple:
    """`(jit_compile, steps_per_execution)` as `strategy` can run them (a warning if dropped)."""
    if jit_compile and not supports_jit(strategy):
        warnings.warn(
            f"jit_compile=True is not used: {jit_off_reason(strategy)}; the step runs "
            "without Keras' XLA.",
            stacklevel=3,
        )
        jit_compile = False
    if steps_per_execution > 1 and not supports_multi_step(strategy):
        warnings.warn(
            f"steps_per_execution={steps_per_execution} fails under "
            f"{type(strategy).__name__} (keras-team/keras#19246): running one step per call.",
            stacklevel=3,
        )
        steps_per_execution = 1
    return jit_compile, steps_per_execution


def num_replicas() -> int:
    """Replicas in sync of the current strategy (1 outside any strategy)."""
    return tf.distribute.get_strategy().num_replicas_in_sync


def apply_unless_overflow(
    loss_scale_optimizer, optimizer, main_gradients, gradients, variables
) -> None:
    """Applies `optimizer` to `variables` unless the loss scale overflowed `main_gradients`."""

    def update(gradients):
        optimizer.apply(gradients, variables)

    if tf.__internal__.distribute.strategy_supports_no_merge_call():
        finite = loss_scale_optimizer.check_finite(main_gradients)
        keras.ops.cond(finite, lambda: update(gradients), lambda: None)
        return

    def cross_replica(strategy, main_gradients, gradients):
        finite = strategy.experimental_local_results(
            strategy.extended.call_for_each_replica(
                loss_scale_optimizer.check_finite, args=(main_gradients,)
            )
        )[0]
        each = strategy.extended.call_for_each_replica
        keras.ops.cond(finite, lambda: each(update, args=(gradients,)), lambda: None)

    tf.distribute.get_replica_context().merge_call(cross_replica, args=(main_gradients, gradients))


def gather_across_replicas(z1, z2):
    """`(z1_all, z2_all, row_offset)`: both views gathered differentiably from every
    replica, and this replica's first row in them; `(None, None, 0)` with one replica."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None, None, 0
    # A last partial batch splits unevenly (7 rows: 4 and 3); the gather's gradient
    # and the row offsets below need equal replica batches, so say so instead. A
    # static batch is every replica's (no check in the step: on a TPU a string
    # assertion runs on the host, a stall every step).
    if z1.shape[0] is None:
        sizes = context.all_gather(tf.shape(z1)[:1], axis=0)
        check = tf.debugging.assert_equal(
            sizes,
            tf.fill(tf.shape(sizes), sizes[0]),
            message=(
                "Every replica needs the same number of rows: batch the dataset with "
                "drop_remainder=True and a global batch size divisible by the number of "
                "replicas. Replica batch sizes"
            ),
        )
        with tf.control_dependencies([check]):
            z1, z2 = tf.identity(z1), tf.identity(z2)
    z1_all = context.all_gather(z1, axis=0)
    z2_all = context.all_gather(z2, axis=0)
    replica_id = tf.cast(context.replica_id_in_sync_group, tf.int32)
    return z1_all, z2_all, replica_id * tf.shape(z1)[0]
