"""How training reads a batch of pairs: its two views, from `(view1, view2)` or dicts
with `view1`, `view2` and extra keys; what is wrong with any other structure."""

from __future__ import annotations

import keras
import tensorflow as tf

from aninfonce_tf.errors import is_integer

VIEW_KEYS = ("view1", "view2")


def training_views(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` as training reads it: of a dict batch only its two views, and a batch
    of fewer than 2 rows refused (in tf.data, before the compiled step).

    Example:

    >>> rows = {"view1": np.zeros((5, 2)), "view2": np.ones((5, 2)), "name": ["a"] * 5}
    >>> data = training_views(tf.data.Dataset.from_tensor_slices(rows).batch(2))
    >>> sorted(data.element_spec)
    ['view1', 'view2']
    >>> [len(batch["view1"]) for batch in data.take(2)]
    [2, 2]
    >>> list(data)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tensorflow.python.framework.errors_impl.InvalidArgumentError: ...at least 2 rows...
    """
    spec = dataset.element_spec
    if isinstance(spec, tuple) and len(spec) == 1:  # `Dataset.from_tensors((batch,))`
        spec = spec[0]
    if isinstance(spec, dict) and all(key in spec for key in VIEW_KEYS):
        extra_keys, view, other = len(spec) > len(VIEW_KEYS), spec["view1"], spec["view2"]
    elif isinstance(spec, tuple) and len(spec) == 2:
        extra_keys, (view, other) = False, spec
    else:
        return dataset  # `split_views` says what is wrong with it
    if isinstance(view, tf.TensorSpec) and isinstance(other, tf.TensorSpec):
        check_same_shape(view, other)  # before tracing: `(features, labels)` data
    # Known when both views' batch dimensions are static (then equal: checked above).
    rows = view.shape[0] if view.shape.rank and other.shape.rank else None
    rows = rows if rows is not None and other.shape[0] is not None else None
    if not extra_keys and rows is not None:
        return dataset

    def views(*batch):
        batch = batch[0] if len(batch) == 1 else batch
        if isinstance(batch, dict):
            batch = {key: batch[key] for key in VIEW_KEYS}
        if rows is not None:
            return batch
        first, second = (batch["view1"], batch["view2"]) if isinstance(batch, dict) else batch
        # Batch sizes known only here: an assertion in tf.data, before the compiled step.
        checks = [
            tf.debugging.assert_greater_equal(
                tf.shape(first)[0],
                2,
                message=(
                    "Each batch needs at least 2 rows to have negatives: batch the dataset "
                    "with drop_remainder=True, or so that no last batch of one row is left. Rows"
                ),
            ),
            tf.debugging.assert_equal(
                tf.shape(first)[0],
                tf.shape(second)[0],
                message=(
                    "`view1` and `view2` must have as many rows (each row of view1 pairs with "
                    "the row of view2 in its place): batch both views alike. Rows of view1, "
                    "then of view2"
                ),
            ),
        ]
        with tf.control_dependencies(checks):
            return tf.nest.map_structure(tf.identity, batch)

    return dataset.map(views)


def fit_input(x, batch_size: int | None):
    """`fit`'s `x` with `training_views` applied (a dataset) or checked (arrays)."""
    if batch_size is not None and not (is_integer(batch_size) and batch_size >= 1):
        # Keras reads 0 as its default, 32.
        raise ValueError(
            f"`batch_size` must be a positive number of pairs, or None (Keras' 32); got "
            f"{batch_size!r}."
        )
    if isinstance(x, tf.data.Dataset):
        return training_views(x)
    if isinstance(x, dict) and all(key in x for key in VIEW_KEYS):
        x = {key: x[key] for key in VIEW_KEYS}
    views = list(x.values()) if isinstance(x, dict) else x
    pair = isinstance(views, (tuple, list)) and len(views) == 2
    if pair and all(hasattr(view, "shape") for view in views):
        check_same_shape(*views)  # before Keras' own "cardinality is ambiguous"
    arrays = [a for a in keras.tree.flatten(x) if getattr(a, "shape", None)]
    if arrays:
        rows, batch_size = int(arrays[0].shape[0]), batch_size or 32  # Keras' default
        if rows % batch_size == 1:
            raise ValueError(
                f"{rows} rows in batches of {batch_size} leave a last batch of one row, which "
                "has no negatives: drop a row, or pass another `batch_size`."
            )
    return x


def unit_views(views):
    """Views as the encoder reads them: uint8 `[B, H, W, C]` images divided by 255.

    Example:

    >>> unit_views(tf.constant([0, 51, 255], tf.uint8, [1, 1, 1, 3])).numpy().tolist()
    [[[[0.0, 0.20000000298023224, 1.0]]]]
    >>> unit_views(tf.constant([[0, 51, 255]], tf.uint8)).dtype.name  # not images
    'uint8'
    """
    uint8 = keras.backend.standardize_dtype(views.dtype) == "uint8"
    if uint8 and len(views.shape) == 4:
        return keras.ops.cast(views, "float32") / 255.0
    return views


def split_views(data):
    """Returns `(view1, view2)` from a `(view1, view2)` tuple or a dict with those keys."""
    while isinstance(data, (tuple, list)) and len(data) == 1:
        # `fit(x=(view1, view2))` and `fit(x=dict)` arrive wrapped as a 1-tuple.
        data = data[0]
    if isinstance(data, dict):
        missing = [key for key in VIEW_KEYS if key not in data]
        if missing:
            raise TypeError(
                f"A dict batch needs the keys {VIEW_KEYS}; missing {missing} in {sorted(data)}."
            )
        view1, view2 = data["view1"], data["view2"]
    elif isinstance(data, (tuple, list)) and len([d for d in data if d is not None]) == 2:
        # Keras' array adapters pad `(x, y)` with a `None` sample weight.
        view1, view2 = [d for d in data if d is not None]
    else:
        raise TypeError(
            "Each batch must be `(view1, view2)` or a dict with 'view1' and 'view2'; "
            f"got {type(data).__name__}."
        )
    for name, view in (("view1", view1), ("view2", view2)):
        dtype = keras.backend.standardize_dtype(view.dtype)
        if not (dtype.startswith(("float", "int", "uint", "bfloat"))):
            raise TypeError(f"`{name}` must hold numbers; got dtype {dtype}.")
    check_same_shape(view1, view2)
    return view1, view2


def check_same_shape(view1, view2) -> None:
    """Raises `ValueError` unless the two views' (possibly partly known) shapes agree.

    Example:

    >>> check_same_shape(tf.zeros((8, 6)), tf.zeros((5, 6)))
    Traceback (most recent call last):
    ...
    ValueError: `view1` has 8 rows and `view2` 5: each row of view1 pairs with the row of view2 in its place; give both views as many rows.
    """
    first, second = tf.TensorShape(view1.shape), tf.TensorShape(view2.shape)
    if (
        first.rank == second.rank
        and first.rank
        and first[1:].is_compatible_with(second[1:])
        and None not in (first[0], second[0])
        and first[0] != second[0]
    ):
        raise ValueError(
            f"`view1` has {first[0]} rows and `view2` {second[0]}: each row of view1 pairs "
            "with the row of view2 in its place; give both views as many rows."
        )
    if not first.is_compatible_with(second):
        raise ValueError(
            f"`view1` and `view2` must have the same shape; got {tuple(view1.shape)} "
            f"and {tuple(view2.shape)} (`fit(x, y)` and `(x, y)` batches are read as the two "
            "views, not as inputs and targets)."
        )


def check_batched(view, encoder) -> None:
    """Raises `ValueError` when `view` is one observation of `encoder`, not a batch."""
    inputs = getattr(encoder, "inputs", None)  # known for functional encoders
    if (
        inputs
        and view.shape.rank is not None
        and view.shape.is_compatible_with(inputs[0].shape[1:])
    ):
        raise ValueError(
            f"The views have shape {tuple(view.shape)} and the encoder takes "
            f"{tuple(inputs[0].shape)}: each element of the data must be a batch of "
            "views; batch the dataset (`dataset.batch(batch_size)`)."
        )


__all__ = [
    "VIEW_KEYS",
    "check_batched",
    "check_same_shape",
    "fit_input",
    "split_views",
    "training_views",
    "unit_views",
]
