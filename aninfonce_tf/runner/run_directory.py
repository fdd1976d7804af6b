"""A run's directory (`RunDirectory`) and a `--seeds` run's (`SeedsDirectory`), each
claimed once for a plan. Details: docs/runner.md#resume"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import keras

from aninfonce_tf.checkpoints import read_json, replace_atomically, write_json
from aninfonce_tf.configs.base import RunConfig
from aninfonce_tf.disk_space import state_bytes
from aninfonce_tf.errors import UsageError
from aninfonce_tf.export import export_encoder
from aninfonce_tf.models import ContrastiveModel
from aninfonce_tf.runner.identity import (
    CODE,
    check_seeds_code,
    code_history,
    config_changes,
    recorded_code,
    resume_defaults,
)
from aninfonce_tf.runner.lock import LOCK_NAME
from aninfonce_tf.runner.plan import RunPlan

# A saved variant's record of its final files: the size and sha256 of `model.keras` and
# of every file of its `encoder/`, which a rerun checks before it counts it as finished.
FILES = "files.json"
# What a `--seeds` run writes beside its `seed_<k>/` directories: the summary, its
# figure and the figures an experiment adds over the seeds (`Experiment.seeds_plots`).
SEEDS_FILES = ("summary.json", "seeds.png", "r2_by_concentration.png")
# Entries of every `config.json` of a run: a file without them is not a run's.
_CONFIG_ENTRIES = {"losses", "steps", "seed"}


class AnotherConfig(ValueError):
    """The refusal of a run directory that holds a run of another config.

    Example:

    >>> isinstance(AnotherConfig("runs/quick holds a run of another config"), ValueError)
    True
    """


def run_directory(out: str | None, name: str) -> Path:
    """`out` (made if missing), or a new `runs/<name>-<UTC time>Z` never shared."""
    if out:
        path = Path(out)
        path.mkdir(parents=True, exist_ok=True)
        return path
    stem = f"{name}-{time.strftime('%Y%m%d-%H%M%SZ', time.gmtime())}"
    Path("runs").mkdir(exist_ok=True)
    for number in itertools.count(1):
        path = Path("runs") / (stem if number == 1 else f"{stem}-{number}")
        with contextlib.suppress(FileExistsError):
            path.mkdir()  # atomic: only one run makes it
            return path


@dataclasses.dataclass(frozen=True)
class RunDirectory:
    """A run directory, claimed for one plan; then its variants saved and results written.

    Args:
        path: the directory.
        finished: `{variant: result}` of the plan's variants finished there.
        incomplete: `{variant: what is wrong}` of the others saved there.
        code: the code that trains the run, oldest first (`identity.code_history`).
        record: the `run` record of its `results.json` ({}: none).

    Example:

    >>> import tempfile
    >>> from aninfonce_tf.configs.base import RunConfig
    >>> directory = RunDirectory.claim(Path(tempfile.mkdtemp()), RunPlan.create(RunConfig()))
    >>> directory.finished, directory.incomplete, len(directory.code)
    ({}, {}, 1)
    """

    path: Path
    finished: Mapping[str, dict] = dataclasses.field(default_factory=dict)
    incomplete: Mapping[str, str] = dataclasses.field(default_factory=dict)
    code: Sequence[dict] = ()
    record: Mapping = dataclasses.field(default_factory=dict)

    @classmethod
    def claim(cls, path: Path, plan: RunPlan) -> RunDirectory:
        """`path`, new or holding a run of `plan`'s config, with what it holds.

        Raises:
            AnotherConfig: (a `ValueError`) when `path` holds a run of another config.
            ValueError: for files not a run's, damaged files or other code, naming the fix.
        """
        saved = _claimed_config(path, plan)
        finished, incomplete, record = _saved_variants(path, plan.losses)
        training = len(finished) < len(plan.losses)
        code = code_history(path, saved, training, plan.allow_code_change)
        return cls(path, finished, incomplete, code, record)

    def write_config(self, config: RunConfig) -> None:
        """`config.json`: `config` and `code` (written as training starts)."""
        path = self.path / "config.json"
        saved = read_json(path) if path.exists() else dataclasses.asdict(config)
        if saved.get(CODE) != list(self.code):
            self.path.mkdir(parents=True, exist_ok=True)
            write_json(path, {**saved, CODE: list(self.code)})

    def save_variant(self, name: str, model: ContrastiveModel, input_spec, export: bool) -> None:
        """`<name>/model.keras`, the export with `export`, then `<name>/files.json`."""
        variant_dir = self.path / name
        # Room for twice the variables (h5py may crash on a full disk rather than raise).
        replace_atomically(variant_dir / "model.keras", model.save, needed=2 * state_bytes(model))
        if export:
            export_encoder(model, variant_dir / "encoder", input_spec)
        _write_files_record(variant_dir)

    def export_saved_variant(self, name: str, input_spec) -> None:
        """Exports the encoder of the finished variant `name` saved without one."""
        variant_dir = self.path / name
        if "stopped" in self.finished[name] or (variant_dir / "encoder").exists():
            return
        print(f"== {name}: exporting its encoder, which --export false left out")
        model = keras.saving.load_model(variant_dir / "model.keras")
        export_encoder(model, variant_dir / "encoder", input_spec)
        _write_files_record(variant_dir)

    def write_results(self, record: dict, results: dict) -> None:
        """`results.json`: the `run` record and the results of the variants so far."""
        write_json(self.path / "results.json", {"run": record, "variants": results})


@dataclasses.dataclass(frozen=True)
class SeedsDirectory:
    """A `--seeds` run's directory, claimed for one plan: a run directory per seed.

    Args:
        path: the directory.
        plan: the `--seeds` plan.
        earlier: `{seed: {variant: result}}` of seeds an earlier run finished.

    Example:

    >>> import tempfile
    >>> from aninfonce_tf.configs.base import RunConfig
    >>> plan = RunPlan.create(RunConfig(), seeds=[0, 1])
    >>> SeedsDirectory.claim(Path(tempfile.mkdtemp()), plan).seed_dir(1).name
    'seed_1'
    """

    path: Path
    plan: RunPlan
    earlier: Mapping[int, dict]

    @classmethod
    def claim(cls, path: Path, plan: RunPlan) -> SeedsDirectory:
        """`path`, holding nothing but a `--seeds` run's files, with its earlier seeds.

        Raises:
            ValueError: naming other files, a damaged earlier seed, or other code.
        """
        refuse_others(
            path,
            "a --seeds run of aninfonce_tf",
            lambda file: file.name in SEEDS_FILES or re.fullmatch(r"seed_\d+", file.name),
            f"only seed_<k>/, {', '.join(SEEDS_FILES)}",
        )
        earlier = {}
        for seed_path in sorted(path.glob("seed_*")):
            match = re.fullmatch(r"seed_(\d+)", seed_path.name)
            seed = int(match.group(1)) if match else None
            if seed is None or seed in plan.seeds or not (seed_path / "results.json").exists():
                continue
            try:
                _claimed_config(seed_path, plan.for_seed(seed))
            except AnotherConfig:  # not this summary's
                continue
            results = _saved_variants(seed_path, plan.losses)[0]
            if len(results) == len(plan.losses):
                earlier[seed] = results
        directory = cls(path, plan, earlier)
        directory.code_of_seeds()
        return directory

    def seed_dir(self, seed: int) -> Path:
        """The run directory of `seed`."""
        return self.path / f"seed_{seed}"

    def code_of_seeds(self) -> dict[int, list[dict]] | None:
        """`{seed: code}` when codes differ (a ValueError without `--allow-code-change`)."""
        codes = {
            seed: recorded_code(_saved_config(self.seed_dir(seed)))
            for seed in [*self.plan.seeds, *self.earlier]
        }
        return codes if check_seeds_code(codes, self.plan.allow_code_change) else None

    def check_protocol(self) -> None:
        """Raises a ValueError unless one final linear evaluation scored every seed."""
        protocols = {}
        for seed in sorted({*self.plan.seeds, *self.earlier}):
            path = self.seed_dir(seed) / "results.json"
            protocols[seed] = (read_json(path).get("run", {}) if path.exists() else {}).get(
                "linear_evaluation"
            )
        if len({json.dumps(protocol, sort_keys=True) for protocol in protocols.values()}) > 1:
            named = "; ".join(f"seed {seed}: {protocol}" for seed, protocol in protocols.items())
            raise ValueError(
                f"The seeds were scored by different final linear evaluations ({named}): "
                "their summary would average them. Rerun the seeds with the same "
                "--linear-eval-* flags, or into a new --out."
            )


def _claimed_config(run_dir: Path, plan: RunPlan) -> dict | None:
    """`run_dir/config.json`, checked to hold a run of `plan`'s config (None: a new run)."""
    saved = _saved_config(run_dir)
    if saved is None:
        refuse_others(run_dir, "a run of aninfonce_tf", lambda path: False, "no config.json")
        return None
    changes = config_changes(saved, plan)
    if changes:
        raise AnotherConfig(
            f"{run_dir} holds a run of another config ({changes}); it would resume from "
            "stale checkpoints. Pass a new --out, or delete that directory to start over."
        )
    # Said of a run that resumes only: a refused one prints its refusal alone.
    filled = {k: v for k, v in resume_defaults(plan.config).items() if k not in saved}
    if filled:
        named = ", ".join(f"{k} = {v!r}" for k, v in filled.items())
        print(f"{run_dir}/config.json has no {named}: counted at the default", flush=True)
    return saved


