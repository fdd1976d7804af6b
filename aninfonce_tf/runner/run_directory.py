"""The run directory: claimed for one config, resumed from, written atomically. Its
files and the rules of resume: docs/runner.md#outputs and docs/runner.md#resume.

Example:

>>> sorted(code_version())[:2]
['aninfonce_tf', 'source_sha256']
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import hashlib
import itertools
import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import keras

import aninfonce_tf
from aninfonce_tf import backbones, distribute
from aninfonce_tf.checkpoints import Backup, read_json, replace_atomically, write_json
from aninfonce_tf.configs.base import EXECUTION_FIELDS, RunConfig
from aninfonce_tf.disk_space import state_bytes
from aninfonce_tf.errors import UsageError
from aninfonce_tf.evaluation.targets import canonical_targets
from aninfonce_tf.export import export_encoder
from aninfonce_tf.models import ContrastiveModel
from aninfonce_tf.runner.final_files import FILES, final_files_problem, write_files_record
from aninfonce_tf.runner.lock import LOCK_NAME

# `config.json`'s entry of the code the run was trained by (`code_history`).
CODE = "code"
# The user's files that `--import` brought in (`cli.import_user_code`).
USER_CODE: list[Path] = []
# What a `--seeds` run writes beside its `seed_<k>/` directories: the summary, its
# figure and the figures an experiment adds over the seeds (`Experiment.seeds_plots`).
SEEDS_FILES = ("summary.json", "seeds.png", "r2_by_concentration.png")
# The code entry of a run recorded before runs recorded their code.
UNRECORDED_CODE = {"aninfonce_tf": "unknown (not recorded)", "source_sha256": None}
# Entries of every `config.json` of a run: a file without them is not a run's.
_CONFIG_ENTRIES = {"losses", "steps", "seed"}


class AnotherConfig(ValueError):
    """The refusal of a run directory that holds a run of another config
    (`claim_run_directory`); a `--seeds` summary leaves such a seed out.

    Example:

    >>> isinstance(AnotherConfig("runs/quick holds a run of another config"), ValueError)
    True
    """


def run_directory(out: str | None, name: str) -> Path:
    """`out` (made if missing), or a new `runs/<name>-<UTC time>Z` (`-2`, ... appended
    when taken): a run without `--out` never shares a directory."""
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


def claim_run_directory(run_dir: Path, config: RunConfig) -> dict:
    """Checks that `run_dir` is new or holds a run of the same config (`config_changes`)
    and returns the results already saved there (resume).

    Raises:
        AnotherConfig: (a `ValueError`) when `run_dir` holds a run of another config
            (a stale backup is never resumed silently).
        ValueError: when it holds files that are not a run's (no `config.json`), or a
            `config.json` or `results.json` that is not a run's or not JSON; each
            names the file and the fix.
    """
    saved = _saved_config(run_dir)
    if saved is None:
        refuse_others(run_dir, "a run of aninfonce_tf", lambda path: False, "no config.json")
    else:
        changes = config_changes(saved, config)
        if changes:
            raise AnotherConfig(
                f"{run_dir} holds a run of another config ({changes}); it would resume from "
                "stale checkpoints. Pass a new --out, or delete that directory to start over."
            )
        # Said of a run that resumes only: a refused one prints its refusal alone.
        filled = {k: v for k, v in _defaults(config).items() if k not in saved}
        if filled:
            named = ", ".join(f"{k} = {v!r}" for k, v in filled.items())
            print(f"{run_dir}/config.json has no {named}: counted at the default", flush=True)
    results_path = run_dir / "results.json"
    if not results_path.exists():
        return {}
    saved = read_json(results_path)
    # A results.json written before the `run` / `variants` layout holds the variants
    # at its top level.
    variants = saved.get("variants", saved) if isinstance(saved, dict) else None
    if not isinstance(variants, dict) or not all(
        isinstance(result, dict) and "steps" in result for result in variants.values()
    ):
        raise ValueError(
            f"{results_path} is not the results.json of an aninfonce_tf run: move it away, "
            "or pass a new --out."
        )
    return variants


def config_changes(saved: dict, config: RunConfig) -> str:
    """How `config` differs from the `saved` one in the fields a resume must keep
    (`stop_at` in its one form, a field `saved` lacks at its default): `steps: 40 ->
    80, ...`, empty where they agree."""
    current = _comparable(json.loads(json.dumps(config.resume_key())))
    exempt = (*EXECUTION_FIELDS, *config.resume_exempt, CODE)
    filled = {k: v for k, v in _defaults(config).items() if k not in saved}
    saved = _comparable({**filled, **{k: v for k, v in saved.items() if k not in exempt}})
    differing = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
    return ", ".join(f"{k}: {saved.get(k)!r} -> {current.get(k)!r}" for k in differing)


def backup_identity(config: RunConfig) -> dict:
    """What each backup checkpoint of a run of `config` records of it (`Backup`'s
    `identity`): the fields a resume keeps (`RunConfig.resume_key`) and the code that
    writes it (`code_version`)."""
    return {"config": json.loads(json.dumps(config.resume_key())), CODE: code_version()}


def check_backup_identity(
    backup: Backup, config: RunConfig, code: Sequence[dict], variant: str
) -> None:
    """Checks that the checkpoint `backup` has restored (`Backup.restore`) was written
    by this run: of `config`, by one of the codes that trained it (`code`,
    `code_history`).

    Raises:
        UsageError: naming the checkpoint, what differs and the fix.
    """
    recorded = backup.restored_identity
    if not isinstance(recorded, dict):
        problem = "it records no run (a checkpoint from elsewhere, or from older code)"
    elif changes := config_changes(recorded.get("config") or {}, config):
        problem = f"it was written by a run of another config ({changes})"
    elif recorded.get(CODE) not in [_without_date(entry) for entry in code]:
        problem = (
            f"it was written by {_code_name(recorded.get(CODE))}, which did not train this run"
        )
    else:
        return
    raise UsageError(
        f"The backup of {variant} in {backup.directory} is not this run's: {problem}. Delete "
        f"{backup.directory} to train {variant} from the start, or pass a new --out."
    )


def check_workers_agree(strategy, config: RunConfig) -> None:
    """Checks, before any worker trains, that every worker of a multi-worker run has
    the same config (every field) and code (`code_version`), by a digest each passes
    through `distribute.gather_from_workers`.

    Raises:
        UsageError: on every worker, when the digests differ.
    """
    text = json.dumps(
        {"config": dataclasses.asdict(config), CODE: code_version()}, sort_keys=True, default=str
    )
    digest = int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)  # within int64
    digests = distribute.gather_from_workers(strategy, digest)
    if len(set(digests)) > 1:
        raise UsageError(
            f"The workers of this run were given different flags or code (digests "
            f"{[f'{value:015x}' for value in digests]}, one per replica): every worker must "
            "run the same command with the same aninfonce_tf (TF_CONFIG aside). Rerun every "
            "worker with the same flags."
        )


def _without_date(entry: dict) -> dict:
    """A code entry (`code_history`) without the date it first ran: the code alone."""
    return {k: v for k, v in entry.items() if k != "date"}


def _defaults(config: RunConfig) -> dict:
    """The default of each of `config`'s resume fields, as JSON gives it back: what a
    field a saved config lacks counts as."""
    resumed = config.resume_key()
    defaults = {
        f.name: f.default
        for f in dataclasses.fields(config)
        if f.name in resumed and f.default is not dataclasses.MISSING
    }
    return json.loads(json.dumps(defaults))


def _comparable(values: dict) -> dict:
    """A config's `values` with `stop_at` in its one form (`canonical_targets`; as it is
    where it does not parse)."""
    text = values.get("stop_at")
    if isinstance(text, str):
        with contextlib.suppress(ValueError):
            return {**values, "stop_at": canonical_targets(text)}
    return values


def check_seeds_directory(run_dir: Path) -> None:
    """Checks that `run_dir` holds nothing but a `--seeds` run's `seed_<k>/` and
    `SEEDS_FILES`.

    Raises:
        ValueError: naming the other files.
    """
    refuse_others(
        run_dir,
        "a --seeds run of aninfonce_tf",
        lambda path: path.name in SEEDS_FILES or re.fullmatch(r"seed_\d+", path.name),
        f"only seed_<k>/, {', '.join(SEEDS_FILES)}",
    )


def finished_seeds(run_dir: Path, config: RunConfig, skip: Sequence[int]) -> dict[int, dict]:
    """`{seed: results}` of the runs in `run_dir/seed_<k>/` but the seeds `skip` that
    finished every variant of `config`; a seed of another config is left out, a
    damaged one raises `claim_run_directory`'s `ValueError`."""
    found = {}
    for path in sorted(run_dir.glob("seed_*")):
        match = re.fullmatch(r"seed_(\d+)", path.name)
        seed = int(match.group(1)) if match else None
        if seed is None or seed in skip or not (path / "results.json").exists():
            continue
        seed_config = dataclasses.replace(config, seed=seed)
        try:
            saved = claim_run_directory(path, seed_config)
        except AnotherConfig:  # not this summary's
            continue
        results, _ = finished_variants(path, saved, seed_config.loss_names())
        if len(results) == len(seed_config.loss_names()):
            found[seed] = results
    return found


