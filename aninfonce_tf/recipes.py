"""Every recipe by name: its config module, what it runs and two example commands;
`run` runs one (for `python -m aninfonce_tf`, `aninfonce-tf` and `recipes/`).

Example:

>>> list(RECIPES)[:2], RECIPES["photos"].config
(['synthetic', 'dose_response'], 'photos')
>>> RECIPES["synthetic"].summary()
"Synthetic identifiability experiment: AnInfoNCE vs InfoNCE on the paper's DGP."
"""

from __future__ import annotations

import dataclasses
import importlib
import shlex
import sys
from pathlib import Path

from aninfonce_tf.tensorflow_notices import RECIPE_SCRIPTS


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A recipe of the package.

    Args:
        config: its module in `aninfonce_tf.configs` (`PRESETS`, `SMOKE`, `build`).
        description: `--help`'s description; the package's `--help` lists its first line.
        examples: two `(flags, what they do)` of the epilog of `--help`.
        command: `"module:function"`, the command line (as `runner.cli.main`).

    Example:

    >>> recipe = Recipe("photos", "Patches of photos.", (("--smoke", "tiny"), ("--seeds 0,1", "two")))
    >>> recipe.summary()
    'Patches of photos.'
    >>> print(recipe.epilog())
    examples:
      %(prog)s --smoke       # tiny
      %(prog)s --seeds 0,1   # two
    """

    config: str
    description: str
    examples: tuple[tuple[str, str], tuple[str, str]]
    command: str = "aninfonce_tf.runner.cli:main"

    def summary(self) -> str:
        """The description's first line."""
        return self.description.splitlines()[0]

    def epilog(self) -> str:
        """The examples as the end of `--help` (`%(prog)s`: the recipe's command)."""
        width = max(len(flags) for flags, _ in self.examples)
        lines = [f"  %(prog)s {flags.ljust(width)}  # {what}" for flags, what in self.examples]
        return "\n".join(["examples:", *lines])


