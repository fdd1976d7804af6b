"""What an accelerator run needs, checked on the CPU: a TPU host's input pipeline without
XLA (the same views), a TPU addressed as a TPU VM's own by default, and a run directory
on object storage refused in one line."""

import dataclasses
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from aninfonce_tf import ContrastiveModel, distribute, optimizers, runner
from aninfonce_tf.configs import base, cifar10, imagenet, images, photos
from aninfonce_tf.data import datasets
from aninfonce_tf.data.augment import AUGMENTATION_PRESETS, SimCLRAugment, augment_pairs
from aninfonce_tf.data.epochs import FilePieces
from aninfonce_tf.encoders import resnet50
from aninfonce_tf.evaluation.features import LEVELS, level_features, unit_float32
from aninfonce_tf.evaluation.linear_evaluation import features_on_disk
from aninfonce_tf.layers import projection_head
from aninfonce_tf.loss_variants import loss_variant
from aninfonce_tf.optimizers import LARS
from aninfonce_tf.runner import training as runner_training
from tests.support import prepare_tiny_tfds


def must_compile_functions(dataset: tf.data.Dataset) -> list[str]:
    """The functions of a dataset's graph that XLA must compile (`_XlaMustCompile`),
    which a host without XLA:CPU cannot run."""
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(dataset._as_serialized_graph().numpy())
    nodes = [*graph.node, *(node for f in graph.library.function for node in f.node_def)]
    return [
        node.attr["f"].func.name or node.name
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


@pytest.mark.parametrize("module", [photos, imagenet], ids=["photos", "imagenet_jpeg_crop_windows"])
def test_a_tpu_run_builds_no_must_compile_function_into_its_input_pipeline(module):
    # ImageNet's (tfds' mock) files reach the views encoded: `views_from_crops`.
    smoke = {**module.SMOKE, "readout_check_steps": 0}  # no supervised check to build
    config = dataclasses.replace(next(iter(module.PRESETS.values())), **smoke)
    cpu = images.build(config).train_data(0)
    tpu = images.build(dataclasses.replace(config, strategy="tpu")).train_data(0)
    ops = "pixel_ops" if module is imagenet else "views"
    assert any(ops in name for name in must_compile_functions(cpu))  # the check sees them
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
        (imagenet, {"train": 16, "validation": 16}, (60, 80, 3), 64),
        (cifar10, {"train": 16, "test": 16}, (32, 32, 3), 32),
    ],
    ids=["imagenet", "cifar10"],
)
def test_the_presets_own_model_runs_two_steps_under_mirrored_on_two_cpus(
    module, splits, image_shape, views, tmp_path, monkeypatch
):
    # What an 8-GPU or TPU run builds: the preset's encoder, precision, synchronised
    # batch norm, optimizer and views, its data read from a prepared tfds set. The views
    # are the preset's own at `views` pixels: ImageNet's 224 (its preset's test) would
    # only make ResNet-50's steps and features 12 times dearer.
    preset = next(iter(module.PRESETS.values())).resolved()  # the recipe's default
    augmentation = AUGMENTATION_PRESETS[preset.augmentation]
    small = dataclasses.replace(augmentation, image_size=views)
    monkeypatch.setitem(AUGMENTATION_PRESETS, preset.augmentation, small)
    prepare_tiny_tfds(preset.dataset, tmp_path / "data", splits, image_shape)
    seen = {}

    def recording_pairs(source, augment, batch_size, **kwargs):
        seen.update(source=type(source), view_size=augment.image_size, pipeline=kwargs)
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
    # No export: CIFAR10's smoke under Mirrored exports (tests/recipes/test_images.py).
    argv = ["--smoke-full", "--strategy", "mirrored", "--data-dir", data, "--losses", "infonce"]
    argv += ["--export", "false"]
    results = runner.main(module, [*argv, "--out", str(tmp_path / "run")])["infonce"]
    assert results["steps"] == 2 and 0 <= results["backbone"]["linear_eval_accuracy"] <= 1
    assert seen["replicas"] == 2 and seen["view_size"] == views
    # ImageNet's training images read from the split's files; CIFAR10's held in memory.
    assert (seen["source"] is FilePieces) == (module is imagenet)
    # ImageNet's JPEG files reach the views encoded (each view decodes its crop window)
    # and the views reach the devices as uint8; CIFAR10's PNGs are decoded whole.
    pipeline = seen["pipeline"]
    assert (pipeline["decode"] is None) == (module is imagenet)
    assert pipeline["canvas"] is None
    assert pipeline["view_dtype"] == ("uint8" if module is imagenet else "float32")
    encoder = seen["encoder"]
    assert encoder.name == preset.encoder
    expected = "mixed_bfloat16" if preset.mixed_precision else "float32"
    assert {layer.dtype_policy.name for layer in encoder.layers[1:]} == {expected}
    norms = [layer for layer in encoder._flatten_layers() if "synchronized" in layer.get_config()]
    assert norms and all(layer.synchronized for layer in norms)
    assert seen["optimizer"] is type(optimizers.encoder_optimizer(preset))