def seeds_code(run_dir: Path, seeds: Sequence[int]) -> dict[int, list[dict]]:
    """`{seed: the code that trained run_dir/seed_<k>/}` (`code_history` without the
    dates; this code for a seed not trained yet)."""
    codes = {}
    for seed in seeds:
        saved = _saved_config(run_dir / f"seed_{seed}")
        history = saved.get(CODE, [UNRECORDED_CODE]) if saved else [code_version()]
        codes[seed] = [_without_date(entry) for entry in history if isinstance(entry, dict)]
    return codes


def check_seeds_code(codes: dict[int, list[dict]], allow_code_change: bool) -> bool:
    """Whether the seeds of a `--seeds` summary were trained by different code
    (`seeds_code`), which `allow_code_change` (`--allow-code-change`) allows.

    Raises:
        ValueError: when they were, without `allow_code_change`, naming each seed's code.
    """
    if len({json.dumps(code, sort_keys=True) for code in codes.values()}) < 2:
        return False
    if not allow_code_change:
        named = "; ".join(
            f"seed {seed}: {' -> '.join(map(_code_name, code or [None]))}"
            for seed, code in sorted(codes.items())
        )
        raise ValueError(
            f"The seeds were trained by different code ({named}): their summary would "
            "average two versions of the code. Pass --allow-code-change to summarise them "
            "with each seed's code recorded in summary.json, or a new --out."
        )
    return True


