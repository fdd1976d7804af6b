"""A run's identity: the config fields a resume keeps and the code that trains it.
Details: docs/runner.md#resume

>>> sorted(code_version())[:2]
['aninfonce_tf', 'source_sha256']
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import functools
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import aninfonce_tf
from aninfonce_tf import backbones, distribute
from aninfonce_tf.checkpoints import Backup
from aninfonce_tf.configs.base import EXECUTION_FIELDS, RunConfig
from aninfonce_tf.errors import UsageError
from aninfonce_tf.evaluation.targets import canonical_targets, parse_targets
from aninfonce_tf.runner.plan import RunPlan

# `config.json`'s entry of the code the run was trained by (`code_history`).
CODE = "code"
# The user's files that `--import` brought in (`cli.import_user_code`).
USER_CODE: list[Path] = []
# The code entry of a run recorded before runs recorded their code.
UNRECORDED_CODE = {"aninfonce_tf": "unknown (not recorded)", "source_sha256": None}


def config_changes(saved: dict, plan: RunPlan) -> str:
    """How `plan` differs from `saved` in the fields a resume keeps: `steps: 40 -> 80, ...`."""
    current = json.loads(json.dumps(plan.config.resume_key()))
    current["stop_at"] = canonical_targets(plan.stop_at)
    exempt = (*EXECUTION_FIELDS, *plan.config.resume_exempt, CODE)
    filled = {k: v for k, v in resume_defaults(plan.config).items() if k not in saved}
    saved = {**filled, **{k: v for k, v in saved.items() if k not in exempt}}
    if isinstance(saved.get("stop_at"), str):
        with contextlib.suppress(ValueError):  # as it is where it does not parse
            saved["stop_at"] = canonical_targets(parse_targets(saved["stop_at"]))
    differing = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
    return ", ".join(f"{k}: {saved.get(k)!r} -> {current.get(k)!r}" for k in differing)


def resume_defaults(config: RunConfig) -> dict:
    """The default of each of `config`'s resume fields, as JSON gives it back."""
    resumed = config.resume_key()
    values = {
        f.name: f.default
        for f in dataclasses.fields(config)
        if f.name in resumed and f.default is not dataclasses.MISSING
    }
    return json.loads(json.dumps(values))


def backup_identity(config: RunConfig) -> dict:
    """What each backup checkpoint of a run of `config` records: its resume fields and code."""
    return {"config": json.loads(json.dumps(config.resume_key())), CODE: code_version()}


def check_backup_identity(
    backup: Backup, plan: RunPlan, code: Sequence[dict], variant: str
) -> None:
    """Raises a `UsageError` unless this run (`plan`, `code`) wrote the restored `backup`."""
    recorded = backup.restored_identity
    if not isinstance(recorded, dict):
        problem = "it records no run (a checkpoint from elsewhere, or from older code)"
    elif changes := config_changes(recorded.get("config") or {}, plan):
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
    """Raises a `UsageError` on every worker unless all have the same config and code."""
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


def code_version() -> dict[str, str]:
    """This package's version and the sha256 of its source and of the user's code files."""
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


def code_history(
    run_dir: Path, saved: dict | None, training: bool, allow_code_change: bool
) -> list[dict]:
    """The code the run in `run_dir` (`saved`: its config) is trained by, oldest first."""
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


def recorded_code(saved: dict | None) -> list[dict]:
    """The code that trained a run, by its config (`saved`), without the dates."""
    history = saved.get(CODE, [UNRECORDED_CODE]) if saved else [code_version()]
    return [_without_date(entry) for entry in history if isinstance(entry, dict)]


def check_seeds_code(codes: dict[int, list[dict]], allow_code_change: bool) -> bool:
    """Whether different code trained the seeds (a ValueError without `allow_code_change`)."""
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


def _without_date(entry: dict) -> dict:
    """A code entry (`code_history`) without the date it first ran: the code alone."""
    return {k: v for k, v in entry.items() if k != "date"}


def _code_name(entry: dict | None) -> str:
    if not entry or not entry.get("source_sha256"):
        return "an aninfonce_tf that recorded no version of its code"
    user_code = entry.get("user_code_sha256")
    with_user_code = f", --import and backbone files {user_code[:12]}" if user_code else ""
    return (
        f"aninfonce_tf {entry.get('aninfonce_tf')} (source {entry['source_sha256'][:12]}"
        f"{with_user_code})"
    )


__all__ = [
    "CODE",
    "USER_CODE",
    "backup_identity",
    "check_backup_identity",
    "check_seeds_code",
    "check_workers_agree",
    "code_history",
    "code_version",
    "config_changes",
    "resume_defaults",
    "recorded_code",
]
