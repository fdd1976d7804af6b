"""The image recipes end to end at smoke size (tfds' mock data, never downloaded),
one under MirroredStrategy, the layout of their results, and the published settings
their presets cite."""

import collections
import dataclasses
import re
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import ContrastiveModel, optimizers, recipes, runner
from aninfonce_tf.configs import cifar10, image_data, imagenet, images, linear_eval_settings, photos
from aninfonce_tf.data import datasets
from aninfonce_tf.data.augment import AUGMENTATION_PRESETS, SimCLRAugment
from aninfonce_tf.encoders import resnet18_cifar, resnet50
from aninfonce_tf.evaluation.probes import ImageProbeEvaluator
from aninfonce_tf.evaluation.targets import parse_targets
from aninfonce_tf.layers import projection_head
from aninfonce_tf.optimizers import LARS, CoupledSGD
from aninfonce_tf.runner.cli import parse_config
from aninfonce_tf.runner.plan import RunPlan
from tests.support import check_run, load_recipe, printed_table_columns


def _check_results(results: dict):
    for name in ("aninfonce", "infonce"):
        for level in ("backbone", "projector"):
            scores = results[name][level]
            assert {*ImageProbeEvaluator.SCORES, "readout", "readout_r2"} <= set(scores)
            assert 0 <= scores["class_accuracy"] <= 1
            assert {"crop_center_x_view", "crop_area", "brightness"} <= set(scores["readout"])
            assert set(scores["readout_source_frame"]) <= {"flip", "crop_center_x_source"}
        assert results[name]["steps"] == 20
    assert len(results["aninfonce"]["lambda_hat"]) == 16  # Lambda_hat on the projector output


def _check_run_directory(run_dir: Path, module) -> dict:
    """The saved run of `module`'s smoke config: results, schema, TensorBoard logs,
    probe class counts, figure and models; returns the saved variants."""
    saved = check_run(run_dir, figures=["curves", "lambda_hat"])  # its schema, its TensorBoard logs
    _check_results(saved["variants"])
    smoke = module.SMOKE["probe_size"]  # the photos' smoke has fewer training patches
    assert 0 < sum(saved["run"]["probe_train_class_counts"].values()) <= smoke
    assert sum(saved["run"]["probe_test_class_counts"].values()) == smoke
    assert (run_dir / "curves.png").exists() and (run_dir / "infonce" / "model.keras").exists()
    # The readout check ran, briefly: its record, and the readout over every target.
    check = saved["run"]["readout_determinable"]
    assert check["steps"] == module.SMOKE["readout_check_steps"] and "crop_area" in check["targets"]
    for result in saved["variants"].values():
        assert 0 <= result["backbone"]["augmentation_readout_all_targets"] <= 1
    if module.SMOKE.get("linear_eval_epochs"):
        # The final evaluation: its protocol recorded, part of the endpoint, scored at the
        # final step only, on every example of tfds' mock splits (64 each).
        protocol = saved["run"]["linear_evaluation"]
        assert protocol["score"] in saved["run"]["endpoint"]["scores"]
        assert protocol["train_split"] == "train" and "centre crop" in protocol["protocol"]
        for result in saved["variants"].values():
            assert result["linear_eval"] == {"train_examples": 64, "test_examples": 64}
            assert 0 <= result["backbone"]["linear_eval_accuracy"] <= 1
            final_only = [point for point in result["curve"] if "linear_eval" in point]
            assert final_only == result["curve"][-1:]
    return saved["variants"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "module, strategy", [(cifar10, "mirrored"), (imagenet, "default")], ids=["cifar10", "imagenet"]
)
def test_each_image_recipe_runs_its_smoke_config(module, strategy, tmp_path):
    # CIFAR10's under MirroredStrategy on two logical CPUs; the photos recipe's smoke
    # runs from the command line, below.
    argv = ["--smoke", "--strategy", strategy, "--out", str(tmp_path)]
    results = runner.main(module, argv)
    _check_results(results)
    saved = _check_run_directory(tmp_path, module)
    assert (tmp_path / "infonce" / "encoder" / "saved_model.pb").is_file()
    # NaN where the smoke's brief readout check keeps no target.
    assert saved["aninfonce"]["backbone"]["augmentation_readout"] == pytest.approx(
        results["aninfonce"]["backbone"]["augmentation_readout"], nan_ok=True
    )


