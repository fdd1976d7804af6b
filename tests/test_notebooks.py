"""Every notebook executes top to bottom on its tiny configuration, in a kernel of the
Python running the tests (no kernelspec needs to be installed), and prints what it is
about; every committed notebook holds the outputs of a full-size run, figures included,
and none of TensorFlow's start-up notices; they use the public API only."""

import json
import re
import sys

import nbformat
import pytest
from nbclient import NotebookClient

import aninfonce_tf
from aninfonce_tf.tensorflow_notices import is_notice
from tests.support import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# Per notebook, patterns its printed output must match: the scores it is about.
KEY_OUTPUTS = {
    "synthetic_identifiability.ipynb": (
        r"variant +linear_r2 +block_r2/high +block_r2/low +mcc",
        r"aninfonce +-?\d\.\d{3}",
        r"infonce +-?\d\.\d{3}",
        r"Lambda_hat matched to latents: \[[\d.\s]+\]",
    ),
    "your_data.ipynb": (
        r"raw pixels +\d\.\d{3}",
        r"AnInfoNCE backbone +\d\.\d{3}",
        r"InfoNCE projector +\d\.\d{3}",
        r"AnInfoNCE: \d+ steps in \d+ s",
        r"Lambda_hat, sorted: \[[\d.\s]+\]",
    ),
}
# What the setup cell of each notebook prints under ANINFONCE_NOTEBOOK_TINY=1.
TINY_MARKER = "Tiny sizes (ANINFONCE_NOTEBOOK_TINY=1)"


def code_outputs(notebook) -> list[dict]:
    return [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def printed(outputs: list[dict]) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


def pngs(outputs: list[dict]) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs)


def test_every_notebook_has_key_outputs():
    assert {path.name for path in NOTEBOOKS} == set(KEY_OUTPUTS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_are_a_full_run_with_figures(path):
    """What a reader sees without running anything: every code cell ran in order,
    without errors, at full size, and the figures are there."""
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    outputs = code_outputs(notebook)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert pngs(outputs) >= 1
    text = printed(outputs)
    assert TINY_MARKER not in text and "Full sizes" in text
    for pattern in KEY_OUTPUTS[path.name]:
        assert re.search(pattern, text), pattern
    notices = [line for line in text.splitlines() if is_notice(line)]
    assert not notices, f"TensorFlow's start-up notices (strip them: `without_notices`): {notices}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_uses_only_the_public_api(path):
    """Each name it takes from the package is exported by `aninfonce_tf`, or is named in
    docs/api.md and comes from a module (or package) docs/api.md names."""
    api = (ROOT / "docs" / "api.md").read_text()
    notebook = nbformat.read(path, as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    used = [("aninfonce_tf", name) for name in re.findall(r"\bait\.(\w+)", code)]
    for module, names in re.findall(r"^from (aninfonce_tf[\w.]*) import (.+)$", code, re.M):
        used += [(module, name.strip()) for name in names.split(",")]
    assert used
    for module, name in used:
        parts = module.split(".")
        packages = {".".join(parts[:end]) for end in range(2, len(parts) + 1)}
        documented = any(f"`{package}`" in api for package in packages) and re.search(
            rf"`{name}\b", api
        )
        exported = module == "aninfonce_tf" and name in aninfonce_tf.__all__
        assert not name.startswith("_") and (exported or documented), f"{module}.{name}"


@pytest.fixture
def kernel_of_this_python(tmp_path, monkeypatch) -> str:
    """A kernelspec, found through JUPYTER_PATH, that starts `sys.executable`."""
    name = "aninfonce-tests"
    spec_dir = tmp_path / "jupyter" / "kernels" / name
    spec_dir.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec_dir / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": name, "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return name


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch, kernel_of_this_python):
    monkeypatch.setenv("ANINFONCE_NOTEBOOK_TINY", "1")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    # OpenBLAS's second thread spins for the CPU the kernel's other threads hold: on a
    # busy 2-core CPU the probes' small scikit-learn fits then ran ~10x slower.
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name=kernel_of_this_python,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    outputs = code_outputs(notebook)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert pngs(outputs) >= 1
    text = printed(outputs)
    assert TINY_MARKER in text
    for pattern in KEY_OUTPUTS[path.name]:
        assert re.search(pattern, text), pattern
    if path.name == "your_data.ipynb":
        # The encoder reloaded with keras.layers.TFSMLayer computes what the model does.
        difference = re.search(r"export round trip: max \|difference\| (\S+)", text)
        assert difference and float(difference.group(1)) < 1e-5
