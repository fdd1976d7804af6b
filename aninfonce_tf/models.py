"""`ContrastiveModel`: encoder -> projector -> sphere -> Lambda_hat, trained by `fit`.

The train step embeds both views in one forward pass, gathers the embeddings of
every replica so that each anchor sees the whole global batch as negatives, and
updates Lambda_hat with its own optimizer (the authors use 10x the encoder's rate).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import warnings
from pathlib import Path

import keras
import tensorflow as tf
from keras import ops

from aninfonce_tf import distribute
from aninfonce_tf import ops as core
from aninfonce_tf.checkpoints import write_json
from aninfonce_tf.layers import DiagonalScaling
from aninfonce_tf.losses import AnInfoNCE, InfoNCE

VIEW_KEYS = ("view1", "view2")
# The uniformity metric is estimated on at most this many rows of view 1: its pairs
# grow with the square of the rows, and at 1000 rows it cost 1 ms of a 56 ms step.
UNIFORMITY_ROWS = 512


def training_views(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` as training reads it: of a dict batch only its two views, and a batch
    of fewer than 2 rows refused.

    Both happen in tf.data, before the compiled step: extra keys (latents,
    augmentation parameters, labels, file names) would otherwise be fed to it, where
    XLA refuses strings, and XLA drops the assertion on a last batch of one row.

    Example:

    >>> rows = {"view1": np.zeros((5, 2)), "view2": np.ones((5, 2)), "name": ["a"] * 5}
    >>> data = training_views(tf.data.Dataset.from_tensor_slices(rows).batch(2))
    >>> sorted(data.element_spec)
    ['view1', 'view2']
    >>> [len(batch["view1"]) for batch in data.take(2)]
    [2, 2]
    >>> list(data)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tensorflow.python.framework.errors_impl.InvalidArgumentError: ...at least 2 rows...
    """
    spec = dataset.element_spec
    if isinstance(spec, tuple) and len(spec) == 1:  # `Dataset.from_tensors((batch,))`
        spec = spec[0]
    if isinstance(spec, dict) and all(key in spec for key in VIEW_KEYS):
        extra_keys, view = len(spec) > len(VIEW_KEYS), spec["view1"]
    elif isinstance(spec, tuple) and len(spec) == 2:
        extra_keys, view = False, spec[0]
    else:
        return dataset  # `split_views` says what is wrong with it
    rows = view.shape[0] if view.shape.rank else None
    if not extra_keys and rows is not None:
        return dataset

    def views(*batch):
        batch = batch[0] if len(batch) == 1 else batch
        if isinstance(batch, dict):
            batch = {key: batch[key] for key in VIEW_KEYS}
        if rows is not None:
            return batch
        first = batch["view1"] if isinstance(batch, dict) else batch[0]
        check = tf.debugging.assert_greater_equal(
            tf.shape(first)[0],
            2,
            message=(
                "Each batch needs at least 2 rows to have negatives: batch the dataset with "
                "drop_remainder=True, or so that no last batch of one row is left. Rows"
            ),
        )
        with tf.control_dependencies([check]):
            return tf.nest.map_structure(tf.identity, batch)

    return dataset.map(views)


def _training_input(x, batch_size: int | None):
    """`fit`'s `x` with `training_views` applied (a dataset) or checked (arrays)."""
    if isinstance(x, tf.data.Dataset):
        return training_views(x)
    if isinstance(x, dict) and all(key in x for key in VIEW_KEYS):
        x = {key: x[key] for key in VIEW_KEYS}
    arrays = [a for a in keras.tree.flatten(x) if getattr(a, "shape", None)]
    if arrays:
        rows, batch_size = int(arrays[0].shape[0]), batch_size or 32  # Keras' default
        if rows % batch_size == 1:
            raise ValueError(
                f"{rows} rows in batches of {batch_size} leave a last batch of one row, which "
                "has no negatives: drop a row, or pass another `batch_size`."
            )
    return x


