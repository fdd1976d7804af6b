"""The recipes' command line: a config's presets and fields as flags, then the run
into `--out` (`main`)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import importlib.util
import os
import shlex
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path

from aninfonce_tf.configs.base import GROUPS, RUN_GROUPS, RunConfig, UsageError
from aninfonce_tf.parsing import INTEGER_FLAG, NUMBER_FLAG, strict_int
from aninfonce_tf.runner import exits, identity, loop, run_directory
from aninfonce_tf.runner.context import RunContext
from aninfonce_tf.runner.plan import RunPlan


def parse_config(
    presets: dict[str, RunConfig],
    argv=None,
    description: str = "",
    smoke: dict | None = None,
    parents: Sequence[argparse.ArgumentParser] = (),
    epilog: str = "",
    prog: str | None = None,
    choices: Mapping[str, Sequence[str]] | None = None,
    hidden: Sequence[str] = (),
    smoke_full: dict | None = None,
) -> tuple[RunConfig, argparse.Namespace]:
    """A config from the command line, every field but `hidden` a flag (docs/runner.md#flags).

    Args:
        presets: named configs of one dataclass; the first is the default.
        argv: default `sys.argv[1:]`.
        description: the `--help` description, shown as written.
        smoke: `--smoke`'s field overrides; None: no `--smoke` flag.
        parents: parsers (`add_help=False`) of a recipe's own flags.
        epilog: the end of `--help`, as written; `%(prog)s` is the program.
        prog: the program's name (default: the script's).
        choices: the values a field's flag takes in this recipe.
        hidden: fields that are no flag here: they keep the preset's value.
        smoke_full: `--smoke-full`'s field overrides; None: no such flag.

    Returns:
        `(config, options)`: the config `resolved()`; `options` has `preset`, `out`,
        `seeds`, `allow_code_change`, `smoke`, `smoke_full` and `changed`.

    Example:

    >>> from aninfonce_tf.configs.base import RunConfig
    >>> config, options = parse_config({"mine": RunConfig()}, ["--steps", "600"])
    >>> (config.steps, options.preset)
    (600, 'mine')
    """
    choices = dict(choices or {})
    fields = {f.name for f in dataclasses.fields(next(iter(presets.values())))}
    unknown = sorted((set(choices) | set(hidden)) - fields)
    if unknown:
        raise ValueError(f"`choices` and `hidden` name fields the config lacks: {unknown}.")
    choice = _FlagsParser(prog=prog, add_help=False, allow_abbrev=False, fromfile_prefix_chars="@")
    choice.add_argument(
        "--preset", choices=list(presets), default=next(iter(presets)), help="preset config"
    )
    if smoke is not None:
        choice.add_argument(
            "--smoke",
            action="store_true",
            help="a tiny run of the whole pipeline (10-60 s; docs/runner.md)",
        )
    if smoke_full is not None:
        choice.add_argument(
            "--smoke-full",
            action="store_true",
            help="a 2-step run of the preset's own model, precision, optimizer, views and "
            "data (--data-dir): a new accelerator machine's first check (docs/runner.md)",
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
        # A ValueError or TypeError: a refusal of the package's, such as `register_loss`'s.
        except (ImportError, OSError, SyntaxError, ValueError, TypeError) as error:
            choice.error(f"--import {name}: {type(error).__name__}: {error}")
    preset = presets[chosen.preset]
    full_run = getattr(chosen, "smoke_full", False)
    smoke_run = getattr(chosen, "smoke", False) or full_run
    if smoke_run:
        preset = dataclasses.replace(preset, **(smoke_full if full_run else smoke))
    parser = _FlagsParser(
        prog=prog,
        usage=f"%(prog)s [-h] [--preset NAME]{_smoke_usage(smoke, smoke_full)} [--out DIR] "
        "[--FLAG VALUE ...] [@FLAGS_FILE]",
        fromfile_prefix_chars="@",
        description=description,
        epilog=epilog,
        parents=[choice, *parents],
        formatter_class=_HelpFormatter,
        allow_abbrev=False,
    )
    smoke_flag = " --smoke-full" if full_run else " --smoke" if smoke_run else ""
    defaults_from = f"the {chosen.preset!r} preset" + (f",{smoke_flag}" if smoke_flag else "")
    groups = {
        name: parser.add_argument_group(f"{name} (defaults: {defaults_from})") for name in GROUPS
    }
    groups["experiment"].add_argument(
        "--seeds",
        type=seed_list,
        help="run each seed of a comma-separated list (e.g. 0,1,2) into OUT/seed_<k>/ and "
        "summarise them in OUT/summary.json; instead of --seed",
    )
    saving = groups["devices and saving"]
    saving.add_argument("--out", help="run directory (unset: a new runs/<preset>-<UTC time>Z)")
    saving.add_argument(
        "--allow-code-change",
        action="store_true",
        help="resume the run in --out although another version of aninfonce_tf's code "
        "trained it (config.json and results.json record both); refused without it",
    )
    shared = {name: group for group, names in RUN_GROUPS.items() for name in names}
    hints = typing.get_type_hints(type(preset))
    flags = [f for f in dataclasses.fields(preset) if f.name not in hidden]
    for field in flags:
        default = getattr(preset, field.name)
        kind = _scalar_type(hints[field.name])
        argument = {"default": default, "help": field.metadata["help"]}
        if kind is bool:
            argument.update(type=_boolean, metavar="{true,false}")
        else:
            argument.update(
                type=_NUMBER_FLAGS.get(kind, kind),
                choices=choices.get(field.name, field.metadata["choices"]),
            )
        group = field.metadata["group"] or shared.get(field.name) or "experiment"
        groups[group].add_argument("--" + field.name.replace("_", "-"), **argument)
    options = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    if options.seeds and any(arg.split("=")[0] == "--seed" for arg in argv):
        parser.error("--seed and --seeds exclude each other: --seeds sets each run's seed")
    if full_run and chosen.smoke:
        parser.error("--smoke and --smoke-full exclude each other: pass one of them")
    options.smoke = smoke_run
    options.smoke_full = full_run
    values = {f.name: getattr(options, f.name) for f in flags}
    try:  # the fields other fields set follow the values given
        config = dataclasses.replace(preset, **values).resolved()
        options.changed = changed_flags(config, preset.resolved())
    except ValueError as error:
        parser.error(str(error))
    return config, options


def _smoke_usage(smoke: dict | None, smoke_full: dict | None) -> str:
    """` [--smoke | --smoke-full]`: the smoke flags a recipe's usage line shows."""
    flags = [
        name
        for name, sizes in (("--smoke", smoke), ("--smoke-full", smoke_full))
        if sizes is not None
    ]
    return f" [{' | '.join(flags)}]" if flags else ""


