"""The loss variants the recipes run by name (`register_loss`, `loss_variant`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from aninfonce_tf.functional import check_temperature
from aninfonce_tf.layers import DiagonalScaling
from aninfonce_tf.losses import (
    CONCENTRATIONS,
    AnInfoNCE,
    ContrastiveLoss,
    InfoNCE,
    IsotropicAnInfoNCE,
)
from aninfonce_tf.step_metrics import RESERVED_LOG_NAMES


@dataclasses.dataclass(frozen=True)
class LossOptions:
    """The run settings a loss variant is built from (the recipes' loss flags).

    Args:
        normalized: embeddings lie on the unit sphere (InfoNCE cosine, else Euclidean).
        infonce_temperature: temperature of plain and hard-negative InfoNCE.
        hard_negative_beta: beta of the hard-negative variants.
        ensemble_temperatures: temperatures of the ensemble variants.
        initial_concentration: Lambda_hat's start; None: 1 / `infonce_temperature`.
        parametrization: Lambda_hat's parametrisation.
        seed: seed of Lambda_hat's initial noise.
        block_size: the losses' `block_size` (None: dense).

    Example:

    >>> options = LossOptions(infonce_temperature=0.1)
    >>> loss, scaling = loss_variant("infonce", **dataclasses.asdict(options))
    >>> type(loss).__name__, loss.temperature, scaling
    ('InfoNCE', 0.1, None)
    """

    normalized: bool = True
    infonce_temperature: float = 0.2
    hard_negative_beta: float = 0.5
    ensemble_temperatures: Sequence[float] = (0.05, 0.1, 0.5)
    initial_concentration: float | None = None
    parametrization: str = "exp"
    seed: int | None = None
    block_size: int | None = None

    @property
    def starting_concentration(self) -> float:
        """`initial_concentration`, or 1 / `infonce_temperature` without one.

        Example:

        >>> LossOptions(infonce_temperature=0.5).starting_concentration
        2.0
        """
        if self.initial_concentration is not None:
            return self.initial_concentration
        (temperature,) = check_temperature(self.infonce_temperature, "infonce_temperature")
        return 1.0 / temperature


@dataclasses.dataclass(frozen=True)
class LossVariant:
    """A registered loss variant: a loss class and the fixed options it is built with.

    Example:

    >>> variant = LOSS_VARIANTS["aninfonce_isotropic"]
    >>> variant.loss_class.__name__, variant.learns_concentration, variant.anisotropic
    ('IsotropicAnInfoNCE', True, False)
    """

    loss_class: type[ContrastiveLoss]
    options: Mapping = dataclasses.field(default_factory=dict)

    @property
    def learns_concentration(self) -> bool:
        """Whether the model holds a trainable Lambda_hat (diagonal or isotropic)."""
        return self.loss_class.concentration is not None

    @property
    def anisotropic(self) -> bool:
        """Whether Lambda_hat has one value per dimension."""
        return self.loss_class.concentration == "diagonal"

    @property
    def hard_negatives(self) -> bool:
        return bool(self.options.get("hard_negatives"))


# Every variant the recipes can run, by name: filled by `register_loss`.
LOSS_VARIANTS: dict[str, LossVariant] = {}
# The directories a run directory holds beside its variants' (`aninfonce_tf.runner`):
# no variant, whose directory is named after it, may take one of these names.
RUN_DIRECTORY_NAMES = ("backup", "tensorboard", "tensorboard_unreadable", "workers")


def check_loss_name(name) -> str:
    """`name` if it can name a loss variant, else a ValueError saying what a name may be.

    Example:

    >>> check_loss_name("squared_alignment")
    'squared_alignment'
    >>> check_loss_name("..")
    Traceback (most recent call last):
    ...
    ValueError: A loss variant's name must be a plain identifier (letters, digits and _, not starting with a digit) other than backup, tensorboard, tensorboard_unreadable, workers: it names the variant's directory in a run directory and its Keras model; got '..'.
    """
    if not (isinstance(name, str) and name.isidentifier()) or name in RUN_DIRECTORY_NAMES:
        raise ValueError(
            "A loss variant's name must be a plain identifier (letters, digits and _, not "
            f"starting with a digit) other than {', '.join(RUN_DIRECTORY_NAMES)}: it names "
            f"the variant's directory in a run directory and its Keras model; got {name!r}."
        )
    return name


def register_loss(name: str, **options):
    """Registers a `ContrastiveLoss` subclass as variant `name`. Details: docs/api.md#your-own-loss

    Example (a loss defined in a user's file):

    >>> import keras
    >>> @register_loss("squared_alignment")
    ... class SquaredAlignment(ContrastiveLoss):
    ...     def per_row_losses(self, z1, z2, z1_all=None, z2_all=None, row_offset=0):
    ...         return keras.ops.sum(keras.ops.square(z1 - z2), axis=-1), {}
    >>> loss, scaling = loss_variant("squared_alignment")
    >>> type(loss).__name__, scaling
    ('SquaredAlignment', None)
    >>> del LOSS_VARIANTS["squared_alignment"]
    """
    check_loss_name(name)

    def register(cls):
        if not (isinstance(cls, type) and issubclass(cls, ContrastiveLoss)):
            raise TypeError(f"`register_loss` takes a ContrastiveLoss subclass; got {cls!r}.")
        held = LOSS_VARIANTS.get(name)
        if held and (_class_name(held.loss_class), held.options) != (_class_name(cls), options):
            raise ValueError(
                f"The loss variant {name!r} is already registered to "
                f"{held.loss_class.__qualname__} with the options {dict(held.options)}; "
                "choose another name."
            )
        reserved = set(cls.stat_names) & set(RESERVED_LOG_NAMES)
        if reserved:
            raise ValueError(
                f"`{cls.__name__}.stat_names` uses the names {sorted(reserved)}, which the "
                "model logs itself; rename those statistics."
            )
        if cls.concentration not in (None, *CONCENTRATIONS):
            raise ValueError(
                f"`{cls.__name__}.concentration` must be None or one of {CONCENTRATIONS}; "
                f"got {cls.concentration!r}."
            )
        LOSS_VARIANTS[name] = LossVariant(cls, dict(options))
        return cls

    return register


def check_variants(names, **options) -> None:
    """Raises `ValueError` naming the first of `names` that `options` cannot build."""
    for name in names:
        try:
            loss_variant(name, **options)
        except ValueError as error:
            raise ValueError(f"The loss variant {name!r} cannot be built: {error}") from None


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _info_nce_from_options(
    cls: type[InfoNCE], options: LossOptions, hard_negatives: bool = False, ensemble: bool = False
) -> InfoNCE:
    beta = options.hard_negative_beta if hard_negatives else 0.0
    if ensemble:
        temperature = _ensemble_temperatures(options)
    else:
        temperature = check_temperature(options.infonce_temperature, "infonce_temperature")[0]
    similarity = "cosine" if options.normalized else "euclidean"
    return cls(
        similarity,
        temperature=temperature,
        hard_negative_beta=beta,
        block_size=options.block_size,
    )


def _an_info_nce_from_options(
    cls: type[AnInfoNCE], options: LossOptions, hard_negatives: bool = False, ensemble: bool = False
) -> AnInfoNCE:
    beta = options.hard_negative_beta if hard_negatives else 0.0
    temperature = 1.0
    if ensemble:
        temperatures = _ensemble_temperatures(options)
        median = float(np.median(temperatures))
        temperature = [t / median for t in temperatures]
    return cls(temperature=temperature, hard_negative_beta=beta, block_size=options.block_size)


def _ensemble_temperatures(options: LossOptions) -> list[float]:
    # Checked here, so that the message names the recipes' flag.
    return check_temperature(list(options.ensemble_temperatures), "ensemble_temperatures")


# The builders of this package's losses from the run's loss flags; a subclass is built
# by the builder of its nearest base here.
_BUILDERS = {AnInfoNCE: _an_info_nce_from_options, InfoNCE: _info_nce_from_options}


def _loss_from_options(
    loss_class: type[ContrastiveLoss], options: LossOptions, **variant_options
) -> ContrastiveLoss:
    """A variant's loss: `from_options`, its package base's builder, or the class itself."""
    if hasattr(loss_class, "from_options"):
        return loss_class.from_options(options, **variant_options)
    for base in loss_class.__mro__:
        if base in _BUILDERS:
            return _BUILDERS[base](loss_class, options, **variant_options)
    return loss_class(**variant_options)


def _concentration_layer(
    loss_class: type[ContrastiveLoss], options: LossOptions
) -> DiagonalScaling | None:
    """The Lambda_hat layer a model training `loss_class` holds (None: none)."""
    if loss_class.concentration == "isotropic":
        return DiagonalScaling(
            options.starting_concentration, parametrization=options.parametrization, tied=True
        )
    if loss_class.concentration == "diagonal":
        return DiagonalScaling(
            options.starting_concentration,
            parametrization=options.parametrization,
            initial_noise=0.1,
            seed=options.seed,
        )
    return None


def loss_variant(name: str, **options) -> tuple[ContrastiveLoss, DiagonalScaling | None]:
    """`(loss, scaling)` of the registered variant `name`: its loss and Lambda_hat layer
    (None without Lambda_hat).

    Args:
        name: a key of `LOSS_VARIANTS`.
        **options: fields of `LossOptions`.

    Example:

    >>> loss, scaling = loss_variant("aninfonce_ensemble", ensemble_temperatures=[0.5, 1, 2])
    >>> type(loss).__name__, loss.temperature, type(scaling).__name__
    ('AnInfoNCE', [0.5, 1.0, 2.0], 'DiagonalScaling')
    """
    if name not in LOSS_VARIANTS:
        raise ValueError(f"Unknown loss variant {name!r}; expected one of {tuple(LOSS_VARIANTS)}.")
    variant = LOSS_VARIANTS[name]
    run_options = LossOptions(**options)
    loss = _loss_from_options(variant.loss_class, run_options, **variant.options)
    if run_options.block_size and getattr(loss, "block_size", None) != run_options.block_size:
        raise ValueError(
            f"The loss variant {name!r} has no blockwise form: pass `block_size` None "
            "(`--loss-block-size 0`) for it."
        )
    return loss, _concentration_layer(variant.loss_class, run_options)


# The variants the recipes compare, in the order `--help` lists them.
for _name, _class, _options in (
    ("aninfonce", AnInfoNCE, {}),
    ("infonce", InfoNCE, {}),
    ("aninfonce_isotropic", IsotropicAnInfoNCE, {}),
    ("aninfonce_hard_negatives", AnInfoNCE, {"hard_negatives": True}),
    ("infonce_hard_negatives", InfoNCE, {"hard_negatives": True}),
    ("aninfonce_ensemble", AnInfoNCE, {"ensemble": True}),
    ("infonce_ensemble", InfoNCE, {"ensemble": True}),
):
    register_loss(_name, **_options)(_class)


__all__ = [
    "LOSS_VARIANTS",
    "LossOptions",
    "LossVariant",
    "RUN_DIRECTORY_NAMES",
    "check_loss_name",
    "check_variants",
    "loss_variant",
    "register_loss",
]
