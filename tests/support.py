"""Helpers the tests share: the repository's root and the loader of a recipe script.

The checks of a run's outputs are in `tests/run_outputs.py`; the harness every Keras
object goes through is `tests/harness.py`."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parent.parent


def load_recipe(name: str):
    """The module of `recipes/<name>.py` (recipes are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"{name}_recipe", ROOT / "recipes" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
