"""The image recipes end to end at smoke size (tfds' mock data, never downloaded),
one under MirroredStrategy, and the layout of their results."""

import json
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import experiment
from aninfonce_tf.configs import cifar10, imagenet, images, photos
from aninfonce_tf.data import datasets
from aninfonce_tf.encoders import resnet18_cifar

ROOT = Path(__file__).parent.parent


def _check_results(results: dict):
    for name in ("aninfonce", "infonce"):
        for level in ("backbone", "projector"):
            scores = results[name][level]
            assert {"class_accuracy", "knn_accuracy", "augmentation_readout", "readout"} <= set(
                scores
            )
            assert 0 <= scores["class_accuracy"] <= 1
            assert {"flip", "crop_area", "brightness"} <= set(scores["readout"])
        assert results[name]["steps"] == 20
    assert len(results["aninfonce"]["lambda_hat"]) == 16  # Lambda_hat on the projector output


@pytest.mark.slow
@pytest.mark.parametrize("module", [photos, cifar10, imagenet], ids=lambda m: m.__name__)
def test_each_image_recipe_runs_its_smoke_config(module, tmp_path):
    results = experiment.main(module, ["--smoke", "--out", str(tmp_path)])
    _check_results(results)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["aninfonce"]["backbone"]["augmentation_readout"] == pytest.approx(
        results["aninfonce"]["backbone"]["augmentation_readout"]
    )
    assert (tmp_path / "curves.png").exists() and (tmp_path / "infonce" / "model.keras").exists()


@pytest.mark.slow
def test_the_cifar10_smoke_runs_under_mirrored_strategy(tmp_path):
    argv = ["--smoke", "--strategy", "mirrored", "--out", str(tmp_path)]
    _check_results(experiment.main(cifar10, argv))


@pytest.mark.slow
def test_the_photos_recipe_runs_from_the_command_line(tmp_path):
    command = [
        sys.executable,
        str(ROOT / "recipes" / "photos.py"),
        "--smoke",
        "--out",
        str(tmp_path),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    header = next(
        line for line in result.stdout.splitlines() if line.lstrip().startswith("variant")
    )
    assert header.split() == ["variant", *images.SUMMARY, "steps", "seconds"]


def test_resnet18_with_the_cifar_stem_keeps_32x32_until_the_first_stride():
    model = resnet18_cifar()
    assert model.output_shape == (None, 512)
    # No max-pool and no stride in the stem: the first residual stage runs at 32x32.
    assert not [layer for layer in model.layers if "Pooling2D" in type(layer).__name__][:-1]
    first_add = next(layer for layer in model.layers if isinstance(layer, keras.layers.Add))
    assert tuple(first_add.output.shape[1:]) == (32, 32, 64)
    synced = resnet18_cifar(synchronized_batch_norm=True)
    assert all(
        layer.synchronized
        for layer in synced.layers
        if layer.__class__.__name__ == "BatchNormalization"
    )


def test_the_photo_probes_get_as_many_views_and_images_as_asked():
    config = images.ImageConfig(
        dataset="photos", patches_per_photo=4, probe_size=45, readout_size=120
    )
    (evaluator,) = images.build(config).evaluators
    assert len(evaluator.views) == 120 and len(evaluator.test_images) == 45
    assert all(len(values) == 120 for values in evaluator.view_params.values())


def test_a_test_split_smaller_than_asked_says_so():
    config = images.ImageConfig(
        dataset="cifar10", mock_data=True, batch_size=16, probe_size=32, readout_size=100
    )
    with pytest.warns(UserWarning, match="holds 64 images, fewer than"):
        (evaluator,) = images.build(config).evaluators
    assert len(evaluator.views) == 64


def test_each_worker_reads_its_own_shard_in_per_replica_batches_with_its_own_views(
    monkeypatch,
):
    config = images.ImageConfig(dataset="photos", patches_per_photo=4, batch_size=8, probe_size=18)
    parts = images.build(config)
    shards = []

    def recording(examples, *args, **kwargs):
        shards.append({example["image"].numpy().tobytes() for example in examples})
        return datasets.pair_batches(examples, *args, **kwargs)

    monkeypatch.setattr(images, "pair_batches", recording)
    batches = []
    for worker in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=worker, num_replicas_in_sync=4
        )
        batches.append(next(iter(parts.worker_train_data(0, context))))
    # Four replicas on two workers: batches of 8 / 4 = 2 pairs per replica.
    assert [tuple(b["view1"].shape) for b in batches] == [(2, 32, 32, 3)] * 2
    # The shards are disjoint and together hold every training patch.
    everything = {image.tobytes() for image in datasets.photo_patches(4, 48, "train")[0]}
    assert not shards[0] & shards[1] and shards[0] | shards[1] == everything
    # Each worker its own augmentation stream.
    boxes = [b["params1"]["crop_box"].numpy() for b in batches]
    assert not np.allclose(boxes[0], boxes[1])
