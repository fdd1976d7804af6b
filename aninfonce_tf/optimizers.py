"""LARS and PyTorch's SGD (`weight_decay` an L2 term of the gradient), and the encoder's
and Lambda_hat's optimizers of a run. Details: docs/api.md#optimizers"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from aninfonce_tf.errors import check_flag, is_finite, is_number

OPTIMIZERS = ("adam", "adamw", "sgd", "lars", "muon")
# The variable name of `rotation.LearnedRotation`'s angles.
ROTATION_ANGLES = "angles"
LEARNING_RATE_SCHEDULES = ("constant", "cosine")


def _number_in(value, low: float, high: float) -> bool:
    """Whether `value` is a finite number (`is_finite`) from `low` to below `high`."""
    return is_finite(value) and low <= float(value) < high


class _CoupledWeightDecay(keras.optimizers.Optimizer):
    """Momentum with an L2 weight decay added to the gradient, but for excluded variables."""

    def __init__(
        self,
        learning_rate,
        momentum: float,
        weight_decay: float,
        exclude_vectors: bool,
        exclude_names: Sequence[str],
        **kwargs,
    ):
        # A number's learning rate only: a schedule, a callable or a variable is Keras'.
        if isinstance(learning_rate, (bool, np.bool_, str)) or (
            is_number(learning_rate) and not _number_in(learning_rate, 0.0, math.inf)
        ):
            raise ValueError(
                f"`learning_rate` must be a finite non-negative number or a schedule; got "
                f"{learning_rate!r}."
            )
        if isinstance(learning_rate, (np.generic, np.ndarray)):  # NumPy's, which Keras refuses
            learning_rate = float(learning_rate)
        super().__init__(learning_rate=learning_rate, **kwargs)
        if not _number_in(momentum, 0.0, 1.0):
            raise ValueError(f"`momentum` must be a number in [0, 1); got {momentum!r}.")
        if not _number_in(weight_decay, 0.0, math.inf):
            raise ValueError(
                f"`weight_decay` must be a finite non-negative number; got {weight_decay!r}."
            )
        if isinstance(exclude_names, str):
            raise TypeError(
                f"`exclude_names` must be a sequence of strings; got the string {exclude_names!r}."
            )
        self.momentum = float(momentum)
        # The coupled decay: Keras' decoupled step (`_apply_weight_decay`) is switched off.
        self.weight_decay = float(weight_decay)
        self.exclude_vectors = check_flag("exclude_vectors", exclude_vectors)
        self.exclude_names = tuple(exclude_names)

    def excluded(self, variable) -> bool:
        """Whether `variable` goes without decay (and, in LARS, adaptation)."""
        return (
            (self.exclude_vectors and len(variable.shape) <= 1)
            or any(name in variable.path for name in self.exclude_names)
            or not self._use_weight_decay(variable)
        )

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self.momentums = self.add_optimizer_variables(variables, "momentum")
        # Decided here, on Keras variables: `update_step` may get the backend's
        # variables (TensorFlow's, mirrored or not), which have no Keras path.
        self._exclusions = tuple(self.excluded(variable) for variable in variables)

    def _apply_weight_decay(self, variables):
        """No decoupled decay: `update_step` adds the L2 term to the gradient."""

    def _step_inputs(self, gradient, variable, learning_rate):
        """`(learning_rate, gradient with its L2 term, excluded, momentum buffer)`."""
        index = self._get_variable_index(variable)
        excluded = self._exclusions[index]
        gradient = ops.cast(gradient, variable.dtype)
        if self.weight_decay and not excluded:
            gradient = gradient + self.weight_decay * variable
        return ops.cast(learning_rate, variable.dtype), gradient, excluded, self.momentums[index]

    def get_config(self):
        config = super().get_config()
        config.update(
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            exclude_vectors=self.exclude_vectors,
            exclude_names=list(self.exclude_names),
        )
        return config


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class LARS(_CoupledWeightDecay):
    """LARS (You et al., 2017) as SimCLR's `lars_optimizer.py`. Details: docs/api.md#optimizers

    Args:
        learning_rate: float or `LearningRateSchedule` (SimCLR: 0.3 x B / 256).
        momentum: in [0, 1).
        weight_decay: coefficient of the L2 term (SimCLR on ImageNet: 1e-6).
        trust_coefficient: eta (SimCLR's `eeta`).
        exclude_vectors: exclude variables of rank <= 1.
        exclude_names: exclude variables whose path contains one of these.
        **kwargs: Keras' optimizer arguments (`use_ema`, `clipnorm`, ...).

    Example:

    >>> layer = keras.layers.Dense(2)
    >>> layer.build((None, 3))
    >>> optimizer = LARS(0.1, weight_decay=1e-4)
    >>> optimizer.build(layer.trainable_variables)
    >>> [optimizer.excluded(v) for v in layer.trainable_variables]  # kernel, bias
    [False, True]
    """

    def __init__(
        self,
        learning_rate=0.001,
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        trust_coefficient: float = 0.001,
        exclude_vectors: bool = True,
        exclude_names: Sequence[str] = (),
        name: str = "lars",
        **kwargs,
    ):
        if not _number_in(trust_coefficient, 0.0, math.inf) or float(trust_coefficient) == 0.0:
            raise ValueError(
                f"`trust_coefficient` must be a finite positive number; got {trust_coefficient!r}."
            )
        super().__init__(
            learning_rate,
            momentum,
            weight_decay,
            exclude_vectors,
            exclude_names,
            name=name,
            **kwargs,
        )
        self.trust_coefficient = float(trust_coefficient)

    def update_step(self, gradient, variable, learning_rate):
        learning_rate, gradient, excluded, velocity = self._step_inputs(
            gradient, variable, learning_rate
        )
        if not excluded:
            weight_norm = ops.sqrt(ops.sum(ops.square(variable)))
            gradient_norm = ops.sqrt(ops.sum(ops.square(gradient)))
            both = ops.logical_and(weight_norm > 0, gradient_norm > 0)
            ratio = ops.where(
                both,
                self.trust_coefficient * weight_norm / ops.where(both, gradient_norm, 1.0),
                1.0,
            )
            learning_rate = learning_rate * ops.cast(ratio, variable.dtype)
        self.assign(velocity, self.momentum * velocity + learning_rate * gradient)
        self.assign_sub(variable, velocity)

    def get_config(self):
        config = super().get_config()
        config["trust_coefficient"] = self.trust_coefficient
        return config


@keras.saving.register_keras_serializable(package="aninfonce_tf")
class CoupledSGD(_CoupledWeightDecay):
    """SGD with momentum as PyTorch's `torch.optim.SGD`. Details: docs/api.md#optimizers

    Args:
        learning_rate: float or `LearningRateSchedule`.
        momentum: in [0, 1).
        weight_decay: coefficient of the L2 term (SimSiam's CIFAR10: 5e-4).
        exclude_vectors: no decay on variables of rank <= 1.
        exclude_names: no decay on variables whose path contains one of these.
        **kwargs: Keras' optimizer arguments (`use_ema`, `clipnorm`, ...).

    Example (a weight under zero gradient, PyTorch's decay):

    >>> weight = keras.Variable([1.0])
    >>> optimizer = CoupledSGD(0.1, momentum=0.9, weight_decay=0.5)
    >>> for _ in range(2):
    ...     optimizer.apply([keras.ops.zeros(1)], [weight])
    >>> round(float(weight.numpy()[0]), 4)  # 1 - 0.05 = 0.95, then 0.95 - 0.1 * (0.45 + 0.475)
    0.8575
    """

    def __init__(
        self,
        learning_rate=0.01,
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        exclude_vectors: bool = False,
        exclude_names: Sequence[str] = (),
        name: str = "coupled_sgd",
        **kwargs,
    ):
        super().__init__(
            learning_rate,
            momentum,
            weight_decay,
            exclude_vectors,
            exclude_names,
            name=name,
            **kwargs,
        )

    def update_step(self, gradient, variable, learning_rate):
        learning_rate, gradient, _, buffer = self._step_inputs(gradient, variable, learning_rate)
        self.assign(buffer, self.momentum * buffer + gradient)
        self.assign_sub(variable, learning_rate * buffer)


def uses_weight_average(optimizer) -> bool:
    """Whether `optimizer` (or the one a `LossScaleOptimizer` wraps) has `use_ema=True`."""
    return bool(getattr(getattr(optimizer, "inner_optimizer", optimizer), "use_ema", False))


@contextlib.contextmanager
def averaged_weights(model: keras.Model):
    """Within the block the model holds its optimizer's moving average of the weights."""
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


def concentration_optimizer(value) -> keras.optimizers.Optimizer | None:
    """`compile`'s `concentration_optimizer` as an optimizer (a rate: Adam; None: None)."""
    if isinstance(value, bool):
        raise TypeError(
            "`concentration_optimizer` must be an optimizer, its name or a learning rate; "
            f"got {value}."
        )
    if isinstance(value, numbers.Real):
        rate = float(value)
        if not (math.isfinite(rate) and rate >= 0):
            raise ValueError(
                "`concentration_optimizer` as a learning rate must be finite and not "
                f"negative; got {value}."
            )
        return keras.optimizers.Adam(rate)
    return None if value is None else keras.optimizers.get(value)


def check_settings(config) -> None:
    """Raises `ValueError` for a run config's optimizer settings that contradict each other."""
    if config.weight_decay and config.optimizer == "adam":
        raise ValueError(
            f"`weight_decay` ({config.weight_decay}) would be ignored by `optimizer` adam; "
            "use adamw (decoupled decay), sgd or muon, or pass --weight-decay 0."
        )
    if config.l2_weight_decay and (config.optimizer not in ("sgd", "lars") or config.weight_decay):
        raise ValueError(
            f"`l2_weight_decay` ({config.l2_weight_decay}) needs `optimizer` sgd or lars and "
            f"no decoupled `weight_decay`; got {config.optimizer!r} and {config.weight_decay}."
        )
    if config.optimizer == "lars" and config.weight_decay:
        raise ValueError(
            f"`optimizer` lars decays the weights by `l2_weight_decay` (inside the trust "
            f"ratio, as SimCLR); got the decoupled `weight_decay` {config.weight_decay}."
        )
    if config.muon_exclude and config.optimizer != "muon":
        raise ValueError(
            f"`muon_exclude` ({config.muon_exclude!r}) needs `optimizer` muon; got "
            f"{config.optimizer!r} (with a preset that sets it, pass --muon-exclude '')."
        )


def encoder_optimizer(config) -> keras.optimizers.Optimizer:
    """The encoder's and projector's optimizer and schedule of a `RunConfig`."""
    optimizer = _encoder_optimizer(config)
    optimizer.exclude_from_weight_decay(var_names=[ROTATION_ANGLES])
    return optimizer


def _encoder_optimizer(config) -> keras.optimizers.Optimizer:
    learning_rate = config.learning_rate
    cosine = config.learning_rate_schedule == "cosine"
    if cosine or config.warmup_steps:
        # A linear warm-up from 0 to `learning_rate`, then a cosine decay to 0, or no
        # decay (alpha = 1: the cosine ends where it starts).
        learning_rate = keras.optimizers.schedules.CosineDecay(
            0.0 if config.warmup_steps else config.learning_rate,
            decay_steps=max(config.steps - config.warmup_steps, 1),
            alpha=0.0 if cosine else 1.0,
            warmup_target=config.learning_rate if config.warmup_steps else None,
            warmup_steps=config.warmup_steps,
        )
    # Keras keeps the average in the optimizer; ContrastiveModel extends it to Lambda_hat.
    average = dict(use_ema=True, ema_momentum=config.ema_momentum) if config.ema_momentum else {}
    if config.optimizer == "lars":
        return LARS(
            learning_rate,
            momentum=config.momentum,
            weight_decay=config.l2_weight_decay,
            **average,
        )
    if config.optimizer == "sgd" and config.l2_weight_decay:
        # PyTorch's weight decay: an L2 term of the gradient, through the momentum.
        return CoupledSGD(
            learning_rate,
            momentum=config.momentum,
            weight_decay=config.l2_weight_decay,
            **average,
        )
    if config.optimizer == "sgd":
        return keras.optimizers.SGD(
            learning_rate,
            momentum=config.momentum,
            weight_decay=config.weight_decay or None,
            **average,
        )
    if config.optimizer == "muon":
        # Muon orthogonalises each kernel's update, so directions with small gradients
        # move as fast as the rest; Adam updates biases and the excluded layers.
        return keras.optimizers.Muon(
            learning_rate,
            weight_decay=config.weight_decay,
            adam_weight_decay=config.weight_decay,
            exclude_layers=config.muon_exclude_layers(),
            **average,
        )
    if config.optimizer == "adamw":
        return keras.optimizers.AdamW(learning_rate, weight_decay=config.weight_decay, **average)
    return keras.optimizers.Adam(learning_rate, **average)


__all__ = [
    "LARS",
    "averaged_weights",
    "concentration_optimizer",
    "uses_weight_average",
    "LEARNING_RATE_SCHEDULES",
    "OPTIMIZERS",
    "CoupledSGD",
    "check_settings",
    "encoder_optimizer",
]
