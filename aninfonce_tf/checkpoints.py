"""Run files that survive a kill at any instant: atomic writes, JSON with NaN as null, and
the backup checkpoints of a resumed `fit`. Details: docs/runner.md#how-the-files-are-written"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import h5py
import keras

from aninfonce_tf.disk_space import room_for, state_bytes
from aninfonce_tf.errors import UsageError

NULL_VALUES = "null_values"
_NULL_NOTE = (
    "JSON has no NaN or infinity: the entries below (JSON pointers) held one, a diverged "
    "loss or a score that could not be computed, and are written as null"
)
_CHECKPOINT = re.compile(r"step-(\d+)\.weights\.h5")
# Seconds after which an untouched temporary of a shared write is a killed writer's.
STALE_TEMPORARY_SECONDS = 3600.0


def replace_atomically(
    path: str | Path, write: Callable[[Path], object], needed: int = 0, shared: bool = False
) -> Path:
    """Calls `write(temporary)` on a file beside `path`, flushes it, then renames it to
    `path` (`shared`: several processes may write it at once).

    Raises:
        OutOfSpace: when fewer than `needed` bytes (0: no check) are free, or the disk
            fills up during the write; the old file is kept.
    """
    path = Path(path)
    # One temporary per file, but one per write of a `shared` file (a random name others can read).
    own = f"{uuid.uuid4().hex}-" if shared else ""
    temporary = path.with_name(f".partial-{own}{path.name}")
    if shared:
        _remove_stale_temporaries(path)
    with room_for(path, temporary, needed):
        try:
            write(temporary)
            with open(temporary, "rb") as file:  # on disk before the rename, against power loss
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            if shared:  # no later write has its name to replace it
                temporary.unlink(missing_ok=True)
            raise
    if os.name == "posix":  # and the rename itself, which lives in the directory
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    return path


def _remove_stale_temporaries(path: Path) -> None:
    """Deletes the shared writes' temporaries of `path` untouched for `STALE_TEMPORARY_SECONDS`."""
    if not path.parent.is_dir():
        return
    shared = re.compile(rf"\.partial-[0-9a-f]{{32}}-{re.escape(path.name)}")
    oldest = time.time() - STALE_TEMPORARY_SECONDS
    for temporary in path.parent.iterdir():
        if shared.fullmatch(temporary.name):
            with contextlib.suppress(FileNotFoundError):  # another writer's cleaning too
                if temporary.stat().st_mtime < oldest:
                    temporary.unlink()


def replace_directory_atomically(
    path: str | Path, write: Callable[[Path], object], needed: int = 0
) -> Path:
    """`replace_atomically` for a directory (a SavedModel), not flushed to disk."""
    path = Path(path)
    temporary, old = path.with_name(f".partial-{path.name}"), path.with_name(f".old-{path.name}")
    for stale in (temporary, old):
        shutil.rmtree(stale, ignore_errors=True)
    with room_for(path, temporary, needed):
        write(temporary)
    if path.exists():
        path.rename(old)
    temporary.rename(path)
    shutil.rmtree(old, ignore_errors=True)
    return path


def write_json(path: str | Path, data, shared: bool = False) -> Path:
    """Writes `data` to `path` as JSON, atomically; NaN and infinities become null,
    listed under `null_values` (`read_json` restores them).

    Example:

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "scores.json"
    >>> _ = write_json(path, {"loss": float("nan"), "steps": 3})
    >>> print(path.read_text())  # doctest: +ELLIPSIS
    {
      "loss": null,
      "steps": 3,
      "null_values": {
        "note": "JSON has no NaN or infinity: ...",
        "values": {
          "/loss": "NaN"
        }
      }
    }
    >>> read_json(path)
    {'loss': nan, 'steps': 3}
    """
    values = {}
    data = _finite_or_null(data, "", values)
    if values and isinstance(data, dict):
        data = {**data, NULL_VALUES: {"note": _NULL_NOTE, "values": values}}
    text = json.dumps(data, indent=2, allow_nan=False)
    return replace_atomically(path, lambda temporary: temporary.write_text(text), shared=shared)


