"""Packaging: the install extras pick a TensorFlow wheel that exists on every platform;
the public API imports from the package, each name with a docstring example; the licence,
changelog and citation files ship at the repository's root."""

import configparser
import inspect
import pydoc
import re

import pytest
from packaging.requirements import Requirement

import aninfonce_tf
from tests.support import ROOT

SETUP_CFG = ROOT / "setup.cfg"


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


def test_the_tpu_extra_installs_a_tensorflow_tpu_that_pypi_has_and_no_cpu_build():
    (requirement,) = _extra("tpu")
    assert requirement.name == "tensorflow-tpu"
    # PyPI's last tensorflow-tpu is 2.20: a range that admits only later ones installs none.
    assert requirement.specifier.contains("2.20.0") and not requirement.specifier.contains("2.21.0")
    assert requirement.marker.evaluate({"sys_platform": "linux"})


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


@pytest.mark.parametrize("name", ["LICENSE", "CHANGELOG.md", "CITATION.cff"])
def test_the_licence_changelog_and_citation_files_are_at_the_root(name):
    assert (ROOT / name).is_file()


def test_the_licence_is_the_apache_license_2_0_and_setup_cfg_ships_it():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0" in text
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    assert parser["metadata"]["license"] == "Apache-2.0"
    assert parser["metadata"]["license_files"].split() == ["LICENSE"]


def test_the_citation_names_the_paper_and_the_package_version():
    text = (ROOT / "CITATION.cff").read_text()
    assert "InfoNCE: Identifying the Gap Between Theory and Practice" in text
    versions = re.findall(r"^version:\s*[\"']?([^\"'\s]+)", text, re.M)
    assert versions == [aninfonce_tf.__version__]


def test_the_package_ships_its_type_hints():
    from pathlib import Path

    assert (Path(aninfonce_tf.__file__).parent / "py.typed").is_file()
    setup = configparser.ConfigParser()
    setup.read(Path(__file__).parent.parent / "setup.cfg")
    assert setup["options.package_data"]["aninfonce_tf"].strip() == "py.typed"