def check_seeds_protocol(run_dir: Path, seeds: Sequence[int]) -> None:
    """Checks that the seeds of a `--seeds` summary were scored by one final linear
    evaluation (each seed's `run.linear_evaluation`).

    Raises:
        ValueError: naming each seed's protocol when they differ.
    """
    protocols = {}
    for seed in seeds:
        path = run_dir / f"seed_{seed}" / "results.json"
        protocols[seed] = (read_json(path).get("run", {}) if path.exists() else {}).get(
            "linear_evaluation"
        )
    if len({json.dumps(protocol, sort_keys=True) for protocol in protocols.values()}) > 1:
        named = "; ".join(f"seed {seed}: {protocol}" for seed, protocol in protocols.items())
        raise ValueError(
            f"The seeds were scored by different final linear evaluations ({named}): their "
            "summary would average them. Rerun the seeds with the same --linear-eval-* "
            "flags, or into a new --out."
        )


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
    """The config a run in `run_dir` was trained with, as a `config_type`: the fields
    of its `config.json` that `config_type` has (a field the file lacks keeps its
    default).

    Example:

    >>> from aninfonce_tf.configs import synthetic
    >>> config = load_config(Path("runs/quick"), synthetic.SyntheticConfig)  # doctest: +SKIP

    Raises:
        ValueError: `run_dir` holds no run's `config.json`.
    """
    saved = _saved_config(Path(run_dir))
    if saved is None:
        raise ValueError(f"{run_dir} holds no config.json: pass the directory of a run.")
    fields = {field.name for field in dataclasses.fields(config_type)}
    return config_type(**{name: value for name, value in saved.items() if name in fields})


def refuse_others(run_dir: Path, what: str, ours: Callable[[Path], object], why: str) -> None:
    """Raises a ValueError when `run_dir` holds a file that is neither `ours` nor left
    by a run before its config.json (the lock, temporaries, the other workers')."""
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


def code_version() -> dict[str, str]:
    """This package's version and the sha256 of its source, of the `--import`ed files
    (`USER_CODE`) and of the loaded backbone files: what a resume compares."""
    version = {"aninfonce_tf": aninfonce_tf.__version__, "source_sha256": _source_sha256()}
    user_code = [*USER_CODE, *backbones.LOADED_FILES]  # `--import`, `--backbone FILE.py:F`
    if user_code:
        digest = hashlib.sha256()
        for path in user_code:
            text = path.read_bytes() if path.is_file() else b"(gone)"
            digest.update(f"{path}\0".encode() + text + b"\0")
        version["user_code_sha256"] = digest.hexdigest()
    return version


