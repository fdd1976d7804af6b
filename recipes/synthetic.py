"""Synthetic identifiability experiment: AnInfoNCE vs InfoNCE on the paper's DGP.

Run (the README's main job; `quick` is the default preset):

    python recipes/synthetic.py                       # quick, ~1.5 min on a 2-core CPU
    python recipes/synthetic.py --preset paper-linear # ~5 min per loss
    python recipes/synthetic.py --preset paper-two-valued
    python recipes/synthetic.py --preset content-style
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

Expected (measured on a 2-core CPU, 2026-11-26; tables in docs/results.md):
- quick: AnInfoNCE linear R^2 0.995 (high block 0.996, low 0.995), MCC 0.89, Lambda_hat
  rank correlation 1.0; InfoNCE (temperature 0.2) R^2 0.46 with the low block at 0.19
  (seeds 1 and 2: low 0.34 and 0.19).
- paper-linear (AnInfoNCE, `--stop-at mcc=0.95,linear_r2=0.99`): seeds 0, 1 and 2
  reach both at steps 3250, 2250 and 2500 (203, 143 and 160 s from start to exit;
  benchmarks/time_to_target.py). Without it, seed 0 ends at R^2 0.997, MCC 0.976,
  Lambda_hat 5.8 ... 23.4 after 5000 steps (299 s of training).
- paper-two-valued (AnInfoNCE): R^2 0.984, MCC 0.78, Lambda_hat in two clusters
  {21.3..22.5 x5, 5.3..5.6 x5} after 6000 steps (~6 min).
- content-style: AnInfoNCE R^2 0.988 (content 0.990, style 0.986), MCC 0.85, Lambda_hat
  rank correlation 0.98; InfoNCE R^2 0.42 with the style block at 0.08 (~12 min).
"""

from aninfonce_tf import experiment
from aninfonce_tf.configs import synthetic


def main(argv=None) -> dict:
    return experiment.main(synthetic, argv, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
