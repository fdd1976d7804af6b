"""Real images on a CPU: AnInfoNCE vs InfoNCE on patches of the photos shipped with
scikit-learn and scikit-image, scored by class accuracy and augmentation readout.

Run:

    python recipes/photos.py                  # ~8 min on a 2-core CPU, no download
    python recipes/photos.py --seeds 0,1,2    # ~8 min per seed
    python recipes/photos.py --smoke          # whole pipeline in < 1 min

Writes `results.json` (per loss: `backbone` and `projector` class accuracy, kNN
accuracy at k = 200 and k = 20, augmentation readout and the readout of each target),
the figures, TensorBoard logs and the models to `--out`; with `--seeds 0,1,2` one such
run per seed and `summary.json`. The readout's definition is in
`aninfonce_tf.evaluation.probes`.

Results over seeds 0, 1, 2: docs/results.md, "photos".
"""

from aninfonce_tf import runner
from aninfonce_tf.configs import photos


def main(argv=None) -> dict:
    return runner.main(photos, argv, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
