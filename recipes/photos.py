"""The photos recipe: `python -m aninfonce_tf photos` runs the same; `--help` says what it
runs (`aninfonce_tf.recipes`) and lists every flag with the preset's value.

Run:

    python recipes/photos.py                  # ~9 min on a 2-core CPU, no download
    python recipes/photos.py --seeds 0,1,2    # ~9 min per seed
    python recipes/photos.py --smoke          # whole pipeline in < 1 min

Writes `results.json` (per loss: `backbone` and `projector` class accuracy, kNN
accuracy at k = 200 and k = 20, augmentation readout over the targets a supervised
network reads from one view, `run.readout_determinable`, and over every target, and the
readout of each target), the figures, TensorBoard logs and the models to `--out`; with
`--seeds 0,1,2` one such run per seed and `summary.json`. The readout's definition is
in `aninfonce_tf.evaluation.probes` and `aninfonce_tf.evaluation.determinable`.

Results over seeds 0, 1, 2: docs/results.md, "photos".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> dict:
    return recipes.run("photos", argv)


if __name__ == "__main__":
    main()
