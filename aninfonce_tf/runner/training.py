"""Training one loss variant: its model built and compiled, then `fit`."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Mapping, Sequence

import keras
import tensorflow as tf

from aninfonce_tf import distribute, optimizers
from aninfonce_tf.checkpoints import Backup
from aninfonce_tf.configs.base import RunConfig
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.data.pairs import training_views
from aninfonce_tf.errors import UsageError, WorkerLost
from aninfonce_tf.evaluation.callbacks import (
    EvaluationCallback,
    StopOnNonFiniteLoss,
    TrainingLogger,
    targets_held,
)
from aninfonce_tf.evaluation.console import EpochLine
from aninfonce_tf.evaluation.targets import Target
from aninfonce_tf.layers import LinearAlignment
from aninfonce_tf.loss_variants import loss_variant
from aninfonce_tf.models import ContrastiveModel
from aninfonce_tf.runner.context import RunContext
from aninfonce_tf.runner.event_files import drop_events_after
from aninfonce_tf.runner.identity import backup_identity, check_backup_identity
from aninfonce_tf.runner.plan import RunPlan
from aninfonce_tf.runner.run_directory import RunDirectory, points_until


def build_model(config: RunConfig, experiment: Experiment, variant: str) -> ContrastiveModel:
    """One variant's compiled model (call it inside the strategy's scope)."""
    previous_policy = keras.config.dtype_policy()
    if config.mixed_precision:
        keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        encoder = experiment.encoder()
        projector = experiment.projector() if experiment.projector else None
    finally:
        keras.config.set_dtype_policy(previous_policy)
    loss, scaling = loss_variant(
        variant, normalized=experiment.normalize, seed=config.seed, **config.loss_options()
    )
    model = ContrastiveModel(
        encoder,
        projector=projector,
        normalize=experiment.normalize,
        scaling=scaling,
        alignment=LinearAlignment() if experiment.aligned else None,
        name=variant,
    )
    model.compile(
        optimizer=optimizers.encoder_optimizer(config),
        loss=loss,
        # Lambda_hat's own Adam: no weight decay pulling it to a constant.
        concentration_optimizer=(
            keras.optimizers.Adam(config.concentration_learning_rate) if scaling else None
        ),
        jit_compile=config.jit_compile,
        steps_per_execution=config.steps_per_execution,
    )
    return model


# What a collective op raises when a peer worker died or stalls, or aborted the op.
LOST_WORKER_ERRORS = (
    tf.errors.UnavailableError,
    tf.errors.DeadlineExceededError,
    tf.errors.AbortedError,
    tf.errors.CancelledError,
)


@contextlib.contextmanager
def worker_lost_as_one_line(context: RunContext, during: str):
    """Raises `WorkerLost`, in one line, for `LOST_WORKER_ERRORS` of a multi-worker run.

    Example:

    >>> from aninfonce_tf.distribute import get_strategy
    >>> context = RunContext(get_strategy("default"), chief=True, multi_worker=True)
    >>> with worker_lost_as_one_line(context, "aninfonce trained"):  # doctest: +ELLIPSIS
    ...     raise tf.errors.AbortedError(None, None, "peer gone\\nand more")
    Traceback (most recent call last):
    ...
    aninfonce_tf.errors.WorkerLost: A worker of this run is gone (... AbortedError: peer gone) while ...
    """
    try:
        yield
    except LOST_WORKER_ERRORS as error:
        if not context.multi_worker:
            raise
        reason = str(error.message).strip().split("\n")[0][:200]
        raise WorkerLost(
            f"A worker of this run is gone (killed, stalled or cut off; "
            f"{type(error).__name__}: {reason}) while {during}: rerun every worker "
            "with the same command, and the run resumes from its last backup."
        ) from None


def train_variant(
    plan: RunPlan,
    experiment: Experiment,
    variant: str,
    directory: RunDirectory,
    context: RunContext,
    targets: Mapping[str, Target],
    verbose: int,
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> tuple[ContrastiveModel, dict]:
    """Trains (or resumes) one loss variant; returns the model and its result."""
    config, run_dir, strategy = plan.config, directory.path, context.strategy
    work_dir = context.work_dir(run_dir)
    variant_dir = work_dir / variant
    variant_dir.mkdir(parents=True, exist_ok=True)
    epoch_steps = config.epoch_steps()
    backup = Backup(work_dir / "backup" / variant, epoch_steps, identity=backup_identity(config))
    if context.multi_worker:  # each worker has its own backup: one step
        start_step = backup.restore_on_every_worker(
            functools.partial(distribute.gather_from_workers, strategy)
        )
    else:
        start_step = backup.restore()
    if start_step % epoch_steps:
        raise UsageError(
            f"The backup of {variant} in {run_dir} is at step {start_step}, which epochs of "
            f"{epoch_steps} steps (the default `save_every` for this `steps_per_execution`) "
            "cannot resume: pass the --steps-per-execution that it was trained with."
        )
    history_path = variant_dir / "history.json"
    loss_path = variant_dir / "loss_curve.json"
    history, loss_curve, reached = [], [], None
    if start_step:
        check_backup_identity(backup, plan, directory.code, variant)
        history = points_until(history_path, start_step)
        missing = sorted(
            set(range(config.eval_every, start_step + 1, config.eval_every))
            - {point["step"] for point in history}
        )
        if missing:
            raise UsageError(
                f"{history_path} lacks the evaluations at steps {missing}, before the step "
                f"{start_step} that the backup of {variant} resumes at (the file or its "
                f"directory was lost): put it back, or delete {backup.directory} to train "
                f"{variant} from the start."
            )
        loss_curve = points_until(loss_path, start_step)
        print(f"   resuming {variant} at step {start_step}", flush=True)
        at_start = bool(history) and history[-1]["step"] == start_step
        if at_start and targets_held(history, targets, config.stop_patience):
            # The run stopped there, at its targets: nothing is left to train.
            reached = {"step": start_step, "seconds": history[-1]["seconds"]}
    if context.chief:  # also at step 0: a run killed before its first checkpoint logged too
        aside = run_dir / "tensorboard_unreadable" / variant
        drop_events_after(run_dir / "tensorboard" / variant, start_step, aside)
    with strategy.scope():
        keras.utils.set_random_seed(config.seed)
        model = build_model(config, experiment, variant)
    logs = str(run_dir / "tensorboard" / variant) if context.chief else None
    evaluation = EvaluationCallback(
        experiment.evaluators,
        logs,
        every_epochs=config.eval_every // epoch_steps,
        stop_at=targets,
        stop_patience=config.stop_patience,
        history=history,
        history_path=str(history_path),
        verbose=int(verbose != 0),
        columns=experiment.table_columns,
        scores_in_logs=False,  # Keras' progress line shows the training metrics only
        log_all_scores=config.tensorboard_all_scores,
        chief=context.chief,
        work_dir=str(variant_dir / "linear_eval"),
    )
    evaluation.reached = reached
    training = TrainingLogger(
        logs, config.log_steps(), history=loss_curve, history_path=str(loss_path)
    )
    non_finite = StopOnNonFiniteLoss()
    # The backup after the evaluation and the loss curve: a checkpoint never runs ahead
    # of history.json and loss_curve.json. The final-only evaluators run when `fit` ends,
    # after the final step's backup: a kill during them resumes at that step and runs
    # them again. The epoch's line last: an evaluation's line comes before the next
    # epoch's.
    fit_callbacks = [non_finite, training, evaluation, backup, *callbacks]
    if not any(isinstance(callback, keras.callbacks.ProgbarLogger) for callback in callbacks):
        fit_callbacks.append(EpochLine())
    sharded = context.multi_worker and experiment.worker_train_data
    if sharded:
        data = strategy.distribute_datasets_from_function(
            lambda context: training_views(experiment.worker_train_data(start_step, context))
        )
    elif strategy.num_replicas_in_sync > 1:
        data = distribute.distribute_global_batches(
            strategy, lambda: training_views(experiment.train_data(start_step)), config.batch_size
        )
    else:
        data = experiment.train_data(start_step)
    reading = " (each worker reads its own shard)" if sharded else ""
    print(f"== {variant}: {config.steps} steps of {config.batch_size} pairs{reading}", flush=True)
    start = time.perf_counter()
    fit_history = model.fit(
        data,
        steps_per_epoch=epoch_steps,
        initial_epoch=start_step // epoch_steps,
        epochs=(reached["step"] if reached else config.steps) // epoch_steps,
        callbacks=fit_callbacks,
        verbose=verbose,
        shuffle=False,  # fresh pairs every step; True would only make Keras warn
    )
    seconds = time.perf_counter() - start + (history[-1]["seconds"] if history else 0.0)
    curve = evaluation.history
    final = curve[-1] if curve else {}
    # Resumed at its last step, `fit` runs no epoch: the loss is the checkpoint's.
    losses = fit_history.history.get("loss") or [backup.restored_logs["loss"]]
    result = {
        **{k: v for k, v in final.items() if k not in ("step", "seconds")},
        # Counted from the batches, as the callbacks count them (none ran: resumed at the end).
        "steps": max(training.step, start_step),
        "wall_seconds": round(seconds, 1),
        "final_loss": float(losses[-1]),
        "curve": curve,
        "loss_curve": training.history,
    }
    if targets:
        result["target_reached"] = evaluation.reached
    if non_finite.stopped_at is not None:
        result["stopped"] = f"non-finite loss by step {non_finite.stopped_at}"
    return model, result


__all__ = ["LOST_WORKER_ERRORS", "build_model", "train_variant", "worker_lost_as_one_line"]