def split_views(data):
    """Returns `(view1, view2)` from a `(view1, view2)` tuple or a dict with those keys.

    Raises:
        TypeError: for any other structure.
        ValueError: when the two views' static shapes differ.
    """
    while isinstance(data, (tuple, list)) and len(data) == 1:
        # `fit(x=(view1, view2))` and `fit(x=dict)` arrive wrapped as a 1-tuple.
        data = data[0]
    if isinstance(data, dict):
        missing = [key for key in VIEW_KEYS if key not in data]
        if missing:
            raise TypeError(
                f"A dict batch needs the keys {VIEW_KEYS}; missing {missing} in {sorted(data)}."
            )
        view1, view2 = data["view1"], data["view2"]
    elif isinstance(data, (tuple, list)) and len([d for d in data if d is not None]) == 2:
        # Keras' array adapters pad `(x, y)` with a `None` sample weight.
        view1, view2 = [d for d in data if d is not None]
    else:
        raise TypeError(
            "Each batch must be `(view1, view2)` or a dict with 'view1' and 'view2'; "
            f"got {type(data).__name__}."
        )
    for name, view in (("view1", view1), ("view2", view2)):
        dtype = keras.backend.standardize_dtype(view.dtype)
        if not (dtype.startswith(("float", "int", "uint", "bfloat"))):
            raise TypeError(f"`{name}` must hold numbers; got dtype {dtype}.")
    if tuple(view1.shape) != tuple(view2.shape) and None not in (*view1.shape, *view2.shape):
        raise ValueError(
            f"`view1` and `view2` must have the same shape; got {tuple(view1.shape)} "
            f"and {tuple(view2.shape)} (`fit(x, y)` and `(x, y)` batches are read as the two "
            "views, not as inputs and targets)."
        )
    return view1, view2


