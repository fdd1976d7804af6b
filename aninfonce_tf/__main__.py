"""`python -m aninfonce_tf RECIPE [flags]` and the `aninfonce-tf` script: one recipe's run."""

from __future__ import annotations

import sys
from pathlib import Path

from aninfonce_tf import __version__
from aninfonce_tf.recipes import RECIPES, run


def usage(prog: str) -> str:
    """The help of the command `prog`: every recipe with its first line, and examples.

    Example:

    >>> print(usage("aninfonce-tf").splitlines()[0])
    usage: aninfonce-tf RECIPE [flags]
    """
    width = max(map(len, RECIPES))
    lines = [
        f"usage: {prog} RECIPE [flags]",
        "",
        "Runs a recipe of aninfonce-tf: AnInfoNCE against InfoNCE on one of the paper's",
        "experiments. `RECIPE --help` shows its presets, flags and examples.",
        "",
        "recipes:",
        *(f"  {name.ljust(width)}  {recipe.summary()}" for name, recipe in RECIPES.items()),
        "",
        "examples:",
        f"  {prog} synthetic --smoke --out runs/smoke   # the whole pipeline in < 1 min",
        f"  {prog} photos --help                        # the photos recipe's flags",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    """Runs the recipe named by the first argument with the rest as its flags.

    Args:
        argv: arguments (default `sys.argv[1:]`).
        prog: the command's name (default: `python -m aninfonce_tf`, or the script's).
    """
    argv = sys.argv[1:] if argv is None else argv
    if prog is None:
        script = Path(sys.argv[0]).name
        prog = "python -m aninfonce_tf" if script == "__main__.py" else script
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(prog))
        return
    if argv[0] == "--version":
        print(f"aninfonce-tf {__version__}")
        return
    name, *flags = argv
    if name not in RECIPES:
        print(f"{usage(prog)}\n\n{prog}: error: unknown recipe {name!r}", file=sys.stderr)
        raise SystemExit(2)
    run(name, flags, prog=f"{prog} {name}")


if __name__ == "__main__":
    main()