@pytest.mark.slow
def test_the_photos_recipe_runs_from_the_command_line(tmp_path, capsys):
    # The recipe's script, called as its command line calls it (in this process: no
    # second start of TensorFlow); `python recipes/photos.py`: tests/test_command_line.py.
    load_recipe("photos").main(["--smoke", "--out", str(tmp_path)])
    printed = printed_table_columns(capsys.readouterr().out)
    assert printed == ["variant", *images.SUMMARY, "steps", "seconds"]
    _check_run_directory(tmp_path, photos)


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


def test_the_photo_probes_get_as_many_views_and_images_as_asked_each_photo_in_proportion():
    config = images.ImageConfig(
        dataset="photos", patches_per_photo=10, probe_size=45, readout_size=120
    )
    built = images.build(config)
    (evaluator,) = built.evaluators
    assert len(evaluator.views) == 120 and len(evaluator.test_images) == 45
    # Images as uint8 and views as float16 (ImageNet's 3 x 10,000 at 224 px: 6 GB, not 18).
    assert evaluator.train_images.dtype == evaluator.test_images.dtype == np.uint8
    assert evaluator.views.dtype == np.float16
    assert all(len(values) == 120 for values in evaluator.view_params.values())
    photos = range(len(datasets.PHOTO_NAMES))
    for labels, name in [(evaluator.train_labels, "train"), (evaluator.test_labels, "test")]:
        assert np.bincount(labels).tolist() == [5] * len(photos)
        assert built.metadata[f"probe_{name}_class_counts"] == dict.fromkeys(photos, 5)
        assert sorted(labels[: len(photos)]) == list(photos)  # the photos interleaved
    assert sorted(built.metadata["readout_class_counts"].values()) == [13] * 6 + [14] * 3
    # Each probe image goes with its label: it is a test patch of its photo.
    patches, labels = datasets.photo_patches(120 // len(photos) + 1, 48, "test")
    patches = tf.image.resize(patches, [32, 32], antialias=True).numpy()
    flat = patches.reshape(len(patches), -1)
    for image, label in zip(evaluator.test_images, evaluator.test_labels, strict=True):
        nearest = np.argmin(np.abs(flat - image.reshape(1, -1)).max(axis=1))
        np.testing.assert_allclose(patches[nearest], image, atol=0.5 + 1e-3)  # rounded
        assert labels[nearest] == label


def test_a_test_split_smaller_than_asked_says_so():
    config = images.ImageConfig(
        dataset="cifar10", mock_data=True, batch_size=16, probe_size=32, readout_size=100
    )
    with pytest.warns(UserWarning, match="holds 64 images, fewer than"):
        built = images.build(config)
    assert len(built.evaluators[0].views) == 64
    # The mock's random labels: the probe's 32 of the 64 hold each class in proportion.
    everything = built.metadata["readout_class_counts"]
    assert sum(everything.values()) == 64
    for label, count in built.metadata["probe_test_class_counts"].items():
        assert abs(count - everything[label] / 2) <= 1


def test_each_worker_reads_its_own_shard_in_per_replica_batches_with_its_own_views(
    monkeypatch,
):
    config = images.ImageConfig(dataset="photos", patches_per_photo=4, batch_size=8, probe_size=18)
    parts = images.build(config)
    shards = []

    def recording(examples, *args, **kwargs):
        shards.append({image.tobytes() for image in examples["image"]})
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


def _jitter(views):
    # SimCLR's and torchvision's jitter: the four operations in a random order.
    assert views.random_jitter_order
    return (views.brightness, views.contrast, views.saturation, views.hue)


def test_the_cifar10_preset_holds_simsiams_cifar10_setting():
    preset = cifar10.PRESETS["cifar10"].resolved()
    assert (preset.optimizer, preset.momentum, preset.learning_rate_schedule) == (
        "sgd",
        0.9,
        "cosine",
    )
    assert preset.learning_rate == pytest.approx(0.03 * preset.batch_size / 256)
    # PyTorch's weight decay (through the momentum), not Keras' decoupled one.
    assert (preset.l2_weight_decay, preset.weight_decay) == (5e-4, 0.0)
    assert isinstance(optimizers.encoder_optimizer(preset), CoupledSGD)
    # Several GPUs (--strategy mirrored) compute the batch statistics one GPU would.
    assert preset.encoder == "resnet18_cifar" and preset.synchronized_batch_norm
    assert preset.projector_kernel_stddev == 0.0  # Keras' Glorot uniform
    views = AUGMENTATION_PRESETS[preset.augmentation]
    assert views.crop_scale == (0.2, 1.0) and _jitter(views) == (0.4, 0.4, 0.4, 0.1)
    assert (views.jitter_probability, views.grayscale_probability) == (0.8, 0.2)
    assert views.blur_probability == 0.0


def test_the_imagenet_preset_holds_simclrs_imagenet_setting():
    preset = imagenet.PRESETS["imagenet"].resolved()
    assert (preset.encoder, preset.infonce_temperature) == ("resnet50", 0.1)
    assert preset.projector_batch_norm and preset.synchronized_batch_norm
    assert preset.projector_kernel_stddev == 0.01  # SimCLR's linear_layer: N(0, 0.01^2)
    optimizer = optimizers.encoder_optimizer(preset)
    assert isinstance(optimizer, LARS) and optimizer.exclude_vectors
    assert (optimizer.momentum, optimizer.trust_coefficient, optimizer.weight_decay) == (
        0.9,
        0.001,
        1e-6,
    )
    # 0.075 x sqrt(B) (SimCLR's square-root scaling), reached linearly after 10 epochs,
    # then a cosine to 0.
    epoch = 1_281_167 // preset.batch_size
    peak = 0.075 * np.sqrt(preset.batch_size)
    schedule = optimizer._learning_rate
    rates = [float(schedule(step)) for step in (0, 5 * epoch, 10 * epoch, 55 * epoch, 100 * epoch)]
    np.testing.assert_allclose(rates, [0.0, peak / 2, peak, peak / 2, 0.0], atol=1e-6)
    views = AUGMENTATION_PRESETS[preset.augmentation]
    assert _jitter(views) == (0.8, 0.8, 0.8, 0.2) and views.blur_probability == 0.5
    assert views.crop_scale == (0.08, 1.0) and views.image_size == 224
    assert preset.view_dtype == "uint8"  # a quarter of float32's bytes to the devices
    mocov2 = AUGMENTATION_PRESETS[imagenet.PRESETS["mocov2"].augmentation]
    assert _jitter(mocov2) == (0.4, 0.4, 0.4, 0.1) and mocov2.crop_scale == (0.2, 1.0)


@pytest.mark.parametrize("batch_size", [512, 1024, 4096])
def test_the_presets_schedule_follows_the_batch_size_used(batch_size):
    # ImageNet (SimCLR): 100 epochs, 10 of warm-up, evaluations every 10, 0.075 x sqrt(B).
    epoch = 1_281_167 // batch_size
    argv = ["--batch-size", str(batch_size)]
    config, _ = parse_config(imagenet.PRESETS, argv)
    assert (config.steps, config.warmup_steps, config.eval_every) == (
        100 * epoch,
        10 * epoch,
        10 * epoch,
    )
    assert config.learning_rate == pytest.approx(0.075 * np.sqrt(batch_size))
    resolved = dataclasses.replace(imagenet.PRESETS["imagenet"], batch_size=batch_size).resolved()
    assert resolved == config
    # CIFAR10 (SimSiam): 800 epochs, evaluations every 100, 0.03 x B / 256.
    config, _ = parse_config(cifar10.PRESETS, argv)
    epoch = 50_000 // batch_size
    assert (config.steps, config.eval_every) == (800 * epoch, 100 * epoch)
    assert config.learning_rate == pytest.approx(0.03 * batch_size / 256)
    config.validate()


def test_a_preset_schedule_refuses_a_contradicting_step_count_and_help_shows_it(capsys):
    preset = imagenet.PRESETS["imagenet"]
    with pytest.raises(ValueError, match=r"`steps` \(1000\) contradicts `epochs` \(100\)"):
        dataclasses.replace(preset, steps=1000).resolved()
    with pytest.raises(ValueError, match="`learning_rate`"):
        dataclasses.replace(preset, learning_rate=4.8).validate()
    with pytest.raises(SystemExit):
        parse_config(imagenet.PRESETS, ["--steps", "1000"])
    assert "contradicts `epochs`" in capsys.readouterr().err
    # Steps given instead of epochs: the warm-up and evaluations stay in epochs.
    config, _ = parse_config(imagenet.PRESETS, ["--epochs", "0", "--steps", "25020"])
    assert (config.steps, config.warmup_steps, config.eval_every) == (25020, 12510, 12510)
    # Fewer epochs than the warm-up: the learning rate would never peak nor decay.
    config, _ = parse_config(imagenet.PRESETS, ["--epochs", "5", "--eval-epochs", "1"])
    with pytest.raises(ValueError, match=r"`warmup_steps` \(12510\).*`steps` \(6255\)"):
        config.validate()
    # --help shows SimCLR's settings in its terms.
    with pytest.raises(SystemExit):
        parse_config(imagenet.PRESETS, ["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for flag, value in [
        ("epochs", 100),
        ("warmup-epochs", 10),
        ("base-learning-rate", 0.075),
        ("learning-rate-scaling", "sqrt"),
    ]:
        assert re.search(rf"--{flag} \S+ (?:(?!--).)*\(default: {value}\)", shown)


def test_imagenet_readout_views_are_drawn_as_its_training_views(monkeypatch):
    # Non-square images of unknown shape whose blue is 255 (their padding would show as
    # 0) and whose red and green rise left to right and top to bottom: the readout's
    # views, like the training views, are crops of the whole image, never its padding.
    y, x = np.mgrid[:24, :40]
    image = np.stack([x * 6, y * 10, np.full_like(x, 255)], axis=-1).astype(np.uint8)
    examples = tf.data.Dataset.from_tensors(image).repeat(600).enumerate()
    examples = examples.map(
        lambda i, image: {"image": tf.ensure_shape(image, [None, None, 3]), "label": i % 4}
    )
    monkeypatch.setattr(image_data, "examples", lambda config, split, decode=True: examples)
    monkeypatch.setattr(image_data, "READ_FROM_FILES", ())  # the training images too
    crops_only = SimCLRAugment(
        image_size=8,
        crop_scale=(0.02, 0.05),
        jitter_probability=0.0,
        grayscale_probability=0.0,
        flip_probability=0.0,
    )
    monkeypatch.setitem(AUGMENTATION_PRESETS, "simclr_cifar10", crops_only)
    config = images.ImageConfig(dataset="imagenet2012", probe_size=8, readout_size=120)
    experiment = images.build(config)
    # Views of the decoded image on a canvas, not the JPEG path's: results.json says so.
    assert experiment.metadata["readout_views"] == "decoded_images_on_canvas"
    (evaluator,) = experiment.evaluators
    views, boxes = evaluator.views, evaluator.view_params["crop_box"]
    assert views.shape == (120, 8, 8, 3)
    assert views[..., 2].min() > 1 - 1e-3  # float16
    assert boxes[:, :2].min() < 0.05 and boxes[:, 2:].max() > 0.95
    # Centre squares (24 x 24 of the 40 columns) would never show red below 48 / 255
    # or above 186 / 255.
    assert views[..., 0].min() < 0.1 and views[..., 0].max() > 0.8
    assert views[..., 1].min() < 0.1 and views[..., 1].max() > 0.8


def test_resnet50_is_v1_5_with_simclrs_batch_norm():
    model = resnet50((64, 64, 3), synchronized_batch_norm=True)
    # torchvision's resnet50 without its classifier.
    assert sum(int(np.prod(v.shape)) for v in model.trainable_weights) == 23_508_032
    convs = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)]
    assert not any(conv.use_bias for conv in convs)
    # The stem, then per downsampling stage the 3x3 (v1.5) and the 1x1 shortcut; v1
    # strides the first 1x1 of the block instead of the 3x3.
    strided = collections.Counter(conv.kernel_size for conv in convs if conv.strides == (2, 2))
    assert strided == {(7, 7): 1, (3, 3): 3, (1, 1): 3}
    norms = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    assert {(bn.momentum, bn.epsilon, bn.synchronized) for bn in norms} == {(0.9, 1e-5, True)}
    # The last batch norm of each of the 16 blocks starts at zero: blocks start as identities.
    assert sum(not np.any(bn.gamma.numpy()) for bn in norms) == 16
    assert model.output_shape == (None, 2048)


