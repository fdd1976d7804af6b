"""`ContrastiveModel`: encoder -> projector -> sphere -> Lambda_hat, trained by `fit`.
Details: docs/api.md#contrastivemodels-training-step"""

from __future__ import annotations

import functools
import logging
import warnings

import keras
import tensorflow as tf
from keras import ops
from keras.src.backend.tensorflow.trainer import reduce_per_replica

from aninfonce_tf import distribute, functional, optimizers
from aninfonce_tf.backbones import expects_pixel_values
from aninfonce_tf.data.pairs import check_batched, fit_input, split_views, unit_views
from aninfonce_tf.errors import check_flag, is_integer
from aninfonce_tf.layers import DiagonalScaling, LinearAlignment
from aninfonce_tf.losses import AnInfoNCE, ContrastiveLoss, InfoNCE
from aninfonce_tf.step_metrics import StepMetrics, refuse_compile_metrics

LOGGER = logging.getLogger("aninfonce_tf")

# The uniformity metric is estimated on at most this many rows of view 1: its cost
# grows with the square of the rows.
UNIFORMITY_ROWS = 512
# Lambda_hat's own Adam rate when `compile` is given none: the authors' 10x the rate of
# their encoder.
DEFAULT_CONCENTRATION_LEARNING_RATE = 1e-2


class _EpochsWithSteps(keras.callbacks.Callback):
    """Counts the epochs one `fit` began and those that ran a step (logs with a loss)."""

    def __init__(self):
        super().__init__()
        self.epochs = self.epochs_with_steps = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs += 1

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_with_steps += bool(logs and "loss" in logs)


@functools.cache  # once per process, not at every compile
def _say_default_concentration_optimizer() -> None:
    warnings.warn(
        "Lambda_hat trains with its own Adam(learning_rate="
        f"{DEFAULT_CONCENTRATION_LEARNING_RATE}); pass `concentration_optimizer=None` "
        "to train it with `optimizer`, or another optimizer or rate.",
        UserWarning,
        stacklevel=4,
    )


# Layers that make an encoder convolutional, whose steps XLA slows on a CPU
# (docs/speed.md, "XLA by encoder"): `jit_compile="auto"` leaves them out there.
CONVOLUTIONS = (
    keras.layers.Conv1D,
    keras.layers.Conv2D,
    keras.layers.Conv3D,
    keras.layers.DepthwiseConv2D,
    keras.layers.SeparableConv2D,
)


def automatic_jit(model: keras.Model, strategy) -> tuple[bool, str]:
    """What `compile(jit_compile="auto")` chooses, and why.

    Example:

    >>> mlp = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    >>> automatic_jit(mlp, tf.distribute.get_strategy())
    (True, 'XLA on: an encoder without convolutions, or a GPU')
    """
    if not distribute.supports_jit(strategy):
        return False, f"XLA off: {distribute.jit_off_reason(strategy)}"
    layers = model._flatten_layers()  # noqa: SLF001 (Keras' walk of nested layers)
    convolutional = any(isinstance(layer, CONVOLUTIONS) for layer in layers)
    if convolutional and not tf.config.list_logical_devices("GPU"):
        return False, "XLA off: a convolutional encoder on a CPU (slower under XLA there)"
    return True, "XLA on: an encoder without convolutions, or a GPU"


class _TwoOptimizers:
    """Lambda_hat's own optimizer: the variables each updates, both built before `fit`."""

    def _default_concentration_optimizer(self) -> float | None:
        if self.scaling is None or not self.scaling.trainable:
            return None
        _say_default_concentration_optimizer()
        return DEFAULT_CONCENTRATION_LEARNING_RATE

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Built before `fit` (`build`, `compile`): Keras' build from a batch averaged over
        # the replicas fails for a dict batch under MultiWorkerMirroredStrategy.
        if self.built and all(
            optimizer is None or optimizer.built
            for optimizer in (getattr(self, "optimizer", None), self.concentration_optimizer)
        ):
            return
        super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)

    def _build_optimizers(self):
        # Each optimizer holds state only for the variables it updates, built eagerly
        # (not inside the first traced step) so that saving and loading match.
        if not self.built or getattr(self, "optimizer", None) is None:
            return
        main_variables, concentration_variables = self._split_variables()
        if optimizers.uses_weight_average(self.optimizer):
            # The main optimizer's average covers Lambda_hat too (which it never updates).
            main_variables = self.trainable_variables
        for optimizer, variables in (
            (self.optimizer, main_variables),
            (self.concentration_optimizer, concentration_variables),
        ):
            if optimizer is not None and variables and not optimizer.built:
                optimizer.build(variables)

    def _split_variables(self):
        if self.concentration_optimizer is None or self.scaling is None:
            return self.trainable_variables, []
        concentration_ids = {id(v) for v in self.scaling.trainable_variables}
        others = [v for v in self.trainable_variables if id(v) not in concentration_ids]
        return others, list(self.scaling.trainable_variables)

    def _apply_gradients(self, gradients, main_variables, concentration_variables, separate):
        """One step of both optimizers (`separate`: the main one scales the loss)."""
        split = len(main_variables)
        if concentration_variables:
            # First, so that a weight average kept by the main optimizer sees this step's
            # Lambda_hat; under a loss scale, skipped where the main step overflows.
            if separate:
                distribute.apply_unless_overflow(
                    self.optimizer,
                    self.concentration_optimizer,
                    gradients[:split],
                    gradients[split:],
                    concentration_variables,
                )
            else:
                self.concentration_optimizer.apply(gradients[split:], concentration_variables)
        self.optimizer.apply(gradients[:split], main_variables)


