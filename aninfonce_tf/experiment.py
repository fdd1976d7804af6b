"""What every recipe shares: configs with command-line overrides, the run directory,
training each loss variant with checkpoints and evaluators, the results table,
JSON and plots. A recipe picks presets and calls `run_synthetic`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import keras
import numpy as np

from aninfonce_tf import plots
from aninfonce_tf.data.synthetic import (
    CONCENTRATION_PRESETS,
    CONDITIONALS,
    LATENT_SPACES,
    SyntheticSetup,
    concentration_blocks,
    concentration_preset,
)
from aninfonce_tf.encoders import mlp_encoder
from aninfonce_tf.evaluation.callbacks import (
    ConcentrationLogger,
    IdentifiabilityCallback,
    IdentifiabilityEvaluator,
    parse_targets,
)
from aninfonce_tf.layers import PARAMETRIZATIONS, DiagonalScaling
from aninfonce_tf.losses import AnInfoNCE, InfoNCE
from aninfonce_tf.models import ContrastiveModel

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
        `(config, options)`; `options` has `preset`, `smoke` and `out`.
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
    if getattr(chosen, "smoke", False):
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
        + (", --smoke)" if getattr(chosen, "smoke", False) else ")")
    )
    for field in dataclasses.fields(preset):
        default = getattr(preset, field.name)
        flag = "--" + field.name.replace("_", "-")
        if isinstance(default, bool):
            fields.add_argument(
                flag,
                type=_boolean,
                default=default,
                metavar="{true,false}",
                help=field.metadata["help"],
            )
        else:
            kind = float if field.name in ("high", "low") else type(default)
            fields.add_argument(flag, type=kind, default=default, help=field.metadata["help"])
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


def build_setup(config: SyntheticConfig) -> SyntheticSetup:
    """The data of the experiment: latents, positives and the generator of `config`."""
    return SyntheticSetup(
        config.true_concentration(),
        space=config.space,
        conditional=config.conditional,
        generator_seed=config.seed,
        generator_draws=config.generator_draws,
    )


def build_model(config: SyntheticConfig, loss_name: str) -> ContrastiveModel:
    """The encoder, optional Lambda_hat and compiled loss of one loss variant."""
    hidden = [int(units) for units in config.hidden_units.split(",") if units]
    if config.embedding_dim and config.embedding_dim < config.dim:
        raise ValueError(
            f"`embedding_dim` must be 0 (= dim) or at least dim={config.dim}, so that every "
            f"latent can be matched to a feature; got {config.embedding_dim}."
        )
    encoder = mlp_encoder(config.dim, config.embedding_dim or config.dim, hidden)
    anisotropic = loss_name.startswith("aninfonce")
    scaling = None
    if anisotropic:
        scaling = DiagonalScaling(
            config.initial_concentration,
            parametrization=config.parametrization,
            initial_noise=0.1,
            seed=config.seed,
        )
    beta = config.hard_negative_beta if loss_name.endswith("hard_negatives") else 0.0
    ensemble = [float(t) for t in config.ensemble_temperatures.split(",")]
    if anisotropic:
        # An ensemble of AnInfoNCE is over global concentration multipliers 1/t,
        # centred on the learned Lambda_hat.
        temperature = (
            [t / float(np.median(ensemble)) for t in ensemble]
            if loss_name.endswith("ensemble")
            else 1.0
        )
        loss = AnInfoNCE(temperature=temperature, hard_negative_beta=beta)
    else:
        temperature = ensemble if loss_name.endswith("ensemble") else config.infonce_temperature
        loss = InfoNCE(similarity="cosine", temperature=temperature, hard_negative_beta=beta)
    model = ContrastiveModel(encoder, scaling=scaling, name=loss_name)
    model.compile(
        optimizer=keras.optimizers.Adam(encoder_learning_rate(config)),
        loss=loss,
        concentration_optimizer=config.concentration_learning_rate if anisotropic else None,
        jit_compile=config.jit_compile,
    )
    return model


def encoder_learning_rate(config: SyntheticConfig):
    """The encoder's learning rate: constant, or cosine-decayed to 0 over `steps`."""
    if config.learning_rate_schedule == "constant":
        return config.learning_rate
    if config.learning_rate_schedule == "cosine":
        return keras.optimizers.schedules.CosineDecay(
            config.learning_rate, decay_steps=config.steps
        )
    raise ValueError(
        f"Unknown `learning_rate_schedule` {config.learning_rate_schedule!r}; expected 'constant' or 'cosine'."
    )


def run_directory(out: str | None, preset_name: str) -> Path:
    path = Path(out) if out else Path("runs") / f"{preset_name}-{time.strftime('%Y%m%d-%H%M%S')}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def training_callbacks(
    run_dir: Path,
    name: str,
    steps_per_epoch: int,
    evaluator,
    stop_at: dict[str, float] | None = None,
) -> list:
    """Evaluator (stopping at `stop_at` targets), NaN stop, checkpoint-and-resume and
    TensorBoard for one loss."""
    logs = run_dir / "tensorboard" / name
    return [
        IdentifiabilityCallback(
            evaluator,
            str(logs / "identifiability"),
            steps_per_epoch=steps_per_epoch,
            stop_at=stop_at,
        ),
        ConcentrationLogger(str(logs / "concentration"), steps_per_epoch=steps_per_epoch),
        keras.callbacks.TerminateOnNaN(),
        keras.callbacks.BackupAndRestore(str(run_dir / "backup" / name), delete_checkpoint=True),
        keras.callbacks.TensorBoard(str(logs), update_freq="epoch"),
    ]