def test_the_projector_kernels_start_as_the_config_says():
    config = images.ImageConfig(
        dataset="photos", patches_per_photo=2, probe_size=9, readout_size=9, features=32
    )
    for stddev, expected in [(0.01, 0.01), (0.0, np.sqrt(2 / (32 + 512)))]:
        head = images.build(dataclasses.replace(config, projector_kernel_stddev=stddev)).projector()
        head.build((None, 32))
        assert head.layers[0].kernel.numpy().std() == pytest.approx(expected, rel=0.05)
    with pytest.raises(ValueError, match="`projector_kernel_stddev`"):
        dataclasses.replace(config, projector_kernel_stddev=-0.01).validate()


def test_the_projector_with_batch_norm_is_simclrs():
    head = projection_head([8], 4, batch_norm=True, synchronized_batch_norm=True)
    head.build((None, 16))
    dense = [layer for layer in head.layers if isinstance(layer, keras.layers.Dense)]
    norms = [layer for layer in head.layers if isinstance(layer, keras.layers.BatchNormalization)]
    assert [layer.use_bias for layer in dense] == [False, False]
    # The output's batch norm scales but does not shift.
    assert [(bn.center, bn.synchronized) for bn in norms] == [(True, True), (False, True)]


def test_the_cifar10_preset_runs_infonce_at_the_temperature_of_simclrs_cifar10_command():
    assert cifar10.PRESETS["cifar10"].infonce_temperature == 0.5
    config, _ = parse_config(cifar10.PRESETS, ["--infonce-temperature", "0.2"])
    assert config.infonce_temperature == 0.2  # solo-learn's, by flag


