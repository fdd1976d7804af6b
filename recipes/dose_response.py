"""The dose-response of identification on the synthetic DGP: `python -m aninfonce_tf
dose_response` runs the same; `--help` says what it runs (`aninfonce_tf.recipes`)
and lists every flag with the preset's value.

Run:

    python recipes/dose_response.py --smoke --seeds 0 --out runs/dose-smoke
    python recipes/dose_response.py --seeds 10,11,12,13,14 --out runs/dose-response

The `dose-response` preset of `recipes/synthetic.py` (quick's 6 latents, encoder and
2000 steps of 1000 pairs) on a geometric true Lambda of spread r = high / low in
1, 4, 16, 64, 256 at the geometric mean 64, for AnInfoNCE, the learned isotropic variant
and InfoNCE at 0.2: 25 cells of 3 trainings. Killed, the same command resumes where it
stopped. Writes every cell's runs in `OUT/<cell>/seed_<k>/`, `grid.json`,
`dose_response.md` (per spread each variant's MCC and smallest per-latent R^2, the paired
differences with 95 % and 90 % intervals, p and Holm p, the smallest detectable
difference and the MCC's random-rotation floor) and `dose_response.png` (the differences
against log r).

Results: docs/results.md, "Synthetic experiment: the dose-response".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> list[dict]:
    return recipes.run("dose_response", argv)


if __name__ == "__main__":
    main()