class _StepCounter(keras.callbacks.Callback):
    """Counts the epochs one `fit` began and those that ran a step: Keras ends an
    epoch without any step with empty logs. (Per epoch: a per-batch hook would
    make Keras sync every step.)"""

    def __init__(self):
        super().__init__()
        self.epochs = self.epochs_with_steps = 0

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs += 1

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_with_steps += bool(logs and "loss" in logs)


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class LatestValue(keras.metrics.Metric):
    """A metric that reports the last value it was given (a value every replica
    holds alike, such as a statistic of Lambda_hat: the first replica's is kept).

    Example:

    >>> metric = LatestValue(name="lambda_max")
    >>> metric.update_state(3.0); metric.update_state(5.0)
    >>> float(metric.result())
    5.0
    """

    def __init__(self, name: str = "latest_value", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.value = self.add_variable(
            shape=(), initializer="zeros", name="value", aggregation="only_first_replica"
        )

    def update_state(self, value):
        self.value.assign(ops.cast(value, self.dtype))

    def result(self):
        return ops.convert_to_tensor(self.value)


def uses_weight_average(optimizer) -> bool:
    """Whether `optimizer` (or the one a `LossScaleOptimizer` wraps) keeps Keras'
    exponential moving average of the weights (`use_ema=True`)."""
    return bool(getattr(getattr(optimizer, "inner_optimizer", optimizer), "use_ema", False))


@contextlib.contextmanager
def averaged_weights(model: keras.Model):
    """Within the block the model holds its optimizer's moving average of the weights
    (`use_ema=True`), afterwards its own weights again; without an average, nothing
    changes. Uses `keras.callbacks.SwapEMAWeights`, whose swap keeps no third copy.
    """
    if not uses_weight_average(model.optimizer):
        yield model
        return
    swap = keras.callbacks.SwapEMAWeights()
    swap.set_model(model)
    swap.on_test_begin()
    try:
        yield model
    finally:
        swap.on_test_end()


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class ContrastiveModel(keras.Model):
    """Contrastive learner over positive pairs, for plain InfoNCE or AnInfoNCE.

    `model(x)` returns encoder features; `model.embed(x)` the embeddings the loss
    sees. Compile with `loss=InfoNCE(...)` or `AnInfoNCE(...)` (default: AnInfoNCE
    when there is a `scaling`, cosine InfoNCE otherwise) and fit on a dataset of
    `(view1, view2)` or of dicts with `view1`, `view2` and extra keys (latents,
    augmentation parameters, labels, strings too) that training drops before its
    compiled step (`training_views`).

    Args:
        encoder: any Keras model or layer, images/observations -> features.
        projector: optional head applied to the features during training.
        normalize: project embeddings onto the unit sphere (in float32).
        scaling: optional `DiagonalScaling` holding Lambda_hat.

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
        **kwargs,
    ):
        super().__init__(**kwargs)
        if scaling is not None and not isinstance(scaling, DiagonalScaling):
            raise TypeError(f"`scaling` must be a DiagonalScaling; got {type(scaling).__name__}.")
        self.encoder = encoder
        self.projector = projector
        self.normalize = bool(normalize)
        self.scaling = scaling
        self.concentration_optimizer = None
        self.contrastive_loss = None
        self._trackers = {
            name: keras.metrics.Mean(name=name)
            for name in ("loss", "accuracy", "alignment", "uniformity", "candidates")
        }
        if scaling is not None:
            self._trackers.update(
                {name: LatestValue(name=name) for name in ("lambda_min", "lambda_max")}
            )
        if getattr(encoder, "built", False) and getattr(encoder, "inputs", None):
            self.build(tuple(encoder.inputs[0].shape))

    def build(self, input_shape):
        if isinstance(input_shape, dict):
            input_shape = input_shape["view1"]
        features = self.encoder.compute_output_spec(keras.KerasTensor(input_shape))
        if not self.encoder.built:
            self.encoder.build(input_shape)
        shape = features.shape
        if self.projector is not None:
            if not self.projector.built:
                self.projector.build(shape)
            shape = self.projector.compute_output_shape(shape)
        if len(shape) != 2:
            source = "encoder" if self.projector is None else "encoder and projector"
            raise ValueError(
                f"The embeddings must be [batch, features]; got shape {tuple(shape)} from the "
                f"{source}: end the encoder with a Flatten or GlobalAveragePooling2D."
            )
        if self.scaling is not None and not self.scaling.built:
            self.scaling.build(shape)
        self.built = True
        self._build_optimizers()

    def call(self, inputs, training=False):
        if isinstance(inputs, dict):
            inputs = inputs["view1"]
        return self.encoder(inputs, training=training)

    def embed(self, inputs, training=False, scaled=True):
        """Embeddings the loss sees: projected, normalised, scaled by sqrt(Lambda_hat).

        `scaled=False` stops before the scaling: the representation whose
        identifiability the paper measures.
        """
        z = self(inputs, training=training)
        if self.projector is not None:
            z = self.projector(z, training=training)
        z = ops.cast(z, "float32")
        if self.normalize:
            z = core.l2_normalize(z)
        if self.scaling is not None and scaled:
            z = self.scaling(z)
        return z

    @property
    def concentration(self):
        """Lambda_hat, shape `[d]`; None for plain InfoNCE without scaling."""
        return None if self.scaling is None else self.scaling.concentration

    def compile(
        self,
        optimizer="adam",
        loss: InfoNCE | None = None,
        concentration_optimizer=None,
        jit_compile: bool | str = True,
        steps_per_execution: int = 1,
        **kwargs,
    ):
        """Configures training.

        Args:
            optimizer: optimizer (or its name) of the encoder and projector. With
                `use_ema=True` its moving average covers Lambda_hat too; `fit` ends
                on the average and `EvaluationCallback` scores it.
            loss: an `InfoNCE`/`AnInfoNCE` instance; default AnInfoNCE with a
                `scaling`, cosine InfoNCE (temperature 0.1) without.
            concentration_optimizer: optimizer of Lambda_hat, or a learning rate (a
                finite number >= 0): Adam at that rate (the authors' choice; none of
                `optimizer`'s weight decay, clipping or EMA). None uses `optimizer` for
                all. Under mixed_float16 it skips the steps that the encoder's
                LossScaleOptimizer skips for overflow.
            jit_compile: XLA-compile the train step (on CPU Keras' "auto" turns XLA
                off, and XLA is faster here).
            steps_per_execution: steps run per `tf.function` call (1 under the
                mirrored strategies, where more fails: keras-team/keras#19246).
            **kwargs: passed to `keras.Model.compile`, except `metrics` and
                `weighted_metrics`, which are refused: there are no targets for them.

        Raises:
            ValueError: for `metrics` or `weighted_metrics`.
        """
        for name in ("metrics", "weighted_metrics"):
            if kwargs.get(name):
                raise ValueError(
                    f"`{name}` cannot be used: Keras metrics compare outputs with targets, "
                    "which contrastive pairs do not have. The logs already hold `loss`, "
                    "`accuracy` (how often the positive ranks first), `alignment` and "
                    "`uniformity`; to score the representation during `fit`, pass an "
                    "evaluator to `aninfonce_tf.EvaluationCallback`."
                )
        if loss is None:
            loss = AnInfoNCE() if self.scaling is not None else InfoNCE()
        if not isinstance(loss, InfoNCE):
            raise TypeError(f"`loss` must be an InfoNCE or AnInfoNCE; got {type(loss).__name__}.")
        self._check_loss_fits_scaling(loss)
        optimizer = keras.optimizers.get(optimizer)
        if isinstance(concentration_optimizer, bool):
            raise TypeError(
                "`concentration_optimizer` must be an optimizer, its name or a learning rate; "
                f"got {concentration_optimizer}."
            )
        if isinstance(concentration_optimizer, numbers.Real):
            rate = float(concentration_optimizer)
            if not (math.isfinite(rate) and rate >= 0):
                raise ValueError(
                    "`concentration_optimizer` as a learning rate must be finite and not "
                    f"negative; got {concentration_optimizer}."
                )
            concentration_optimizer = keras.optimizers.Adam(rate)
        elif concentration_optimizer is not None:
            concentration_optimizer = keras.optimizers.get(concentration_optimizer)
        if jit_compile and not distribute.supports_jit(self.distribute_strategy):
            jit_compile = False
        if steps_per_execution > 1 and not distribute.supports_multi_step(self.distribute_strategy):
            warnings.warn(
                f"steps_per_execution={steps_per_execution} fails under "
                f"{type(self.distribute_strategy).__name__} (keras-team/keras#19246): "
                "running one step per call.",
                stacklevel=2,
            )
            steps_per_execution = 1
        super().compile(
            optimizer=optimizer,
            jit_compile=jit_compile,
            steps_per_execution=steps_per_execution,
            **kwargs,
        )
        self.contrastive_loss = loss
        self.concentration_optimizer = concentration_optimizer
        self._contrastive_compile_config = dict(
            optimizer=optimizer,
            loss=loss,
            concentration_optimizer=concentration_optimizer,
            jit_compile=jit_compile,
            steps_per_execution=steps_per_execution,
        )
        self._build_optimizers()

    def _check_loss_fits_scaling(self, loss: InfoNCE) -> None:
        if self.scaling is not None and loss.similarity == "cosine":
            raise ValueError(
                "A cosine InfoNCE normalises away the `scaling` (Lambda_hat), which would "
                "train without effect; use AnInfoNCE(), or a model without `scaling`."
            )
        if self.scaling is None and isinstance(loss, AnInfoNCE):
            raise ValueError(
                "AnInfoNCE needs the model's `scaling` (a DiagonalScaling holding "
                "Lambda_hat); without it, it is a Euclidean InfoNCE at a fixed concentration."
            )

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Under a strategy Keras builds the model from the first batch averaged over
        # the replicas; MultiWorkerMirroredStrategy cannot reduce a dict batch and
        # fails. The model and both optimizers are built before `fit` (`build`,
        # `compile`), as without a strategy, where Keras skips this step too.
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
        if uses_weight_average(self.optimizer):
            # Keras averages the variables an optimizer was built on and, at the end of
            # `fit`, writes the average into every trainable variable of the model: the
            # main optimizer's average covers Lambda_hat too (which it never updates).
            main_variables = self.trainable_variables
        for optimizer, variables in (
            (self.optimizer, main_variables),
            (self.concentration_optimizer, concentration_variables),
        ):
            if optimizer is not None and variables and not optimizer.built:
                optimizer.build(variables)

    def get_compile_config(self):
        if not getattr(self, "_contrastive_compile_config", None):
            return {}
        return keras.saving.serialize_keras_object(self._contrastive_compile_config)

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))

    @property
    def metrics(self):
        return list(self._trackers.values())

    def _split_variables(self):
        if self.concentration_optimizer is None or self.scaling is None:
            return self.trainable_variables, []
        concentration_ids = {id(v) for v in self.scaling.trainable_variables}
        others = [v for v in self.trainable_variables if id(v) not in concentration_ids]
        return others, list(self.scaling.trainable_variables)

    def _losses_and_logs(self, data, training):
        view1, view2 = split_views(data)
        inputs = getattr(self.encoder, "inputs", None)  # known for functional encoders
        rank = view1.shape.rank
        if inputs and rank is not None and view1.shape.is_compatible_with(inputs[0].shape[1:]):
            raise ValueError(
                f"The views have shape {tuple(view1.shape)} and the encoder takes "
                f"{tuple(inputs[0].shape)}: each element of the data must be a batch of "
                "views; batch the dataset (`dataset.batch(batch_size)`)."
            )
        batch = tf.shape(view1)[0]
        u = self.embed(ops.concatenate([view1, view2], axis=0), training=training, scaled=False)
        z = u if self.scaling is None else self.scaling(u)
        z1, z2 = z[:batch], z[batch:]
        core.validate_pair(z1, z2)
        z1_all, z2_all, offset = distribute.gather_across_replicas(z1, z2)
        row_losses, stats = self.contrastive_loss.per_row_losses(
            z1, z2, z1_all=z1_all, z2_all=z2_all, row_offset=offset, return_stats=True
        )
        loss = ops.mean(row_losses)
        values = {
            "loss": loss,
            "accuracy": stats["accuracy"],
            # On the embeddings before Lambda_hat: comparable between the two losses.
            "alignment": core.alignment(u[:batch], u[batch:]),
            "uniformity": core.uniformity(u[:batch][:UNIFORMITY_ROWS]),
            # Candidates per anchor row: 2B - 1 for NT-Xent over the global batch B,
            # whatever the strategy (each replica contrasts against every replica).
            "candidates": stats["candidates"],
        }
        return loss, values

    def _logs(self, values):
        if self.scaling is not None:
            # Read after the update: the Lambda_hat the next step uses.
            values = dict(values)
            values["lambda_min"] = ops.min(self.scaling.concentration)
            values["lambda_max"] = ops.max(self.scaling.concentration)
        for name, value in values.items():
            self._trackers[name].update_state(value)
        logs = {name: tracker.result() for name, tracker in self._trackers.items()}
        if distribute.is_multi_worker(self.distribute_strategy):
            # Keras 3 reduces step outputs of a multi-worker strategy along axis 0,
            # which fails on scalars (tensorflow/tensorflow#72388): give them one.
            logs = {name: ops.reshape(value, [1]) for name, value in logs.items()}
        return logs

    def fit(self, x=None, *args, **kwargs):
        x = _training_input(x, kwargs.get("batch_size") or (args[1] if len(args) > 1 else None))
        counter = _StepCounter()
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), counter]
        history = super().fit(x, *args, **kwargs)
        if counter.epochs and not counter.epochs_with_steps:
            raise ValueError(
                "`fit` ran no training step: the data yielded no batch. Check that the "
                "dataset is not empty and holds at least one full batch (with "
                "drop_remainder=True, fewer rows than `batch_size` give none)."
            )
        return history

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
        split = len(main_variables)
        if concentration_variables:
            # First, so that a weight average kept by the main optimizer sees this step's
            # Lambda_hat.
            if separate:
                self._update_concentration_unless_overflow(gradients[:split], gradients[split:])
            else:
                self.concentration_optimizer.apply(gradients[split:], concentration_variables)
        self.optimizer.apply(gradients[:split], main_variables)
        return self._logs(values)

    def _update_concentration_unless_overflow(self, main_gradients, gradients):
        """One step, one rule: when the loss scale overflows the encoder's gradients the
        LossScaleOptimizer skips the step, and Lambda_hat's optimizer skips it too (the
        same test on the same gradients, in a cross-replica `cond` as Keras' own where
        the strategy needs one)."""
        variables = self.scaling.trainable_variables

        def update(gradients):
            self.concentration_optimizer.apply(gradients, variables)

        if tf.__internal__.distribute.strategy_supports_no_merge_call():
            finite = self.optimizer.check_finite(main_gradients)
            ops.cond(finite, lambda: update(gradients), lambda: None)
            return

        def cross_replica(strategy, main_gradients, gradients):
            finite = strategy.experimental_local_results(
                strategy.extended.call_for_each_replica(
                    self.optimizer.check_finite, args=(main_gradients,)
                )
            )[0]
            each = strategy.extended.call_for_each_replica
            ops.cond(finite, lambda: each(update, args=(gradients,)), lambda: None)

        tf.distribute.get_replica_context().merge_call(
            cross_replica, args=(main_gradients, gradients)
        )

    def test_step(self, data):
        _, values = self._losses_and_logs(data, training=False)
        return self._logs(values)

    def get_config(self):
        config = super().get_config()
        config.update(
            encoder=keras.saving.serialize_keras_object(self.encoder),
            projector=keras.saving.serialize_keras_object(self.projector),
            normalize=self.normalize,
            scaling=keras.saving.serialize_keras_object(self.scaling),
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("encoder", "projector", "scaling"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


def export_encoder(
    model: ContrastiveModel, directory: str | Path, input_spec: tf.TensorSpec | None = None
) -> Path:
    """Exports a trained model as a TF SavedModel whose endpoints take a batch of
    observations and return float32:

    - `serve`: the encoder's features (the backbone output, what downstream tasks
      usually take);
    - `embed`: the embedding that Lambda_hat belongs to and whose identifiability the
      theory is about: the projector output, on the unit sphere when the model
      normalises, before the scaling (`model.embed(x, scaled=False)`);
    - `embed_scaled` (with a Lambda_hat): that embedding times sqrt(Lambda_hat), what
      the loss compares (`model.embed(x)`).

    With a Lambda_hat, `concentration.json` beside them holds it (`lambda_hat`) and
    the endpoint whose dimensions it weighs (`space`: `"embed"`).

    Load it without this package with `keras.layers.TFSMLayer(directory,
    call_endpoint="serve")` (or `"embed"`), or in two lines, `encoder =
    tf.saved_model.load(directory)` then `encoder.serve(x)`. Keep the loaded object:
    its functions hold its variables only weakly (TensorFlow's design), so calling
    `serve` on a loaded object that nothing keeps fails with "variables which have
    been deleted".

    Args:
        model: a trained `ContrastiveModel`.
        directory: the SavedModel directory to write.
        input_spec: a batch of observations' spec (its batch size is left open);
            default: the input of a functional or Sequential encoder.

    Returns:
        `directory`.

    Example:

    >>> import json, tempfile
    >>> encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    >>> model = ContrastiveModel(encoder, scaling=DiagonalScaling(5.0))
    >>> path = export_encoder(model, tempfile.mkdtemp() + "/encoder")
    >>> loaded = tf.saved_model.load(str(path))
    >>> x = np.ones((2, 4), "float32")
    >>> tuple(loaded.serve(x).shape), np.linalg.norm(loaded.embed(x), axis=1).round(4)
    ((2, 3), array([1., 1.], dtype=float32))
    >>> json.loads((path / "concentration.json").read_text())["space"]
    'embed'
    """
    directory = Path(directory)
    encoder = model.encoder
    if input_spec is None:
        if not getattr(encoder, "inputs", None):
            raise ValueError(
                "`input_spec` is needed for an encoder without a defined input "
                "(a subclassed model); pass e.g. `dataset.element_spec[0]`."
            )
        input_spec = tf.TensorSpec(encoder.inputs[0].shape, encoder.inputs[0].dtype)
    archive = keras.export.ExportArchive()
    for layer in (encoder, model.projector, model.scaling):
        if layer is not None:
            archive.track(layer)
    spec = tf.TensorSpec([None, *input_spec.shape[1:]], input_spec.dtype, name="observations")
    endpoints = {
        "serve": lambda x: tf.cast(encoder(x, training=False), tf.float32),
        "embed": lambda x: model.embed(x, scaled=False),
    }
    if model.scaling is not None:
        endpoints["embed_scaled"] = lambda x: model.embed(x)
    for name, function in endpoints.items():
        archive.add_endpoint(name, tf.function(function, autograph=False), input_signature=[spec])
    archive.write_out(str(directory), verbose=False)
    if model.concentration is not None:
        embedding = "projector output" if model.projector is not None else "encoder output"
        sphere = " on the unit sphere" if model.normalize else ""
        concentration = {
            "lambda_hat": [float(v) for v in ops.convert_to_numpy(model.concentration)],
            "space": "embed",
            "description": (
                "Lambda_hat, one value per dimension of the output of the `embed` endpoint: "
                f"the {embedding}{sphere}, before the scaling. `embed_scaled` returns it "
                "times sqrt(Lambda_hat); the features of `serve` are another space."
            ),
        }
        write_json(directory / "concentration.json", concentration)
    return directory