def test_square_root_scaling_gives_simclrs_learning_rate_at_batch_1024():
    assert images.scaled_learning_rate(0.075, 1024, "sqrt") == pytest.approx(2.4)
    assert images.scaled_learning_rate(0.3, 1024, "linear") == pytest.approx(1.2)
    # The two agree at batch 4096 (SimCLR's README).
    assert images.scaled_learning_rate(0.075, 4096, "sqrt") == pytest.approx(
        images.scaled_learning_rate(0.3, 4096, "linear")
    )
    preset = imagenet.PRESETS["imagenet"]
    assert preset.learning_rate_scaling == "sqrt"
    assert preset.resolved().learning_rate == pytest.approx(2.4)
    linear = ["--learning-rate-scaling", "linear", "--base-learning-rate", "0.3"]
    assert parse_config(imagenet.PRESETS, linear)[0].learning_rate == pytest.approx(1.2)
    assert cifar10.PRESETS["cifar10"].learning_rate_scaling == "linear"  # SimSiam's
    with pytest.raises(ValueError, match="`learning_rate_scaling`"):
        dataclasses.replace(preset, learning_rate_scaling="cube").validate()


def test_a_scaling_rule_without_its_own_base_learning_rate_is_refused():
    # The other rule's preset base rate would move the learning rate 8-11 fold.
    for module, rule in ((imagenet, "linear"), (cifar10, "sqrt")):
        preset = next(iter(module.PRESETS.values()))
        preset.validate()
        with pytest.raises(ValueError, match="pass --base-learning-rate for the"):
            dataclasses.replace(preset, learning_rate_scaling=rule).validate()
    # With a base rate of its own rule, the switch is accepted.
    imagenet_linear = ["--learning-rate-scaling", "linear", "--base-learning-rate", "0.3"]
    parse_config(imagenet.PRESETS, imagenet_linear)[0].validate()
    cifar10_sqrt = dict(learning_rate_scaling="sqrt", base_learning_rate=0.075)
    dataclasses.replace(cifar10.PRESETS["cifar10"], **cifar10_sqrt).validate()
    with pytest.raises(ValueError, match="sqrt does nothing without `base_learning_rate`"):
        dataclasses.replace(photos.PRESETS["photos"], learning_rate_scaling="sqrt").validate()


