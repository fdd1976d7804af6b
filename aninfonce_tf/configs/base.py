"""The run configuration every experiment shares: an experiment's config subclasses
`RunConfig` and adds its fields with `option(...)`; every field is a flag."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import numbers
import typing

from aninfonce_tf import memory, optimizers
from aninfonce_tf.distribute import STRATEGIES
from aninfonce_tf.errors import UsageError, is_finite, is_integer
from aninfonce_tf.evaluation.targets import check_stop_patience
from aninfonce_tf.layers import PARAMETRIZATIONS
from aninfonce_tf.loss_variants import LOSS_VARIANTS, check_loss_name, check_variants
from aninfonce_tf.parsing import strict_float, strict_int

# Fields that say where and how a run executes, not what it computes: a run may
# resume with other values of these.
EXECUTION_FIELDS = (
    "strategy",
    "tpu",
    "export",
    "steps_per_execution",
    "log_every",
    "tensorboard_all_scores",
)
# The largest `seed`: NumPy's and Keras' global seeds are 32-bit.
MAX_SEED = 2**32 - 1
# A field's check of its value alone: `rule(name, value)` raises `ValueError`.
Rule = typing.Callable[[str, typing.Any], None]
# The sections of the flags in `--help`, in order (`option(group=...)`), and those of
# the shared fields (`RunConfig`'s); every other field is in the first.
GROUPS = ("experiment", "training", "evaluation", "devices and saving")
RUN_GROUPS = {
    "training": (
        *("steps", "batch_size", "optimizer", "learning_rate", "learning_rate_schedule"),
        *("warmup_steps", "momentum", "ema_momentum", "weight_decay", "l2_weight_decay"),
        *("muon_exclude", "concentration_learning_rate", "parametrization"),
        *("initial_concentration", "infonce_temperature", "hard_negative_beta"),
        *("ensemble_temperatures", "loss_block_size"),
    ),
    "evaluation": (
        *("eval_every", "log_every", "tensorboard_all_scores", "stop_at", "stop_patience"),
    ),
    "devices and saving": (
        *("save_every", "mixed_precision", "jit_compile", "steps_per_execution"),
        *("strategy", "tpu", "export"),
    ),
}


# `jit_compile`'s help for the convolutional experiments, whose default is False.
CONVOLUTIONAL_JIT_HELP = "XLA-compile the train step (slower for convolutions on a CPU)"


@contextlib.contextmanager
def as_usage_errors():
    """Raises the `ValueError`s of checks of the user's input as `UsageError`s (one line).

    Example:

    >>> with as_usage_errors():
    ...     RunConfig(steps=0).validate()
    Traceback (most recent call last):
    ...
    aninfonce_tf.errors.UsageError: `steps` (0) must be a positive multiple of `eval_every` (500).
    """
    try:
        yield
    except UsageError:
        raise
    except ValueError as error:
        raise UsageError(str(error)) from error


def split_list(text: str, kind: type = str) -> list:
    """`"a, b,c"` -> `["a", "b", "c"]`, each converted by `kind`; empty items dropped."""
    return [kind(item.strip()) for item in text.split(",") if item.strip()]


def _because(why: str) -> str:
    return f" ({why})" if why else ""


def at_least(minimum: float, why: str = "") -> Rule:
    """A field's rule (`option(rule=...)`): at least `minimum`, `why` in the message.

    Example:

    >>> at_least(1, "0 trains nothing")("steps", 0)
    Traceback (most recent call last):
    ...
    ValueError: `steps` must be at least 1 (0 trains nothing); got 0.
    """

    def rule(name: str, value) -> None:
        if not value >= minimum:
            raise ValueError(f"`{name}` must be at least {minimum}{_because(why)}; got {value}.")

    return rule


def not_negative(why: str = "") -> Rule:
    """A field's rule: 0 or more, `why` in the message."""

    def rule(name: str, value) -> None:
        if not value >= 0:
            raise ValueError(f"`{name}` must not be negative{_because(why)}; got {value}.")

    return rule


def positive(name: str, value) -> None:
    """A field's rule: more than 0."""
    if not value > 0:
        raise ValueError(f"`{name}` must be positive; got {value}.")