# The per-replica step of the ImageNet preset: ResNet-50 in mixed_bfloat16 with
# synchronised batch norm, SimCLR's head, AnInfoNCE's Lambda_hat and LARS.
REPLICA_BATCH = 2


def _imagenet_step_model() -> ContrastiveModel:
    keras.config.set_dtype_policy("mixed_bfloat16")
    encoder = resnet50((224, 224, 3), synchronized_batch_norm=True)
    projector = projection_head([64], 16, batch_norm=True, synchronized_batch_norm=True)
    keras.config.set_dtype_policy("float32")
    loss, scaling = loss_variant("aninfonce")
    model = ContrastiveModel(encoder, projector=projector, scaling=scaling)
    model.compile(LARS(0.1), loss=loss, concentration_optimizer=keras.optimizers.Adam(0.01))
    return model


# The views as the ImageNet preset sends them (uint8, `--view-dtype`) and as the
# other presets do.
VIEW_DTYPES = ["uint8", "float32"]


def _views(rows: int, dtype: str) -> dict:
    views = np.zeros((rows, 224, 224, 3), dtype)
    return {"view1": views, "view2": views}


def replica_graph_faults(graph: tf.Graph) -> list[str]:
    """What in a compiled step's graph would stall or break an accelerator: host
    assertions and prints of strings, Python functions, string and float64 tensors,
    int64 tensors other than scalars (Keras' optimizer step counters), and inputs of
    unknown dimensions; in the graph and in its functions' bodies (control flow)."""
    faults = []
    host_ops = {"Assert", "Print", "PrintV2"}
    python_ops = {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
    for op in graph.get_operations():
        if op.type in python_ops:
            faults.append(f"{op.type} {op.name}")
        if op.type in host_ops and any(t.dtype == tf.string for t in op.inputs):
            faults.append(f"{op.type} of strings {op.name}")
        for tensor in op.outputs:
            scalar_count = tensor.dtype == tf.int64 and tensor.shape.rank == 0
            if tensor.dtype in (tf.string, tf.float64, tf.int64) and not scalar_count:
                faults.append(f"{tensor.dtype.name} {tensor.name} of {op.type}")
        placeholder = op.type == "Placeholder" and op.outputs[0].dtype != tf.resource
        if placeholder and not op.outputs[0].shape.is_fully_defined():
            faults.append(f"input {op.name} of shape {op.outputs[0].shape}")
    wide = {tf.string.as_datatype_enum, tf.float64.as_datatype_enum}
    for function in graph.as_graph_def().library.function:
        for node in function.node_def:
            types = [
                value.type for value in node.attr.values() if value.WhichOneof("value") == "type"
            ] + [t for value in node.attr.values() for t in value.list.type]
            if node.op in python_ops or (node.op in host_ops and wide & set(types)):
                faults.append(f"{node.op} {node.name} in {function.signature.name}")
            elif wide & set(types):
                faults.append(f"string or float64 {node.name} in {function.signature.name}")
    return faults


@pytest.mark.slow
@pytest.mark.parametrize("dtype", VIEW_DTYPES)
def test_the_replica_step_under_mirrored_has_nothing_an_accelerator_stalls_on(dtype):
    strategy = distribute.get_strategy("mirrored")
    with strategy.scope():
        model = _imagenet_step_model()
    data = distribute.distribute_global_batches(
        strategy,
        lambda: tf.data.Dataset.from_tensors(_views(2 * REPLICA_BATCH, dtype)).repeat(),
        2 * REPLICA_BATCH,
    )
    step = tf.function(lambda batch: strategy.run(model.train_step, args=(batch,)))
    graph = step.get_concrete_function(next(iter(data))).graph
    assert any(op.name.startswith("replica_1/") for op in graph.get_operations())
    assert replica_graph_faults(graph) == []


@pytest.mark.parametrize("dtype", VIEW_DTYPES)
def test_one_replicas_step_lowers_to_xla_hlo(dtype):
    model = _imagenet_step_model()
    step = tf.function(model.train_step, jit_compile=True)
    batch = {key: tf.constant(value) for key, value in _views(REPLICA_BATCH, dtype).items()}
    hlo = step.experimental_get_compiler_ir(batch)(stage="hlo")
    assert "HloModule" in hlo and "convolution" in hlo
    # uint8 views reach the step as uint8 (a quarter of float32's bytes) and are
    # converted on the device.
    assert f"{'u8' if dtype == 'uint8' else 'f32'}[2,224,224,3]" in hlo.split("ENTRY")[1]


class _ReplicasSeen(keras.layers.Layer):
    """Passes its input on and records the replicas in sync where it was called (0
    across replicas)."""

    def __init__(self, seen: list, **kwargs):
        super().__init__(**kwargs)
        self.record = seen.append  # not the list: Keras would track a copy of it

    def call(self, inputs):
        context = tf.distribute.get_replica_context()  # None: in the strategy's scope
        self.record(context.num_replicas_in_sync if context else 0)
        return inputs


def test_probe_and_linear_evaluation_features_are_computed_on_every_replica_as_on_the_host(
    tmp_path,
):
    seen = []
    with distribute.get_strategy("mirrored").scope():
        encoder = keras.Sequential(
            [
                keras.Input((8, 8, 3)),
                _ReplicasSeen(seen),
                keras.layers.Conv2D(4, 3),
                keras.layers.BatchNormalization(synchronized=True),
                keras.layers.GlobalAveragePooling2D(),
            ]
        )
        model = ContrastiveModel(encoder, projector=projection_head([6], 3, batch_norm=True))
        model.build((None, 8, 8, 3))
    images = np.random.default_rng(0).integers(0, 256, (10, 8, 8, 3), dtype="uint8")
    unit = unit_float32(images)  # as the host computed them, eagerly, on one device
    host = {
        "backbone": np.asarray(model(unit)),
        "projector": np.asarray(model.embed(unit, scaled=False)),
    }
    seen.clear()
    for level in LEVELS:  # 10 images in batches of 4: the last one padded
        np.testing.assert_allclose(level_features(model, images, level, 4), host[level], atol=1e-5)
    examples = tf.data.Dataset.from_tensor_slices({"image": images, "label": np.arange(10)})
    features, labels = features_on_disk(model, examples, tmp_path / "features", 4)
    np.testing.assert_allclose(features, host["backbone"], atol=1e-5)
    assert labels.tolist() == list(range(10))
    assert seen and set(seen) == {2}  # traced in each replica's context, never on one device


class _RowsSeen(keras.layers.Layer):
    """Passes its input on and records its rows where it was traced."""

    def __init__(self, seen: list, **kwargs):
        super().__init__(**kwargs)
        self.record = seen.append

    def call(self, inputs):
        self.record(inputs.shape[0])
        return inputs


def test_a_set_smaller_than_a_batch_is_computed_on_the_replicas_without_a_whole_batch_of_padding():
    seen = []
    with distribute.get_strategy("mirrored").scope():
        encoder = keras.Sequential([keras.Input((4,)), _RowsSeen(seen), keras.layers.Dense(3)])
        model = ContrastiveModel(encoder)
        model.build((None, 4))
    inputs = np.random.default_rng(0).normal(size=(10, 4)).astype("float32")
    host = np.asarray(model(inputs))
    seen.clear()
    np.testing.assert_allclose(level_features(model, inputs, "backbone", 512), host, atol=1e-6)
    assert seen and set(seen) == {5}  # 10 rows on 2 replicas, not 512