def run_synthetic(config: SyntheticConfig, run_dir: Path, verbose: int | None = None) -> dict:
    """Trains every loss variant of `config` on the same data and scores them.

    Returns:
        `{loss name: result}` with `linear_r2`, `mcc`, `block_r2`, `steps`,
        `wall_seconds`, per-latent R^2, the score curve and, for AnInfoNCE
        variants, `lambda_hat` and `lambda_spearman`. Also written to
        `run_dir/results.json`, with plots and TensorBoard logs beside it.
    """
    names = config.loss_names()
    if verbose is None:
        # A live progress bar on a terminal, one line per evaluation in logs.
        verbose = 1 if sys.stdout.isatty() else 2
    if config.steps < config.eval_every or config.steps % config.eval_every:
        raise ValueError(
            f"`steps` ({config.steps}) must be a positive multiple of `eval_every` ({config.eval_every})."
        )
    stop_at = parse_targets(config.stop_at)  # a malformed target fails before training
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2))
    setup = build_setup(config)
    true_concentration = setup.concentration
    observations, latents = setup.evaluation_set(config.eval_size, seed=config.seed + 10_000)
    evaluator = IdentifiabilityEvaluator(
        observations,
        latents,
        concentration_blocks(true_concentration),
        true_concentration,
        normalize_concentration=config.space != "sphere",
        nonlinear=config.nonlinear_r2,
    )
    results = {}
    for name in names:
        keras.utils.set_random_seed(config.seed)
        previous_policy = keras.config.dtype_policy()
        if config.mixed_precision:
            keras.config.set_dtype_policy("mixed_bfloat16")
        try:
            model = build_model(config, name)
        finally:
            keras.config.set_dtype_policy(previous_policy)
        callbacks = training_callbacks(run_dir, name, config.eval_every, evaluator, stop_at)
        dataset = setup.dataset(config.batch_size, seed=config.seed)
        print(f"== {name}: {config.steps} steps of {config.batch_size} pairs", flush=True)
        start = time.perf_counter()
        history = model.fit(
            dataset,
            steps_per_epoch=config.eval_every,
            epochs=config.steps // config.eval_every,
            callbacks=callbacks,
            verbose=verbose,
            shuffle=False,  # fresh pairs every step; True would only make Keras warn
        )
        wall_seconds = time.perf_counter() - start
        curve = callbacks[0].history
        final = curve[-1] if curve else evaluator.evaluate(model)
        results[name] = {
            **{k: v for k, v in final.items() if k not in ("step", "seconds")},
            "steps": int(model.optimizer.iterations),
            "wall_seconds": round(wall_seconds, 1),
            "final_loss": float(history.history["loss"][-1]),
            "curve": curve,
        }
        if stop_at:
            results[name]["target_reached"] = callbacks[0].reached
    results_path = run_dir / "results.json"
    results_path.write_text(
        json.dumps({"true_concentration": true_concentration.tolist(), **results}, indent=2)
    )
    write_plots(results, true_concentration, run_dir)
    print(results_table(results))
    print(f"results: {results_path}\nTensorBoard: tensorboard --logdir {run_dir / 'tensorboard'}")
    return results


def write_plots(results: dict, true_concentration, run_dir: Path) -> list[Path]:
    paths = [
        plots.plot_per_latent_r2(
            {name: r["linear_r2_per_latent"] for name, r in results.items()},
            true_concentration,
            run_dir / "per_latent_r2.png",
        ),
        plots.plot_curves(
            {name: r["curve"] for name, r in results.items()}, run_dir / "curves.png"
        ),
    ]
    for name, result in results.items():
        if "lambda_hat_matched" in result:
            paths.append(
                plots.plot_concentration(
                    result["lambda_hat_matched"],
                    true_concentration,
                    run_dir / f"lambda_{name}.png",
                    title=name,
                )
            )
    return paths


def results_table(results: dict) -> str:
    """One row per loss: R^2 overall and per block, MCC, Lambda agreement, steps, time."""
    columns = ["loss", "linear R2", "R2 high", "R2 low", "MCC", "Lambda rho", "steps", "seconds"]
    rows = []
    for name, r in results.items():
        blocks = r.get("block_r2", {})
        rows.append(
            [
                name,
                f"{r['linear_r2']:.3f}",
                f"{blocks.get('high', float('nan')):.3f}",
                f"{blocks.get('low', float('nan')):.3f}",
                f"{r['mcc']:.3f}",
                f"{r['lambda_spearman']:.2f}" if "lambda_spearman" in r else "-",
                str(r["steps"]),
                f"{r['wall_seconds']:.0f}",
            ]
        )
    widths = [max(len(row[i]) for row in [columns, *rows]) for i in range(len(columns))]
    line = lambda row: "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths]), *map(line, rows)])
