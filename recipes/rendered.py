"""The rendered-images recipe: `python -m aninfonce_tf rendered` runs the same; `--help`
says what it runs (`aninfonce_tf.recipes`) and lists every flag with the preset's value.

Run:

    python recipes/rendered.py --smoke    # whole pipeline in < 1 min
    python recipes/rendered.py            # quick: SimCLR's views, 7 min
    python recipes/rendered.py --preset latent --seeds 0,1,2      # ~8.5 min per seed
    python recipes/rendered.py --preset spike-slab --seeds 0,1,2  # 8.4 min per seed

on an idle 2-core CPU, no download (on a CPU shared with two other runs a seed took
~30 min). `quick` trains both losses for 1500 steps of 256 pairs of 32-pixel images
and evaluates every 750; `latent` and `spike-slab` train 2000 steps and evaluate
every 500. A killed run resumes from its last checkpoint, taken at every evaluation
(`--save-every 250` for more often).

Each image is one two-tone polygon on a plain background rendered in the input
pipeline from its latents: `shape` (5 classes), `x`, `y`, `scale`, `rotation`,
`object_hue`, `background_hue` (aninfonce_tf.data.renderer). The presets make a
positive pair three ways (`--mode`):
- quick (`augment`): two SimCLR views of one render, crops of 40-100 % of the image
  (SimCLR's 8-100 % leaves the object wholly out of 7.5 % of views), flip, colour jitter (s 0.5, p
  0.8), grayscale (p 0.2). The crop changes x, y and scale; the flip x and rotation;
  jitter and grayscale both hues. Shape is kept (the flip mirrors the chiral L into a
  shape the renderer never draws).
- latent: z and z+ from a normal conditional with Lambda 100 for x, y and scale
  (content) and 5 for rotation and both hues (style); shape kept (the theory's setting).
- spike-slab: as latent, but each latent changes in only half of the pairs, as hue
  under jitter with p 0.8 and grayscale p 0.2 (not the conditional AnInfoNCE assumes).

Prints per loss, at the backbone and at the projector, the mean linear R^2 of the
content and style blocks (augment: every continuous latent is style), the shape
accuracy and (augment) the augmentation readout. Writes `results.json` (every
latent's linear and kernel-ridge R^2), `latent_r2.png`, `lambda_hat.png`,
`positive_pairs.png`, `curves.png`, TensorBoard logs and the models to `--out`;
with `--seeds`, one such run per seed and `summary.json` (mean, sd, and the
AnInfoNCE - InfoNCE difference with its 95 % interval).

Results of each preset over seeds 0, 1, 2: docs/results.md, "Images rendered from
known latents".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> dict:
    return recipes.run("rendered", argv)


if __name__ == "__main__":
    main()
