"""The synthetic experiment's configuration: every hyperparameter in one dataclass,
and the command line that overrides it.

Example:

>>> config, options = parse_config({"mine": SyntheticConfig()}, ["--steps", "600"])
>>> (config.steps, options.preset)
(600, 'mine')
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from aninfonce_tf.data.synthetic import (
    CONCENTRATION_PRESETS,
    CONDITIONALS,
    LATENT_SPACES,
    concentration_preset,
)
from aninfonce_tf.layers import PARAMETRIZATIONS

LOSS_VARIANTS = (
    "aninfonce",
    "infonce",
    "aninfonce_hard_negatives",
    "infonce_hard_negatives",
    "aninfonce_ensemble",
    "infonce_ensemble",
)


def _option(default, help: str):
    """A config field whose `help` is its command-line help."""
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass
class SyntheticConfig:
    """Every hyperparameter of the synthetic identifiability experiment.

    The data: `dim` latents on `space` with positives from `conditional` around
    them at concentration `concentration`. The model: an MLP encoder trained for
    `steps` steps of `batch_size` pairs per loss variant in `losses`, AnInfoNCE's
    Lambda_hat with its own learning rate. Each field is a command-line flag of
    the recipes (`batch_size` is `--batch-size`); its help text is below.

    Example:

    >>> config = SyntheticConfig(concentration="two_valued", steps=6000)
    >>> config.true_concentration().tolist()[4:6]
    [25.0, 5.0]
    """

    concentration: str = _option(
        "linear",
        f"ground-truth Lambda: a preset {CONCENTRATION_PRESETS} or `dim` comma-separated values",
    )
    dim: int = _option(10, "number of latents n")
    high: float | None = _option(
        None, "largest Lambda of the preset (unset: the preset's, 25 or 400 for content_style)"
    )
    low: float | None = _option(
        None, "smallest Lambda of the preset (unset: the preset's, 5 or 10 for content_style)"
    )
    space: str = _option("sphere", f"latent space, one of {LATENT_SPACES}")
    conditional: str = _option(
        "projected_normal", f"positive conditional z+ | z, one of {CONDITIONALS}"
    )
    generator_draws: int = _option(
        25_000, "draws per generator layer; the best-conditioned is kept (the authors': 25,000)"
    )
    hidden_units: str = _option("100,500,500,500,500,100", "encoder MLP widths, comma-separated")
    embedding_dim: int = _option(
        0, "encoder outputs: 0 is dim, as the theory assumes; more gives it room (README point 6)"
    )
    batch_size: int = _option(1000, "positive pairs per step")
    steps: int = _option(3000, "training steps per loss")
    learning_rate: float = _option(1e-4, "encoder Adam learning rate")
    learning_rate_schedule: str = _option(
        "constant", "encoder learning rate: constant, or cosine (decays to 0 over `steps`)"
    )
    concentration_learning_rate: float = _option(1e-3, "Lambda_hat's Adam learning rate")
    parametrization: str = _option(
        "softplus", f"Lambda_hat as a function of its variable, one of {PARAMETRIZATIONS}"
    )
    initial_concentration: float = _option(
        1.0, "Lambda_hat's start; start below every true Lambda (README point 1)"
    )
    infonce_temperature: float = _option(0.2, "temperature of the InfoNCE baseline (cosine)")
    hard_negative_beta: float = _option(0.5, "beta of the *_hard_negatives loss variants")
    ensemble_temperatures: str = _option(
        "0.05,0.1,0.5", "temperatures of the *_ensemble loss variants, comma-separated"
    )
    losses: str = _option(
        "aninfonce,infonce", f"loss variants, comma-separated, from {LOSS_VARIANTS}"
    )
    eval_every: int = _option(500, "steps between evaluations (divides `steps`)")
    eval_size: int = _option(4096, "held-out latents per evaluation")
    stop_at: str = _option(
        "",
        "stop a loss at the first evaluation reaching every target, e.g. mcc=0.95,linear_r2=0.99",
    )
    nonlinear_r2: bool = _option(False, "also fit the kernel-ridge R^2 (slower)")
    mixed_precision: bool = _option(False, "encoder in mixed_bfloat16, the loss in float32")
    jit_compile: bool = _option(True, "XLA-compile the train step")
    seed: int = _option(0, "seed of the data, the generator and the initialisation")

    def true_concentration(self) -> np.ndarray:
        """Lambda from a preset name or a comma-separated list of `dim` values."""
        if self.concentration in CONCENTRATION_PRESETS:
            return concentration_preset(self.concentration, self.dim, high=self.high, low=self.low)
        try:
            values = np.array([float(v) for v in self.concentration.split(",")])
        except ValueError:
            raise ValueError(
                f"`concentration` must be one of {CONCENTRATION_PRESETS} or comma-separated "
                f"numbers; got {self.concentration!r}."
            ) from None
        if len(values) != self.dim:
            raise ValueError(f"`concentration` has {len(values)} values for dim={self.dim}.")
        return values

    def loss_names(self) -> list[str]:
        names = [name.strip() for name in self.losses.split(",") if name.strip()]
        unknown = sorted(set(names) - set(LOSS_VARIANTS))
        if unknown or not names:
            raise ValueError(
                f"Unknown `losses` {unknown or names}; expected names from {LOSS_VARIANTS}."
            )
        return names


def parse_config(
    presets: dict[str, SyntheticConfig],
    argv=None,
    description: str = "",
    smoke: dict | None = None,
) -> tuple[SyntheticConfig, argparse.Namespace]:
    """A config from the command line: `--preset NAME`, `--smoke`, `--out DIR` and a
    `--field value` override of every `SyntheticConfig` field.

    The chosen preset (the first of `presets` by default), shrunk by the `smoke`
    overrides under `--smoke`, gives the defaults that `--help` shows. Unknown flags
    (abbreviations included) and bad values exit with argparse's usage error, so a
    mistyped flag never runs with a default silently.

    Args:
        presets: named configs; the first is the default.
        argv: arguments (default `sys.argv[1:]`).
        description: the `--help` description.
        smoke: field overrides of `--smoke`; None: no `--smoke` flag.

    Returns:
        `(config, options)`; `options` has `preset`, `out` and, with `smoke`
        overrides given, `smoke`.
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
    fields = parser.add_argument_group(
        f"hyperparameters (defaults: the {chosen.preset!r} preset"
        + (", --smoke)" if smoke_run else ")")
    )
    for field in dataclasses.fields(preset):
        default = getattr(preset, field.name)
        flag = "--" + field.name.replace("_", "-")
        argument = {"default": default, "help": field.metadata["help"]}
        if isinstance(default, bool):
            argument.update(type=_boolean, metavar="{true,false}")
        else:
            argument["type"] = float if field.name in ("high", "low") else type(default)
        fields.add_argument(flag, **argument)
    options = parser.parse_args(argv)
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(preset)}
    return dataclasses.replace(preset, **values), options


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


__all__ = ["LOSS_VARIANTS", "SyntheticConfig", "parse_config"]
