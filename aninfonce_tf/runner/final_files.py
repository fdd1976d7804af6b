"""A saved variant's record of its final files, `files.json`: the size and sha256 of
`model.keras` and of every file of the exported `encoder/`, written once they are
(`write_files_record`) and checked by a rerun before it counts the variant as finished
(`final_files_problem`).

Example:

>>> import tempfile
>>> variant_dir = Path(tempfile.mkdtemp())
>>> _ = (variant_dir / "model.keras").write_bytes(b"weights")
>>> write_files_record(variant_dir)
>>> final_files_problem(variant_dir) is None
True
>>> _ = (variant_dir / "model.keras").write_bytes(b"wei")
>>> print(final_files_problem(variant_dir).replace(str(variant_dir), "VARIANT"))
model.keras in VARIANT is incomplete (3 of its 7 bytes)
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from aninfonce_tf.checkpoints import read_json, write_json

# A variant's record of its final files.
FILES = "files.json"


def write_files_record(variant_dir: Path) -> None:
    """`files.json`: the size and sha256 of `model.keras` and of the export's files.

    Example:

    >>> import tempfile
    >>> variant_dir = Path(tempfile.mkdtemp())
    >>> _ = (variant_dir / "model.keras").write_bytes(b"")
    >>> write_files_record(variant_dir)
    >>> sorted(read_json(variant_dir / FILES)["model.keras"])
    ['bytes', 'sha256']
    """
    paths = [variant_dir / "model.keras"]
    paths += sorted(path for path in (variant_dir / "encoder").rglob("*") if path.is_file())
    files = {path.relative_to(variant_dir).as_posix(): _file_record(path) for path in paths}
    write_json(variant_dir / FILES, files)


def final_files_problem(variant_dir: Path) -> str | None:
    """What is wrong with the final files of a saved variant (those `files.json`
    lists, at its sizes and sha256), or None.

    Example:

    >>> import tempfile
    >>> final_files_problem(Path(tempfile.mkdtemp())).endswith("is missing")
    True
    """
    record = variant_dir / FILES
    if not record.exists():  # saved before files.json was: as then, its model must exist
        model = variant_dir / "model.keras"
        return None if model.exists() else f"model.keras in {variant_dir} is missing"
    try:
        files = read_json(record)
    except ValueError:
        files = None
    if not isinstance(files, dict) or not all(
        isinstance(written, dict) and {"bytes", "sha256"} <= set(written)
        for written in files.values()
    ):
        return f"{FILES} in {variant_dir} does not read"
    for name, written in files.items():
        path = variant_dir / name
        if not path.is_file():
            return f"{name} in {variant_dir} is missing"
        found = _file_record(path)
        if found["bytes"] < written["bytes"]:
            sizes = f"{found['bytes']} of its {written['bytes']} bytes"
            return f"{name} in {variant_dir} is incomplete ({sizes})"
        if found != written:
            return f"{name} in {variant_dir} is not the file written (its size or sha256 differs)"
    return None


def _file_record(path: Path) -> dict:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


__all__ = ["FILES", "final_files_problem", "write_files_record"]
