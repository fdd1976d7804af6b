"""What every recipe shares: the data and models of a `SyntheticConfig`, the run
directory, training each loss variant with checkpoints and evaluators, the results
table, JSON and plots. A recipe parses a config (`aninfonce_tf.config`) from its
presets and calls `run_synthetic`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import keras
import numpy as np

from aninfonce_tf import plots
from aninfonce_tf.config import SyntheticConfig
from aninfonce_tf.data.synthetic import SyntheticSetup, concentration_blocks
from aninfonce_tf.encoders import mlp_encoder
from aninfonce_tf.evaluation.callbacks import (
    ConcentrationLogger,
    IdentifiabilityCallback,
    IdentifiabilityEvaluator,
    parse_targets,
)
from aninfonce_tf.layers import DiagonalScaling
from aninfonce_tf.losses import AnInfoNCE, InfoNCE
from aninfonce_tf.models import ContrastiveModel


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
