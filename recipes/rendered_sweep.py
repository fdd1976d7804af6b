"""The trade-off map on rendered images: `python -m aninfonce_tf rendered_sweep` runs the
same; `--help` says what it runs (`aninfonce_tf.recipes`) and lists every flag with the
preset's value.

Run:

    python recipes/rendered_sweep.py --smoke --seeds 0 --out runs/sweep-smoke  # 7 tiny cells
    python recipes/rendered_sweep.py --out runs/rendered-sweep                 # ~2 h

A star through the `quick` preset's point of `recipes/rendered.py`: each setting of
SimCLR's views varied alone, the others at `quick`'s values:

- the smallest crop area 0.4 (`quick`), 0.6, 0.8 (`--grid-crop-min-scale`); values
  below 0.4 are refused (crops that small lose the object from view, and such a pair
  teaches only the background) unless `--allow-below-limits`;
- the colour-jitter strength s 0, 0.5 (`quick`), 1 (brightness, contrast, saturation
  0.8 s, hue 0.2 s; `--grid-jitter-strength`);
- the flip probability 0.5 (`quick`), 0 (`--grid-flip-probability`);
- the grayscale probability 0.2 (`quick`), 0 (`--grid-grayscale-probability`).

That is 7 cells (`quick`'s point once), each trained as `quick` is (1500 steps of 256
pairs; scored once, at the end, without the kernel ridge), for AnInfoNCE and InfoNCE
(`--losses aninfonce,infonce,aninfonce_isotropic` adds the learned isotropic control,
+50 %) and seeds 0, 1 and 2 (`--seeds`): 42 trainings of ~2.5 min each on a quiet
2-core CPU, ~1.8 h in all (more with other jobs on it). `--design product` runs every
combination of the axes' values instead (36 cells, ~9 h; `--corner-seeds` gives its
corners other seeds). Killed, the same command resumes where it stopped.

Writes, besides every cell's runs in `OUT/<cell>/seed_<k>/`: `grid.json` (per cell its
values, what it changes from `quick`'s point, its `summary.json`, each seed's scores and
its pairs' effective concentration and blocks); `tradeoff.md`, every entry over the
seeds on which every loss of the cell has a finite score (paired, n given): a row per
cell and loss with shape accuracy at the backbone and the projector and the backbone's
R^2 of each latent part the sweep moves (the same part in every cell), mean +- sd, and
the paired differences AnInfoNCE - InfoNCE (and - isotropic) with their 95 % intervals;
then how each paired difference changes from `quick`'s point to each cell, seed by seed
(a difference in differences), with its 95 % interval; all uncorrected; then each
cell's blocks (their parts differ between cells, so block scores are left out of the
comparisons); and `tradeoff.png` (per axis, each latent part the axis moves: its R^2
against its effective concentration per loss, on the measured range, a part no pair
changes in a slot of its own past a shaded break; and the shape accuracy per cell; a
row per level, chance lines).

Results: docs/results.md, "The trade-off map: augmentation strength against what each
loss keeps".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> list[dict]:
    return recipes.run("rendered_sweep", argv)


if __name__ == "__main__":
    main()
