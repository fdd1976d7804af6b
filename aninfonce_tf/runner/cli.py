"""The command line of the recipes: a config's presets and fields as flags, then
the run into `--out` (`main`).

Example:

>>> from aninfonce_tf.configs.base import RunConfig
>>> config, options = parse_config({"mine": RunConfig()}, ["--steps", "600"])
>>> (config.steps, options.preset)
(600, 'mine')
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import importlib.util
import sys
import types
import typing
from pathlib import Path

from aninfonce_tf.configs.base import RunConfig, UsageError
from aninfonce_tf.runner import loop, run_directory


def parse_config(
    presets: dict[str, RunConfig],
    argv=None,
    description: str = "",
    smoke: dict | None = None,
    parents: typing.Sequence[argparse.ArgumentParser] = (),
) -> tuple[RunConfig, argparse.Namespace]:
    """A config from the command line: `--preset NAME`, `--smoke`, `--out DIR`,
    `--seeds 0,1,2`, `--allow-code-change` and a `--field value` override of every
    field of the presets' dataclass.

    The chosen preset (the first of `presets` by default), shrunk by the `smoke`
    overrides under `--smoke`, gives the defaults that `--help` shows. Unknown flags
    (abbreviations included) and bad values exit with argparse's usage error, so a
    mistyped flag never runs with a default silently.

    Args:
        presets: named configs of one dataclass; the first is the default.
        argv: arguments (default `sys.argv[1:]`).
        description: the `--help` description.
        smoke: field overrides of `--smoke`; None: no `--smoke` flag.
        parents: parsers (made with `add_help=False`) of a recipe's own flags,
            shown by `--help` and parsed into `options`.

    Returns:
        `(config, options)`: the config `resolved()` (the fields other fields set
        follow the values given); `options` has `preset`, `out`, `seeds` (a list of
        seeds, or None), `allow_code_change` and `smoke` (False when no smoke
        overrides are given).
    """
    choice = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    choice.add_argument(
        "--preset", choices=list(presets), default=next(iter(presets)), help="preset config"
    )
    if smoke is not None:
        choice.add_argument(
            "--smoke", action="store_true", help="a tiny run of the whole pipeline (< 1 min)"
        )
    choice.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="import a Python module or .py file first, e.g. one that registers your own "
        "loss with aninfonce_tf.register_loss, so that --losses can name it (repeatable)",
    )
    chosen, _ = choice.parse_known_args(argv)
    for name in chosen.imports:
        try:
            import_user_code(name)
        except (ImportError, OSError, SyntaxError) as error:
            choice.error(f"--import {name}: {type(error).__name__}: {error}")
    preset = presets[chosen.preset]
    smoke_run = getattr(chosen, "smoke", False)
    if smoke_run:
        preset = dataclasses.replace(preset, **smoke)
    parser = argparse.ArgumentParser(
        description=description,
        parents=[choice, *parents],
        formatter_class=_DefaultsHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("--out", help="run directory (unset: runs/<preset>-<time>)")
    parser.add_argument(
        "--seeds",
        type=_seed_list,
        help="run each seed of a comma-separated list (e.g. 0,1,2) into OUT/seed_<k>/ and "
        "summarise them in OUT/summary.json; instead of --seed",
    )
    parser.add_argument(
        "--allow-code-change",
        action="store_true",
        help="resume the run in --out although another version of aninfonce_tf's code "
        "trained it (config.json and results.json record both); refused without it",
    )
    defaults_from = f"the {chosen.preset!r} preset" + (", --smoke" if smoke_run else "")
    groups = {
        True: parser.add_argument_group(f"run (defaults: {defaults_from})"),
        False: parser.add_argument_group(f"experiment (defaults: {defaults_from})"),
    }
    shared = {f.name for f in dataclasses.fields(RunConfig)}
    hints = typing.get_type_hints(type(preset))
    for field in dataclasses.fields(preset):
        default = getattr(preset, field.name)
        kind = _scalar_type(hints[field.name])
        argument = {"default": default, "help": field.metadata["help"]}
        if kind is bool:
            argument.update(type=_boolean, metavar="{true,false}")
        else:
            argument.update(type=kind, choices=field.metadata.get("choices"))
        groups[field.name in shared].add_argument("--" + field.name.replace("_", "-"), **argument)
    options = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    if options.seeds and any(arg.split("=")[0] == "--seed" for arg in argv):
        parser.error("--seed and --seeds exclude each other: --seeds sets each run's seed")
    options.smoke = smoke_run
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(preset)}
    try:  # the fields other fields set follow the values given
        return dataclasses.replace(preset, **values).resolved(), options
    except ValueError as error:
        parser.error(str(error))


def import_user_code(name: str) -> types.ModuleType:
    """Imports a module by its dotted name, or a `.py` file by its path (as the module
    named after the file), and returns it.

    Example:

    >>> import_user_code("json").__name__
    'json'
    """
    path = Path(name)
    if path.suffix != ".py":
        return importlib.import_module(name)
    if not path.is_file():
        raise FileNotFoundError(f"no file {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _scalar_type(hint) -> type:
    """`int`, `float | None` -> `int`, `float`: the type a flag's text converts to."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return hint


class _DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each default, except an unset (None or empty) one."""

    def _get_help_string(self, action):
        if action.default in (None, ""):
            return action.help
        return super()._get_help_string(action)


def _seed_list(text: str) -> list[int]:
    """`"0,1,2"` -> `[0, 1, 2]`: distinct non-negative integers (`--seeds`)."""
    try:
        seeds = [int(item) for item in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0 or len(set(seeds)) < len(seeds):
        raise argparse.ArgumentTypeError(
            f"expected distinct non-negative integers such as 0,1,2; got {text!r}"
        )
    return seeds


def _boolean(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def main(config_module, argv=None, description: str = "") -> dict:
    """The command line of a recipe: parses its config module's presets and flags,
    then `run`s it into `--out`, or with `--seeds` `run_seeds`.

    Args:
        config_module: a module with `PRESETS`, `SMOKE` and `build`.
        argv: arguments (default `sys.argv[1:]`).
        description: the `--help` description.
    """
    config, options = parse_config(
        config_module.PRESETS, argv, description=description, smoke=config_module.SMOKE
    )
    name = options.preset + ("-smoke" if options.smoke else "")
    with recipe_run_directory(options.out, name) as run_dir:
        print(f"preset {options.preset}: {config}\nrun directory: {run_dir}", flush=True)
        labels = dict(
            preset=options.preset, smoke=options.smoke, allow_code_change=options.allow_code_change
        )
        if options.seeds:
            return loop.run_seeds(config, config_module.build, run_dir, options.seeds, **labels)
        return loop.run(config, config_module.build, run_dir, **labels)


@contextlib.contextmanager
def recipe_run_directory(out: str | None, name: str):
    """A recipe's run directory (`run_directory.run_directory`), in which a `UsageError` is printed
    as argparse prints a bad flag (one line, status 2, no traceback) and leaves no
    empty directory behind."""
    new_directory = not (out and Path(out).exists())
    run_dir = run_directory.run_directory(out, name)
    try:
        yield run_dir
    except UsageError as error:
        if new_directory and not any(run_dir.iterdir()):
            run_dir.rmdir()
        print(f"{Path(sys.argv[0]).name}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


__all__ = ["import_user_code", "main", "parse_config", "recipe_run_directory"]