RECIPES = {
    "synthetic": Recipe(
        "synthetic",
        """\
Synthetic identifiability experiment: AnInfoNCE vs InfoNCE on the paper's DGP.

Latents on a sphere, positives from a concentration that differs per latent, rendered by
an invertible MLP; scored by how well each loss recovers every latent (R^2, MCC).""",
        (
            ("--smoke --out runs/smoke", "the whole pipeline in < 1 min"),
            ("--preset paper-linear --seeds 0,1,2", "the paper's n = 10, ~5 min per loss"),
        ),
    ),
    "dose_response": Recipe(
        "synthetic",
        """\
Dose-response: AnInfoNCE's MCC over the controls as the true Lambda spreads.

The dose-response preset: quick's 6 latents, encoder and 2000 steps on a geometric Lambda
of spread r = high / low (1, 4, 16, 64, 256; --grid-concentration-spread) at the geometric
mean 64, for AnInfoNCE, the learned isotropic variant and InfoNCE 0.2. Endpoint: step 2000,
MCC and the smallest per-latent R^2. Theory: no difference at r = 1, AnInfoNCE's MCC over
the isotropic variant rising with log r.""",
        (
            ("--smoke --seeds 0 --out runs/dose-smoke", "5 tiny cells"),
            ("--seeds 10,11,12,13,14 --out runs/dose-response", "25 cells x 3 losses; resumes"),
        ),
        command="aninfonce_tf.sweep:dose_response_main",
    ),
    "mnist_vae": Recipe(
        "mnist_vae",
        """\
Images with known latents: AnInfoNCE vs InfoNCE on digits a VAE decoder renders.

The digits preset runs on a CPU without a download; the mnist preset needs tfds' mnist
prepared (--data-dir) and a GPU.""",
        (
            ("--smoke", "the whole pipeline in < 1 min"),
            ("--seeds 0,1,2 --out runs/vae", "three seeds and summary.json"),
        ),
    ),
    "rendered": Recipe(
        "rendered",
        """\
Rendered images with known latents: how much of each AnInfoNCE and InfoNCE keep.

Positive pairs come from SimCLR's augmentations of one render (large-objects, the default,
and quick, with smaller objects) or from the latents (latent, spike-slab); content and
style are measured per latent part (its effective concentration); scored by each part's
R^2, shape accuracy and augmentation readout.""",
        (
            ("--smoke", "the whole pipeline in < 1 min"),
            ("--preset latent --seeds 0,1,2", "the theory's pairs, three seeds"),
        ),
    ),
    "rendered_sweep": Recipe(
        "rendered",
        """\
The trade-off map on rendered images: what each loss keeps as the views change.

A star through the quick preset's point: each setting of SimCLR's views varied alone (the
smallest crop area 0.4, 0.6, 0.8, never below 0.4, where crops lose the object; the
colour-jitter strength 0, 0.5, 1; the flip and grayscale probabilities 0.5 and 0.2, 0;
--grid-* flags), 7 cells, each quick's 1500 steps for seeds 0, 1, 2 (~2 h on a 2-core
CPU). Scored by each latent
part's R^2 against its effective concentration, the shape accuracy, and the paired
differences between the losses. --design product: every combination instead.""",
        (
            ("--smoke --seeds 0 --out runs/sweep-smoke", "7 tiny cells, ~2 min"),
            ("--out runs/rendered-sweep", "~2 h on a 2-core CPU; the same command resumes"),
        ),
        command="aninfonce_tf.sweep:main",
    ),
    "photos": Recipe(
        "photos",
        """\
Real images on a CPU: AnInfoNCE vs InfoNCE on patches of nine photos.

The photos ship with scikit-learn and scikit-image (class = source photo); each loss is
scored by class accuracy and augmentation readout.""",
        (
            ("--smoke", "the whole pipeline in < 1 min"),
            ("--seeds 0,1,2", "~9 min per seed on a 2-core CPU"),
        ),
    ),
    "cifar10": Recipe(
        "cifar10",
        """\
CIFAR10: AnInfoNCE vs InfoNCE with ResNet-18 in SimSiam's setting.

The setting the paper's CIFAR10 result follows: SGD with momentum 0.9 at 0.03 x B / 256,
cosine, PyTorch's L2 weight decay 5e-4, batch 512, 800 epochs, synchronised batch norm,
temperature 0.5 (SimCLR's CIFAR10 command). Probes on 10,000 images monitor training; the
final step adds SimCLR's linear evaluation on all 50,000 training images (--linear-eval-*).
Needs tfds' cifar10 prepared (--data-dir) and a GPU.""",
        (
            ("--smoke", "end to end on tfds' mock data, < 1 min"),
            ("--data-dir DIR --strategy mirrored", "every GPU of the machine"),
        ),
    ),
    "imagenet": Recipe(
        "imagenet",
        """\
ImageNet: AnInfoNCE vs InfoNCE with ResNet-50 v1.5 in SimCLR v1's setting.

SimCLR v1: LARS at 0.075 x sqrt(B) (SimCLR's square-root scaling below batch 4096) with a
10-epoch warm-up then cosine, weight decay 1e-6, temperature 0.1, the 2-layer projection
head with batch norm, jitter strength 1.0 and blur, 100 epochs at batch 1024 (--preset
mocov2: MoCo v2's views). The final step adds SimCLR's linear evaluation on every training
image's 0.875 centre crop (--linear-eval-split 10pct: its 10 % subset). Needs tfds'
imagenet2012 built (--data-dir) and a TPU or several GPUs.""",
        (
            ("--smoke", "end to end on tfds' mock data, ~1 min"),
            ("--strategy tpu --data-dir gs://BUCKET/DIR --out runs/in1k", "on a TPU VM"),
        ),
    ),
    "train": Recipe(
        "train",
        """\
Your images: AnInfoNCE pre-training on an image folder, arrays or a tfds dataset.

--data takes an image folder (searched recursively; subfolders are its classes), a
.npy/.npz file or tfds:NAME[:SPLIT] prepared on disk; --backbone one of the package's
encoders, a keras.applications model (random or local --weights), hub:PRESET or
FILE.py:FUNCTION. With labels, held-out probes (class accuracy, kNN, augmentation
readout) monitor training. Writes the run directory of every recipe: results.json,
TensorBoard, model.keras and the exported encoder; the same command resumes.""",
        (
            ("--data images/ --backbone MobileNetV3Small --out runs/mine", "your folder"),
            ("--smoke --mock-data true", "the whole pipeline on random images"),
        ),
    ),
}


def run(name: str, argv=None, prog: str | None = None):
    """Runs the recipe `name` with the flags `argv`; returns what its command returns."""
    recipe = RECIPES[name]
    config_module = importlib.import_module(f"aninfonce_tf.configs.{recipe.config}")
    module, _, function = recipe.command.partition(":")
    command = getattr(importlib.import_module(module), function)
    return command(
        config_module,
        argv,
        description=recipe.description,
        epilog=recipe.epilog(),
        prog=prog or script_command(name),
    )


def script_command(name: str) -> str:
    """The command that runs recipe `name` as this program was run.

    Example:

    >>> script_command("photos")  # here run by pytest, not by recipes/photos.py
    'python -m aninfonce_tf photos'
    """
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script and script.name == f"{name}.py" and script.resolve().parent == RECIPE_SCRIPTS:
        return f"python {shlex.quote(str(script))}"
    return f"python -m aninfonce_tf {name}"


__all__ = ["RECIPES", "Recipe", "run", "script_command"]
