"""The README's usage example runs as written."""

import re

import keras
import numpy as np
import tensorflow as tf

from tests.support import ROOT

README = ROOT / "README.md"


def test_the_usage_example_runs_as_written_and_exports(tmp_path, monkeypatch):
    code = re.search(r"## Use\n\n```python\n(.*?)```", README.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, str(README), "exec"), namespace)  # nothing defined beforehand
    model, encoder, x = namespace["model"], namespace["encoder"], namespace["observations"]
    assert int(model.optimizer.iterations) == 2
    concentration = keras.ops.convert_to_numpy(model.concentration)
    assert concentration.shape == (16,) and np.all(concentration > 0)
    assert not np.allclose(concentration, 5.0)  # Lambda_hat was trained
    np.testing.assert_allclose(namespace["features"], encoder(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(namespace["lambda_hat"], concentration, rtol=1e-6)
    exported = tf.saved_model.load(str(tmp_path / "encoder"))
    np.testing.assert_allclose(exported.serve(x), encoder(x), rtol=1e-5, atol=1e-6)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_readme_and_the_docs_resolves():
    root = README.parent
    pages = [README, *sorted((root / "docs").glob("*.md")), root / "benchmarks" / "README.md"]
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), f"{page.name} links to a missing {target}"
            if anchor:
                headings = re.findall(r"^#+ (.+)$", linked.read_text(), re.M)
                assert anchor in {_anchor(h) for h in headings}, f"{page.name}: {target}"
            checked += 1
    assert checked >= 20


DOCS = [
    README,
    *sorted((README.parent / "docs").glob("*.md")),
    README.parent / "benchmarks/README.md",
]


def test_the_readme_is_short_and_starts_with_the_two_commands():
    text = README.read_text()
    assert len(text.encode()) < 10_000
    commands = re.findall(r"^(make \w+)", text[:600], re.M)
    assert commands == ["make run", "make test"]


def test_no_figure_is_labelled_by_a_work_period():
    period = re.compile(r"\b(session|sprint|round|phase|iteration)s? ?#?\d+", re.I)
    for page in DOCS:
        found = period.findall(page.read_text())
        assert not found, f"{page.name} labels figures by {found}"


def test_docs_api_names_every_module_of_the_package():
    package = README.parent / "aninfonce_tf"
    api = (README.parent / "docs/api.md").read_text()
    missing = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__" or parts[0] == "configs":
            continue  # the package itself; configs are listed by name in one row
        if f"`aninfonce_tf.{'.'.join(parts)}`" not in api:
            missing.append(".".join(parts))
    configs = [p.stem for p in (package / "configs").glob("*.py") if p.stem != "__init__"]
    missing += [f"configs.{name}" for name in configs if f"`{name}`" not in api]
    assert not missing, f"docs/api.md does not name {missing}"


def test_every_docs_link_in_the_code_resolves():
    """A docs page (and heading) a docstring or comment links to exists."""
    sources = [*ROOT.glob("aninfonce_tf/**/*.py"), *ROOT.glob("recipes/*.py")]
    sources += [*ROOT.glob("benchmarks/*.py"), *ROOT.glob("tests/**/*.py")]
    broken, checked = [], 0
    for source in sources:
        for page, anchor in re.findall(r"\bdocs/([\w-]+\.md)(?:#([\w-]+))?", source.read_text()):
            target = ROOT / "docs" / page
            headings = re.findall(r"^#+ (.+)$", target.read_text(), re.M) if target.exists() else []
            if not target.exists() or (anchor and anchor not in {_anchor(h) for h in headings}):
                broken.append(f"{source.relative_to(ROOT)}: docs/{page}#{anchor}")
            checked += 1
    assert not broken, broken
    assert checked >= 20
