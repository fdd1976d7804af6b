"""CIFAR10: AnInfoNCE vs InfoNCE with ResNet-18, the paper's real-image trade-off.

Run (needs tfds' cifar10 prepared; `tfds build cifar10` where there is internet):

    python recipes/cifar10.py --data-dir ~/tensorflow_datasets            # one GPU
    python recipes/cifar10.py --strategy mirrored                         # all GPUs
    python recipes/cifar10.py --smoke     # end to end on tfds' mock data, < 1 min

One loss takes ~77,600 steps of 512 pairs (800 epochs): roughly 10-15 h on one
A100-class GPU (an estimate from ResNet-18 throughput; not run here, no GPU). The
paper reports class accuracy 90.9 (InfoNCE) vs 88.4 (AnInfoNCE) and augmentation
readout 57.7 vs 80.5; our readout is defined in `aninfonce_tf.evaluation.probes`,
so compare the direction of the change, not the numbers.
"""

from aninfonce_tf import experiment
from aninfonce_tf.configs import cifar10


def main(argv=None) -> dict:
    return experiment.main(cifar10, argv, description=__doc__.splitlines()[0])


if __name__ == "__main__":
    main()
