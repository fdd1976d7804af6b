"""The README's usage example runs as written."""

import re
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

README = Path(__file__).parent.parent / "README.md"


def test_the_usage_example_trains_and_exports(tmp_path, monkeypatch):
    code = re.search(r"## Use\n\n```python\n(.*?)```", README.read_text(), re.S).group(1)
    encoder = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)]
    )
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    pairs = tf.data.Dataset.from_tensor_slices((x, x + 0.05 * rng.normal(size=x.shape))).batch(
        32, drop_remainder=True
    )
    monkeypatch.chdir(tmp_path)
    namespace = {"encoder": encoder, "pairs": pairs, "observations": x}
    exec(compile(code, str(README), "exec"), namespace)
    model = namespace["model"]
    assert int(model.optimizer.iterations) == 2
    concentration = keras.ops.convert_to_numpy(model.concentration)
    assert concentration.shape == (3,) and np.all(concentration > 0)
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
