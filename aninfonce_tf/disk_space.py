"""A full disk, found before a large write or by the write itself, as one `OutOfSpace`.
Details: docs/runner.md#a-full-disk"""

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
    """Whether `error` says a disk (or quota) is full (`ENOSPC`, `EDQUOT`, h5py, TensorFlow)."""
    if isinstance(error, OutOfSpace):
        return True
    return getattr(error, "errno", None) in _NO_SPACE or "No space left on device" in str(error)


@contextlib.contextmanager
def room_for(path: Path, temporary: Path, needed: int):
    """Raises `OutOfSpace` before a write of `needed` bytes that cannot fit, or as it fills."""
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
    """The bytes of `model`'s and its optimizer's variables as float32 (about a checkpoint's)."""
    optimizer = getattr(model, "optimizer", None)
    variables = [*model.variables, *(optimizer.variables if optimizer is not None else [])]
    return 4 * sum(math.prod(variable.shape) for variable in variables)


__all__ = ["OutOfSpace", "free_bytes", "is_out_of_space", "room_for", "state_bytes"]
