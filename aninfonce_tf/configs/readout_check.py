"""The supervised readout check as the image experiments run it, at `CHECK_SEED`.
Details: docs/method.md#the-check-in-the-image-runs

Example:

>>> config = ReadoutCheckConfig(readout_check_steps=-1)
>>> config.validate()
Traceback (most recent call last):
...
ValueError: `readout_check_steps` must be at least 0 (0: no check, the readout averages every target); got -1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import keras
import tensorflow as tf

from aninfonce_tf.configs.base import RunConfig, at_least, option
from aninfonce_tf.data.augment import SimCLRAugment
from aninfonce_tf.data.datasets import pair_batches
from aninfonce_tf.evaluation.determinable import determinability

# The augmentation stream of the check's training views: apart from the contrastive
# training's, 0, and its workers', 0 to workers - 1 (`pair_batches`' `stream`).
CHECK_STREAM = 2**20
# The second half of the seed of the check's test views, `[CHECK_SEED, CHECK_VIEWS_SEED]`.
CHECK_VIEWS_SEED = 124
# The seed of the check, whatever the training seed: its images, views and network.
CHECK_SEED = 0


def _pairs_of_views(name: str, value: int) -> None:
    why = "the two views of half as many training images"
    at_least(2, why)(name, value)
    if value % 2:
        raise ValueError(f"`{name}` must be even ({why}); got {value}.")


@dataclasses.dataclass
class ReadoutCheckConfig(RunConfig):
    """A run config with the settings of the supervised readout check (beside `RunConfig`'s)."""

    readout_check_steps: int = option(
        0,
        "steps of a supervised network of the backbone's architecture that finds which "
        "readout targets one view determines, the only ones augmentation_readout then "
        "averages (augmentation_readout_all_targets: every one); 0: no check",
        group="evaluation",
        rule=at_least(0, "0: no check, the readout averages every target"),
    )
    readout_check_batch_size: int = option(
        256,
        "training views per step of the readout check",
        group="evaluation",
        rule=_pairs_of_views,
    )


def readout_check(
    config: ReadoutCheckConfig,
    encoder: Callable[[], keras.Model],
    train,
    augment: SimCLRAugment,
    test_views,
    test_params: Mapping,
    canvas: int | None = None,
    decode: Callable[[dict], dict] | None = None,
) -> dict:
    """The `determinability` record of `config`'s check, scored on `test_views`."""
    pairs = pair_batches(
        train,
        augment,
        config.readout_check_batch_size // 2,
        seed=config.seed,
        canvas=canvas,
        decode=decode,
        stream=CHECK_STREAM,
    )
    batches = pairs.map(
        lambda pair: (
            tf.concat([pair["view1"], pair["view2"]], 0),
            tf.nest.map_structure(
                lambda first, second: tf.concat([first, second], 0),
                pair["params1"],
                pair["params2"],
            ),
        )
    )
    return {
        **determinability(
            encoder,
            batches,
            test_views,
            test_params,
            config.readout_check_steps,
            seed=config.seed,
            jit_compile=config.jit_compile,
        ),
        "batch_size": config.readout_check_batch_size // 2 * 2,
    }


__all__ = [
    "CHECK_SEED",
    "CHECK_STREAM",
    "CHECK_VIEWS_SEED",
    "ReadoutCheckConfig",
    "readout_check",
]
