"""Goldens: every number the recipes' smoke runs write, to check that a change which
should not alter results alters none.

`--out` runs each recipe's `--smoke` config in a fresh process and writes the numbers of
its `results.json` and `config.json`, without what differs between two identical runs
(dates, wall times, code hashes); `--compare` prints every value that differs between
two such files and exits 1 if any does. Run it from the checkout to measure: the
recipes import the package that `PYTHONPATH` or the installed one gives.

    python benchmarks/goldens.py --out /tmp/before.json     # on the old code
    python benchmarks/goldens.py --out /tmp/after.json      # on the new code
    python benchmarks/goldens.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

RECIPES = ("synthetic", "rendered", "mnist_vae", "photos")
# Keys whose values differ between two runs of the same code and config.
VOLATILE = {"date", "code", "versions", "seconds", "wall_seconds", "source_sha256"}


def stable(value):
    """`value` (parsed JSON) without the keys in `VOLATILE`, at any depth."""
    if isinstance(value, dict):
        return {key: stable(item) for key, item in value.items() if key not in VOLATILE}
    if isinstance(value, list):
        return [stable(item) for item in value]
    return value


def run_goldens(recipes: list[str]) -> dict:
    """`{recipe: {file: its stable numbers}}` of each recipe's smoke run."""
    recipe_dir = Path(__file__).resolve().parent.parent / "recipes"
    goldens = {}
    with tempfile.TemporaryDirectory() as scratch:
        for recipe in recipes:
            out = Path(scratch) / recipe
            command = [
                sys.executable,
                str(recipe_dir / f"{recipe}.py"),
                "--smoke",
                "--out",
                str(out),
            ]
            print("$", " ".join(command[1:]), flush=True)
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            goldens[recipe] = {
                name: stable(json.loads((out / name).read_text()))
                for name in ("config.json", "results.json")
            }
    return goldens


def differences(before, after, path: str = "") -> list[str]:
    """`"path: before -> after"` for each value that differs between two goldens."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [
            line
            for key in sorted(before.keys() | after.keys())
            for line in differences(before.get(key), after.get(key), f"{path}/{key}")
        ]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            line
            for index, (first, second) in enumerate(zip(before, after, strict=True))
            for line in differences(first, second, f"{path}/{index}")
        ]
    return [] if before == after else [f"{path}: {before!r} -> {after!r}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--out", type=Path, help="run the smoke recipes and write their goldens here"
    )
    action.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated recipes")
    options = parser.parse_args(argv)
    if options.out:
        goldens = run_goldens(options.recipes.split(","))
        options.out.write_text(json.dumps(goldens, indent=1, sort_keys=True))
        print(f"goldens of {len(goldens)} recipes: {options.out}")
        return 0
    before, after = (json.loads(path.read_text()) for path in options.compare)
    found = differences(before, after)
    print("\n".join(found) or f"identical: {sum(1 for _ in _leaves(before))} values")
    return 1 if found else 0


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


if __name__ == "__main__":
    sys.exit(main())