def changed_flags(config: RunConfig, preset: RunConfig) -> list[str]:
    """The flags, as typed, that turn `preset` into `config`.

    Example:

    >>> changed_flags(RunConfig(steps=600, jit_compile=False, losses="a, b"), RunConfig())
    ["--losses 'a, b'", '--steps 600', '--jit-compile false']
    """
    flags = []
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if value != getattr(preset, field.name):
            text = str(value).lower() if isinstance(value, bool) else shlex.quote(str(value))
            flags.append(f"--{field.name.replace('_', '-')} {text}")
    return flags


class _FlagsParser(argparse.ArgumentParser):
    """argparse with `@FILE` read as flags typed on the command line (`#`: a comment)."""

    def convert_arg_line_to_args(self, arg_line: str) -> list[str]:
        return shlex.split(arg_line, comments=True)

    def parse_known_args(self, args=None, namespace=None):
        """argparse's, refusing a flag given twice (the last value would win silently)."""
        given = sys.argv[1:] if args is None else list(args)
        seen = set()
        for arg in self._read_args_from_files(given):
            flag = arg.split("=", 1)[0]
            action = self._option_string_actions.get(flag)
            if action is None or isinstance(action, argparse._AppendAction):
                continue  # a value, or a flag that may be repeated (--import)
            if flag in seen:
                self.error(f"{flag} is given twice: give each flag once")
            seen.add(flag)
        return super().parse_known_args(args, namespace)


