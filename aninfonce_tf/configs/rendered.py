"""Rendered images with known latents, pairs by SimCLR's views (crops of at least
`AUGMENT_CROP_SCALE`: docs/results.md#quick-simclrs-views-five-seeds) or conditionals."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from aninfonce_tf import memory, plots
from aninfonce_tf.configs.base import (
    CONVOLUTIONAL_JIT_HELP,
    RunConfig,
    at_least,
    layer_widths,
    lies_in,
    option,
    split_list,
)
from aninfonce_tf.configs.parts import Experiment
from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.effective_concentration import effective_blocks
from aninfonce_tf.data.rendered_pairs import (
    DEFAULT_CONCENTRATION,
    PAIR_CONDITIONALS,
    PAIR_MODES,
    RenderedPairs,
)
from aninfonce_tf.data.renderer import (
    CONTINUOUS,
    LATENT_NAMES,
    MAX_SCALE,
    MIN_SCALE,
    part_names,
)
from aninfonce_tf.encoders import pooled_cnn, small_cnn
from aninfonce_tf.evaluation.features import LEVELS
from aninfonce_tf.evaluation.latents import LatentEvaluator
from aninfonce_tf.layers import projection_head
from aninfonce_tf.parsing import strict_float, strict_int

ENCODERS = {"pooled_cnn": pooled_cnn, "small_cnn": small_cnn}
# The smallest crop area of the augment presets (see the module's docstring).
AUGMENT_CROP_SCALE = 0.4


@dataclasses.dataclass
class RenderedConfig(RunConfig):
    """Every hyperparameter of the rendered-images experiment (beside `RunConfig`'s).

    Example:

    >>> config = dataclasses.replace(PRESETS["latent"], **SMOKE)
    >>> config.mode, pairs(config).mode
    ('latent', 'latent')
    """

    jit_compile: bool = option(False, CONVOLUTIONAL_JIT_HELP)

    mode: str = option("augment", "how a positive pair is made (RenderedPairs)", PAIR_MODES)
    size: int = option(
        32,
        "side of the renders and of the views, in pixels (at least 19)",
        rule=at_least(19, "the object then stays inside"),
    )
    object_scale: str = option(
        "0.09,0.14",
        "range of the objects' scale, the radius of the disk of their area as a fraction of "
        f"the side, two comma-separated values in [{MIN_SCALE}, {MAX_SCALE}] (area pi scale^2; the "
        "centre's range narrows to keep larger objects inside)",
    )
    concentration: str = option(
        "",
        "latent, spike-slab: Lambda of the conditional per continuous latent, "
        f"{len(CONTINUOUS)} comma-separated values in the order {','.join(CONTINUOUS)}, in "
        "units where each latent's range is 2 wide (empty: "
        + ",".join(f"{DEFAULT_CONCENTRATION[name]:g}" for name in CONTINUOUS)
        + ")",
    )
    conditional: str = option(
        "normal", "latent, spike-slab: the conditional z+ | z", PAIR_CONDITIONALS
    )
    change_probability: str = option(
        "0.5",
        "spike-slab: probability that a latent changes in a pair, one value or "
        f"{len(CONTINUOUS)} comma-separated in the order of --concentration",
    )
    crop_min_scale: float = option(
        AUGMENT_CROP_SCALE,
        "augment: smallest crop area, a fraction of the image (SimCLR: 0.08)",
        rule=lies_in(0, 1, open_low=True),
    )
    jitter_strength: float = option(
        0.5,
        "augment: colour jitter strength s (brightness, contrast, saturation 0.8 s, hue "
        "0.2 s; SimCLR's CIFAR10 views: 0.5)",
        rule=lies_in(0, 1.25),
    )
    flip_probability: float = option(0.5, "augment: probability of a view's horizontal flip")
    grayscale_probability: float = option(
        0.2, "augment: probability of a view's grayscale (after the jitter)"
    )
    encoder: str = option(
        "pooled_cnn", "backbone (encoders.pooled_cnn or small_cnn)", tuple(ENCODERS)
    )
    encoder_filters: str = option(
        "16,32,48",
        "the CNN's convolution widths (pooled_cnn: the first two stride 2)",
        rule=layer_widths(),
    )
    features: int = option(128, "backbone features", rule=at_least(1))
    projector_units: str = option(
        "256,16", "projection head widths, the last its output", rule=layer_widths()
    )
    eval_size: int = option(
        2000,
        "held-out renders: the probes fit on half, tune on a quarter, are scored on a quarter",
        group="evaluation",
        rule=at_least(100, "a quarter scores the probes"),
    )
    readout_size: int = option(
        1000,
        "augment: augmented views the augmentation readout reads",
        group="evaluation",
        rule=at_least(1),
    )
    nonlinear: bool = option(True, "also the kernel-ridge R^2 of every latent", group="evaluation")

    def validate(self) -> None:
        """`RunConfig.validate`, then this experiment's own fields."""
        super().validate()
        pairs(self)
        memory.check_allocations(
            [
                memory.image_set(self.eval_size, self.size, 3, "eval_size"),
                memory.image_set(self.readout_size, self.size, 3, "readout_size"),
            ]
        )


def _numbers(config: RenderedConfig, field: str) -> list[float]:
    try:
        return split_list(getattr(config, field), strict_float)
    except ValueError:
        raise ValueError(
            f"`{field}` must be comma-separated numbers; got {getattr(config, field)!r}."
        ) from None


def pairs(config: RenderedConfig) -> RenderedPairs:
    """The pair source of `config` (ValueError naming a field it cannot take).

    Example:

    >>> config = dataclasses.replace(PRESETS["latent"], concentration="100,100,100,5,5,5")
    >>> pairs(config).concentration_values.tolist()
    [100.0, 100.0, 100.0, 5.0, 5.0, 5.0]
    >>> pairs(PRESETS["quick"]).augmentation.crop_scale
    (0.4, 1.0)
    """
    concentration = _numbers(config, "concentration") or dict(DEFAULT_CONCENTRATION)
    change = _numbers(config, "change_probability")
    object_scale = tuple(_numbers(config, "object_scale"))
    strength = config.jitter_strength
    augment = SimCLRAugment(
        image_size=config.size,
        crop_scale=(config.crop_min_scale, 1.0),
        brightness=0.8 * strength,
        contrast=0.8 * strength,
        saturation=0.8 * strength,
        hue=0.2 * strength,
        # Checked by SimCLRAugment, whose fields these are, under the same names.
        flip_probability=config.flip_probability,
        grayscale_probability=config.grayscale_probability,
    )
    return RenderedPairs(
        mode=config.mode,
        size=config.size,
        augment=augment,
        concentration=concentration,
        conditional=config.conditional,
        change_probability=change,
        object_scale=object_scale,
    )


def _block_and_shape_scores(blocks: dict) -> list[str]:
    """The linear R^2 of each block of `blocks` with members, then the shape accuracy."""
    return [f"block_linear_r2/{b}" for b, members in blocks.items() if members] + ["shape_accuracy"]


def distinct_concentrations(source: RenderedPairs) -> bool:
    """Whether `source` draws a distinct Lambda per continuous latent (scored on MCC)."""
    if source.mode == "augment":
        return False
    values = source.concentration_values
    return len(set(values.tolist())) == len(values)


ORIENTATION_SCORES = ("mcc", "mcc_floor")


def table_columns(source: RenderedPairs, blocks: dict | None = None) -> tuple[str, ...]:
    """At each level: MCC and floor (distinct Lambda), block R^2, shape accuracy, readout."""
    blocks = source.blocks() if blocks is None else blocks
    scores = _block_and_shape_scores(blocks)
    if distinct_concentrations(source):
        scores = list(ORIENTATION_SCORES) + scores
    if source.mode == "augment":
        scores.append("augmentation_readout")
    return tuple(f"{level}/{score}" for level in LEVELS for score in scores)


def _number(value) -> float:
    """A summary's mean or sd, NaN where it has none (no finite value over the seeds)."""
    return float("nan") if value is None else float(value)


def primary_scores(blocks: dict, orientation: bool = False) -> tuple[str, ...]:
    """The scores conclusions rest on: MCC (`orientation`), else block R^2 and shape accuracy.

    Example:

    >>> primary_scores({"content": ("x",)}, orientation=True)
    ('projector/mcc', 'backbone/mcc')
    """
    if orientation:
        return ("projector/mcc", "backbone/mcc")
    return tuple(f"backbone/{score}" for score in _block_and_shape_scores(blocks))


def build(config: RenderedConfig) -> Experiment:
    """Rendered pairs, the small CNN with its projector, and the latent evaluator."""
    source = pairs(config)
    # The preset's pairs decide the blocks, not the training seed: every seed of a
    # preset is scored on the same blocks, so its block scores average the same parts.
    estimate = source.effective_concentration()
    orientation = distinct_concentrations(source)
    # With a distinct Lambda per latent each latent is its own block: its subspace score
    # asks whether its parts are read from their own matched dimensions.
    blocks = (
        {name: part_names([name], source.latents) for name in CONTINUOUS}
        if orientation
        else effective_blocks(estimate["correlation"])
    )
    images, latents = source.evaluation_set(config.eval_size, seed=config.seed + 10_000)
    views, view_params = (
        source.readout_set(config.readout_size, seed=config.seed + 20_000)
        if config.mode == "augment"
        else (None, None)
    )
    evaluator = LatentEvaluator(
        images,
        latents,
        blocks,
        views,
        view_params,
        nonlinear=config.nonlinear,
        specs=source.latents,
    )
    # The conditional's Lambda, of the pairs drawn from it.
    concentration = None if config.mode == "augment" else source.concentration_values
    units = split_list(config.projector_units, strict_int)
    filters = split_list(config.encoder_filters, strict_int)
    shape = (source.view_size, source.view_size, 3)
    columns = table_columns(source, blocks)

    def train_data(start: int):
        return source.dataset(config.batch_size, seed=config.seed, start=start)

    def figures(results: dict, run_dir: Path, title: str = "") -> list[Path]:
        batch = source.sample_pairs(12, seed=[config.seed, 0])
        paths = [
            plots.plot_image_grid(
                [batch["view1"], batch["view2"]],
                Path(run_dir) / "positive_pairs.png",
                row_titles=[f"positive pairs ({config.mode}): first view", "second view"],
            )
        ]
        scored = {name: r for name, r in results.items() if "backbone" in r}
        if scored:
            paths.append(
                plots.plot_latent_r2_levels(
                    {lvl: {n: r[lvl]["linear_r2"] for n, r in scored.items()} for lvl in LEVELS},
                    CONTINUOUS,
                    Path(run_dir) / "latent_r2.png",
                    concentration=concentration,
                    accuracy={
                        lvl: {n: r[lvl]["shape_accuracy"] for n, r in scored.items()}
                        for lvl in LEVELS
                    },
                    title=title,
                )
            )
            paths.append(
                plots.plot_r2_by_concentration(
                    {
                        lvl: {n: r[lvl]["part_linear_r2"] for n, r in scored.items()}
                        for lvl in LEVELS
                    },
                    estimate["parts"],
                    Path(run_dir) / "r2_by_concentration.png",
                    title=title,
                )
            )
        return paths + plots.plot_lambda_hats(results, run_dir, concentration, title=title)

    def seeds_figures(summary: dict, run_dir: Path, title: str = "") -> list[Path]:
        statistics = {"mean": {}, "sd": {}}
        for name, level in ((n, lvl) for n in ("mean", "sd") for lvl in LEVELS):
            prefix = f"{level}/part_linear_r2/"
            statistics[name][level] = {
                variant: {
                    key.removeprefix(prefix): _number(score.get(name))
                    for key, score in scores.items()
                    if key.startswith(prefix)
                }
                for variant, scores in summary["variants"].items()
            }
        path = Path(run_dir) / "r2_by_concentration.png"
        figure = plots.plot_r2_by_concentration(
            statistics["mean"], estimate["parts"], path, title, statistics["sd"]
        )
        return [figure]

    metadata = {
        "mode": config.mode,
        "latents": list(LATENT_NAMES),
        # Each latent's range, which `object_scale` sets for x, y and scale.
        "latent_ranges": {name: [spec.low, spec.high] for name, spec in source.latents.items()},
        "continuous_latents": list(CONTINUOUS),
        "effective_concentration": estimate,
        "blocks": {block: list(members) for block, members in blocks.items()},
    }
    if config.mode == "augment":
        metadata["augmentation"] = dataclasses.asdict(source.augmentation)
    else:
        metadata["true_concentration"] = concentration.tolist()
        if config.mode == "spike-slab":
            metadata["change_probability"] = source.change_values.tolist()
    return Experiment(
        train_data=train_data,
        encoder=lambda: ENCODERS[config.encoder](shape, config.features, filters),
        projector=lambda: projection_head(units[:-1], units[-1]),
        evaluators=[evaluator],
        curve_keys=columns,
        table_columns=columns,
        primary_scores=primary_scores(blocks, orientation),
        metadata=metadata,
        plots=figures,
        seeds_plots=seeds_figures,
    )


QUICK = RenderedConfig(
    mode="augment",
    batch_size=256,
    steps=1500,
    eval_every=750,
    learning_rate=1e-3,
)
# The pair modes of the latents' conditional train longer than `quick`.
LATENT = dataclasses.replace(QUICK, mode="latent", steps=2000, eval_every=500)
# Every preset's endpoint is its final step (`primary_scores`).
PRESETS = {
    # The main preset (the first is the default): `quick`'s views on objects of 8-12.6 %
    # of the image (scale 0.16-0.2, the centre in 0.417-0.583), where shapes differ by
    # many pixels, for 2500 steps at `quick`'s constant rate, evaluated every 500. Linear
    # scores only: the kernel ridge has no intercept, and the narrower ranges move its
    # targets' means.
    "large-objects": dataclasses.replace(
        QUICK, object_scale="0.16,0.2", nonlinear=False, steps=2500, eval_every=500
    ),
    # SimCLR's views of one render (crops of 40-100 %, flips, jitter s 0.5 with p 0.8,
    # grayscale p 0.2) on 32-pixel renders of objects of 2.5-6.2 % of the image,
    # `pooled_cnn`: 1500 steps, two evaluations per loss.
    "quick": QUICK,
    # The theory's setting: x, y and scale move little (Lambda 100), rotation and both
    # hues a lot (Lambda 5), shape is kept.
    "latent": LATENT,
    # As `latent`, but each latent changes only in half of the pairs: a conditional
    # other than the normal one AnInfoNCE assumes.
    "spike-slab": dataclasses.replace(LATENT, mode="spike-slab"),
    # The theory's condition for identification: a distinct Lambda per latent, halving
    # from x to the background hue (spread 32); the projector's 16 outputs exceed the 9
    # parts. Endpoint: MCC at the projector and the backbone at step 2000.
    "latent-spread": dataclasses.replace(
        LATENT, concentration="160,80,40,20,10,5", nonlinear=False
    ),
}
# The trade-off map (`aninfonce_tf.sweep.main`): SimCLR's views made weaker or stronger
# one field at a time from `quick`'s point, each axis's values; each cell `quick`'s
# training, scored once at its end, no kernel ridge.
SWEEP_AXES = {
    "crop_min_scale": [AUGMENT_CROP_SCALE, 0.6, 0.8],
    "jitter_strength": [0.0, 0.5, 1.0],
    "flip_probability": [0.5, 0.0],
    "grayscale_probability": [0.2, 0.0],
}
SWEEP = dataclasses.replace(QUICK, eval_every=QUICK.steps, nonlinear=False)
# The lowest value of a field a cell of the map may take, and why.
SWEEP_LIMITS = {
    "crop_min_scale": (
        AUGMENT_CROP_SCALE,
        "smaller crops lose the object from view (at the default --object-scale it covers "
        "2.5-6 % of the render; crops of "
        "8-100 % left it wholly out of 7.5 % of views, docs/results.md), and a pair without "
        "it teaches only the background",
    )
}
# The map's table: the class latent's accuracy and each block's linear R^2, per level.
SWEEP_SCORES = tuple(
    f"{level}/{score}"
    for level in LEVELS
    for score in ("shape_accuracy", "block_linear_r2/content", "block_linear_r2/style")
)
SMOKE = dict(
    size=24,
    steps=20,
    eval_every=10,
    batch_size=32,
    encoder_filters="8,16",
    features=32,
    projector_units="32,8",
    eval_size=240,
    readout_size=96,
)


def check_sweep(config: RenderedConfig) -> None:
    """Raises ValueError unless `config` makes pairs of SimCLR's views (the map sweeps them)."""
    if config.mode != "augment":
        raise ValueError(
            "the grid sweeps SimCLR's views, which only the augment mode uses; got "
            f"--mode {config.mode}."
        )


__all__ = [
    "ORIENTATION_SCORES",
    "distinct_concentrations",
    "primary_scores",
    "AUGMENT_CROP_SCALE",
    "PRESETS",
    "SMOKE",
    "SWEEP",
    "SWEEP_AXES",
    "SWEEP_LIMITS",
    "SWEEP_SCORES",
    "RenderedConfig",
    "build",
    "check_sweep",
    "pairs",
    "table_columns",
]
