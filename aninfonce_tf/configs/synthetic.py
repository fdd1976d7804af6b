"""The synthetic identifiability experiment: the paper's data generating process, its
MLP encoder, the identifiability scores and the presets. Results: docs/results.md

Example:

>>> PRESETS["paper-linear"].learning_rate
0.004
>>> dataclasses.replace(PRESETS["quick"], **SMOKE).steps
40
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import tensorflow as tf

from aninfonce_tf import memory, plots
from aninfonce_tf.configs.base import (
    RunConfig,
    at_least,
    layer_widths,
    option,
    require_between,
    split_list,
)
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.configs.tuning import FAST
from aninfonce_tf.data.latent_distributions import CONDITIONALS, LATENT_SPACES
from aninfonce_tf.data.synthetic import (
    CONCENTRATION_PRESETS,
    SyntheticSetup,
    concentration_from_spec,
)
from aninfonce_tf.encoders import mlp_encoder
from aninfonce_tf.evaluation.identifiability import PRIMARY_SCORES, IdentifiabilityEvaluator
from aninfonce_tf.parsing import strict_int
from aninfonce_tf.rotation import checked_gain


def _rotation_gain(name: str, value) -> None:
    checked_gain(value, name, allow_zero=True)


@dataclasses.dataclass
class SyntheticConfig(RunConfig):
    """Every hyperparameter of the synthetic experiment (docs/method.md#the-synthetic-conditionals).

    Example:

    >>> config = SyntheticConfig(concentration="two_valued", steps=6000)
    >>> config.true_concentration().tolist()[4:6]
    [25.0, 5.0]
    """

    concentration: str = option(
        "linear",
        f"ground-truth Lambda: a preset {CONCENTRATION_PRESETS} or `dim` comma-separated values",
    )
    dim: int = option(10, "number of latents n")
    high: float | None = option(
        None, "largest Lambda of the preset (unset: the preset's, 25 or 400 for content_style)"
    )
    low: float | None = option(
        None, "smallest Lambda of the preset (unset: the preset's, 5 or 10 for content_style)"
    )
    concentration_spread: float = option(
        0.0,
        "with --concentration geometric: r = high / low at the geometric mean "
        "--concentration-mean, which set high and low (0: --high and --low)",
    )
    concentration_mean: float = option(
        64.0, "the geometric mean of Lambda that --concentration-spread keeps"
    )
    space: str = option(
        "sphere",
        "latent space; sphere normalises the embeddings, box and euclidean do not",
        LATENT_SPACES,
    )
    conditional: str = option("projected_normal", "positive conditional z+ | z", CONDITIONALS)
    generator_draws: int = option(
        25_000,
        "draws per generator layer; the best-conditioned is kept (the authors': 25,000)",
        rule=at_least(1, "candidate matrices per layer of the generator"),
    )
    hidden_units: str = option(
        "100,500,500,500,500,100",
        "encoder MLP widths, comma-separated",
        rule=layer_widths(allow_empty=True),
    )
    embedding_dim: int = option(
        0, "encoder outputs: 0 is dim, as the theory assumes; more gives it room (docs/tuning.md)"
    )
    rotation_gain: float = option(
        0.0,
        "a learned rotation after the encoder's output layer (LearnedRotation), its angles "
        "turning at this multiple of the learning rate, at most 100 (0: none; docs/tuning.md, 10)",
        rule=_rotation_gain,
    )
    eval_size: int = option(4096, "held-out latents per evaluation", group="evaluation")
    nonlinear_r2: bool = option(False, "also fit the kernel-ridge R^2 (slower)", group="evaluation")
    alignment_pairs: int = option(
        0,
        "fresh positive pairs on which each evaluation fits the slow-feature alignment of the "
        "embedding, kept in the model (exported as embed_aligned), and scores its MCC "
        "(aligned_mcc; 0: none)",
        group="evaluation",
    )
    # The shared fields, at the authors' values.
    batch_size: int = option(1000, "positive pairs per step (global, over every replica)")
    steps: int = option(3000, "training steps per loss")
    learning_rate: float = option(1e-4, "encoder learning rate")
    concentration_learning_rate: float = option(1e-3, "Lambda_hat's Adam learning rate")
    parametrization: str = option(
        "softplus", "Lambda_hat as a function of its variable", ("softplus", "exp")
    )
    initial_concentration: float = option(
        1.0,
        "Lambda_hat's start (0: 1 / infonce_temperature); start below every true Lambda "
        "(docs/tuning.md, 1)",
    )

    def true_concentration(self) -> np.ndarray:
        """Lambda from a preset name, `dim` comma-separated values or `concentration_spread`.

        Example:

        >>> config = SyntheticConfig(concentration="geometric", dim=3, concentration_spread=16)
        >>> config.true_concentration().tolist()
        [16.0, 64.0, 256.0]
        """
        high, low = self.high, self.low
        if self.concentration_spread:
            root = np.sqrt(self.concentration_spread)
            high, low = self.concentration_mean * root, self.concentration_mean / root
        return concentration_from_spec(self.concentration, self.dim, high, low)

    def validate(self) -> None:
        """`RunConfig.validate`, then this experiment's own fields."""
        super().validate()
        if self.concentration_spread:
            if not self.concentration_spread >= 1 or self.concentration != "geometric":
                raise ValueError(
                    "`concentration_spread` must be 0 or at least 1 (high / low), with "
                    f"--concentration geometric; got {self.concentration_spread} with "
                    f"--concentration {self.concentration}."
                )
            if self.high is not None or self.low is not None:
                raise ValueError(
                    "`concentration_spread` sets high and low: leave --high and --low unset."
                )
            if not 0 < self.concentration_mean < float("inf"):
                raise ValueError(
                    "`concentration_mean` (the geometric mean of Lambda) must be positive and "
                    f"finite; got {self.concentration_mean}."
                )
        self.true_concentration()  # raises naming `concentration`
        hidden = split_list(self.hidden_units, int)
        width = self.embedding_dim or self.dim
        # The width of the layer before the encoder's output layer.
        before = hidden[-1] if hidden else self.dim
        # Latents and embeddings are [rows, dim] and [rows, width] tensors whose elements
        # TensorFlow counts in int32.
        most_rows = memory.MAX_ELEMENTS // max(self.dim, width)
        widest = f"dim={self.dim} latents'" if width <= self.dim else f"embedding_dim={width}"
        int32 = f"TensorFlow counts the {{}} x {widest} values in int32"
        require_between(self, "batch_size", 2, most_rows, int32.format("batch_size"))
        require_between(
            self,
            "eval_size",
            IdentifiabilityEvaluator.FEWEST_SAMPLES,
            most_rows,
            "half fits, half scores; " + int32.format("eval_size"),
        )
        if self.alignment_pairs:
            require_between(
                self,
                "alignment_pairs",
                max(ALIGNMENT_PAIRS_MIN, 2 * width),
                most_rows,
                "covariances of the embedding's dimensions, or 0 for no alignment; "
                + int32.format("alignment_pairs"),
            )
            if width > before:
                raise ValueError(
                    f"`alignment_pairs` needs an embedding whose dimensions are independent; "
                    f"`embedding_dim` {width} is wider than the layer before it: pass "
                    "--embedding-dim no wider than the last of --hidden-units, or "
                    "--alignment-pairs 0."
                )
        if self.embedding_dim and self.embedding_dim < self.dim:
            raise ValueError(
                f"`embedding_dim` must be 0 (= dim) or at least dim={self.dim}, so that every "
                f"latent can be matched to a feature; got {self.embedding_dim}."
            )
        memory.check_allocations(self.allocations(hidden))

    def allocations(self, hidden: list[int]) -> list[memory.Allocation]:
        """What the run holds besides the loss, with the flags that size them.

        Example:

        >>> config = SyntheticConfig(generator_draws=10**9, dim=6)
        >>> max(a.nbytes for a in config.allocations([100])) / 1e9
        1152.0
        """
        dim, width, floats = self.dim, self.embedding_dim or self.dim, memory.FLOAT_BYTES
        widths = [dim, *hidden]
        wider = "embedding_dim" if width > dim else "dim"
        sizes = f"`embedding_dim` {width} at `dim` {dim}" if width > dim else f"`dim` {dim}"
        return [
            memory.Allocation(
                GENERATOR_DRAW_COPIES * self.generator_draws * dim * dim * 8,
                f"`generator_draws` {self.generator_draws} at `dim` {dim} (the generator's "
                f"candidate {dim} x {dim} float64 matrices, {GENERATOR_DRAW_COPIES} copies)",
                "pass a smaller --generator-draws (or --dim)",
            ),
            memory.Allocation(
                GENERATOR_LAYERS * dim * dim * (8 + floats),
                f"`dim` {dim} (the generator's {GENERATOR_LAYERS} layers of {dim} x {dim} weights)",
                "pass a smaller --dim",
            ),
            memory.Allocation(
                sum(
                    memory.STATE_COPIES * (inputs + 1) * units * floats
                    for inputs, units in zip(widths, widths[1:], strict=False)
                ),
                f"`hidden_units` {self.hidden_units!r} at `dim` {dim} (the encoder's hidden "
                "layers)",
                "pass narrower --hidden-units (or a smaller --dim)",
            ),
            memory.Allocation(
                memory.embedding_bytes(self.batch_size, widths[-1], width),
                f"`embedding_dim` {width} (the encoder's output layer and a batch's embeddings)",
                "pass a smaller --embedding-dim",
            ),
            memory.Allocation(
                EVALUATION_COPIES * self.eval_size * (dim + width) * floats,
                f"`eval_size` {self.eval_size} at `dim` {dim} (the held-out latents, their "
                f"observations and embeddings, {EVALUATION_COPIES} float32 copies)",
                "pass a smaller --eval-size",
            ),
            memory.Allocation(
                EVALUATION_COPIES * self.alignment_pairs * (dim + width) * floats,
                f"`alignment_pairs` {self.alignment_pairs} at `dim` {dim} (the pairs the "
                "alignment is fitted on)",
                "pass fewer --alignment-pairs",
            ),
            memory.Allocation(
                CORRELATION_COPIES * (dim + width) ** 2 * 8,
                f"{sizes} (each evaluation's {dim + width} x {dim + width} float64 "
                "correlations of latents and embedding)",
                f"pass a smaller --{wider.replace('_', '-')}",
            ),
        ]


def build_setup(config: SyntheticConfig) -> SyntheticSetup:
    """The data of the experiment: latents, positives and the generator of `config`."""
    return SyntheticSetup(
        config.true_concentration(),
        space=config.space,
        conditional=config.conditional,
        generator_seed=config.seed,
        generator_draws=config.generator_draws,
    )


def build(config: SyntheticConfig) -> Experiment:
    """Pairs from the DGP, the MLP encoder and the identifiability evaluator."""
    setup = build_setup(config)
    observations, latents = setup.evaluation_set(config.eval_size, seed=config.seed + 10_000)
    alignment_pairs = None
    if config.alignment_pairs:
        # Drawn apart from training's batches (seeded by (seed, i)) and the held-out set.
        pairs = setup.sample_pairs(config.alignment_pairs, tf.constant([config.seed, -1], tf.int64))
        alignment_pairs = pairs["view1"].numpy(), pairs["view2"].numpy()
    evaluator = IdentifiabilityEvaluator.for_setup(
        setup, observations, latents, config.nonlinear_r2, alignment_pairs
    )
    hidden = split_list(config.hidden_units, strict_int)
    primary = DOSE_RESPONSE_SCORES if config.concentration_spread else PRIMARY_SCORES
    return Experiment(
        train_data=lambda start: setup.dataset(config.batch_size, seed=config.seed, start=start),
        encoder=lambda: mlp_encoder(
            config.dim,
            config.embedding_dim or config.dim,
            hidden,
            rotation_gain=config.rotation_gain,
        ),
        evaluators=[evaluator],
        normalize=config.space == "sphere",
        curve_keys=primary + (("aligned_mcc",) if alignment_pairs else ()),
        aligned=alignment_pairs is not None,
        primary_scores=primary,
        metadata={"true_concentration": setup.concentration.tolist()},
        plots=functools.partial(plots.plot_identifiability, true_concentration=setup.concentration),
    )


# Copies of the generator's candidate matrices alive at once while the best-conditioned
# is chosen (measured: peak RSS 4.0 x draws x dim^2 x 8 bytes at dim 50, 20,000 draws).
GENERATOR_DRAW_COPIES = 4
GENERATOR_LAYERS = 3
# Float32 copies of a [rows, dim + width] set alive while it is drawn and scored
# (measured: peak RSS EVAL x eval_size x dim x 4 bytes at dim 50, 2,000,000 rows).
EVALUATION_COPIES = 8
# np.corrcoef's covariance and its normalised copy.
CORRELATION_COPIES = 2
# The fewest pairs `alignment_pairs` takes (and at least twice the embedding's width); the
# paper's Lambda 5..25 needs 16384 for MCC 0.99 on an exact linear mixture (alignment.py).
ALIGNMENT_PAIRS_MIN = 1000
PAPER = dict(FAST, steps=6000, eval_every=500)
# The paper's linear Lambda: a 300-step warm-up to a constant 4e-3, a moving average of
# the weights, Muon on the output layer and Adam on the hidden ones (docs/tuning.md,
# points 5, 7 and 8; its measured steps to target in docs/results.md). The other
# settings keep Adam at a constant 1e-3.
PAPER_LINEAR = dict(
    PAPER,
    optimizer="muon",
    muon_exclude="hidden",
    learning_rate=4e-3,
    warmup_steps=300,
    ema_momentum=0.99,
    steps=5000,
    eval_every=250,
)
# Each preset starts Lambda_hat below every true Lambda (docs/tuning.md, point 1), not
# at 1 / infonce_temperature.
PRESETS = {
    # 3 content latents (Lambda 200..400) and 3 style latents (Lambda 10..20) on S^5.
    "quick": SyntheticConfig(
        concentration="content_style",
        dim=6,
        hidden_units="256,256,256",
        steps=2000,
        eval_every=500,
        initial_concentration=5.0,
        generator_draws=2000,
        **FAST,
    ),
    # The paper's settings (n = 10, batch 1000, their encoder), with the tuned optimiser.
    "paper-linear": SyntheticConfig(
        concentration="linear", initial_concentration=2.0, **PAPER_LINEAR
    ),
    "paper-two-valued": SyntheticConfig(
        concentration="two_valued", initial_concentration=2.0, **PAPER
    ),
    # n = 10: content Lambda 100..200 x5, style 10..20 x5 (docs/tuning.md, point 6).
    "content-style": SyntheticConfig(
        concentration="content_style", high=200.0, initial_concentration=5.0, **PAPER
    ),
}
# `paper-linear` with half the batch and a learned rotation at 6x the learning rate, for
# less time to identifiability on a CPU (docs/tuning.md, points 8 and 10; times:
# docs/speed.md#time-to-identifiability).
PRESETS["paper-linear-fast"] = dataclasses.replace(
    PRESETS["paper-linear"], batch_size=500, rotation_gain=6.0
)
# The dose-response (`recipes/dose_response.py`): `quick`'s latents, encoder
# and training on a geometric Lambda of spread r = high / low at the geometric mean 64
# (quick's is 63), r swept over 1..256. Lambda_hat starts at 2, below the smallest true
# Lambda of every cell (4 at r = 256). Endpoint: step 2000, MCC and the smallest
# per-latent R^2 (`DOSE_RESPONSE_SCORES`).
DOSE_RESPONSE_SCORES = ("mcc", "min_linear_r2")
PRESETS["dose-response"] = dataclasses.replace(
    PRESETS["quick"],
    concentration="geometric",
    concentration_spread=16.0,
    initial_concentration=2.0,
    losses="aninfonce,aninfonce_isotropic,infonce",
)
SWEEP = PRESETS["dose-response"]
SWEEP_AXES = {"concentration_spread": [1.0, 4.0, 16.0, 64.0, 256.0]}
SWEEP_LIMITS: dict = {}
SWEEP_SCORES = DOSE_RESPONSE_SCORES
SMOKE = dict(
    steps=40,
    eval_every=20,
    warmup_steps=0,
    batch_size=128,
    hidden_units="32,32",
    eval_size=512,
    generator_draws=200,
)


def check_sweep(config: SyntheticConfig) -> None:
    """Raises ValueError unless `config` has a geometric Lambda (the dose-response's)."""
    if config.concentration != "geometric":
        raise ValueError(
            "the dose-response sweeps --concentration-spread of a geometric Lambda; got "
            f"--concentration {config.concentration}."
        )


__all__ = [
    "DOSE_RESPONSE_SCORES",
    "PRESETS",
    "SMOKE",
    "SWEEP",
    "SWEEP_AXES",
    "SWEEP_LIMITS",
    "SWEEP_SCORES",
    "check_sweep",
    "SyntheticConfig",
    "build",
    "build_setup",
]
