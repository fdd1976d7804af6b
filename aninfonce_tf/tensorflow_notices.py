"""TensorFlow's start-up notices, kept off the command line's stderr.

`import tensorflow` (2.21) prints a oneDNN notice twice whatever TF_CPP_MIN_LOG_LEVEL
says: `libtensorflow_framework.so.2` and the profiler plugin's extension each hold a
copy of TensorFlow's `port.cc`, whose static initialiser logs it through absl before
`absl::InitializeLog()` has run, and absl then writes every severity to file
descriptor 2 under a "WARNING: All log messages before absl::InitializeLog()" line.
Only TF_ENABLE_ONEDNN_OPTS=0 turns it off, and that changes the numerics. So the command
line (`python -m aninfonce_tf`, the `aninfonce-tf` script, `python recipes/NAME.py`)
imports TensorFlow with descriptor 2 pointed at a temporary file, then writes back every
captured line that is not one of `NOTICES`: an error while importing is never hidden.
`TF_CPP_MIN_LOG_LEVEL=0` shows the notices. A program that imports the package keeps
its stderr as it is.

Example:

>>> print(without_notices("I0000 port.cc:153] oneDNN custom operations are on.\\nan error\\n"))
an error
<BLANKLINE>
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# A part of each start-up notice of TensorFlow's: on a CPU, and from a CUDA build on a
# machine without the GPU it looks for.
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
    "Could not find cuda drivers on your machine",
)
# The module names `python -m` runs the command line by.
MODULES = ("aninfonce_tf", "aninfonce_tf.__main__")
RECIPE_SCRIPTS = Path(__file__).resolve().parent.parent / "recipes"


def is_notice(line: str) -> bool:
    """Whether `line` is one of TensorFlow's start-up notices (`NOTICES`)."""
    return any(notice in line for notice in NOTICES)


def without_notices(text: str) -> str:
    """`text` without the lines that are TensorFlow's start-up notices."""
    return "".join(line for line in text.splitlines(keepends=True) if not is_notice(line))


def command_line() -> bool:
    """Whether this process runs the package's command line: `python -m aninfonce_tf`
    (`sys.argv[0]` is "-m" while the package is imported), the `aninfonce-tf` script
    or a script in the repository's `recipes/`."""
    if sys.argv[:1] == ["-m"]:
        argv = sys.orig_argv
        return any(a == "-m" and b in MODULES for a, b in zip(argv, argv[1:], strict=False))
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    return script is not None and (
        script.stem == "aninfonce-tf" or script.resolve().parent == RECIPE_SCRIPTS
    )


@contextlib.contextmanager
def notices_held_back() -> Iterator[None]:
    """Inside the block file descriptor 2 writes to a temporary file; at its end (also
    when it raises) what was written goes to stderr without the start-up notices."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2: nothing to hold back
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            sys.stderr.write(without_notices(captured.read().decode(errors="replace")))
            sys.stderr.flush()


def import_tensorflow() -> None:
    """Imports TensorFlow as the command line does: TF_CPP_MIN_LOG_LEVEL 2 unless it is
    set, and the start-up notices held back unless it is 0."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    shown = os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
    with contextlib.nullcontext() if shown else notices_held_back():
        importlib.import_module("tensorflow")


__all__ = [
    "NOTICES",
    "command_line",
    "import_tensorflow",
    "is_notice",
    "notices_held_back",
    "without_notices",
]