class _UnrolledStepsUnderMirrored:
    """`steps_per_execution` k under `MirroredStrategy`: k steps unrolled in one `tf.function`."""

    def _make_function(self, step_function):
        strategy = self.distribute_strategy
        if self.steps_per_execution == 1 or not isinstance(
            strategy, tf.distribute.MirroredStrategy
        ):
            return super()._make_function(step_function)

        def one_step(data):
            outputs = strategy.run(step_function, args=(data,))
            return reduce_per_replica(outputs, strategy, reduction="auto")

        @tf.function(reduce_retracing=True)
        def steps(iterator):
            for _ in range(self.steps_per_execution):
                outputs = one_step(next(iterator))
            return outputs

        return steps


class _ProgbarWithoutCounts(keras.callbacks.ProgbarLogger):
    """Keras' progress bar without the logs of `PROGRESS_HIDDEN`."""

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, _shown(logs))

    def on_test_batch_end(self, batch, logs=None):
        super().on_test_batch_end(batch, _shown(logs))

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, _shown(logs))

    def on_test_end(self, logs=None):
        super().on_test_end(_shown(logs))


# The logs Keras' progress bar leaves out under `ContrastiveModel.fit`.
PROGRESS_HIDDEN = ("candidates",)


def _shown(logs):
    return None if logs is None else {k: v for k, v in logs.items() if k not in PROGRESS_HIDDEN}


def _argument(args: tuple, kwargs: dict, name: str, index: int):
    """Keras' argument `name` of `fit` or `evaluate`, by keyword or at `index` after `x`."""
    return kwargs.get(name, args[index] if len(args) > index else None)