def positive_count(name: str, value) -> None:
    """A field's rule: a count of 1 or more, as a number of steps."""
    if not value >= 1:
        raise ValueError(f"`{name}` must be positive; got {value}.")


def lies_in(low: float, high: float, open_low: bool = False) -> Rule:
    """A field's rule: from `low` (excluded if `open_low`) to `high`.

    Example:

    >>> lies_in(0, 1, open_low=True)("crop_min_scale", 0.0)
    Traceback (most recent call last):
    ...
    ValueError: `crop_min_scale` must lie in (0, 1]; got 0.0.
    """

    def rule(name: str, value) -> None:
        if not (low < value <= high if open_low else low <= value <= high):
            interval = f"{'(' if open_low else '['}{low:g}, {high:g}]"
            raise ValueError(f"`{name}` must lie in {interval}; got {value}.")

    return rule


def below_one(name: str, value) -> None:
    """A field's rule: in [0, 1), as a momentum."""
    if not 0 <= value < 1:
        raise ValueError(f"`{name}` must be in [0, 1); got {value}.")


# A field's declared type: how a message names it, and the Python types of its values
# (Python's own: config.json and the backups' identity are written with `json`).
_KINDS = {
    "int": ("an integer", (int,)),
    "float": ("a number", (int, float)),
    "bool": ("True or False", (bool,)),
    "str": ("text", (str,)),
}


def _check_type(field: dataclasses.Field, value) -> None:
    """Raises `ValueError` unless `value` is of `field`'s declared type (`None` too for an
    `X | None`); a bool is not an integer or a number."""
    declared = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    optional = declared.endswith(" | None")
    kind = _KINDS.get(declared.removesuffix(" | None"))
    if kind is None or (optional and value is None):
        return
    words, types = kind
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        numpy = type(value).__module__ == "numpy"
        hint = f" (Python's {types[-1].__name__}: config.json is JSON)" if numpy else ""
        raise ValueError(f"`{field.name}` must be {words}{hint}; got {value!r}.")


def _seed(name: str, value) -> None:
    if not (is_integer(value) and 0 <= value <= MAX_SEED):
        raise ValueError(
            f"`{name}` must be an integer from 0 to {MAX_SEED} (NumPy's and Keras' seeds "
            f"are 32-bit); got {value!r}."
        )


def require_between(
    config: RunConfig, name: str, minimum: int, maximum: int, why: str = ""
) -> None:
    """Raises `ValueError` naming the field `name` of `config` outside `[minimum, maximum]`.

    Example:

    >>> require_between(RunConfig(steps=10**10), "steps", 1, 2**31 - 1, "int32 steps")
    Traceback (most recent call last):
    ...
    ValueError: `steps` must be from 1 to 2147483647 (int32 steps); got 10000000000.
    """
    value = getattr(config, name)
    if not minimum <= value <= maximum:
        reason = f" ({why})" if why else ""
        raise ValueError(f"`{name}` must be from {minimum} to {maximum}{reason}; got {value}.")


def layer_widths(allow_empty: bool = False) -> Rule:
    """A field's rule: comma-separated positive layer widths such as '64,32'.

    Example:

    >>> layer_widths()("projector_units", "64,0")
    Traceback (most recent call last):
    ...
    ValueError: `projector_units` must be comma-separated positive widths such as '64,32'; got '64,0'.
    """

    def rule(name: str, text: str) -> None:
        try:
            widths = split_list(text, strict_int)
        except ValueError:
            widths = None
        if widths is None or any(width < 1 for width in widths) or not (widths or allow_empty):
            raise ValueError(
                f"`{name}` must be comma-separated positive widths such as '64,32'"
                f"{' (or empty)' if allow_empty else ''}; got {text!r}."
            )

    return rule


