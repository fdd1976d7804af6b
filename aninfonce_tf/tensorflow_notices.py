"""TensorFlow's start-up notices, kept off the command line's stderr while TensorFlow is
imported; every other line is passed on. Details: docs/runner.md#tensorflows-start-up-notices"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

# A part of each start-up notice of TensorFlow's: on a CPU, and from a CUDA build that
# registers its libraries twice or finds no TensorRT.
NOTICES = (
    "All log messages before absl::InitializeLog() is called are written to STDERR",
    "oneDNN custom operations are on",
    "This TensorFlow binary is optimized to use available CPU instructions",
    "rebuild TensorFlow with the appropriate compiler flags",
    "Unable to register cuDNN factory",
    "Unable to register cuFFT factory",
    "Unable to register cuBLAS factory",
    "computation placer already registered",
    "TF-TRT Warning: Could not find TensorRT",
)
# The module names `python -m` runs the command line by.
MODULES = ("aninfonce_tf", "aninfonce_tf.__main__", "aninfonce_tf.compare")
RECIPE_SCRIPTS = Path(__file__).resolve().parent.parent / "recipes"
# Seconds the block's end waits for the reader to pass on the last lines: longer only
# when a process started inside the block still holds the pipe.
READER_WAIT = 10.0


def is_notice(line: str) -> bool:
    """Whether `line` is one of TensorFlow's start-up notices (`NOTICES`)."""
    return any(notice in line for notice in NOTICES)


def pass_on(source: int = 0, out: BinaryIO | None = None) -> None:
    """Writes each line read from `source` to `out` (default: stderr), but the notices.

    Example:

    >>> import io
    >>> read, write = os.pipe()
    >>> _ = os.write(write, b"I0000 port.cc:153] oneDNN custom operations are on.\\nan error\\n")
    >>> os.close(write)
    >>> out = io.BytesIO()
    >>> pass_on(read, out)
    >>> os.close(read)
    >>> out.getvalue()
    b'an error\\n'
    """
    out = sys.stderr.buffer if out is None else out
    pending = b""
    while chunk := os.read(source, 1 << 16):
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            _write_unless_notice(line + b"\n", out)
    _write_unless_notice(pending, out)


def _write_unless_notice(line: bytes, out: BinaryIO) -> None:
    if line and not is_notice(line.decode(errors="replace")):
        out.write(line)
        out.flush()


def command_line() -> bool:
    """Whether this process runs the package's command line."""
    if sys.argv[:1] == ["-m"]:
        argv = sys.orig_argv
        return any(a == "-m" and b in MODULES for a, b in zip(argv, argv[1:], strict=False))
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    return script is not None and (
        script.stem == "aninfonce-tf" or script.resolve().parent == RECIPE_SCRIPTS
    )


def light_command(argv: list[str]) -> bool:
    """Whether `argv` asks the package's own command for its help or version.

    Example:

    >>> light_command(["aninfonce-tf", "--version"]), light_command(["x", "synthetic", "-h"])
    (True, False)
    """
    script = Path(argv[0]) if argv and argv[0] not in ("", "-m", "-c") else None
    if script is not None and script.resolve().parent == RECIPE_SCRIPTS:
        return False
    if "aninfonce_tf.compare" in getattr(sys, "orig_argv", ()):
        return False
    return len(argv) <= 1 or argv[1] in ("-h", "--help", "--version")


@contextlib.contextmanager
def notices_held_back() -> Iterator[None]:
    """Inside the block, a reader process passes on every line of stderr but the notices."""
    reader = _start_reader()
    saved = None
    if reader is not None:
        try:
            saved = os.dup(2)
            os.dup2(reader.stdin.fileno(), 2)
        except OSError:  # no descriptor 2, or none left
            if saved is not None:
                os.close(saved)
            saved = None
        reader.stdin.close()  # descriptor 2 is the pipe's only writer now
    try:
        yield
    finally:
        if saved is not None:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        if reader is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                reader.wait(READER_WAIT)


def _start_reader() -> subprocess.Popen | None:
    """The reader process of the pipe on its stdin (None when it cannot start)."""
    if sys.stderr is None or not sys.executable or not Path(__file__).is_file():
        return None
    sys.stderr.flush()
    try:
        return subprocess.Popen([sys.executable, "-I", "-S", __file__], stdin=subprocess.PIPE)
    except OSError:
        return None


def import_tensorflow() -> None:
    """Imports TensorFlow as the command line does (TF_CPP_MIN_LOG_LEVEL 2 unless set)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    shown = os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
    with contextlib.nullcontext() if shown else notices_held_back():
        importlib.import_module("tensorflow")


__all__ = [
    "NOTICES",
    "command_line",
    "import_tensorflow",
    "is_notice",
    "light_command",
    "notices_held_back",
    "pass_on",
]


if __name__ == "__main__":  # the reader of `notices_held_back`; Ctrl-C is the importer's
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pass_on()
