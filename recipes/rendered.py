"""The rendered-images recipe: `python -m aninfonce_tf rendered` runs the same; `--help`
says what it runs (`aninfonce_tf.recipes`) and lists every flag with the preset's value.

Run:

    python recipes/rendered.py --smoke    # whole pipeline in < 1 min
    python recipes/rendered.py            # large-objects: SimCLR's views, ~8 min
    python recipes/rendered.py --seeds 0,1,2,3,4 --losses aninfonce,infonce,aninfonce_isotropic
    python recipes/rendered.py --preset quick --seeds 0,1,2,3,4
    python recipes/rendered.py --preset latent --seeds 0,1,2
    python recipes/rendered.py --preset spike-slab --seeds 0,1,2

on a 2-core CPU, no download: the three variants of `large-objects`, the main preset,
took 11.5-11.9 min a seed (221-243 s of training each). It trains for 2500 steps of 256
pairs of 32-pixel images and evaluates every 500; `quick` (objects of scale 0.09-0.14)
1500 steps, every 750; `latent` and `spike-slab` 2000 steps, every 500. The encoder is
`pooled_cnn` (`--encoder small_cnn` for the earlier one). A killed run resumes from its
last checkpoint, taken at every evaluation (`--save-every 250` for more often).

Each image is one two-tone polygon on a plain background rendered in the input
pipeline from its latents: `shape` (5 classes), `x`, `y`, `scale`, `rotation`,
`object_hue`, `background_hue` (aninfonce_tf.data.renderer). The presets make a
positive pair three ways (`--mode`):
- large-objects and quick (`augment`): two SimCLR views of one render, crops of 40-100
  % of the image (SimCLR's 8-100 % leaves the object wholly out of 7.5 % of views),
  flip, colour jitter (s 0.5, p 0.8), grayscale (p 0.2). The crop changes x, y and
  scale; the flip x and the rotation's sin; jitter and grayscale both hues, far less.
  Shape is kept (the flip mirrors the chiral L into a shape the renderer never draws).
  large-objects draws objects of 8-12.6 % of the image (`--object-scale 0.16,0.2`),
  quick of 2.5-6.2 %, where shapes differ by 1-2 pixels and no variant reads shape
  above 0.45 (chance 0.2).
- latent: z and z+ from a normal conditional with Lambda 100 for x, y and scale and 5
  for rotation and both hues; shape kept (the theory's setting).
- spike-slab: as latent, but each latent changes in only half of the pairs (a
  conditional other than the normal one AnInfoNCE assumes).

Content and style are measured, not named: each latent part's effective concentration
under the preset's pairs (`data.effective_concentration`, recorded in `results.json`).
Prints per loss, at the backbone and at the projector, the mean linear R^2 of the
content and style blocks, the shape accuracy and (augment) the augmentation readout.
Writes `results.json` (every latent's and part's linear R^2, and kernel-ridge R^2 but
in large-objects), `latent_r2.png`, `r2_by_concentration.png`, `lambda_hat.png`,
`positive_pairs.png`, `curves.png`, TensorBoard logs and the models to `--out`; with
`--seeds`, one such run per seed, `summary.json` (mean, sd, and AnInfoNCE's paired
differences with their 95 % intervals) and the figures over seeds.

Results: docs/results.md, "Images rendered from known latents".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> dict:
    return recipes.run("rendered", argv)


if __name__ == "__main__":
    main()
