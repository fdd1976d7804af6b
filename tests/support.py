"""What the tests share: the repository's root and the loader of a recipe script;
the harness every Keras object of the package goes through (config round trip, saving
inside a model, mixed precision) and the count of the checks a made loss repeats
(`count_pair_checks`); an evaluator that declares no score direction; and
the checks every recipe's `--smoke` test makes of the run's outputs (`results.json`
against its schema, and the TensorBoard logs); and the comparison of a resumed run's
result with an uninterrupted one's."""

import collections
import importlib.util
import re
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from aninfonce_tf import functional
from aninfonce_tf.checkpoints import read_json
from aninfonce_tf.evaluation.callbacks import scalar_items
from aninfonce_tf.loss_variants import LOSS_VARIANTS
from aninfonce_tf.runner import RUN_ENTRIES
from tests.schema import validate_results

ROOT = Path(__file__).parent.parent


def load_recipe(name: str):
    """The module of `recipes/<name>.py` (recipes are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"{name}_recipe", ROOT / "recipes" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare_tiny_tfds(
    name: str, data_dir: Path, split_sizes: dict[str, int], image_shape: tuple, classes: int = 2
) -> None:
    """Prepares tfds' dataset `name` in `data_dir` as `tfds build` would, with its own
    features and files, but `split_sizes` random images of `image_shape` per split
    (labels cycling through the first `classes`): what `tfds.builder(name, data_dir)`
    reads, built in a second."""

    class Tiny(tfds.builder_cls(name), skip_registration=True):
        code_path = Path(__file__)  # tfds' own lookup needs importlib_resources

        def _split_generators(self, dl_manager):
            return {split: self._generate_examples(split, n) for split, n in split_sizes.items()}

        def _generate_examples(self, split, count):
            rng = np.random.default_rng(len(split))
            for index in range(count):
                example = {}
                for key, feature in self.info.features.items():
                    if isinstance(feature, tfds.features.Image):
                        example[key] = rng.integers(0, 256, image_shape, dtype=np.uint8)
                    elif isinstance(feature, tfds.features.ClassLabel):
                        example[key] = index % classes
                    else:  # ids and file names
                        example[key] = f"{split}_{index}"
                yield f"{split}_{index}", example

    Tiny.name = name
    files = tfds.download.DownloadConfig(num_shards=2, try_download_gcs=False)
    Tiny(data_dir=str(data_dir)).download_and_prepare(download_config=files)


# The harness every Keras object of the package goes through.


def assert_config_round_trip(obj):
    """`get_config` -> `from_config` and Keras (de)serialisation give the same config."""
    config = obj.get_config()
    assert type(obj).from_config(config).get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(obj))
    assert type(restored) is type(obj)
    assert restored.get_config() == config
    return restored


def assert_saved_in_model(layer, inputs, tmp_path):
    """A functional model holding `layer` reloads from `.keras` with identical outputs."""
    model_in = keras.Input(inputs.shape[1:])
    model = keras.Model(model_in, layer(model_in))
    path = str(tmp_path / "model.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(np.asarray(reloaded(inputs)), np.asarray(model(inputs)))
    return reloaded


def assert_float32_under_mixed_precision(make_layer, inputs):
    """Built under `mixed_bfloat16`, the layer still computes and returns float32."""
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        layer = make_layer()
        outputs = layer(keras.ops.cast(inputs, "bfloat16"))
    finally:
        keras.config.set_dtype_policy("float32")
    assert keras.backend.standardize_dtype(outputs.dtype) == "float32"
    return outputs


# What a made loss checks no more when called: its options (each of these fails the test).
OPTION_CHECKS = (
    "check_info_nce_options",
    "check_similarity",
    "check_candidates",
    "check_temperature",
    "check_block_size",
)


def count_pair_checks(monkeypatch) -> list:
    """From here on, `functional`'s option checks (`OPTION_CHECKS`) fail the test and each
    call of `functional.validate_pair` adds its arguments to the list returned."""

    def checked_again(*args, **kwargs):
        raise AssertionError("an option checked again after the loss was made")

    for name in OPTION_CHECKS:
        monkeypatch.setattr(functional, name, checked_again)
    calls, validate_pair = [], functional.validate_pair

    def counted(*args, **kwargs):
        calls.append(args)
        return validate_pair(*args, **kwargs)

    monkeypatch.setattr(functional, "validate_pair", counted)
    return calls


# The checks of a run's outputs.


class UndeclaredEvaluator:
    """An evaluator of one `score` that does not say whether lower is better (it has no
    `lower_is_better`): a `--stop-at` target of it needs `>=` or `<=`."""

    def evaluate(self, model):
        return {"score": 0.5}

    def score_names(self, anisotropic):
        return {"score"}


def check_run(run_dir: Path, figures=()) -> dict:
    """Validates `run_dir/results.json` and checks `run_dir/tensorboard` (`figures`:
    the names of the PNGs expected as images); returns the results."""
    validate_results(run_dir / "results.json")
    results = read_json(run_dir / "results.json")
    # The endpoint: the final step, and primary scores that every variant reports.
    endpoint = results["run"]["endpoint"]
    assert endpoint["step"] == results["run"]["config"]["steps"] and endpoint["scores"]
    for result in results["variants"].values():
        assert set(endpoint["scores"]) <= set(scalar_items(result)), endpoint
    all_scores = results["run"]["config"]["tensorboard_all_scores"]
    check_tensorboard(run_dir / "tensorboard", results["variants"], figures, all_scores)
    return results


# The most summary scores a variant writes to TensorBoard by default (two levels of
# features with four each and the final linear evaluation; the synthetic experiment's
# five).
SUMMARY_TAGS = 9


def event_files(log_dir: Path) -> dict[Path, dict[tuple[str, str], list[int]]]:
    """Per event file under `log_dir`: `{(tag, plugin): [step, ...]}`."""
    files = {}
    for path in sorted(log_dir.rglob("events.out.tfevents.*")):
        tags = collections.defaultdict(list)
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                tags[value.tag, value.metadata.plugin_data.plugin_name].append(event.step)
        files[path] = dict(tags)
    return files


def check_tensorboard(log_dir: Path, variants: dict, figures=(), all_scores: bool = False) -> None:
    """Every event file holds summaries; within a run (directory), the files in the
    order written hold each tag at rising steps (a resumed run's files continue its
    killed run's, no point twice); the scalars are against the training step:
    `scores/<score>` at the steps of the evaluations that scored it (each score once,
    a final-only one at the last evaluation; none also under
    `train/`; a few summary scores of the final ones, at most `SUMMARY_TAGS`, or every
    one with `all_scores`), `train/loss` at the loss curve's, `lambda_hat/<i>` per
    dimension of Lambda_hat; the figures are images."""
    files = event_files(log_dir)  # by name: by the time each was created
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for path, tags in files.items():
        assert tags, f"{path} is empty"
        for tag, steps in tags.items():
            runs[path.parent][tag] += steps
    for run, tags in runs.items():
        for tag, steps in tags.items():
            assert steps == sorted(set(steps)), (run, tag, steps)
    expected = {log_dir / name for name in variants} | ({log_dir / "figures"} if figures else set())
    assert set(runs) == expected, sorted(runs)
    for name, result in variants.items():
        tags = runs[log_dir / name]
        scalars = {tag: steps for (tag, plugin), steps in tags.items() if plugin == "scalars"}
        final = scalar_items({k: v for k, v in result.items() if k not in RUN_ENTRIES})
        logged = [score for score in final if f"scores/{score}" in scalars]
        assert logged == list(final) if all_scores else 0 < len(logged) <= SUMMARY_TAGS, logged
        for score in logged:
            scored = [point["step"] for point in result["curve"] if score in scalar_items(point)]
            assert scalars.pop(f"scores/{score}") == scored, (name, score)
        losses = [point["step"] for point in result["loss_curve"]]
        assert losses and scalars["train/loss"] == losses, name
        assert all(steps == losses for tag, steps in scalars.items() if tag.startswith("train/"))
        if LOSS_VARIANTS[name].learns_concentration:
            dimensions = [tag for tag in scalars if tag.startswith("lambda_hat/")]
            assert len(dimensions) == len(result["lambda_hat"]), name
            assert all(scalars[tag] == losses for tag in dimensions)
            assert tags["lambda_hat", "histograms"] == losses
        # Nothing else: no Keras `epoch_*` duplicates of the scores, no second copy.
        assert all(tag.startswith(("train/", "lambda_hat/")) for tag in scalars), scalars
        training = {tag.removeprefix("train/") for tag in scalars}
        assert not training & {*final, *(score.replace("/", "_") for score in final)}
    images = runs.get(log_dir / "figures", {})
    assert sorted(tag for tag, plugin in images if plugin == "images") == sorted(figures)
    steps = max(result["steps"] for result in variants.values())
    assert all(s == [steps] for s in images.values())


def assert_same_result(resumed: dict, whole: dict) -> None:
    """Every entry equal, numbers to float32 round-off, but the wall-clock seconds."""
    assert set(resumed) == set(whole)
    for key, value in whole.items():
        if key in ("wall_seconds", "seconds"):
            continue
        if isinstance(value, dict):
            assert_same_result(resumed[key], value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            assert len(resumed[key]) == len(value), key
            for mine, theirs in zip(resumed[key], value, strict=True):
                assert_same_result(mine, theirs)
        elif isinstance(value, (float, list)):
            np.testing.assert_allclose(resumed[key], value, rtol=1e-5, atol=1e-6, err_msg=key)
        else:
            assert resumed[key] == value, key


def printed_table_columns(text: str) -> list[str]:
    """The column names of the tables `runner.report.fit_table` printed in `text`, in
    order: each header put back together where it was broken over lines, the first
    column once though every part of a split table repeats it."""
    lines = text.splitlines()
    names = []
    for index, separator in enumerate(lines):
        if not re.fullmatch(r"-+(  -+)*", separator):
            continue
        spans = [match.span() for match in re.finditer(r"-+", separator)]
        header, above = [], index - 1
        while (
            above >= 0
            and lines[above].strip()
            and len(lines[above]) <= len(separator)
            and all(not lines[above][start - 2 : start].strip() for start, _ in spans[1:])
        ):
            header.insert(0, lines[above])
            above -= 1
        table = ["".join(line[start:end].strip() for line in header) for start, end in spans]
        names += table if not names else table[1:]
    return names
