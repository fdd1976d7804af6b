"""ImageNet: AnInfoNCE vs InfoNCE with ResNet-50.

Run (needs tfds' imagenet2012 built from the manual download):

    python recipes/imagenet.py --strategy tpu --tpu grpc://ADDRESS --data-dir gs://...
    python recipes/imagenet.py --strategy mirrored --data-dir ~/tensorflow_datasets
    python recipes/imagenet.py --smoke    # end to end on tfds' mock data, < 1 min

100 epochs at batch 1024 (125,100 steps per loss): roughly 1-2 days on 8 V100-class
GPUs or a TPU v3-8 (an estimate; not run here, no accelerator). The paper reports
class accuracy 68.2 (InfoNCE) vs 59.0 (AnInfoNCE) and augmentation readout 74.4 vs
79.3; our readout is defined in `aninfonce_tf.evaluation.probes`.
"""

from aninfonce_tf import experiment
from aninfonce_tf.configs import imagenet


def main(argv=None) -> dict:
    return experiment.main(imagenet, argv, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