def option(
    default,
    help: str,
    choices: typing.Sequence[str] | None = None,
    group: str | None = None,
    rule: Rule | None = None,
):
    """A config field with its flag's `help`, `choices`, `--help` section (`GROUPS`) and
    `rule`, the check of its value alone that `RunConfig.validate` runs (`at_least`...)."""
    if group is not None and group not in GROUPS:
        raise ValueError(f"Unknown `group` {group!r}; expected one of {GROUPS}.")
    metadata = {"help": help, "choices": choices, "group": group, "rule": rule}
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass
class RunConfig:
    """What every experiment's run shares: losses, optimisation, evaluation, devices, outputs.

    Example:

    >>> RunConfig(losses="aninfonce, infonce").loss_names()
    ['aninfonce', 'infonce']
    """

    losses: str = option(
        "aninfonce,infonce", f"loss variants, comma-separated, from {', '.join(LOSS_VARIANTS)}"
    )
    steps: int = option(1000, "training steps per loss")
    batch_size: int = option(
        256, "positive pairs per step (global, over every replica)", rule=at_least(2)
    )
    optimizer: str = option("adam", "encoder optimizer", optimizers.OPTIMIZERS)
    learning_rate: float = option(1e-3, "encoder learning rate", rule=not_negative())
    learning_rate_schedule: str = option(
        "constant",
        "encoder learning rate: constant, or cosine (decays to 0 over `steps`)",
        optimizers.LEARNING_RATE_SCHEDULES,
    )
    warmup_steps: int = option(
        0, "steps over which the encoder learning rate rises linearly from 0 (0: none)"
    )
    momentum: float = option(0.9, "momentum of the sgd and lars optimizers", rule=below_one)
    ema_momentum: float = option(
        0.0,
        "momentum of an exponential moving average of the weights, which evaluation, "
        "--stop-at and the saved model use (0: none)",
        rule=below_one,
    )
    weight_decay: float = option(
        0.0,
        "encoder weight decay (adamw, sgd, muon), decoupled as Keras' `weight_decay`; never "
        "on Lambda_hat",
        rule=not_negative(),
    )
    l2_weight_decay: float = option(
        0.0,
        "encoder L2 weight decay added to the gradient before the momentum (sgd: PyTorch "
        "SGD's `weight_decay`, ~10x a Keras weight_decay of the same value at momentum 0.9; "
        "lars: SimCLR's decay, inside the trust ratio); never on Lambda_hat",
        rule=not_negative(),
    )
    muon_exclude: str = option(
        "",
        "muon: keywords of variable paths, comma-separated, that Adam updates instead "
        "(Keras' exclude_layers); `hidden` leaves Muon only the output layer of the "
        "MLP encoders",
    )
    concentration_learning_rate: float = option(
        1e-2, "Lambda_hat's Adam learning rate", rule=not_negative()
    )
    parametrization: str = option(
        "exp", "Lambda_hat as a function of its variable", PARAMETRIZATIONS
    )
    initial_concentration: float = option(
        0.0,
        "Lambda_hat's start; 0: 1 / infonce_temperature, so that AnInfoNCE starts as the "
        "InfoNCE baseline; start below every true Lambda (docs/tuning.md, point 1)",
        rule=not_negative(),
    )
    infonce_temperature: float = option(0.2, "temperature of the InfoNCE baseline")
    hard_negative_beta: float = option(0.5, "beta of the *_hard_negatives loss variants")
    ensemble_temperatures: str = option(
        "0.05,0.1,0.5", "temperatures of the *_ensemble loss variants, comma-separated"
    )
    loss_block_size: int = option(
        0,
        "candidates per block of a blockwise loss (memory B x block, not B x B); 0: dense",
    )
    eval_every: int = option(500, "steps between evaluations (divides `steps`)")
    log_every: int = option(
        50,
        "steps between the training loss and Lambda_hat written to TensorBoard (at most "
        "`eval_every`; moved to the nearest divisor of the checkpoint period, see "
        "`save_every`, that `steps_per_execution` divides)",
        rule=positive_count,
    )
    tensorboard_all_scores: bool = option(
        False,
        "write every score to TensorBoard, not only the few summary scores of each level",
    )
    save_every: int = option(
        0,
        "steps between the backup checkpoints a killed run resumes from, a divisor of "
        "`eval_every` (0: its largest divisor from 100 to 1000, else `eval_every`); Keras' "
        "epochs last this long",
    )
    stop_at: str = option(
        "",
        "stop a loss at the first evaluation reaching every target, e.g. mcc=0.95,linear_r2=0.99",
    )
    stop_patience: int = option(
        1,
        "evaluations in a row at which every `stop_at` target must hold before a loss stops "
        "(1: the first that reaches them)",
        rule=positive_count,
    )
    mixed_precision: bool = option(False, "encoder in mixed_bfloat16, the loss in float32")
    jit_compile: bool = option(True, "XLA-compile the train step")
    # Convolutional experiments override `jit_compile` with False: XLA slows their
    # steps on a CPU (docs/speed.md, "Image steps against the matmul rate").
    steps_per_execution: int = option(
        1,
        "training steps per call of the compiled step (divides `eval_every`); more spreads "
        "Keras' per-call cost, without changing what is computed",
    )
    strategy: str = option(
        "default",
        "tf.distribute strategy (multiworker reads TF_CONFIG; tpu connects to --tpu)",
        STRATEGIES,
    )
    tpu: str = option(
        "local",
        "--strategy tpu's TPU: local (a TPU VM's own), a Cloud TPU name, or grpc://ADDRESS "
        "(a TPU Node, deprecated by Google Cloud)",
    )
    export: bool = option(True, "export each encoder as a SavedModel with Lambda_hat beside it")
    seed: int = option(0, "seed of the data, the generator and the initialisation", rule=_seed)

    # A subclass's fields that a resumed run may change, as `EXECUTION_FIELDS`: those
    # of an evaluation that runs after training.
    resume_exempt: typing.ClassVar[tuple[str, ...]] = ()

    def loss_names(self) -> list[str]:
        """`losses` as a list of registered variants' names (ValueError: unknown, twice)."""
        names = [check_loss_name(name) for name in split_list(self.losses)]
        unknown = sorted(set(names) - set(LOSS_VARIANTS))
        if unknown or not names:
            raise ValueError(
                f"Unknown `losses` {unknown or names}; expected names from {tuple(LOSS_VARIANTS)}."
            )
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(
                f"`losses` names {repeated} more than once ({self.losses!r}): each variant "
                "trains once into its own directory; name each once."
            )
        return names

    def muon_exclude_layers(self) -> list[str]:
        """`muon_exclude` as a list of keywords (Keras' `exclude_layers`)."""
        return split_list(self.muon_exclude)

    def epoch_steps(self) -> int:
        """Steps between backups: `save_every`, or a divisor of `eval_every` (100 to 1000).

        Example:

        >>> [RunConfig(eval_every=n).epoch_steps() for n in (12_510, 600, 20, 1009)]
        [834, 600, 20, 1009]
        """
        if self.save_every:
            return self.save_every
        divisors = range(self.steps_per_execution, 1001, self.steps_per_execution)
        fits = [d for d in divisors if d >= 100 and self.eval_every % d == 0]
        return max(fits, default=self.eval_every)

    def log_steps(self) -> int:
        """Steps between TensorBoard's points: `log_every`, moved to a divisor of `epoch_steps()`.

        Example:

        >>> [RunConfig(eval_every=n).log_steps() for n in (500, 20, 12_510)]
        [50, 20, 139]
        """
        epoch = self.epoch_steps()
        wanted = min(self.log_every, self.eval_every)
        divisors = [
            d
            for d in range(self.steps_per_execution, epoch + 1, self.steps_per_execution)
            if epoch % d == 0
        ]
        return min(divisors, key=lambda d: (abs(math.log(d / wanted)), d))

    def loss_options(self) -> dict:
        """The keyword arguments of `loss_variants.loss_variant` that this config sets."""
        return dict(
            infonce_temperature=self.infonce_temperature,
            hard_negative_beta=self.hard_negative_beta,
            ensemble_temperatures=split_list(self.ensemble_temperatures, strict_float),
            initial_concentration=self.initial_concentration or None,
            parametrization=self.parametrization,
            block_size=self.loss_block_size or None,
        )

    def check_inputs(self) -> None:
        """Raises ValueError for inputs the run reads from outside its config (none here)."""

    def validate(self) -> None:
        """Raises `ValueError` naming a field whose value cannot run, before any training:
        each field's value alone (finite, its `rule`, its `choices`, its declared type),
        then across fields."""
        # A field a class declares again without a rule keeps the rule it replaces.
        rules = {
            field.name: field.metadata["rule"]
            for cls in reversed(type(self).__mro__)
            if dataclasses.is_dataclass(cls)
            for field in dataclasses.fields(cls)
            if field.name in inspect.get_annotations(cls) and field.metadata.get("rule")
        }
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            number = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if number and not is_finite(value):
                raise ValueError(f"`{field.name}` must be a finite number; got {value}.")
            if field.name in rules:
                try:
                    rules[field.name](field.name, value)
                except (TypeError, AttributeError):  # e.g. None, or a number for a list
                    kind = "text" if isinstance(field.default, str) else "a number"
                    raise ValueError(f"`{field.name}` must be {kind}; got {value!r}.") from None
            choices = field.metadata.get("choices")
            if choices and value not in choices:
                raise ValueError(
                    f"Unknown `{field.name}` {value!r}; expected one of {tuple(choices)}."
                )
            _check_type(field, value)
        names = self.loss_names()
        optimizers.check_settings(self)
        if self.eval_every < 1 or self.steps < self.eval_every or self.steps % self.eval_every:
            raise ValueError(
                f"`steps` ({self.steps}) must be a positive multiple of `eval_every` "
                f"({self.eval_every})."
            )
        if not 0 <= self.warmup_steps < self.steps:
            raise ValueError(
                f"`warmup_steps` ({self.warmup_steps}) must be 0 or fewer than `steps` "
                f"({self.steps}): the learning rate would never reach its peak nor decay."
            )
        if self.steps_per_execution < 1 or self.eval_every % self.steps_per_execution:
            raise ValueError(
                f"`steps_per_execution` ({self.steps_per_execution}) must be positive and "
                f"divide `eval_every` ({self.eval_every})."
            )
        if self.save_every < 0 or (
            self.save_every
            and (self.eval_every % self.save_every or self.save_every % self.steps_per_execution)
        ):
            raise ValueError(
                f"`save_every` ({self.save_every}) must be 0 (automatic) or divide `eval_every` "
                f"({self.eval_every}) and be a multiple of `steps_per_execution` "
                f"({self.steps_per_execution})."
            )
        check_stop_patience(self.stop_patience, self.stop_at)
        if self.stop_patience > self.steps // self.eval_every:
            raise ValueError(
                f"`stop_patience` ({self.stop_patience}) is more than the "
                f"{self.steps // self.eval_every} evaluations of `steps` ({self.steps}) every "
                f"`eval_every` ({self.eval_every}): the run could never stop at its targets."
            )
        self._validate_losses(names)
        memory.check_loss(
            self.batch_size,
            self.loss_block_size,
            blockwise=not any(LOSS_VARIANTS[name].hard_negatives for name in names),
        )

    def _validate_losses(self, names: list[str]) -> None:
        hard_negatives = [name for name in names if LOSS_VARIANTS[name].hard_negatives]
        if self.loss_block_size < 0 or (self.loss_block_size and hard_negatives):
            raise ValueError(
                f"`loss_block_size` ({self.loss_block_size}) must be 0 (dense) or positive, and "
                f"0 for the hard-negative variants {hard_negatives}, which the blockwise loss "
                "lacks."
            )
        try:
            options = self.loss_options()
        except ValueError:
            raise ValueError(
                "`ensemble_temperatures` must be comma-separated numbers; got "
                f"{self.ensemble_temperatures!r}."
            ) from None
        check_variants(names, **options)

    def resolved(self) -> RunConfig:
        """This config with the fields that other fields set filled in (none here)."""
        return self

    def resume_key(self) -> dict:
        """The fields a resumed run must share with the run it continues."""
        values = dataclasses.asdict(self)
        exempt = (*EXECUTION_FIELDS, *self.resume_exempt)
        return {k: v for k, v in values.items() if k not in exempt}


__all__ = [
    "EXECUTION_FIELDS",
    "GROUPS",
    "RUN_GROUPS",
    "MAX_SEED",
    "RunConfig",
    "UsageError",
    "as_usage_errors",
    "layer_widths",
    "lies_in",
    "option",
    "Rule",
    "at_least",
    "below_one",
    "not_negative",
    "positive",
    "positive_count",
    "require_between",
    "split_list",
]
