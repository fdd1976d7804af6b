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
import types
import typing

from aninfonce_tf.distribute import STRATEGIES
from aninfonce_tf.layers import PARAMETRIZATIONS
from aninfonce_tf.losses import LOSS_VARIANTS

OPTIMIZERS = ("adam", "adamw", "sgd", "muon")
LEARNING_RATE_SCHEDULES = ("constant", "cosine")
# Fields that say where and how a run executes, not what it computes: a run may
# resume with other values of these.
EXECUTION_FIELDS = ("strategy", "tpu", "export", "steps_per_execution")


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
        "aninfonce,infonce", f"loss variants, comma-separated, from {LOSS_VARIANTS}"
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
    momentum: float = option(0.9, "momentum of the sgd optimizer")
    ema_momentum: float = option(
        0.0,
        "momentum of an exponential moving average of the weights, which evaluation, "
        "--stop-at and the saved model use (0: none)",
    )
    weight_decay: float = option(
        0.0, "encoder weight decay (adamw, sgd, muon); never on Lambda_hat"
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
        5.0, "Lambda_hat's start; start below every true Lambda (README point 1)"
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

    def validate(self) -> None:
        """Raises `ValueError` naming the field whose value cannot run."""
        self.loss_names()
        if self.batch_size < 2:
            raise ValueError(f"`batch_size` must be at least 2; got {self.batch_size}.")
        if self.eval_every < 1 or self.steps < self.eval_every or self.steps % self.eval_every:
            raise ValueError(
                f"`steps` ({self.steps}) must be a positive multiple of `eval_every` "
                f"({self.eval_every})."
            )
        if self.steps_per_execution < 1 or self.eval_every % self.steps_per_execution:
            raise ValueError(
                f"`steps_per_execution` ({self.steps_per_execution}) must be positive and "
                f"divide `eval_every` ({self.eval_every})."
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
) -> tuple[RunConfig, argparse.Namespace]:
    """A config from the command line: `--preset NAME`, `--smoke`, `--out DIR` and a
    `--field value` override of every field of the presets' dataclass.

    The chosen preset (the first of `presets` by default), shrunk by the `smoke`
    overrides under `--smoke`, gives the defaults that `--help` shows. Unknown flags
    (abbreviations included) and bad values exit with argparse's usage error, so a
    mistyped flag never runs with a default silently.

    Args:
        presets: named configs of one dataclass; the first is the default.
        argv: arguments (default `sys.argv[1:]`).
        description: the `--help` description.
        smoke: field overrides of `--smoke`; None: no `--smoke` flag.

    Returns:
        `(config, options)`; `options` has `preset`, `out` and `smoke` (False
        when no smoke overrides are given).
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
        parents=[choice],
        formatter_class=_DefaultsHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--out", help="run directory (unset: runs/<preset>-<time>)")
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
    options.smoke = smoke_run
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(preset)}
    return dataclasses.replace(preset, **values), options


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


def _boolean(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


__all__ = ["RunConfig", "option", "parse_config", "split_list"]