def _saved_variants(run_dir: Path, names: Sequence[str]) -> tuple[dict, dict, dict]:
    """`(finished, incomplete, run record)` of `run_dir/results.json` for `names`."""
    path = run_dir / "results.json"
    saved = read_json(path) if path.exists() else {"run": {}, "variants": {}}
    # A results.json written before the `run` / `variants` layout holds the variants
    # at its top level.
    variants = saved.get("variants", saved) if isinstance(saved, dict) else None
    if not isinstance(variants, dict) or not all(
        isinstance(result, dict) and "steps" in result for result in variants.values()
    ):
        raise ValueError(
            f"{path} is not the results.json of an aninfonce_tf run: move it away, "
            "or pass a new --out."
        )
    finished, incomplete = {}, {}
    for name in [name for name in names if name in variants]:
        problem = None if "stopped" in variants[name] else final_files_problem(run_dir / name)
        if problem:
            incomplete[name] = problem
        else:
            finished[name] = variants[name]
    return finished, incomplete, saved.get("run", {})


def _saved_config(run_dir: Path) -> dict | None:
    """`run_dir/config.json`, None when there is none."""
    path = run_dir / "config.json"
    if not path.exists():
        return None
    saved = read_json(path, fix="pass a new --out, or delete the run directory to start over")
    if not isinstance(saved, dict) or not set(saved) >= _CONFIG_ENTRIES:
        raise ValueError(f"{path} is not the config.json of an aninfonce_tf run: pass a new --out.")
    return saved


