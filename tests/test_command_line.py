"""The command line of the installed package: `python -m aninfonce_tf RECIPE` (and the
`aninfonce-tf` script) lists and runs every recipe, each recipe's `--help` shows its
whole description, its flags in groups and only the values that apply to it, a run's
first line names the preset and the flags changed from it, and every line it prints
fits 100 columns. TensorFlow's start-up notices stay off the command line's stderr, every
other line passed on as it arrives, also just before a crash. The slow test builds a
wheel and runs a recipe from it in a fresh venv."""

import configparser
import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from aninfonce_tf import __main__ as command
from aninfonce_tf import recipes, tensorflow_notices
from aninfonce_tf.configs import synthetic
from aninfonce_tf.configs.base import RUN_GROUPS, RunConfig
from aninfonce_tf.loss_variants import LOSS_VARIANTS
from aninfonce_tf.runner import cli, results_table
from tests.support import ROOT

NAMES = [
    "synthetic",
    "dose_response",
    "mnist_vae",
    "rendered",
    "rendered_sweep",
    "photos",
    "cifar10",
    "imagenet",
    "train",
]


def _python_m(*args, cwd=ROOT, python=sys.executable, timeout=600):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run(
        [python, "-m", "aninfonce_tf", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env=env,
    )


def test_python_m_help_lists_every_recipe_on_a_line_of_its_own_without_tensorflows_lines():
    result = _python_m("--help")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "usage: python -m aninfonce_tf RECIPE [flags]"
    listed = [line.split()[0] for line in lines if line.startswith("  ") and "#" not in line]
    assert listed == NAMES
    assert max(map(len, lines)) <= 100
    assert "cpu_feature_guard" not in result.stderr  # TF_CPP_MIN_LOG_LEVEL=2 by default
    assert "oneDNN" not in result.stderr  # held back while TensorFlow is imported


def test_a_recipe_script_shows_its_examples_as_they_run_without_tensorflows_lines():
    result = subprocess.run(
        [sys.executable, "recipes/photos.py", "--help"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("usage: python recipes/photos.py [-h]")
    assert "examples:\n  python recipes/photos.py --smoke " in result.stdout
    assert "oneDNN" not in result.stderr and "absl::InitializeLog" not in result.stderr


def test_a_recipes_command_is_its_script_shell_quoted_or_else_python_m(monkeypatch, tmp_path):
    scripts = tmp_path / "my recipes"
    monkeypatch.setattr(recipes, "RECIPE_SCRIPTS", scripts)
    for argv0, expected in (
        (str(scripts / "photos.py"), f"python '{scripts / 'photos.py'}'"),
        (str(tmp_path / "photos.py"), "python -m aninfonce_tf photos"),  # not under recipes/
        ("train.py", "python -m aninfonce_tf photos"),  # a user's program
        ("", "python -m aninfonce_tf photos"),  # an interactive interpreter
    ):
        monkeypatch.setattr(sys, "argv", [argv0])
        assert recipes.script_command("photos") == expected, argv0


NOTICE_LINES = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "I0000 00:00:1.0    1 port.cc:153] oneDNN custom operations are on. You may see slightly "
    "different numerical results.\n"
)


def test_tensorflows_start_up_notices_are_held_back_and_every_other_line_written_back(capfd):
    assert tensorflow_notices.is_notice(NOTICE_LINES.splitlines()[1])
    # A missing GPU driver is shown: a broken GPU set-up must not go silent.
    assert not tensorflow_notices.is_notice("Could not find cuda drivers on your machine")
    with tensorflow_notices.notices_held_back():
        os.write(2, (NOTICE_LINES + "E0000 a real error\n").encode())
    assert capfd.readouterr().err == "E0000 a real error\n"
    with pytest.raises(ImportError), tensorflow_notices.notices_held_back():
        os.write(2, (NOTICE_LINES + "F0000 why the import failed\n").encode())
        raise ImportError("no TensorFlow")
    assert capfd.readouterr().err == "F0000 why the import failed\n"


def test_a_line_written_just_before_a_crash_inside_the_block_reaches_stderr():
    crash = textwrap.dedent(
        f"""
        import importlib.util, os
        spec = importlib.util.spec_from_file_location("notices", {tensorflow_notices.__file__!r})
        notices = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(notices)  # the module alone: no TensorFlow imported
        with notices.notices_held_back():
            os.write(2, {NOTICE_LINES.encode()!r} + b"F0000 why the import crashed\\n")
            os.abort()
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", crash], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == -signal.SIGABRT
    assert result.stderr == "F0000 why the import crashed\n"


def test_without_a_stderr_nothing_is_held_back(capfd, monkeypatch):
    monkeypatch.setattr(sys, "stderr", None)
    with tensorflow_notices.notices_held_back():
        os.write(2, NOTICE_LINES.encode())
    assert capfd.readouterr().err == NOTICE_LINES


def test_only_the_command_line_holds_the_notices_back_and_level_0_shows_them(monkeypatch):
    assert not tensorflow_notices.command_line()  # a program (here pytest) importing the package
    for argv, orig_argv, expected in (
        (["-m", "synthetic"], ["python", "-m", "aninfonce_tf", "synthetic"], True),
        (["-m"], ["python", "-m", "their_package.train"], False),
        (["/venv/bin/aninfonce-tf", "--help"], [], True),
        ([str(ROOT / "recipes" / "photos.py")], [], True),
        (["train.py"], [], False),
    ):
        monkeypatch.setattr(sys, "argv", argv)
        monkeypatch.setattr(sys, "orig_argv", orig_argv)
        assert tensorflow_notices.command_line() is expected, argv
    held = []

    def hold():
        held.append(os.environ["TF_CPP_MIN_LOG_LEVEL"])
        return contextlib.nullcontext()

    monkeypatch.setattr(tensorflow_notices, "notices_held_back", hold)
    for level in ("0", "2"):
        monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", level)
        tensorflow_notices.import_tensorflow()
    assert held == ["2"]


def test_an_unknown_recipe_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        command.main(["simclr"], prog="aninfonce-tf")
    assert stop.value.code == 2
    assert "aninfonce-tf: error: unknown recipe 'simclr'" in capsys.readouterr().err


def test_the_console_script_runs_the_same_main():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    scripts = parser["options.entry_points"]["console_scripts"].split()
    assert scripts == ["aninfonce-tf", "=", "aninfonce_tf.__main__:main"]


def test_photos_help_shows_its_whole_description_groups_examples_and_only_its_values(capsys):
    with pytest.raises(SystemExit) as stop:
        recipes.run("photos", ["--help"], prog="aninfonce-tf photos")
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert recipes.RECIPES["photos"].description in text  # as written, not cut
    for group in ("experiment", "training", "evaluation", "devices and saving"):
        assert f"\n{group} (defaults: the 'photos' preset):" in text
    assert "examples:\n  aninfonce-tf photos --smoke" in text
    assert "imagenet2012" not in text and "resnet50" not in text
    assert "--dataset" not in text and "--data-dir" not in text
    assert "--encoder {small_cnn,resnet18_cifar}" in text
    with pytest.raises(SystemExit):
        recipes.run("photos", ["--encoder", "resnet50"])
    assert "invalid choice: 'resnet50'" in capsys.readouterr().err


def test_every_shared_field_named_by_a_section_exists():
    fields = {field.name for field in dataclasses.fields(RunConfig)}
    named = [name for names in RUN_GROUPS.values() for name in names]
    assert set(named) <= fields and len(set(named)) == len(named)


@pytest.mark.parametrize("name", NAMES)
def test_every_recipe_has_a_one_line_summary_and_two_examples(name):
    recipe = recipes.RECIPES[name]
    assert len(f"  {name:14}  {recipe.summary()}") <= 100
    assert recipe.summary().endswith(".") and len(recipe.examples) == 2


def test_the_first_line_names_the_preset_and_only_the_flags_changed_from_it():
    _, options = cli.parse_config(
        synthetic.PRESETS,
        ["--smoke", "--steps", "60", "--jit-compile", "false"],
        smoke=synthetic.SMOKE,
    )
    assert cli.run_line(options) == "quick --smoke: --steps 60 --jit-compile false"
    _, options = cli.parse_config(synthetic.PRESETS, ["--preset", "paper-linear"])
    assert cli.run_line(options) == "paper-linear: the preset as it is"


def test_the_results_table_of_the_synthetic_columns_fits_100_columns():
    scores = {
        "linear_r2": 0.607,
        "mcc": 0.555,
        "mcc_spearman": 0.546,
        "block_r2": {"high": 0.748, "low": 0.465},
        "lambda_spearman": 0.314,
        "lambda_relative_error": 0.721,
    }
    run = {"steps": 2000, "wall_seconds": 95.0}
    # `make run`'s losses: one table, its headers broken after `_` and `/`.
    results = {name: {**scores, **run} for name in synthetic.PRESETS["quick"].loss_names()}
    table = results_table(results)
    assert max(map(len, table.splitlines())) <= 100
    assert table.count("\n---") == 1 and "relative_" in table and "0.721" in table
    # Every loss variant: the longer names split the table, each part led by the names.
    table = results_table({name: {**scores, **run} for name in LOSS_VARIANTS})
    assert max(map(len, table.splitlines())) <= 100
    assert table.count("\n---") == 2 and table.count(" aninfonce_ensemble ") == 2


@pytest.mark.slow
def test_a_built_wheel_runs_a_recipe_from_a_fresh_venv_offline_within_100_columns(tmp_path):
    # `python -m aninfonce_tf synthetic --smoke` as a user of the wheel types it.
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info
    shutil.copytree(ROOT / "aninfonce_tf", source / "aninfonce_tf")
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    offline = ["--no-index", "--no-deps", "--no-build-isolation"]
    pip = [sys.executable, "-m", "pip", "wheel", *offline, "-q", "-w", str(tmp_path), str(source)]
    subprocess.run(pip, check=True, timeout=600)
    (wheel,) = tmp_path.glob("aninfonce_tf-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)]
    subprocess.run(install, check=True, timeout=600)
    # TensorFlow and the other requirements from this interpreter's site-packages, read
    # after the venv's own (a venv made from a venv does not see them), not downloaded.
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "requirements.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = _python_m("synthetic", "--smoke", "--out", "run", cwd=elsewhere, python=python)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.replace(str(elsewhere), "TMP").splitlines()  # the path is the user's
    assert lines[0].startswith("quick --smoke")
    # Every line: Keras' per epoch, each evaluation's, the tables.
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    assert any(line.startswith("step 40 evaluation: ") for line in lines)
    assert sum(line.startswith("20/20 - ") for line in lines) == 4
    assert (elsewhere / "run" / "results.json").is_file()
    assert "cpu_feature_guard" not in result.stderr and "oneDNN" not in result.stderr
    where = subprocess.run(
        [python, "-c", "import aninfonce_tf; print(aninfonce_tf.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=elsewhere,
    ).stdout
    assert where.startswith(str(venv))


def test_flags_can_come_from_a_file_as_they_are_typed(tmp_path):
    flags = tmp_path / "flags.txt"
    flags.write_text("--steps 600 --eval-every 300  # a longer run\n--losses aninfonce\n")
    config, options = cli.parse_config(synthetic.PRESETS, [f"@{flags}", "--seed", "3"])
    assert (config.steps, config.eval_every, config.losses, config.seed) == (
        600,
        300,
        "aninfonce",
        3,
    )
    assert "--steps 600" in cli.run_line(options)
    with pytest.raises(SystemExit):
        cli.parse_config(synthetic.PRESETS, [f"@{tmp_path / 'missing.txt'}"])


def test_a_long_seeds_list_is_abbreviated_on_the_first_line():
    seeds = ",".join(map(str, range(20_000)))
    _, options = cli.parse_config(
        synthetic.PRESETS, ["--smoke", "--seeds", seeds], smoke=synthetic.SMOKE
    )
    assert cli.run_line(options) == (
        "quick --smoke --seeds 0,1,2,3,4,5,6,...,19999 (20000 seeds): the preset as it is"
    )
