"""Images with known latents: a frozen VAE decoder renders latent pairs as digits.
Details: docs/method.md#the-vae-decoder-experiment

Example:

>>> PRESETS["digits"].vae_source, PRESETS["mnist"].vae_source
('digits', 'mnist')
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import zipfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from aninfonce_tf import memory, plots
from aninfonce_tf.checkpoints import replace_atomically, write_json
from aninfonce_tf.configs.base import (
    CONVOLUTIONAL_JIT_HELP,
    RunConfig,
    at_least,
    layer_widths,
    not_negative,
    option,
    split_list,
)
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.configs.tuning import FAST
from aninfonce_tf.data.latent_distributions import CONDITIONALS
from aninfonce_tf.data.synthetic import (
    CONCENTRATION_PRESETS,
    SyntheticSetup,
    concentration_from_spec,
)
from aninfonce_tf.data.vae import IMAGE_SHAPE, SOURCES, train_vae
from aninfonce_tf.encoders import small_cnn
from aninfonce_tf.errors import UsageError
from aninfonce_tf.evaluation.identifiability import PRIMARY_SCORES, IdentifiabilityEvaluator
from aninfonce_tf.parsing import strict_int


@dataclasses.dataclass
class MnistVaeConfig(RunConfig):
    """Every hyperparameter of the VAE-decoder experiment (beside `RunConfig`'s).

    Example:

    >>> MnistVaeConfig(dim=4, concentration="1,2,30,40").true_concentration().tolist()
    [1.0, 2.0, 30.0, 40.0]
    """

    jit_compile: bool = option(False, CONVOLUTIONAL_JIT_HELP)

    dim: int = option(10, "number of latents n: the VAE's latent dimension")
    concentration: str = option(
        "content_style",
        f"ground-truth Lambda: a preset {CONCENTRATION_PRESETS} or `dim` comma-separated values",
    )
    high: float | None = option(200.0, "largest Lambda of the preset (unset: the preset's)")
    low: float | None = option(None, "smallest Lambda of the preset (unset: the preset's)")
    space: str = option(
        "sphere", "latent space (sphere: decoded at sqrt(n) z)", ("sphere", "euclidean")
    )
    conditional: str = option("projected_normal", "positive conditional z+ | z", CONDITIONALS)
    vae_source: str = option("digits", "images the VAE learns from", SOURCES)
    vae_steps: int = option(
        3000,
        "VAE training steps (batch 128)",
        rule=at_least(1, "Keras would read 0 as: until the data ends"),
    )
    vae_beta: float = option(
        0.25,
        "weight of the VAE's KL term (at 1, two of 10 latents barely changed the image)",
        rule=not_negative(),
    )
    vae_cache_dir: str = option("~/.cache/aninfonce_tf/vae", "where trained VAEs are kept")
    data_dir: str = option("", "tfds data directory holding a prepared mnist (vae_source mnist)")
    encoder_filters: str = option(
        "32,64", "the CNN encoder's convolution widths", rule=layer_widths()
    )
    eval_size: int = option(
        4096,
        "held-out latents per evaluation",
        group="evaluation",
        rule=at_least(IdentifiabilityEvaluator.FEWEST_SAMPLES, "half fits, half scores"),
    )
    # The shared fields, at the tuned synthetic values.
    batch_size: int = option(512, "positive pairs per step (global, over every replica)")
    steps: int = option(2000, "training steps per loss")

    def true_concentration(self) -> np.ndarray:
        return concentration_from_spec(self.concentration, self.dim, self.high, self.low)

    def validate(self) -> None:
        """`RunConfig.validate`, then this experiment's own fields."""
        super().validate()
        self.true_concentration()  # raises naming `concentration` (or `dim`)
        side, _, channels = IMAGE_SHAPE
        memory.check_allocations([memory.image_set(self.eval_size, side, channels, "eval_size")])


def build(config: MnistVaeConfig) -> Experiment:
    """Decoded latent pairs, the CNN encoder and the identifiability evaluator."""
    decoder, vae_dir = trained_decoder(
        config.dim,
        config.vae_source,
        config.vae_steps,
        config.vae_beta,
        config.seed,
        config.vae_cache_dir,
        config.data_dir or None,
    )
    # generator_layers=0: the latents themselves; the decoder renders them.
    setup = SyntheticSetup(
        config.true_concentration(),
        space=config.space,
        conditional=config.conditional,
        generator_layers=0,
    )
    scale = math.sqrt(config.dim) if config.space == "sphere" else 1.0

    @tf.function
    def render(z):
        return decoder(scale * z, training=False)

    def decoded_pairs(batch):
        return {**batch, "view1": render(batch["z1"]), "view2": render(batch["z2"])}

    def train_data(start: int) -> tf.data.Dataset:
        pairs = setup.dataset(config.batch_size, seed=config.seed, start=start)
        return pairs.map(decoded_pairs, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE
        )

    _, latents = setup.evaluation_set(config.eval_size, seed=config.seed + 10_000)
    observations = np.concatenate(
        [render(latents[i : i + 1024]).numpy() for i in range(0, len(latents), 1024)]
    )
    evaluator = IdentifiabilityEvaluator.for_setup(setup, observations, latents)
    filters = split_list(config.encoder_filters, strict_int)

    def figures(results: dict, run_dir: Path, title: str = "") -> list[Path]:
        batch = next(iter(train_data(0)))
        pairs = plots.plot_image_grid(
            [batch["view1"][:12], batch["view2"][:12]],
            Path(run_dir) / "positive_pairs.png",
            row_titles=["g(z)", "g(z+): the 'augmentation'"],
        )
        identifiability = plots.plot_identifiability(
            results, run_dir, setup.concentration, title=title
        )
        return [pairs, *identifiability]

    return Experiment(
        train_data=train_data,
        encoder=lambda: small_cnn(IMAGE_SHAPE, config.dim, filters),
        evaluators=[evaluator],
        curve_keys=PRIMARY_SCORES,
        primary_scores=PRIMARY_SCORES,
        metadata={
            "true_concentration": setup.concentration.tolist(),
            "vae": str(vae_dir),
        },
        plots=figures,
    )


# Lambda_hat starts below every true Lambda (docs/tuning.md, point 1), not at
# 1 / infonce_temperature.
TUNED = dict(FAST, initial_concentration=5.0)
PRESETS = {
    # CPU: a VAE on scikit-learn's digits (no download), 10 latents: content Lambda
    # 100..200 x5, style 10..20 x5.
    "digits": MnistVaeConfig(**TUNED),
    # GPU: the VAE on MNIST (prepare it with tfds first), batch 1000, 20k steps.
    "mnist": MnistVaeConfig(
        vae_source="mnist",
        vae_steps=20_000,
        batch_size=1000,
        steps=20_000,
        eval_every=2000,
        encoder_filters="64,128",
        **TUNED,
    ),
}
SMOKE = dict(
    dim=4,
    vae_steps=5,
    steps=20,
    eval_every=10,
    batch_size=32,
    eval_size=256,
    encoder_filters="8",
)


def trained_decoder(
    latent_dim: int = 10,
    source: str = "digits",
    steps: int = 3000,
    beta: float = 1.0,
    seed: int = 0,
    cache_dir: str | Path = "~/.cache/aninfonce_tf/vae",
    data_dir: str | None = None,
) -> tuple[keras.Model, Path]:
    """`(decoder, directory)`: the frozen decoder of a VAE of these settings, cached in
    `cache_dir`.

    Raises:
        UsageError: for a cached decoder that does not load, naming it and the fix.
    """
    settings = dict(latent_dim=latent_dim, source=source, steps=steps, beta=beta, seed=seed)
    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    directory = Path(cache_dir).expanduser() / f"{source}-{latent_dim}d-{key}"
    path = directory / "decoder.keras"
    if path.exists():
        decoder = _cached_decoder(path)
    else:
        vae, images = train_vae(latent_dim, source, steps, beta, seed, data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        decoder = vae.decoder
        write_json(directory / "settings.json", settings, shared=True)
        shown = [images[:16], vae.predict(images[:16], verbose=0)]
        replace_atomically(
            directory / "reconstructions.png",
            lambda temporary: plots.plot_image_grid(
                shown, temporary, row_titles=["digit", "reconstruction"]
            ),
            shared=True,
        )
        # Last and atomically: a decoder.keras in the cache is a whole one, and a
        # process killed before leaves none, so that the next call trains again.
        replace_atomically(path, decoder.save, shared=True)
    decoder.trainable = False
    return decoder, directory


def _cached_decoder(path: Path) -> keras.Model:
    """The decoder saved at `path` (a `UsageError` if it does not load)."""
    try:
        return keras.saving.load_model(path)
    except Exception as error:  # whatever a damaged file raises; Ctrl-C is not one
        # Keras says "File not found" of a file that is there but not a whole zip.
        reason = (
            f"{type(error).__name__}: {' '.join(str(error).split())}"
            if zipfile.is_zipfile(path)
            else "not a whole .keras zip file"
        )
        raise UsageError(
            f"the cached VAE decoder {path} does not load ({reason}): delete it, and the "
            "next run trains the VAE again (or pass another --vae-cache-dir)."
        ) from None


__all__ = ["MnistVaeConfig", "PRESETS", "SMOKE", "build", "trained_decoder"]
