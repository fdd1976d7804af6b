"""The synthetic identifiability recipe: `python -m aninfonce_tf synthetic` runs the same;
`--help` says what it runs (`aninfonce_tf.recipes`) and lists every flag with the
preset's value.

Run (the README's main job; `quick` is the default preset), times on a 2-core CPU:

    python recipes/synthetic.py                       # quick, ~1.5 min
    python recipes/synthetic.py --preset paper-linear # ~5 min per loss
    python recipes/synthetic.py --preset paper-linear-fast  # ~3 min per loss, 500 pairs
    python recipes/synthetic.py --preset paper-two-valued   # ~6 min per loss
    python recipes/synthetic.py --preset content-style      # ~12 min
    python recipes/synthetic.py --smoke               # whole pipeline in < 1 min
    python recipes/synthetic.py --preset paper-linear --stop-at mcc=0.95,linear_r2=0.99
    python recipes/synthetic.py --space euclidean --conditional normal  # no sphere
    python recipes/synthetic.py --strategy mirrored   # every local GPU
    python recipes/synthetic.py --steps 6000 --learning-rate 3e-3 --out runs/mine

Every field of `SyntheticConfig` and of the shared `RunConfig` is a flag
(`--batch-size`, `--losses aninfonce,infonce,infonce_hard_negatives,infonce_ensemble`,
`--strategy`, `--mixed-precision`, ...); `--help` lists them with the chosen preset's
values. Writes `results.json`, `per_latent_r2.png`, `curves.png`, `lambda_<loss>.png`,
`config.json`, TensorBoard logs, and per loss `<loss>/model.keras` and the exported
encoder `<loss>/encoder/` to `--out`; rerun into the same `--out` to resume.

Results: docs/results.md, "Synthetic experiment: `quick`", "Synthetic experiment: the
paper's settings" and "Time to identifiability" (`--stop-at`,
benchmarks/time_to_target.py).
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> dict:
    return recipes.run("synthetic", argv)


if __name__ == "__main__":
    main()
