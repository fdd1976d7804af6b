"""`RunPlan`: a run's config resolved and validated, its targets parsed, once."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from aninfonce_tf.configs.base import RunConfig, as_usage_errors
from aninfonce_tf.errors import UsageError
from aninfonce_tf.evaluation.targets import Target, parse_targets


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """What a run trains, checked: no later layer parses or validates it again.

    Args:
        config: the config, resolved (`RunConfig.resolved`) and validated.
        losses: the loss variants, in training order (`RunConfig.loss_names`).
        stop_at: `config.stop_at` parsed (`parse_targets`).
        seeds: the seeds of a `--seeds` run, each validated; () for one run.
        preset: the preset's name, for `results.json` and the figures.
        smoke: whether the config is a `--smoke` run.
        allow_code_change: resume a run trained by other code (`--allow-code-change`).

    Example:

    >>> plan = RunPlan.create(RunConfig(losses="infonce", stop_at="mcc=0.9"), seeds=[3])
    >>> plan.losses, plan.stop_at, plan.for_seed(3).config.seed
    (('infonce',), {'mcc': Target(value=0.9, direction='=')}, 3)
    """

    config: RunConfig
    losses: tuple[str, ...]
    stop_at: Mapping[str, Target]
    seeds: tuple[int, ...] = ()
    preset: str | None = None
    smoke: bool = False
    allow_code_change: bool = False

    @classmethod
    def create(
        cls,
        config: RunConfig,
        seeds: Sequence[int] | None = None,
        preset: str | None = None,
        smoke: bool = False,
        allow_code_change: bool = False,
    ) -> RunPlan:
        """The plan of `config` (a `UsageError` for a config, seed or target that cannot run)."""
        with as_usage_errors():
            config = config.resolved()
            for seed in [config.seed] if seeds is None else seeds:
                dataclasses.replace(config, seed=seed).validate()
            if seeds is not None and not seeds:
                raise UsageError("`seeds` is empty: give at least one seed.")
            config.check_inputs()
            stop_at = parse_targets(config.stop_at)
            losses = tuple(config.loss_names())
        return cls(config, losses, stop_at, tuple(seeds or ()), preset, smoke, allow_code_change)

    def for_seed(self, seed: int) -> RunPlan:
        """The plan of one seed's run (validated with this plan)."""
        config = dataclasses.replace(self.config, seed=seed)
        return dataclasses.replace(self, config=config, seeds=())


__all__ = ["RunPlan"]
