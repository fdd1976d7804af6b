"""The ImageNet recipe: `python -m aninfonce_tf imagenet` runs the same; `--help` says what
it runs (`aninfonce_tf.recipes`) and lists every flag with the preset's value.

Run (needs tfds' imagenet2012 built from the manual download: put
ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar in DIR/downloads/manual, then
`tfds build imagenet2012 --data_dir DIR --manual_dir DIR/downloads/manual`):

    python recipes/imagenet.py --strategy tpu --data-dir gs://BUCKET/DIR --out runs/in1k  # TPU VM
    python recipes/imagenet.py --strategy mirrored --data-dir DIR     # every GPU of the machine
    python recipes/imagenet.py --data-dir DIR --seeds 0,1,2           # three seeds, summary.json
    python recipes/imagenet.py --smoke    # end to end on tfds' mock data, ~1 min
    python recipes/imagenet.py --smoke-full --strategy tpu --data-dir gs://BUCKET/DIR
                                          # 2 steps of the real model: a new machine's check
    python recipes/imagenet.py --help     # every setting, with the preset's value

On a TPU VM: `pip install "aninfonce-tf[tpu]" -f
https://storage.googleapis.com/libtpu-releases/index.html` (tensorflow-tpu and libtpu,
no tensorflow-cpu beside them); `--tpu local` (the default) is the VM's own TPU, `--tpu
grpc://ADDRESS` a TPU Node (deprecated by Google Cloud). The run directory (`--out`) is
local: copy it to a bucket when it ends (a `gs://` `--out` is refused).
On 8 GPUs: `pip install "aninfonce-tf[gpu]"`, then `--strategy mirrored`. What the
CPU tests check in lieu of a TPU or GPUs (the real preset for 2 steps under
MirroredStrategy on 2 logical CPUs, the replica step's graph and its XLA lowering):
docs/runner.md, "On 8 GPUs and on a TPU VM".

Accelerator and time: a TPU v3-8 or 8 A100-class GPUs (the encoder runs in
mixed_bfloat16; V100s lack bfloat16: add `--mixed-precision false`, float32, slower);
100 epochs of 1,251 steps of 1024 pairs per loss. SimCLR trained this for 100 epochs at
batch 4096 in ~1.5 h on 128 TPU v3 cores, i.e. ~1 day per loss on a v3-8's 8 cores
(~2 days for the two; an extrapolation, not run here: no accelerator). On the 2-core
CPU only `--smoke` runs.

The preset is SimCLR v1's (its 2-layer projection head, weight decay 1e-6). During
training, a class probe on 10,000 images (10 per class) monitors it; at the final step,
SimCLR's linear evaluation trains a linear classifier on frozen backbone features of
the 0.875 centre crop of every training image (`--linear-eval-split 10pct`: SimCLR's
10 % subset, tfds' imagenet2012_subset/10pct) for 90 epochs and scores it on the 50,000
validation images (`backbone/linear_eval_accuracy`). Our readout is defined in
`aninfonce_tf.evaluation.probes`. The paper's numbers (its ImageNet protocol is not
public), and how to compare with them: docs/results.md, "CIFAR10 and ImageNet".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> dict:
    return recipes.run("imagenet", argv)


if __name__ == "__main__":
    main()
