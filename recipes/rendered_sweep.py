"""The trade-off map on rendered images: `python -m aninfonce_tf rendered_sweep` runs the
same; `--help` says what it runs (`aninfonce_tf.recipes`) and lists every flag with the
preset's value.

Run:

    python recipes/rendered_sweep.py --smoke --corner-seeds 0 --out runs/sweep-smoke  # 9 tiny runs
    python recipes/rendered_sweep.py --out runs/rendered-sweep        # ~1.5-2 h

on a 2-core CPU, no download (~6.5 min per cell and seed with two other runs on the
CPU; 17 cell-seeds). The grid is the smallest crop area (0.9, 0.5, 0.2)
by the colour-jitter strength s (0, 0.5, 1.0; brightness, contrast, saturation
0.8 s, hue 0.2 s), flips and grayscale as in the `quick` preset of
`recipes/rendered.py`; each cell trains both losses for 500 steps of 256 pairs
(`--steps` and every other flag of that recipe apply to every cell), seeds 0, 1
and 2 at the four corners and seed 0 (`--seeds`) inside. Killed, the same command
resumes where it stopped.

Writes, besides every cell's runs in `OUT/<cell>/seed_<k>/`: `grid.json` (each
cell's `summary.json`), `tradeoff.md` (a row per cell and loss: shape accuracy
and style R^2 at both layers, mean +- sd over the seeds) and `tradeoff.png` (shape
accuracy against style R^2, one panel per layer).

Results: docs/results.md, "The trade-off map: augmentation strength against what each
loss keeps".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> list[dict]:
    return recipes.run("rendered_sweep", argv)


if __name__ == "__main__":
    main()
