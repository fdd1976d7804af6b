"""ImageNet: AnInfoNCE vs InfoNCE with ResNet-50 v1.5 in SimCLR's ImageNet setting: LARS
at 0.3 x B / 256 with a 10-epoch warm-up then cosine, weight decay 1e-6, temperature
0.1, a projector with batch norm, jitter strength 1.0 and blur, 100 epochs at batch
1024 (`--preset mocov2`: MoCo v2's views).

Run (needs tfds' imagenet2012 built from the manual download: put
ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar in DIR/downloads/manual, then
`tfds build imagenet2012 --data_dir DIR --manual_dir DIR/downloads/manual`):

    python recipes/imagenet.py --strategy tpu --tpu grpc://ADDRESS --data-dir gs://BUCKET/DIR
    python recipes/imagenet.py --strategy mirrored --data-dir DIR     # every GPU of the machine
    python recipes/imagenet.py --data-dir DIR --seeds 0,1,2           # three seeds, summary.json
    python recipes/imagenet.py --smoke    # end to end on tfds' mock data, < 1 min
    python recipes/imagenet.py --help     # every setting, with the preset's value

Accelerator and time: a TPU v3-8 or 8 A100-class GPUs (the encoder runs in
mixed_bfloat16; V100s lack bfloat16: add `--mixed-precision false`, float32, slower);
100 epochs of 1,251 steps of 1024 pairs per loss. SimCLR trained this for 100 epochs at
batch 4096 in ~1.5 h on 128 TPU v3 cores, i.e. ~1 day per loss on a v3-8's 8 cores
(~2 days for the two; an extrapolation, not run here: no accelerator). On the 2-core
CPU only `--smoke` runs.

Our class probe fits on 10,000 images (10 per class); our readout is defined in
`aninfonce_tf.evaluation.probes`. The paper's numbers (its ImageNet protocol is not
public), and how to compare with them: docs/results.md, "CIFAR10 and ImageNet".
"""

from aninfonce_tf import runner
from aninfonce_tf.configs import imagenet


def main(argv=None) -> dict:
    return runner.main(imagenet, argv, description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    main()
