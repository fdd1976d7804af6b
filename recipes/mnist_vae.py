"""The VAE-decoder recipe: `python -m aninfonce_tf mnist_vae` runs the same; `--help` says
what it runs (`aninfonce_tf.recipes`) and lists every flag with the preset's value.

Run:

    python recipes/mnist_vae.py                 # digits preset: CPU, offline
    python recipes/mnist_vae.py --preset mnist  # the VAE on MNIST (tfds, prepared); a GPU
    python recipes/mnist_vae.py --smoke         # whole pipeline in < 1 min

The digits preset takes ~12 min on a 2-core CPU with the VAE cached, ~15 min on a
first run that trains it (2.5 min). The mnist preset has not been run (no GPU here).
The VAE is trained once per setting and cached in `--vae-cache-dir` (with
`reconstructions.png`). Writes the synthetic recipe's outputs (`results.json`,
`per_latent_r2.png`, `curves.png`, `lambda_<loss>.png`, TensorBoard logs, models)
and `positive_pairs.png`, decoded pairs g(z), g(z+), to `--out`.

Results: docs/results.md, "Images with known latents: the VAE-decoder experiment".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> dict:
    return recipes.run("mnist_vae", argv)


if __name__ == "__main__":
    main()