@pytest.mark.parametrize("name", ["cifar10", "imagenet"])
def test_the_recipes_help_shows_the_final_evaluation_and_the_learning_rate_scaling(name, capsys):
    with pytest.raises(SystemExit):
        recipes.run(name, ["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for flag in ("learning-rate-scaling", "linear-eval-epochs", "linear-eval-split"):
        assert f"--{flag}" in shown
    assert "option_strings" not in shown  # no help text that argparse's % formatting breaks
    if name == "imagenet":
        assert "SimCLR v1's setting" in shown and "2-layer projection head" in shown


def test_the_imagenet_preset_is_simclr_v1_and_says_so():
    preset = imagenet.PRESETS["imagenet"]
    # v1's 2-layer head (one hidden layer) and weight decay 1e-6; v2 has 3 layers, 1e-4.
    assert (preset.projector_units, preset.l2_weight_decay) == ("2048,128", 1e-6)
    assert "SimCLR v1" in imagenet.__doc__ and "SimCLR v1" in recipes.RECIPES["imagenet"].summary()


def test_the_final_linear_evaluation_of_the_cifar10_preset_fits_on_every_training_example():
    preset = cifar10.PRESETS["cifar10"]
    # SimCLR's CIFAR10 linear head: 100 epochs at batch 512, 0.1 x 512 / 256, whole images.
    record = linear_eval_settings.linear_evaluation_record(preset, 32)
    assert (record["epochs"], record["batch_size"], record["learning_rate"]) == (100, 512, 0.2)
    assert (record["weight_decay"], record["crop_proportion"]) == (0.0, 1.0)
    config = dataclasses.replace(preset, **cifar10.SMOKE).resolved()
    experiment = cifar10.build(config)
    monitor, final = experiment.evaluators
    assert final.final_only and not getattr(monitor, "final_only", False)
    assert experiment.primary_scores == (*images.SUMMARY, "backbone/linear_eval_accuracy")
    assert experiment.metadata["linear_evaluation"]["train_split"] == "train"
    scores = final.evaluate(ContrastiveModel(experiment.encoder()))
    # Every example of tfds' mock splits (64), not a probe's sample of them.
    assert scores["linear_eval"] == {"train_examples": 64, "test_examples": 64}
    assert 0 <= scores["backbone"]["linear_eval_accuracy"] <= 1


def test_the_imagenet_final_evaluation_is_simclrs_and_may_fit_on_its_10_percent_subset():
    preset = imagenet.PRESETS["imagenet"]
    record = linear_eval_settings.linear_evaluation_record(preset, 224)
    assert (record["epochs"], record["batch_size"], record["learning_rate"]) == (90, 4096, 1.6)
    assert (record["weight_decay"], record["crop_proportion"]) == (1e-6, 0.875)
    smoke = dataclasses.replace(preset, **imagenet.SMOKE, linear_eval_split="10pct")
    built = imagenet.build(smoke.resolved())
    assert built.metadata["linear_evaluation"]["train_split"] == "10pct"
    scores = built.evaluators[-1].evaluate(ContrastiveModel(built.encoder()))
    assert scores["linear_eval"]["train_examples"] == 64  # tfds' mock of the subset
    with pytest.raises(ValueError, match="`linear_eval_split` 10pct.*--linear-eval-split train"):
        dataclasses.replace(cifar10.PRESETS["cifar10"], linear_eval_split="10pct").validate()


def _claim(run_dir, config) -> runner.run_directory.RunDirectory:
    """`RunDirectory.claim` of `config`, unvalidated (its data need not be prepared)."""
    plan = RunPlan(config, tuple(config.loss_names()), parse_targets(config.stop_at))
    return runner.run_directory.RunDirectory.claim(run_dir, plan)


def test_a_rerun_may_change_the_final_linear_evaluation_but_not_training(tmp_path):
    preset = cifar10.PRESETS["cifar10"]
    code = [runner.identity.code_version()]
    runner.run_directory.RunDirectory(tmp_path, code=code).write_config(preset)
    rerun = dataclasses.replace(preset, linear_eval_epochs=0, linear_eval_split="10pct")
    assert _claim(tmp_path, rerun).finished == {}
    with pytest.raises(ValueError, match="another config.*infonce_temperature"):
        _claim(tmp_path, dataclasses.replace(preset, infonce_temperature=0.1))


def test_an_unprepared_10_percent_subset_is_refused_before_the_run_saying_how_to_build_it(
    tmp_path,
):
    config = dataclasses.replace(
        imagenet.PRESETS["imagenet"], linear_eval_split="10pct", data_dir=str(tmp_path)
    )
    with pytest.raises(
        ValueError, match="`linear_eval_split` 10pct: .*tfds build imagenet2012_subset/10pct"
    ):
        config.validate()
    dataclasses.replace(config, linear_eval_epochs=0).validate()
    dataclasses.replace(config, mock_data=True).validate()