def _check_steps(data, steps, flag: str, never: str) -> None:
    """Raises `ValueError` for Keras' number of batches `steps` (the argument `flag`) below
    1, which Keras reads as "until the data ends", or missing for an infinite `data`."""
    if steps is not None and not (is_integer(steps) and steps >= 1):
        raise ValueError(
            f"`{flag}` must be a positive number of batches, or None (until the data ends); "
            f"got {steps!r}."
        )
    endless = isinstance(data, tf.data.Dataset) and (
        data.cardinality() == tf.data.INFINITE_CARDINALITY
    )
    if endless and steps is None:
        raise ValueError(
            f"The dataset is infinite (it repeats without end) and `{flag}` is not given: "
            f"{never}. Pass `{flag}`, or end the dataset (`dataset.take(batches)`)."
        )


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class ContrastiveModel(_TwoOptimizers, _UnrolledStepsUnderMirrored, keras.Model):
    """Contrastive learner over positive pairs, for any `losses.ContrastiveLoss`.

    `model(x)` returns encoder features, `model.embed(x)` the embeddings the loss sees.
    Fit on `(view1, view2)` or dicts with `view1`, `view2` and extra keys.
    Details: docs/api.md#contrastivemodels-training-step

    Args:
        encoder: any Keras model or layer, images/observations -> features.
        projector: optional head applied to the features during training.
        normalize: project embeddings onto the unit sphere (in float32).
        scaling: optional `DiagonalScaling` holding Lambda_hat.
        alignment: optional `LinearAlignment` an evaluator fits (`embed_aligned`).

    Example:

    >>> encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    >>> model = ContrastiveModel(encoder, scaling=DiagonalScaling(5.0))
    >>> model.compile(optimizer=keras.optimizers.Adam(1e-3), concentration_optimizer=1e-2)
    >>> x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    >>> history = model.fit((x, x + 0.01), batch_size=32, epochs=1, verbose=0)
    >>> sorted(history.history)[:3]
    ['accuracy', 'alignment', 'candidates']
    """

    def __init__(
        self,
        encoder: keras.layers.Layer,
        projector: keras.layers.Layer | None = None,
        normalize: bool = True,
        scaling: DiagonalScaling | None = None,
        alignment: LinearAlignment | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, layer in (("encoder", encoder), ("projector", projector)):
            if not (
                isinstance(layer, keras.layers.Layer) or (name == "projector" and layer is None)
            ):
                raise TypeError(
                    f"`{name}` must be a Keras model or layer; got {type(layer).__name__}."
                )
        if scaling is not None and not isinstance(scaling, DiagonalScaling):
            raise TypeError(f"`scaling` must be a DiagonalScaling; got {type(scaling).__name__}.")
        if alignment is not None and not isinstance(alignment, LinearAlignment):
            raise TypeError(
                f"`alignment` must be a LinearAlignment; got {type(alignment).__name__}."
            )
        if expects_pixel_values(encoder):
            warnings.warn(
                f"The encoder {encoder.name!r} starts with a Rescaling of pixel values in "
                "[0, 255], and SimCLR's views are in [0, 1]: pass "
                "`aninfonce_tf.for_unit_images(encoder)` (a Rescaling(255) before it), or "
                "feed it [0, 255] inputs.",
                UserWarning,
                stacklevel=2,
            )
        self.encoder = encoder
        self.projector = projector
        self.normalize = check_flag("normalize", normalize)
        self.scaling = scaling
        self.alignment = alignment
        self.concentration_optimizer = None
        self.contrastive_loss = None
        self.step_metrics = StepMetrics(concentration=scaling is not None)
        if getattr(encoder, "built", False) and getattr(encoder, "inputs", None):
            self.build(tuple(encoder.inputs[0].shape))

    def build(self, input_shape):
        if isinstance(input_shape, dict):
            input_shape = input_shape["view1"]
        shape = _build_embedding(self.encoder, self.projector, input_shape)
        if self.normalize and shape[-1] == 1:
            raise ValueError(
                "The embeddings have width 1 and `normalize=True`: on the unit sphere every "
                "embedding of width 1 is +1 or -1, so the loss has nothing to learn. Give the "
                "encoder (or projector) at least 2 outputs, or pass `normalize=False`."
            )
        for head in (self.scaling, self.alignment):
            if head is not None and not head.built:
                head.build(shape)
        if self.alignment is not None and self.alignment.matrix.shape[0] != shape[-1]:
            raise ValueError(
                f"`alignment` was built for {self.alignment.matrix.shape[0]}-dimensional "
                f"embeddings; this model's are {shape[-1]}-dimensional: pass a new "
                "`LinearAlignment()`."
            )
        self.built = True
        self._build_optimizers()

    def call(self, inputs, training=False):
        if isinstance(inputs, dict):
            inputs = inputs["view1"]
        return self.encoder(unit_views(inputs), training=training)

    def embed(self, inputs, training=False, scaled=True):
        """Embeddings the loss sees (`scaled=False`: before Lambda_hat)."""
        z = self(inputs, training=training)
        if self.projector is not None:
            z = self.projector(z, training=training)
        z = ops.cast(z, "float32")
        if self.normalize:
            z = functional.l2_normalize(z)
        if self.scaling is not None and scaled:
            z = self.scaling(z)
        return z

    def embed_aligned(self, inputs, training=False):
        """The unscaled embeddings times the fitted slow-feature alignment."""
        if self.alignment is None:
            raise ValueError(
                "This model has no `alignment`: build it with "
                "`ContrastiveModel(..., alignment=LinearAlignment())` and evaluate it with "
                "`IdentifiabilityEvaluator(..., alignment_pairs=...)`, which fits it."
            )
        return self.alignment(self.embed(inputs, training=training, scaled=False))

    @property
    def concentration(self):
        """Lambda_hat, shape `[d]`; None for plain InfoNCE without scaling."""
        return None if self.scaling is None else self.scaling.concentration

    def compile(
        self,
        optimizer="adam",
        loss: ContrastiveLoss | None = None,
        concentration_optimizer="default",
        jit_compile: bool | str = "auto",
        steps_per_execution: int = 1,
        **kwargs,
    ):
        """Configures training.

        Args:
            optimizer: optimizer (or its name) of the encoder and projector.
            loss: a `ContrastiveLoss`; default AnInfoNCE with a `scaling`, else InfoNCE.
            concentration_optimizer: Lambda_hat's optimizer or Adam's rate; None: `optimizer`.
            jit_compile: XLA-compile the train step: True, False or "auto" (`automatic_jit`).
            steps_per_execution: steps per `tf.function` call.
            **kwargs: passed to `keras.Model.compile` (not `metrics`, `weighted_metrics`).
        """
        refuse_compile_metrics(kwargs)
        if loss is None:
            loss = AnInfoNCE() if self.scaling is not None else InfoNCE()
        if not isinstance(loss, ContrastiveLoss):
            raise TypeError(
                "`loss` must be a ContrastiveLoss (InfoNCE, AnInfoNCE or a subclass); got "
                f"{type(loss).__name__}."
            )
        loss.check_scaling(self.scaling)
        optimizer = keras.optimizers.get(optimizer)
        if isinstance(concentration_optimizer, str) and concentration_optimizer == "default":
            concentration_optimizer = self._default_concentration_optimizer()
        concentration_optimizer = optimizers.concentration_optimizer(concentration_optimizer)
        if jit_compile == "auto":
            jit_compile, self.jit_compile_reason = automatic_jit(self, self.distribute_strategy)
            LOGGER.info("jit_compile='auto': %s", self.jit_compile_reason)
        elif not isinstance(jit_compile, bool):
            raise ValueError(f"`jit_compile` must be True, False or 'auto'; got {jit_compile!r}.")
        else:
            self.jit_compile_reason = f"jit_compile={jit_compile}, as passed"
        if not (is_integer(steps_per_execution) and steps_per_execution >= 1):
            raise ValueError(
                "`steps_per_execution` must be a positive number of steps per compiled call; "
                f"got {steps_per_execution!r}."
            )
        jit_compile, steps_per_execution = distribute.supported_execution(
            self.distribute_strategy, jit_compile, steps_per_execution
        )
        super().compile(
            optimizer=optimizer,
            jit_compile=jit_compile,
            steps_per_execution=steps_per_execution,
            **kwargs,
        )
        self.contrastive_loss = loss
        self.concentration_optimizer = concentration_optimizer
        self.step_metrics.track_statistics(loss.stat_names)
        self._contrastive_compile_config = dict(
            optimizer=optimizer,
            loss=loss,
            concentration_optimizer=concentration_optimizer,
            jit_compile=jit_compile,
            steps_per_execution=steps_per_execution,
        )
        self._build_optimizers()

    def get_compile_config(self):
        if not getattr(self, "_contrastive_compile_config", None):
            return {}
        return keras.saving.serialize_keras_object(self._contrastive_compile_config)

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))

    @property
    def metrics(self):
        return self.step_metrics.metrics

    def _losses_and_logs(self, data, training):
        view1, view2 = split_views(data)
        check_batched(view1, self.encoder)
        batch = view1.shape[0] or tf.shape(view1)[0]  # static where known
        u = self.embed(ops.concatenate([view1, view2], axis=0), training=training, scaled=False)
        z = u if self.scaling is None else self.scaling(u)
        z1, z2 = z[:batch], z[batch:]
        z1_all, z2_all, offset = distribute.gather_across_replicas(z1, z2)
        # `fit` and `evaluate` check every batch's rows (`fit_input`): no assertion in the
        # compiled step.
        with functional.rows_checked_upstream():
            row_losses, stats = self.contrastive_loss.per_row_losses(
                z1, z2, z1_all=z1_all, z2_all=z2_all, row_offset=offset
            )
        expected = self.contrastive_loss.stat_names
        if set(stats) != set(expected):
            raise ValueError(
                f"{type(self.contrastive_loss).__name__}.per_row_losses returned the statistics "
                f"{sorted(stats)}; its `stat_names` declare {sorted(expected)}."
            )
        loss = ops.mean(row_losses)
        values = {
            "loss": loss,
            **stats,
            # On the embeddings before Lambda_hat: comparable between losses.
            "alignment": functional.alignment(u[:batch], u[batch:]),
            "uniformity": functional.uniformity(u[:batch][:UNIFORMITY_ROWS]),
        }
        return loss, values

    def fit(self, x=None, *args, **kwargs):
        """Keras' `fit` of the pairs `x` (checked by `fit_input`).

        Raises:
            ValueError: for an infinite dataset without `steps_per_epoch` (or infinite
                `validation_data` without `validation_steps`), or no batch.
        """
        x = fit_input(x, _argument(args, kwargs, "batch_size", 1))
        steps = _argument(args, kwargs, "steps_per_epoch", 11)
        _check_steps(x, steps, "steps_per_epoch", "`fit` would never end its first epoch")
        validation = _argument(args, kwargs, "validation_data", 6)
        steps = _argument(args, kwargs, "validation_steps", 12)
        _check_steps(validation, steps, "validation_steps", "`fit` would never validate")
        if isinstance(x, tf.data.Dataset):
            kwargs.setdefault("shuffle", False)  # a dataset shuffles itself; Keras would warn
        counter = _EpochsWithSteps()
        callbacks = [*(kwargs.get("callbacks") or []), counter]
        if not any(isinstance(c, keras.callbacks.ProgbarLogger) for c in callbacks):
            callbacks.append(_ProgbarWithoutCounts())  # Keras adds its own only without one
        kwargs["callbacks"] = callbacks
        history = super().fit(x, *args, **kwargs)
        if counter.epochs and not counter.epochs_with_steps:
            raise ValueError(
                "`fit` ran no training step: the data yielded no batch. Check that the "
                "dataset is not empty and holds at least one full batch (with "
                "drop_remainder=True, fewer rows than `batch_size` give none)."
            )
        return history

    def evaluate(self, x=None, *args, **kwargs):
        """Keras' `evaluate` of the pairs `x`, checked as `fit` checks them (`fit_input`,
        and an infinite dataset needs `steps`)."""
        x = fit_input(x, _argument(args, kwargs, "batch_size", 1))
        if not kwargs.get("_use_cached_eval_dataset"):  # `fit`'s validation: fit checks it
            steps = _argument(args, kwargs, "steps", 4)
            _check_steps(x, steps, "steps", "`evaluate` would never end")
        return super().evaluate(x, *args, **kwargs)

    def train_step(self, data):
        main_variables, concentration_variables = self._split_variables()
        # Under mixed_float16 Keras wraps the main optimizer in a LossScaleOptimizer.
        # Lambda_hat's gradient flows through float32 ops only, so it takes the
        # unscaled loss: its own optimizer never sees the loss scale.
        loss_scaled = isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer)
        separate = bool(concentration_variables) and loss_scaled
        with tf.GradientTape(persistent=separate) as tape:
            loss, values = self._losses_and_logs(data, training=True)
            # Replica gradients are summed by the optimizer: scale to the global mean.
            replica_loss = loss / distribute.num_replicas()
            scaled_loss = self.optimizer.scale_loss(replica_loss)
        if separate:
            gradients = tape.gradient(scaled_loss, main_variables)
            gradients += tape.gradient(replica_loss, concentration_variables)
            del tape
        else:
            gradients = tape.gradient(scaled_loss, main_variables + concentration_variables)
        self._apply_gradients(gradients, main_variables, concentration_variables, separate)
        return self.step_metrics.update(
            values, self.concentration, distribute.is_multi_worker(self.distribute_strategy)
        )

    def test_step(self, data):
        _, values = self._losses_and_logs(data, training=False)
        return self.step_metrics.update(
            values, self.concentration, distribute.is_multi_worker(self.distribute_strategy)
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            encoder=keras.saving.serialize_keras_object(self.encoder),
            projector=keras.saving.serialize_keras_object(self.projector),
            normalize=self.normalize,
            scaling=keras.saving.serialize_keras_object(self.scaling),
        )
        if self.alignment is not None:  # absent otherwise: earlier releases load the file
            config["alignment"] = keras.saving.serialize_keras_object(self.alignment)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("encoder", "projector", "scaling", "alignment"):
            if key in config:  # `alignment` only where the model has one
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


def _build_embedding(encoder, projector, input_shape) -> tuple:
    """Builds the encoder and projector; the embeddings' shape, refused unless 2-D."""
    features = encoder.compute_output_spec(keras.KerasTensor(input_shape))
    if not encoder.built:
        encoder.build(input_shape)
    shape = features.shape
    if projector is not None:
        if not projector.built:
            projector.build(shape)
        shape = projector.compute_output_shape(shape)
    if len(shape) != 2:
        source = "encoder" if projector is None else "encoder and projector"
        raise ValueError(
            f"The embeddings must be [batch, features]; got shape {tuple(shape)} from the "
            f"{source}: end the encoder with a Flatten or GlobalAveragePooling2D."
        )
    return shape


__all__ = ["ContrastiveModel"]
