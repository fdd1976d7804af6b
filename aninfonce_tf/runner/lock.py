"""The lock that keeps a run directory to one run at a time (POSIX, local filesystems).
Details: docs/runner.md#one-run-at-a-time"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from aninfonce_tf.errors import UsageError

try:
    import fcntl
except ImportError:  # not POSIX: runs are not locked (docs/runner.md, Resume)
    fcntl = None

LOCK_NAME = ".lock"
# How a holder that has not written its details yet, or whose holder file is gone, is
# named, and how long a refused run waits for its details.
UNWRITTEN = "a process that has not written its pid yet"
GONE = f"a process whose {LOCK_NAME} file, which names it, was deleted"
HOLDER_WAIT_SECONDS = 2.0


@contextlib.contextmanager
def lock_run_directory(run_dir: Path) -> Iterator[None]:
    """Holds `run_dir`'s exclusive lock while the block runs (else a `UsageError`).

    Example:

    >>> import tempfile
    >>> run_dir = Path(tempfile.mkdtemp())
    >>> with lock_run_directory(run_dir):
    ...     with lock_run_directory(run_dir):  # doctest: +ELLIPSIS
    ...         pass
    Traceback (most recent call last):
    ...
    aninfonce_tf.errors.UsageError: ... is in use by another run (pid ...): wait for it to end, or pass another --out.
    >>> (run_dir / LOCK_NAME).exists()  # removed on release
    False
    """
    if fcntl is None:
        yield
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_NAME
    directory = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(directory, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(
                f"{run_dir} is in use by another run ({_holder(_written_holder(path))}): wait "
                "for it to end, or pass another --out."
            ) from None
        _write_holder(path)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)
    finally:
        os.close(directory)  # releases the lock


def _write_holder(path: Path) -> None:
    """Writes this process's details into the holder file `path`, saying whose they replace."""
    previous = _read(path)
    if previous:
        print(
            f"   {path.parent}: taking over the lock of {_holder(previous)}, which ended "
            "without releasing it",
            flush=True,
        )
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    path.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": now}))


def _written_holder(path: Path) -> str | None:
    """The holder file's text once written (None: no file)."""
    deadline = time.monotonic() + HOLDER_WAIT_SECONDS
    while True:
        text = _read(path)
        if _holder(text) not in (UNWRITTEN, GONE) or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def _read(path: Path) -> str | None:
    """The text of the holder file `path`; None when there is none."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def _holder(text: str | None) -> str:
    """`pid 12 on host, started 2026-11-27T10:00:00+00:00` from a lock file's text, or None."""
    if text is None:
        return GONE
    try:
        holder = json.loads(text)
        return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (ValueError, TypeError, KeyError):
        return UNWRITTEN


__all__ = ["LOCK_NAME", "lock_run_directory"]