def read_json(path: str | Path, fix: str = "delete it, or pass a new --out"):
    """The data `write_json` wrote to `path`, NaN and infinities restored; a file that is
    not JSON raises a ValueError naming `path` and `fix`.

    Example:

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "results.json"
    >>> _ = path.write_text('{"steps": ')
    >>> read_json(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../results.json does not read as JSON (Expecting value: line 1 column 11 (char 10)): delete it, or pass a new --out.
    """
    try:
        data = json.loads(Path(path).read_text())
    except ValueError as error:  # not JSON, or not even text
        raise ValueError(f"{path} does not read as JSON ({error}): {fix}.") from error
    if not isinstance(data, dict) or NULL_VALUES not in data:
        return data
    values = data.pop(NULL_VALUES)["values"]
    for pointer, value in values.items():
        *parents, last = [_pointer_key(part) for part in pointer.split("/")[1:]]
        node = data
        for part in parents:
            node = node[part if isinstance(node, dict) else int(part)]
        node[last if isinstance(node, dict) else int(last)] = float(value)
    return data


def _finite_or_null(data, pointer: str, values: dict):
    if isinstance(data, dict):
        return {
            key: _finite_or_null(value, f"{pointer}/{_pointer_part(key)}", values)
            for key, value in data.items()
        }
    if isinstance(data, (list, tuple)):
        return [_finite_or_null(value, f"{pointer}/{i}", values) for i, value in enumerate(data)]
    if isinstance(data, float) and not math.isfinite(data):
        values[pointer] = json.dumps(data)  # "NaN", "Infinity" or "-Infinity"
        return None
    return data


