"""The lock that keeps a run directory to one run at a time.

`lock_run_directory` holds an exclusive `fcntl.flock` on `RUN/.lock` for the life of
a run. A second run on the same directory is refused at once, naming the holder (its
pid, host and start time, which the holder writes into the file). The kernel releases
the lock when its process ends, however it ends: the file a killed run leaves behind
holds no lock, and the next run takes it over, saying whose it was.

POSIX only (there is no `fcntl` elsewhere: runs are then not locked), and reliable on
local filesystems only: over NFS `flock` is emulated with byte-range locks, or is local
to each machine.

Example:

>>> import tempfile
>>> run_dir = Path(tempfile.mkdtemp())
>>> with lock_run_directory(run_dir):
...     with lock_run_directory(run_dir):  # doctest: +ELLIPSIS
...         pass
Traceback (most recent call last):
...
aninfonce_tf.configs.base.UsageError: ... is in use by another run (pid ...): wait for it to end, or pass another --out.
>>> (run_dir / LOCK_NAME).exists()  # removed on release
False
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from aninfonce_tf.errors import UsageError

try:
    import fcntl
except ImportError:  # not POSIX: runs are not locked (docs/runner.md, Resume)
    fcntl = None

LOCK_NAME = ".lock"
# How a holder that has not written its details yet is named, and how long a refused
# run waits for them.
UNWRITTEN = "a process that has not written its pid yet"
HOLDER_WAIT_SECONDS = 2.0


@contextlib.contextmanager
def lock_run_directory(run_dir: Path) -> Iterator[None]:
    """Holds the exclusive lock of `run_dir` (created if need be) while the block runs.

    The lock file is removed on release, while still locked; a run that opened it
    before then finds it gone once it gets the lock and locks the new one instead.

    Raises:
        UsageError: when another process holds it, naming that process.
    """
    if fcntl is None:
        yield
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_NAME
    file = _acquire(path)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        file.close()


def _acquire(path: Path) -> TextIO:
    """The lock file `path`, opened and locked, with this process's details in it."""
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)  # removed meanwhile by a refused run
        file = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), "r+")
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _written_holder(file)
            file.close()
            raise UsageError(
                f"{path.parent} is in use by another run ({_holder(holder)}): wait for it "
                "to end, or pass another --out."
            ) from None
        try:
            current = os.path.samestat(os.fstat(file.fileno()), os.stat(path))
        except FileNotFoundError:
            current = False
        if current:
            break
        file.close()  # released and removed by its holder meanwhile: lock the new file
    previous = file.read()
    if previous:
        print(
            f"   {path.parent}: taking over the lock of {_holder(previous)}, which ended "
            "without releasing it",
            flush=True,
        )
    file.seek(0)
    file.truncate()
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    file.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": now}))
    file.flush()
    return file


def _written_holder(file: TextIO) -> str:
    """The locked file's text, once its holder has written its details (a holder that
    has just taken the lock writes them at once; waited for up to
    `HOLDER_WAIT_SECONDS`)."""
    deadline = time.monotonic() + HOLDER_WAIT_SECONDS
    while True:
        file.seek(0)
        text = file.read()
        if _holder(text) != UNWRITTEN or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def _holder(text: str) -> str:
    """`pid 12 on host, started 2026-11-27T10:00:00+00:00`, from a lock file's text."""
    try:
        holder = json.loads(text)
        return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (ValueError, TypeError, KeyError):
        return UNWRITTEN


__all__ = ["LOCK_NAME", "lock_run_directory"]
