"""Every notebook executes top to bottom on its tiny configuration, in a kernel of the
Python running the tests (no kernelspec needs to be installed)."""

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


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
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name=kernel_of_this_python,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    outputs = [
        o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
    ]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "linear_r2" in text and "aninfonce" in text and "Lambda_hat matched" in text
