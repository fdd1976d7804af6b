"""A full disk, found before a large write or by the write itself, as one error
(`OutOfSpace`) that names the directory, the bytes needed and free, and the fix; the
crash-safe writers (`aninfonce_tf.checkpoints`) raise it and keep every file written
before.

Example:

>>> print(OutOfSpace(Path("run/aninfonce/model.keras"), 2_000_000, 1_000))
No space left in run/aninfonce for model.keras: it needs about 2,000,000 bytes and 1,000 are free. Free space or pass another --out; the run resumes.
"""

from __future__ import annotations

import contextlib
import errno
import math
import shutil
from pathlib import Path

import keras

from aninfonce_tf.configs.base import UsageError

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class OutOfSpace(UsageError):
    """A write that the disk has no room for, refused before it starts (the free space
    checked against an estimate) or stopped by the disk (`ENOSPC`): every file written
    before it is kept, and the recipes print it as one line and exit with status 1.

    Args:
        path: the file (or directory) that was to be written.
        needed: the bytes it needs (an estimate; 0: unknown).
        free: the bytes free on its disk.

    Example:

    >>> error = OutOfSpace(Path("run/seed_0/results.json"), 0, 512)
    >>> isinstance(error, UsageError), str(error)
    (True, 'No space left in run/seed_0 for results.json: 512 are free. Free space or pass another --out; the run resumes.')
    """

    def __init__(self, path: Path, needed: int, free: int):
        self.path, self.needed, self.free = path, needed, free
        room = f"it needs about {needed:,} bytes and {free:,} are" if needed else f"{free:,} are"
        super().__init__(
            f"No space left in {path.parent} for {path.name}: {room} free. Free space or "
            "pass another --out; the run resumes."
        )


def free_bytes(path: str | Path) -> int:
    """The bytes free on the disk that holds `path` (or its nearest existing parent)."""
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def is_out_of_space(error: BaseException) -> bool:
    """Whether `error` is a disk (or quota) being full: an `OSError` with `ENOSPC` or
    `EDQUOT`, or an h5py or TensorFlow error that says so."""
    if isinstance(error, OutOfSpace):
        return True
    return getattr(error, "errno", None) in _NO_SPACE or "No space left on device" in str(error)


@contextlib.contextmanager
def room_for(path: Path, temporary: Path, needed: int):
    """Refuses a write of about `needed` bytes to `path` that the disk has no room for
    (`OutOfSpace`), and turns the disk filling up during it into `OutOfSpace` too,
    deleting the `temporary` it leaves (the size of the file it replaces is then the
    estimate, when `needed` is 0)."""
    free = free_bytes(path.parent)
    if needed > free:
        raise OutOfSpace(path, needed, free)
    try:
        yield
    except Exception as error:
        if not is_out_of_space(error):
            raise
        if temporary.is_dir():
            shutil.rmtree(temporary, ignore_errors=True)
        else:
            temporary.unlink(missing_ok=True)
        needed = needed or (path.stat().st_size if path.is_file() else 0)
        raise OutOfSpace(path, needed, free_bytes(path.parent)) from error


def state_bytes(model: keras.Model) -> int:
    """The bytes of `model`'s variables and its optimizer's, as float32: about the size
    of its checkpoint (`Backup`) or `model.keras` before their files' overhead."""
    optimizer = getattr(model, "optimizer", None)
    variables = [*model.variables, *(optimizer.variables if optimizer is not None else [])]
    return 4 * sum(math.prod(variable.shape) for variable in variables)


__all__ = ["OutOfSpace", "free_bytes", "is_out_of_space", "room_for", "state_bytes"]