def _pointer_part(key) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _pointer_key(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


class Backup(keras.callbacks.Callback):
    """Saves weights and optimizer state after every epoch with a finite loss; `fit`
    starts from the checkpoint `restore()` found. Details: docs/runner.md#resume

    Args:
        directory: where the checkpoints go (one per run of `fit`).
        steps_per_epoch: training steps per epoch of `fit`.
        keep: checkpoints kept (at least 2, so that one survives a torn write).
        identity: JSON values naming the run, written into each checkpoint.

    Example:

    >>> import tempfile
    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> backup = Backup(tempfile.mkdtemp(), steps_per_epoch=2)
    >>> x = np.ones((4, 2), "float32")
    >>> _ = model.fit(x, x[:, :1], batch_size=2, epochs=3, callbacks=[backup], verbose=0)
    >>> sorted(path.name for path in backup.directory.iterdir())
    ['step-000004.weights.h5', 'step-000006.weights.h5']
    >>> backup.restore()
    6
    """

    def __init__(
        self,
        directory: str | Path,
        steps_per_epoch: int,
        keep: int = 2,
        identity: Mapping | None = None,
    ):
        super().__init__()
        if keep < 2:
            raise ValueError(f"`keep` must be at least 2; got {keep}.")
        self.directory = Path(directory)
        self.steps_per_epoch = steps_per_epoch
        self.keep = keep
        self.identity = identity
        self.restored_logs: dict = {}
        self.restored_identity: dict | None = None
        self._restore_from: Path | None = None

    def checkpoints(self) -> list[tuple[int, Path]]:
        """`(step, path)` of every checkpoint, newest first."""
        found = []
        for path in self.directory.glob("step-*.weights.h5"):
            match = _CHECKPOINT.fullmatch(path.name)
            if match:
                found.append((int(match.group(1)), path))
        return sorted(found, reverse=True)

    def restore(self, at_most: int | None = None) -> int:
        """The step of the newest readable checkpoint (at most `at_most`; 0: none), which
        `fit` will load (also `restored_logs`, `restored_identity`)."""
        self._restore_from, self.restored_logs, self.restored_identity = None, {}, None
        for step, path in self.checkpoints():
            if at_most is not None and step > at_most:
                continue
            try:
                logs, recorded_step, identity = _read_checkpoint(path)
            except (OSError, KeyError, ValueError) as error:
                print(f"   checkpoint {path} does not read ({error}); trying the one before")
                continue
            if recorded_step is not None and recorded_step != step:
                raise UsageError(
                    f"{path} holds step {recorded_step}, not the step {step} its name gives "
                    f"(a renamed file): delete {self.directory} to train this variant from "
                    "the start, or pass a new --out."
                )
            self._restore_from, self.restored_logs = path, logs
            self.restored_identity = identity
            return step
        return 0

    def restore_on_every_worker(self, gather: Callable[[int], Sequence[int]]) -> int:
        """`restore()` on every worker at the newest step all of them hold; `gather(step)`
        returns every worker's `step`. Raises RuntimeError when they cannot agree."""
        steps = gather(self.restore())
        agreed = min(steps)
        if max(steps) == agreed:
            return agreed
        print(
            f"   the workers' newest checkpoints are at steps {sorted(set(steps))}: "
            f"resuming at step {agreed}, the newest that every worker has",
            flush=True,
        )
        steps = gather(self.restore(at_most=agreed))
        if min(steps) < agreed:
            raise RuntimeError(
                f"The workers cannot resume at one step: their newest readable checkpoints "
                f"at or below step {agreed} are at steps {list(steps)} (one per replica). "
                f"Delete the backup ({self.directory} on this worker, and its counterpart "
                "on every other worker) to train this variant again from the start."
            )
        return agreed

    def on_train_begin(self, logs=None):
        if self._restore_from is None:
            return
        optimizer = self.model.optimizer
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.model.trainable_variables)
        try:
            self.model.load_weights(self._restore_from)
        except ValueError as error:  # Keras' message lists every layer and variable
            raise UsageError(
                f"{self._restore_from} does not fit the model: its layers' shapes changed "
                f"since it was written. Delete {self.directory} to train this variant from "
                "the start, or pass a new --out."
            ) from error

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None or not math.isfinite(float(loss)):
            return  # a diverged epoch is nothing to resume from
        self.directory.mkdir(parents=True, exist_ok=True)
        scalars = {name: float(value) for name, value in logs.items() if _is_number(value)}
        step = (epoch + 1) * self.steps_per_epoch

        def write(temporary: Path) -> None:
            self.model.save_weights(temporary, overwrite=True)
            with h5py.File(temporary, "a") as file:
                file.attrs["logs"] = json.dumps(scalars)
                file.attrs["step"] = step
                if self.identity is not None:
                    file.attrs["identity"] = json.dumps(self.identity)

        # Room for twice the variables, or for the last checkpoint (h5py may crash on a full disk).
        newest = self.checkpoints()[:1]
        needed = max([2 * state_bytes(self.model), *(path.stat().st_size for _, path in newest)])
        replace_atomically(self.directory / f"step-{step:06d}.weights.h5", write, needed)
        for _, old in self.checkpoints()[self.keep :]:
            old.unlink()


def remove_backup(backups: str | Path, name: str) -> None:
    """Deletes the backup `backups/name`, and `backups` too once it holds no other.

    Example:

    >>> import tempfile
    >>> backups = Path(tempfile.mkdtemp()) / "backup"
    >>> for name in ("a", "b"):
    ...     (backups / name).mkdir(parents=True)
    >>> remove_backup(backups, "a")
    >>> sorted(path.name for path in backups.iterdir())
    ['b']
    >>> remove_backup(backups, "b")
    >>> backups.exists()
    False
    """
    backups = Path(backups)
    shutil.rmtree(backups / name, ignore_errors=True)
    with contextlib.suppress(OSError):  # another variant's backup is left, or there was none
        backups.rmdir()


def _read_checkpoint(path: Path) -> tuple[dict, int | None, dict | None]:
    """The logs, step and identity (or None) of a checkpoint, after reading every array."""
    with h5py.File(path, "r") as file:
        file.visititems(lambda _, item: item[()] if isinstance(item, h5py.Dataset) else None)
        step = int(file.attrs["step"]) if "step" in file.attrs else None
        identity = json.loads(file.attrs["identity"]) if "identity" in file.attrs else None
        return json.loads(file.attrs["logs"]), step, identity


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


__all__ = [
    "Backup",
    "read_json",
    "remove_backup",
    "replace_atomically",
    "replace_directory_atomically",
    "write_json",
]
