"""The install extras: `cpu` picks a TensorFlow wheel that exists on every platform."""

import configparser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

SETUP_CFG = Path(__file__).parent.parent / "setup.cfg"


def _extra(name: str) -> list[Requirement]:
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    lines = parser["options.extras_require"][name].splitlines()
    return [Requirement(line) for line in lines if line.strip()]


@pytest.mark.parametrize(
    "platform, wheel",
    [("linux", "tensorflow-cpu"), ("win32", "tensorflow-cpu"), ("darwin", "tensorflow")],
)
def test_the_cpu_extra_installs_one_tensorflow_that_has_wheels_for_the_platform(platform, wheel):
    chosen = [
        requirement.name
        for requirement in _extra("cpu")
        if requirement.marker is None or requirement.marker.evaluate({"sys_platform": platform})
    ]
    assert chosen == [wheel]
