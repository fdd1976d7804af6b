"""The run configuration every experiment shares, and the command line built from
any config dataclass.

An experiment's config (`aninfonce_tf.configs.synthetic.SyntheticConfig`, ...)
subclasses `RunConfig`, adds its own fields with `option(...)` and may change the
defaults of the shared ones. Every field is a flag: `batch_size` is `--batch-size`.

Example:

>>> config, options = parse_config({"mine": RunConfig()}, ["--steps", "600"])
>>> (config.steps, options.preset)
(600, 'mine')
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import types
import typing

from aninfonce_tf.distribute import STRATEGIES
from aninfonce_tf.layers import PARAMETRIZATIONS
from aninfonce_tf.losses import LOSS_VARIANTS, loss_variant

OPTIMIZERS = ("adam", "adamw", "sgd", "lars", "muon")
LEARNING_RATE_SCHEDULES = ("constant", "cosine")
# Fields that say where and how a run executes, not what it computes: a run may
# resume with other values of these.
EXECUTION_FIELDS = ("strategy", "tpu", "export", "steps_per_execution", "log_every")


class UsageError(ValueError):
    """A setting that cannot run, found before training: the recipes print it as one
    line and exit with status 2, as argparse does for a bad flag."""


def option(default, help: str, choices: typing.Sequence[str] | None = None):
    """A config field whose `help` is its command-line help (and `choices` its values)."""
    return dataclasses.field(default=default, metadata={"help": help, "choices": choices})


def split_list(text: str, kind: type = str) -> list:
    """`"a, b,c"` -> `["a", "b", "c"]`, each converted by `kind`; empty items dropped."""
    return [kind(item.strip()) for item in text.split(",") if item.strip()]


@dataclasses.dataclass
class RunConfig:
    """What every experiment's run shares: loss variants, optimisation, evaluation,
    precision, strategy, outputs.

    Example:

    >>> RunConfig(losses="aninfonce, infonce").loss_names()
    ['aninfonce', 'infonce']
    """

    losses: str = option(
        "aninfonce,infonce", f"loss variants, comma-separated, from {', '.join(LOSS_VARIANTS)}"
    )
    steps: int = option(1000, "training steps per loss")
    batch_size: int = option(256, "positive pairs per step (global, over every replica)")
    optimizer: str = option("adam", "encoder optimizer", OPTIMIZERS)
    learning_rate: float = option(1e-3, "encoder learning rate")
    learning_rate_schedule: str = option(
        "constant",
        "encoder learning rate: constant, or cosine (decays to 0 over `steps`)",
        LEARNING_RATE_SCHEDULES,
    )
    warmup_steps: int = option(
        0, "steps over which the encoder learning rate rises linearly from 0 (0: none)"
    )
    momentum: float = option(0.9, "momentum of the sgd and lars optimizers")
    ema_momentum: float = option(
        0.0,
        "momentum of an exponential moving average of the weights, which evaluation, "
        "--stop-at and the saved model use (0: none)",
    )
    weight_decay: float = option(
        0.0,
        "encoder weight decay (adamw, sgd, muon), decoupled as Keras' `weight_decay`; never "
        "on Lambda_hat",
    )
    l2_weight_decay: float = option(
        0.0,
        "encoder L2 weight decay added to the gradient before the momentum (sgd: PyTorch "
        "SGD's `weight_decay`, ~10x a Keras weight_decay of the same value at momentum 0.9; "
        "lars: SimCLR's decay, inside the trust ratio); never on Lambda_hat",
    )
    muon_exclude: str = option(
        "",
        "muon: keywords of variable paths, comma-separated, that Adam updates instead "
        "(Keras' exclude_layers); `hidden` leaves Muon only the output layer of the "
        "MLP encoders",
    )
    concentration_learning_rate: float = option(1e-2, "Lambda_hat's Adam learning rate")
    parametrization: str = option(
        "exp", "Lambda_hat as a function of its variable", PARAMETRIZATIONS
    )
    initial_concentration: float = option(
        5.0, "Lambda_hat's start; start below every true Lambda (docs/tuning.md, point 1)"
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
    mixed_precision: bool = option(False, "encoder in mixed_bfloat16, the loss in float32")
    jit_compile: bool = option(True, "XLA-compile the train step")
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
    tpu: str = option("", "TPU name or grpc:// address for --strategy tpu (empty: local)")
    export: bool = option(True, "export each encoder as a SavedModel with Lambda_hat beside it")
    seed: int = option(0, "seed of the data, the generator and the initialisation")

    def loss_names(self) -> list[str]:
        names = split_list(self.losses)
        unknown = sorted(set(names) - set(LOSS_VARIANTS))
        if unknown or not names:
            raise ValueError(
                f"Unknown `losses` {unknown or names}; expected names from {tuple(LOSS_VARIANTS)}."
            )
        return names

    def epoch_steps(self) -> int:
        """Steps between backup checkpoints, each at the end of a Keras epoch:
        `save_every`, or by default the largest divisor of `eval_every` from 100 to 1000
        that `steps_per_execution` divides, else `eval_every` (a prime one, or below 100).

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
        """Steps between the training metrics written to TensorBoard: `log_every`, at
        most `eval_every`, moved to the nearest (by ratio) divisor of `epoch_steps()`
        that `steps_per_execution` divides, so that each point is the mean of its own
        steps and a resumed run writes the points of an uninterrupted one.

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
        """The keyword arguments of `losses.loss_variant` that this config sets."""
        return dict(
            infonce_temperature=self.infonce_temperature,
            hard_negative_beta=self.hard_negative_beta,
            ensemble_temperatures=split_list(self.ensemble_temperatures, float),
            initial_concentration=self.initial_concentration,
            parametrization=self.parametrization,
            block_size=self.loss_block_size or None,
        )

    def validate(self) -> None:
        """Raises `ValueError` naming the field whose value cannot run, for every loss
        variant before any of them trains."""
        names = self.loss_names()
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"`{field.name}` must be a finite number; got {value}.")
        for name in (
            "learning_rate",
            "concentration_learning_rate",
            "weight_decay",
            "l2_weight_decay",
            "momentum",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"`{name}` must not be negative; got {getattr(self, name)}.")
        if self.weight_decay and self.optimizer == "adam":
            raise ValueError(
                f"`weight_decay` ({self.weight_decay}) would be ignored by `optimizer` adam; "
                "use adamw (decoupled decay), sgd or muon, or pass --weight-decay 0."
            )
        if self.batch_size < 2:
            raise ValueError(f"`batch_size` must be at least 2; got {self.batch_size}.")
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
        if self.log_every < 1:
            raise ValueError(f"`log_every` must be positive; got {self.log_every}.")
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
        if self.l2_weight_decay and (self.optimizer not in ("sgd", "lars") or self.weight_decay):
            raise ValueError(
                f"`l2_weight_decay` ({self.l2_weight_decay}) needs `optimizer` sgd or lars and "
                f"no decoupled `weight_decay`; got {self.optimizer!r} and {self.weight_decay}."
            )
        if self.optimizer == "lars" and self.weight_decay:
            raise ValueError(
                f"`optimizer` lars decays the weights by `l2_weight_decay` (inside the trust "
                f"ratio, as SimCLR); got the decoupled `weight_decay` {self.weight_decay}."
            )
        if self.muon_exclude and self.optimizer != "muon":
            raise ValueError(
                f"`muon_exclude` ({self.muon_exclude!r}) needs `optimizer` muon; got "
                f"{self.optimizer!r} (with a preset that sets it, pass --muon-exclude '')."
            )
        if not 0.0 <= self.ema_momentum < 1.0:
            raise ValueError(f"`ema_momentum` must be in [0, 1); got {self.ema_momentum}.")
        for name in ("optimizer", "learning_rate_schedule", "parametrization", "strategy"):
            choices = _field(type(self), name).metadata["choices"]
            if getattr(self, name) not in choices:
                raise ValueError(
                    f"Unknown `{name}` {getattr(self, name)!r}; expected one of {tuple(choices)}."
                )
        self._validate_losses(names)

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
        for name in names:
            try:
                loss_variant(name, **options)
            except ValueError as error:
                raise ValueError(f"The loss variant {name!r} cannot be built: {error}") from None

    def resolved(self) -> RunConfig:
        """This config with the fields that other fields set filled in: none here; a
        subclass may have rules (the image configs set `steps` from `epochs` and the
        batch size, ...). `run` and `parse_config` (after the command line) resolve.

        Raises:
            ValueError: for a field given a value that contradicts its rule.
        """
        return self

    def resume_key(self) -> dict:
        """The fields a resumed run must share with the run it continues."""
        values = dataclasses.asdict(self)
        return {k: v for k, v in values.items() if k not in EXECUTION_FIELDS}


def _field(cls, name: str) -> dataclasses.Field:
    return next(f for f in dataclasses.fields(cls) if f.name == name)


def parse_config(
    presets: dict[str, RunConfig],
    argv=None,
    description: str = "",
    smoke: dict | None = None,
    parents: typing.Sequence[argparse.ArgumentParser] = (),
) -> tuple[RunConfig, argparse.Namespace]:
    """A config from the command line: `--preset NAME`, `--smoke`, `--out DIR`,
    `--seeds 0,1,2` and a `--field value` override of every field of the presets'
    dataclass.

    The chosen preset (the first of `presets` by default), shrunk by the `smoke`
    overrides under `--smoke`, gives the defaults that `--help` shows. Unknown flags
    (abbreviations included) and bad values exit with argparse's usage error, so a
    mistyped flag never runs with a default silently.

    Args:
        presets: named configs of one dataclass; the first is the default.
        argv: arguments (default `sys.argv[1:]`).
        description: the `--help` description.
        smoke: field overrides of `--smoke`; None: no `--smoke` flag.
        parents: parsers (made with `add_help=False`) of a recipe's own flags,
            shown by `--help` and parsed into `options`.

    Returns:
        `(config, options)`: the config `resolved()` (the fields other fields set
        follow the values given); `options` has `preset`, `out`, `seeds` (a list of
        seeds, or None) and `smoke` (False when no smoke overrides are given).
    """
    choice = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    choice.add_argument(
        "--preset", choices=list(presets), default=next(iter(presets)), help="preset config"
    )
    if smoke is not None:
        choice.add_argument(
            "--smoke", action="store_true", help="a tiny run of the whole pipeline (< 1 min)"
        )
    chosen, _ = choice.parse_known_args(argv)
    preset = presets[chosen.preset]
    smoke_run = getattr(chosen, "smoke", False)
    if smoke_run:
        preset = dataclasses.replace(preset, **smoke)
    parser = argparse.ArgumentParser(
        description=description,
        parents=[choice, *parents],
        formatter_class=_DefaultsHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--out", help="run directory (unset: runs/<preset>-<time>)")
    parser.add_argument(
        "--seeds",
        type=_seed_list,
        help="run each seed of a comma-separated list (e.g. 0,1,2) into OUT/seed_<k>/ and "
        "summarise them in OUT/summary.json; instead of --seed",
    )
    defaults_from = f"the {chosen.preset!r} preset" + (", --smoke" if smoke_run else "")
    groups = {
        True: parser.add_argument_group(f"run (defaults: {defaults_from})"),
        False: parser.add_argument_group(f"experiment (defaults: {defaults_from})"),
    }
    shared = {f.name for f in dataclasses.fields(RunConfig)}
    hints = typing.get_type_hints(type(preset))
    for field in dataclasses.fields(preset):
        default = getattr(preset, field.name)
        kind = _scalar_type(hints[field.name])
        argument = {"default": default, "help": field.metadata["help"]}
        if kind is bool:
            argument.update(type=_boolean, metavar="{true,false}")
        else:
            argument.update(type=kind, choices=field.metadata.get("choices"))
        groups[field.name in shared].add_argument("--" + field.name.replace("_", "-"), **argument)
    options = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    if options.seeds and any(arg.split("=")[0] == "--seed" for arg in argv):
        parser.error("--seed and --seeds exclude each other: --seeds sets each run's seed")
    options.smoke = smoke_run
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(preset)}
    try:  # the fields other fields set follow the values given
        return dataclasses.replace(preset, **values).resolved(), options
    except ValueError as error:
        parser.error(str(error))


def _scalar_type(hint) -> type:
    """`int`, `float | None` -> `int`, `float`: the type a flag's text converts to."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return hint


class _DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each default, except an unset (None or empty) one."""

    def _get_help_string(self, action):
        if action.default in (None, ""):
            return action.help
        return super()._get_help_string(action)


def _seed_list(text: str) -> list[int]:
    """`"0,1,2"` -> `[0, 1, 2]`: distinct non-negative integers (`--seeds`)."""
    try:
        seeds = [int(item) for item in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0 or len(set(seeds)) < len(seeds):
        raise argparse.ArgumentTypeError(
            f"expected distinct non-negative integers such as 0,1,2; got {text!r}"
        )
    return seeds


def _boolean(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


__all__ = ["RunConfig", "UsageError", "option", "parse_config", "split_list"]
