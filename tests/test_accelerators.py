"""What an accelerator run needs, checked on the CPU: a TPU host's input pipeline without
XLA (the same views), a TPU addressed as a TPU VM's own by default, and a run directory
on object storage refused in one line."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import optimizers, runner
from aninfonce_tf.configs import base, cifar10, imagenet, images, photos
from aninfonce_tf.data import datasets
from aninfonce_tf.data.augment import SimCLRAugment, augment_pairs
from aninfonce_tf.data.epochs import FilePieces
from aninfonce_tf.runner import training as runner_training
from tests.support import prepare_tiny_tfds


def must_compile_functions(dataset: tf.data.Dataset) -> list[str]:
    """The functions of a dataset's graph that XLA must compile (`_XlaMustCompile`),
    which a host without XLA:CPU cannot run."""
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(dataset._as_serialized_graph().numpy())
    nodes = [*graph.node, *(node for f in graph.library.function for node in f.node_def)]
    return [
        node.name
        for node in nodes
        if "_XlaMustCompile" in node.attr and node.attr["_XlaMustCompile"].b
    ]


def test_views_with_and_without_xla_are_the_same():
    rng = np.random.default_rng(0)
    pictures = rng.integers(0, 256, (8, 40, 40, 3), dtype="uint8")
    dataset = tf.data.Dataset.from_tensor_slices(pictures).batch(4)
    augment = SimCLRAugment(image_size=24, blur_probability=0.5, solarize_probability=0.3)
    fused = next(iter(augment_pairs(dataset, augment, seed=3)))
    plain = next(
        iter(augment_pairs(dataset, dataclasses.replace(augment, jit_compile=False), seed=3))
    )
    for key in ("view1", "view2"):
        np.testing.assert_allclose(fused[key], plain[key], atol=1e-5)  # fused rounding
    assert fused["view1"].numpy().std() > 0.05


def test_a_tpu_run_builds_no_must_compile_function_into_its_input_pipeline():
    smoke = {**photos.SMOKE, "readout_check_steps": 0}  # no supervised check to build
    config = dataclasses.replace(photos.PRESETS["photos"], **smoke)
    cpu = images.build(config).train_data(0)
    tpu = images.build(dataclasses.replace(config, strategy="tpu")).train_data(0)
    assert must_compile_functions(cpu)  # the check sees them where they are
    assert must_compile_functions(tpu) == []


def test_a_tpu_is_a_tpu_vms_own_unless_named():
    assert base.RunConfig().tpu == "local"


@pytest.mark.parametrize("out", ["gs://bucket/run", "ram://run"])
def test_a_run_directory_on_object_storage_is_refused_in_one_line(tmp_path, out):
    argv = [sys.executable, "-m", "aninfonce_tf", "synthetic", "--smoke", "--out", out]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"--out {out}: a run directory is a local path" in lines[0]
    assert not any(tmp_path.iterdir())  # no local gs:/bucket/run or ram:/run


@pytest.mark.slow
@pytest.mark.parametrize(
    "module, splits, image_shape, views",
    [
        (imagenet, {"train": 16, "validation": 16}, (60, 80, 3), 224),
        (cifar10, {"train": 16, "test": 16}, (32, 32, 3), 32),
    ],
    ids=["imagenet", "cifar10"],
)
def test_the_presets_own_model_runs_two_steps_under_mirrored_on_two_cpus(
    module, splits, image_shape, views, tmp_path, monkeypatch
):
    # What an 8-GPU or TPU run builds: the preset's encoder, precision, synchronised
    # batch norm, optimizer and views, its data read from a prepared tfds set.
    preset = next(iter(module.PRESETS.values())).resolved()  # the recipe's default
    prepare_tiny_tfds(preset.dataset, tmp_path / "data", splits, image_shape)
    seen = {}

    def recording_pairs(source, augment, batch_size, **kwargs):
        seen.update(source=type(source), view_size=augment.image_size)
        return datasets.pair_batches(source, augment, batch_size, **kwargs)

    build_model = runner_training.build_model

    def recording_model(config, experiment, variant):
        model = build_model(config, experiment, variant)
        seen.update(
            replicas=tf.distribute.get_strategy().num_replicas_in_sync,
            encoder=model.encoder,
            optimizer=type(model.optimizer),
        )
        return model

    monkeypatch.setattr(images, "pair_batches", recording_pairs)
    monkeypatch.setattr(runner_training, "build_model", recording_model)
    data = str(tmp_path / "data")
    argv = ["--smoke-full", "--strategy", "mirrored", "--data-dir", data, "--losses", "infonce"]
    results = runner.main(module, [*argv, "--out", str(tmp_path / "run")])["infonce"]
    assert results["steps"] == 2 and 0 <= results["backbone"]["linear_eval_accuracy"] <= 1
    assert seen["replicas"] == 2 and seen["view_size"] == views
    # ImageNet's training images read from the split's files; CIFAR10's held in memory.
    assert (seen["source"] is FilePieces) == (module is imagenet)
    encoder = seen["encoder"]
    assert encoder.name == preset.encoder
    expected = "mixed_bfloat16" if preset.mixed_precision else "float32"
    assert {layer.dtype_policy.name for layer in encoder.layers[1:]} == {expected}
    norms = [layer for layer in encoder._flatten_layers() if "synchronized" in layer.get_config()]
    assert norms and all(layer.synchronized for layer in norms)
    assert seen["optimizer"] is type(optimizers.encoder_optimizer(preset))