def load_config(run_dir: Path, config_type: type[RunConfig]) -> RunConfig:
    """The config a run in `run_dir` was trained with, as a `config_type`.

    Example:

    >>> from aninfonce_tf.configs import synthetic
    >>> config = load_config(Path("runs/quick"), synthetic.SyntheticConfig)  # doctest: +SKIP
    """
    saved = _saved_config(Path(run_dir))
    if saved is None:
        raise ValueError(f"{run_dir} holds no config.json: pass the directory of a run.")
    fields = {field.name for field in dataclasses.fields(config_type)}
    return config_type(**{name: value for name, value in saved.items() if name in fields})


def refuse_others(run_dir: Path, what: str, ours: Callable[[Path], object], why: str) -> None:
    """Raises a ValueError when `run_dir` holds a file that is neither `ours` nor a run's."""
    others = sorted(
        path.name
        for path in (run_dir.iterdir() if run_dir.exists() else ())
        if not (
            ours(path)
            or path.name in (LOCK_NAME, "workers")
            or path.name.startswith((".partial-", ".old-"))
        )
    )
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise ValueError(
            f"{run_dir} holds files that are not {what} ({shown}; {why}): pass a new --out, "
            "or an empty one."
        )


def points_until(path: Path, step: int) -> list[dict]:
    """The points of a history file up to `step` (a `UsageError` if it does not read)."""
    if not path.exists():
        return []
    try:
        points = read_json(path, fix="pass a new --out, or delete the run directory to start over")
    except ValueError as error:
        raise UsageError(str(error)) from None
    return [point for point in points if point["step"] <= step]


def _write_files_record(variant_dir: Path) -> None:
    """`files.json`: the size and sha256 of `model.keras` and of the export's files."""
    paths = [variant_dir / "model.keras"]
    paths += sorted(path for path in (variant_dir / "encoder").rglob("*") if path.is_file())
    files = {path.relative_to(variant_dir).as_posix(): _file_record(path) for path in paths}
    write_json(variant_dir / FILES, files)


def final_files_problem(variant_dir: Path) -> str | None:
    """What is wrong with the final files `files.json` lists of a saved variant, or None.

    Example:

    >>> import tempfile
    >>> final_files_problem(Path(tempfile.mkdtemp())).endswith("is missing")
    True
    """
    record = variant_dir / FILES
    if not record.exists():  # saved before files.json was: as then, its model must exist
        model = variant_dir / "model.keras"
        return None if model.exists() else f"model.keras in {variant_dir} is missing"
    try:
        files = read_json(record)
    except ValueError:
        files = None
    if not isinstance(files, dict) or not all(
        isinstance(written, dict) and {"bytes", "sha256"} <= set(written)
        for written in files.values()
    ):
        return f"{FILES} in {variant_dir} does not read"
    for name, written in files.items():
        path = variant_dir / name
        if not path.is_file():
            return f"{name} in {variant_dir} is missing"
        found = _file_record(path)
        if found["bytes"] < written["bytes"]:
            sizes = f"{found['bytes']} of its {written['bytes']} bytes"
            return f"{name} in {variant_dir} is incomplete ({sizes})"
        if found != written:
            return f"{name} in {variant_dir} is not the file written (its size or sha256 differs)"
    return None


def _file_record(path: Path) -> dict:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


__all__ = [
    "FILES",
    "SEEDS_FILES",
    "AnotherConfig",
    "RunDirectory",
    "SeedsDirectory",
    "final_files_problem",
    "load_config",
    "points_until",
    "refuse_others",
    "run_directory",
]
