"""The names every docstring example may use without importing them, for the package's
doctests as for the tests, whichever a test process runs first."""

import pytest


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    # Imported here: tests/conftest.py sets TensorFlow up before its first import.
    import keras
    import numpy as np
    import tensorflow as tf

    doctest_namespace.update(np=np, keras=keras, tf=tf)
