"""How a recipe ends when it cannot go on: one line and an exit status, never a
traceback. Details: docs/runner.md#resume"""

from __future__ import annotations

import contextlib
import signal
import threading
from pathlib import Path

from aninfonce_tf.disk_space import free_bytes, is_out_of_space
from aninfonce_tf.errors import Diverged, OutOfSpace, UsageError, WorkerLost

# Exit statuses: a usage error (as argparse), a failure (a full disk), and the
# shell's for SIGINT and SIGTERM.
USAGE, FAILURE, INTERRUPTED, TERMINATED = 2, 1, 128 + signal.SIGINT, 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """A SIGTERM, raised where the run is so that it unwinds as Ctrl-C does.

    Example:

    >>> one_line_exit(Terminated(), Path("runs/quick"))
    (143, 'terminated (SIGTERM): rerun the same command to resume the run in runs/quick.')
    """


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within it, SIGTERM raises `Terminated` (in the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def one_line_exit(error: BaseException, run_dir: Path) -> tuple[int, str] | None:
    """`(status, line)` a recipe exits with for `error` (None: keep the traceback).

    Example:

    >>> one_line_exit(KeyboardInterrupt(), Path("runs/quick"))
    (130, 'interrupted: rerun the same command to resume the run in runs/quick.')
    """
    if not isinstance(error, (UsageError, KeyboardInterrupt)) and is_out_of_space(error):
        # An OSError, or TensorFlow's own error from its writers (event files, say).
        path = getattr(error, "filename", None) or run_dir
        error = OutOfSpace(Path(path), 0, free_bytes(run_dir))
    if isinstance(error, (OutOfSpace, WorkerLost, Diverged)):
        return FAILURE, f"error: {error}"
    if isinstance(error, UsageError):
        return USAGE, f"error: {error}"
    if isinstance(error, KeyboardInterrupt):
        signal_name = "terminated (SIGTERM)" if isinstance(error, Terminated) else "interrupted"
        status = TERMINATED if isinstance(error, Terminated) else INTERRUPTED
        return status, f"{signal_name}: rerun the same command to resume the run in {run_dir}."
    return None


__all__ = [
    "FAILURE",
    "INTERRUPTED",
    "TERMINATED",
    "USAGE",
    "Terminated",
    "one_line_exit",
    "sigterm_as_interrupt",
]