@functools.cache
def _source_sha256() -> str:
    """The sha256 of every `.py` file of this package, by path, read once per process."""
    root = Path(aninfonce_tf.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if not path.is_file():  # an editor's dangling lock link, say
            continue
        digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def code_history(run_dir: Path, training: bool, allow_code_change: bool = False) -> list[dict]:
    """The code the run in `run_dir` is trained by, oldest first (`code_version`, each
    with the date it first ran; docs/runner.md#the-code-a-run-was-trained-by).

    Args:
        run_dir: a claimed run directory (`claim_run_directory`).
        training: whether the run trains a variant (resuming it, or a new one).
        allow_code_change: resume a run trained by other code (`--allow-code-change`).

    Raises:
        ValueError: when training would resume a run trained by other code (or by an
            aninfonce_tf that recorded none), without `allow_code_change`.
    """
    saved = _saved_config(run_dir)
    history = saved.get(CODE, []) if saved else []
    if not isinstance(history, list) or not all(isinstance(entry, dict) for entry in history):
        history = []
    version = code_version()
    last = history[-1] if history else None
    # Every entry counts: one the current code lacks (the `--import` of a plug-in) too.
    if (last and _without_date(last) == version) or not training:
        return history
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    current = {**version, "date": now}
    if saved is None:  # a new run
        return [current]
    if not allow_code_change:
        raise ValueError(
            f"{run_dir} was trained by {_code_name(last)}, this is {_code_name(current)}: "
            "resuming would mix two versions of the code in one result. Pass "
            "--allow-code-change to resume it with this code, or a new --out."
        )
    print(
        f"   {run_dir}: resuming across a code change ({_code_name(last)} -> "
        f"{_code_name(current)}), as --allow-code-change allows; config.json and "
        "results.json record it",
        flush=True,
    )
    # A run from before code was recorded keeps a mark that its start is unknown.
    return [*(history or [UNRECORDED_CODE]), current]


def _code_name(entry: dict | None) -> str:
    if not entry or not entry.get("source_sha256"):
        return "an aninfonce_tf that recorded no version of its code"
    user_code = entry.get("user_code_sha256")
    with_user_code = f", --import and backbone files {user_code[:12]}" if user_code else ""
    return (
        f"aninfonce_tf {entry.get('aninfonce_tf')} (source {entry['source_sha256'][:12]}"
        f"{with_user_code})"
    )


def points_until(path: Path, step: int) -> list[dict]:
    """The points of a history file up to `step` (none when there is no file).

    Raises:
        UsageError: for a file that does not read, naming it and the fix.
    """
    if not path.exists():
        return []
    try:
        points = read_json(path, fix="pass a new --out, or delete the run directory to start over")
    except ValueError as error:
        raise UsageError(str(error)) from None
    return [point for point in points if point["step"] <= step]


def save_variant(model: ContrastiveModel, variant_dir: Path, input_spec, export: bool) -> None:
    """`model.keras` and, with `export`, the encoder SavedModel and Lambda_hat, each
    replaced atomically, then `files.json`: the size and sha256 of each of their
    files, which a rerun checks (`final_files_problem`)."""
    # Room for twice the variables (h5py may crash on a full disk rather than raise).
    replace_atomically(variant_dir / "model.keras", model.save, needed=2 * state_bytes(model))
    if export:
        export_encoder(model, variant_dir / "encoder", input_spec)
    write_files_record(variant_dir)


def export_saved_variant(variant_dir: Path, input_spec) -> None:
    """Exports the encoder of a variant saved without one (`--export false`), from its
    `model.keras`, and records the export's files in `files.json`."""
    model = keras.saving.load_model(variant_dir / "model.keras")
    export_encoder(model, variant_dir / "encoder", input_spec)
    write_files_record(variant_dir)


def finished_variants(run_dir: Path, saved: dict, names: Sequence[str]) -> tuple[dict, dict]:
    """`(finished, incomplete)`: the results of the variants `names` finished with
    every final file as written (or diverged), and `{variant: what is wrong}` of the
    others saved."""
    finished, incomplete = {}, {}
    for name in names:
        if name in saved:
            problem = None if "stopped" in saved[name] else final_files_problem(run_dir / name)
            if problem:
                incomplete[name] = problem
            else:
                finished[name] = saved[name]
    return finished, incomplete


def write_config(run_dir: Path, config: RunConfig, code: list[dict]) -> None:
    """`config.json`: the config and the code it is trained by (`code_history`),
    written when the first variant starts training and on a resume across a code
    change."""
    path = run_dir / "config.json"
    saved = read_json(path) if path.exists() else dataclasses.asdict(config)
    if saved.get(CODE) != code:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(path, {**saved, CODE: code})


def write_results(run_dir: Path, record: dict, results: dict) -> None:
    """`results.json`: the `run` record and the results of the variants so far."""
    write_json(run_dir / "results.json", {"run": record, "variants": results})


__all__ = [
    "CODE",
    "AnotherConfig",
    "FILES",
    "backup_identity",
    "check_backup_identity",
    "check_seeds_code",
    "check_seeds_protocol",
    "check_workers_agree",
    "config_changes",
    "check_seeds_directory",
    "claim_run_directory",
    "code_history",
    "code_version",
    "export_saved_variant",
    "final_files_problem",
    "finished_seeds",
    "finished_variants",
    "load_config",
    "points_until",
    "refuse_others",
    "run_directory",
    "save_variant",
    "seeds_code",
    "write_config",
    "write_results",
]
