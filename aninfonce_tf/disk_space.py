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

from aninfonce_tf.errors import OutOfSpace

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


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
