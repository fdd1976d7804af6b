"""The CIFAR10 recipe: `python -m aninfonce_tf cifar10` runs the same; `--help` says what
it runs (`aninfonce_tf.recipes`) and lists every flag with the preset's value.

Run (needs tfds' cifar10 prepared: `tfds build cifar10 --data_dir DIR` where there is
internet, then copy DIR here):

    python recipes/cifar10.py --data-dir DIR                        # one GPU
    python recipes/cifar10.py --data-dir DIR --strategy mirrored    # every GPU of the machine
    python recipes/cifar10.py --data-dir DIR --seeds 0,1,2          # three seeds, summary.json
    python recipes/cifar10.py --smoke     # end to end on tfds' mock data, < 1 min
    python recipes/cifar10.py --smoke-full --strategy mirrored --data-dir DIR
                                          # 2 steps of the real model: a new machine's check
    python recipes/cifar10.py --help      # every setting, with the preset's value

Accelerator and time: one A100-class GPU; 800 epochs of 97 steps of 512 pairs per
loss, ~2.6 h per loss (~5 h for the two) at the 11.9 s per epoch that a public
SimSiam-style SimCLR run of ResNet-18 at batch 512 takes on an A100 (an estimate:
not run here, no GPU). On the 2-core CPU only `--smoke` runs. Batch norm is
synchronised across replicas, so several GPUs compute the statistics one GPU would.
On 8 GPUs: `pip install "aninfonce-tf[gpu]"`, then `--strategy mirrored` (the time per
loss on 8 is not measured). What the CPU tests check in lieu of GPUs (this preset for 2
steps under MirroredStrategy on 2 logical CPUs): docs/runner.md, "On 8 GPUs and on a
TPU VM".

At each of the 8 evaluations, class probes monitor training: they fit on 10,000 of
the 50,000 training images (1,000 per class) and are scored on the 10,000 test
images: a logistic regression on frozen features (its penalty cross-validated), and
kNN votes among those 10,000. At the final step, the standard evaluation follows:
SimCLR's linear classifier on frozen backbone features of all 50,000 training images
(100 epochs, SGD with Nesterov momentum), scored on the 10,000 test images
(`backbone/linear_eval_accuracy`; `results.json` records the protocol under
`linear_evaluation`). Public SimCLR runs evaluated so reach linear 91.7 / kNN 91.4
after 1000 epochs and linear 85.6 after 100. The augmentation readout is defined in
`aninfonce_tf.evaluation.probes`. The paper's numbers, and how to compare with them:
docs/results.md, "CIFAR10 and ImageNet".
"""

from aninfonce_tf import recipes  # imports TensorFlow without its start-up notices


def main(argv: list[str] | None = None) -> dict:
    return recipes.run("cifar10", argv)


if __name__ == "__main__":
    main()