def import_user_code(name: str) -> types.ModuleType:
    """Imports and returns a module by its dotted name, or a `.py` file by its path.

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
    identity.USER_CODE.append(path.resolve())  # part of the code a run is trained by
    return module


def _scalar_type(hint) -> type:
    """`int`, `float | None` -> `int`, `float`: the type a flag's text converts to."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return hint


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Shows the description and epilog as written, and each default that is set."""

    def _get_help_string(self, action):
        if action.default in (None, ""):
            return action.help
        return super()._get_help_string(action)


def seed_list(text: str) -> list[int]:
    """`"0,1,2"` -> `[0, 1, 2]`: distinct non-negative integers (`--seeds`).

    Example:

    >>> seed_list("0,1,2")
    [0, 1, 2]
    """
    try:
        seeds = [strict_int(item) for item in text.split(",")]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0 or len(set(seeds)) < len(seeds):
        raise argparse.ArgumentTypeError(
            f"expected distinct non-negative integers such as 0,1,2; got {text!r}"
        )
    return seeds


# The types of the numeric fields' flags.
_NUMBER_FLAGS = {int: INTEGER_FLAG, float: NUMBER_FLAG}


def _boolean(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def main(config_module, argv=None, description: str = "", epilog: str = "", prog=None) -> dict:
    """A recipe's command line: its flags, then `run` (or `run_seeds`) into `--out`.

    Args:
        config_module: with `PRESETS`, `SMOKE`, `build`, optionally `FLAG_CHOICES`, `NOT_FLAGS`.
        argv: default `sys.argv[1:]`.
        description: the `--help` description.
        epilog: the end of `--help`.
        prog: the program's name (default: the script's).
    """
    config, options = parse_config(
        config_module.PRESETS,
        argv,
        description=description,
        smoke=config_module.SMOKE,
        smoke_full=getattr(config_module, "SMOKE_FULL", None),
        epilog=epilog,
        prog=prog,
        choices=getattr(config_module, "FLAG_CHOICES", None),
        hidden=getattr(config_module, "NOT_FLAGS", ()),
    )
    try:  # one line, before the run's first line and its directory
        plan = RunPlan.create(
            config, options.seeds, options.preset, options.smoke, options.allow_code_change
        )
        context = RunContext.create(config.strategy, config.tpu)
    except UsageError as error:
        refuse_out(str(error), prog)
    with recipe_run_directory(options.out, run_name(options), prog) as run_dir:
        mock = (
            "; data: random mock examples (--mock-data)" if getattr(config, "mock_data", 0) else ""
        )
        print(f"{run_line(options)}{mock}\nrun directory: {run_dir}", flush=True)
        output, runs = loop.run_plan(plan, config_module.build, run_dir, context)
        loop.raise_if_diverged(runs, run_dir)  # on every worker, as each has the results
        return output


def run_name(options: argparse.Namespace) -> str:
    """`quick-smoke`: the name of a run directory made for the parsed `options`."""
    if getattr(options, "smoke_full", False):
        return options.preset + "-smoke-full"
    return options.preset + ("-smoke" if options.smoke else "")


def run_line(options: argparse.Namespace) -> str:
    """The first line of a run: the preset, `--smoke`, `--seeds` and the changed flags.

    Example:

    >>> _, options = parse_config({"quick": RunConfig()}, ["--steps", "600", "--seeds", "0,1"])
    >>> run_line(options)
    'quick --seeds 0,1: --steps 600'
    """
    if getattr(options, "smoke_full", False):
        preset = options.preset + " --smoke-full"
    else:
        preset = options.preset + (" --smoke" if options.smoke else "")
    if options.seeds:
        preset += " --seeds " + _seeds_text(options.seeds)
    return f"{preset}: {' '.join(options.changed) or 'the preset as it is'}"


# A `--seeds` list longer than this is shown by its ends and its count.
_SHOWN_SEEDS = 8


def _seeds_text(seeds: Sequence[int]) -> str:
    """`0,1,2`, or for a long list `0,1,2,3,...,19999 (20000 seeds)`."""
    if len(seeds) <= _SHOWN_SEEDS:
        return ",".join(map(str, seeds))
    head = ",".join(map(str, seeds[: _SHOWN_SEEDS - 1]))
    return f"{head},...,{seeds[-1]} ({len(seeds)} seeds)"


def refuse_out(message: str, prog: str | None) -> typing.NoReturn:
    """Ends the command with `message` on one line, status 2, as argparse does."""
    print(f"{prog or Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    raise SystemExit(exits.USAGE)


@contextlib.contextmanager
def recipe_run_directory(out: str | None, name: str, prog: str | None = None):
    """A recipe's run directory, in which a refusal, full disk or signal ends in one line."""
    if out and "://" in out:
        # `Path` would make gs://bucket/run a local gs:/bucket/run.
        refuse_out(
            f"--out {out}: a run directory is a local path (its lock, backups and atomic "
            "replaces need a local file system): write to a local disk and copy the finished "
            "run to object storage (gsutil rsync, gcloud storage cp -r).",
            prog,
        )
    new_directory = not (out and Path(out).exists())
    try:
        run_dir = run_directory.run_directory(out, name)
    except OSError as error:
        path = Path(out or "runs")
        file = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        if file is None:
            refuse_out(
                f"--out {path}: the run directory cannot be made ({error.strerror}): pass an "
                "--out on a disk this user can write.",
                prog,
            )
        refuse_out(f"--out {path}: {file} is a file, not a directory: pass another --out.", prog)
    if not os.access(run_dir, os.W_OK | os.X_OK):
        refuse_out(
            f"--out {run_dir}: the run directory is read-only: make it writable "
            f"(chmod u+w {shlex.quote(str(run_dir))}), or pass another --out.",
            prog,
        )
    try:
        with exits.sigterm_as_interrupt():
            yield run_dir
    except (Exception, KeyboardInterrupt) as error:  # one line for those `exits` names
        ending = exits.one_line_exit(error, run_dir)
        if ending is None:
            raise
        if new_directory:
            # Another worker of the run may remove it, or write into it, meanwhile.
            with contextlib.suppress(OSError):
                if not any(run_dir.iterdir()):
                    run_dir.rmdir()
        print(f"{prog or Path(sys.argv[0]).name}: {ending[1]}", file=sys.stderr)
        raise SystemExit(ending[0]) from None


__all__ = [
    "changed_flags",
    "import_user_code",
    "main",
    "parse_config",
    "recipe_run_directory",
    "refuse_out",
    "run_line",
    "run_name",
    "seed_list",
]
