"""`RunContext`: where this process runs, decided once per run and passed down."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import tensorflow as tf

from aninfonce_tf import distribute
from aninfonce_tf.errors import UsageError


@dataclasses.dataclass(frozen=True)
class RunContext:
    """The strategy of a run and this process's place in it.

    Args:
        strategy: the `tf.distribute` strategy every variant trains under.
        chief: whether this process writes the run's outputs.
        multi_worker: whether the strategy spans several workers.

    Example:

    >>> context = RunContext.create("default")
    >>> context.chief, context.multi_worker, context.work_dir(Path("run"))
    (True, False, PosixPath('run'))
    """

    strategy: tf.distribute.Strategy
    chief: bool
    multi_worker: bool

    @classmethod
    def create(cls, strategy: str = "default", tpu: str = "local") -> RunContext:
        """The context of the strategy named `strategy` (a `UsageError` if none can be made)."""
        try:
            instance = distribute.get_strategy(strategy, tpu)
        except ValueError as error:
            raise UsageError(str(error)) from None
        return cls(instance, distribute.is_chief(instance), distribute.is_multi_worker(instance))

    def work_dir(self, run_dir: Path) -> Path:
        """This worker's own files: `run_dir` on the chief, else `run_dir/workers/<task>`."""
        if self.chief:
            return run_dir
        resolver = self.strategy.cluster_resolver
        return run_dir / "workers" / f"{resolver.task_type}-{resolver.task_id}"


__all__ = ["RunContext"]
