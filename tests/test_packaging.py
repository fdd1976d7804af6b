"""Packaging: the install extras pick a TensorFlow wheel that exists on every platform;
the public API imports from the package, each name with a docstring example."""

import configparser
import inspect
import pydoc
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import aninfonce_tf

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


PUBLIC = {
    "AnInfoNCE",
    "ContrastiveModel",
    "DiagonalScaling",
    "EvaluationCallback",
    "IdentifiabilityEvaluator",
    "ImageProbeEvaluator",
    "InfoNCE",
    "SimCLRAugment",
    "StopOnNonFiniteLoss",
    "TrainingLogger",
    "augment_pairs",
    "export_encoder",
    "mlp_encoder",
    "projection_head",
    "resnet18_cifar",
    "resnet50",
    "small_cnn",
    "without_autotune",
}


def test_the_public_api_is_exported_from_the_package():
    assert set(aninfonce_tf.__all__) >= PUBLIC


@pytest.mark.parametrize("name", aninfonce_tf.__all__)
def test_every_public_name_imports_has_an_example_and_is_listed_by_help(name):
    namespace = {}
    exec(f"from aninfonce_tf import {name}", namespace)
    docstring = inspect.getdoc(namespace[name]) or ""
    assert "Example" in docstring and ">>> " in docstring
    # help(aninfonce_tf) opens with the module docstring, which names every public object.
    description = pydoc.render_doc(aninfonce_tf, renderer=pydoc.plaintext).split(
        "PACKAGE CONTENTS"
    )[0]
    assert re.search(rf"\b{name}\b", description)
