"""One worker of `test_multiworker.py`: trains the synthetic (or photos) smoke
config under `MultiWorkerMirroredStrategy` (TF_CONFIG set by the test) and saves its
final weights and the candidates per anchor row it trained with.

    python tests/runner/multiworker_worker.py OUT_DIR [synthetic|photos]
"""

import dataclasses
import json
import os
import sys
from pathlib import Path

import keras
import numpy as np

from aninfonce_tf import runner
from aninfonce_tf.configs import photos, synthetic


class SaveWeights(keras.callbacks.Callback):
    def __init__(self, path: Path):
        super().__init__()
        self.path = path
        self.candidates = []

    def on_train_batch_end(self, batch, logs=None):
        self.candidates.append(float(logs["candidates"]))

    def on_train_end(self, logs=None):
        weights = {str(i): np.asarray(w) for i, w in enumerate(self.model.weights)}
        np.savez(self.path.with_suffix(".npz"), **weights)
        self.path.with_suffix(".json").write_text(json.dumps(self.candidates))


def smoke_config() -> synthetic.SyntheticConfig:
    """The smoke config at a global batch of 64 pairs, 20 steps."""
    overrides = dict(losses="aninfonce", steps=20, eval_every=10, batch_size=64)
    return dataclasses.replace(synthetic.PRESETS["quick"], **{**synthetic.SMOKE, **overrides})


def photos_smoke_config():
    """The photos smoke config, AnInfoNCE only, at a global batch of 32 pairs."""
    config = dataclasses.replace(photos.PRESETS["photos"], **photos.SMOKE)
    return dataclasses.replace(config, losses="aninfonce")


def main() -> None:
    out = Path(sys.argv[1])
    kind = sys.argv[2] if len(sys.argv) > 2 else "synthetic"
    task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    config, build = {
        "synthetic": (smoke_config, synthetic.build),
        "photos": (photos_smoke_config, photos.build),
    }[kind]
    runner.run(
        dataclasses.replace(config(), strategy="multiworker"),
        build,
        out / "run",
        verbose=0,
        callbacks=[SaveWeights(out / f"worker-{task}")],
    )


if __name__ == "__main__":
    main()
