"""Images with known latents: AnInfoNCE vs InfoNCE on digits rendered by a VAE decoder.

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

from aninfonce_tf import runner
from aninfonce_tf.configs import mnist_vae


def main(argv=None) -> dict:
    return runner.main(mnist_vae, argv, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
