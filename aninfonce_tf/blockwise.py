"""The InfoNCE log-sum-exp over candidates in column blocks, in memory that grows
with rows x block instead of rows x candidates.

The forward pass streams the log-sum-exp (a running max and sum) over blocks of
candidate columns; the backward pass recomputes each block's logits and applies
the closed-form gradient of the log-sum-exp, so no [rows, candidates] matrix is
ever held, in either pass. Values and gradients equal the dense loss up to
float32 rounding. `ops.info_nce(..., block_size=...)` uses it.
"""

from __future__ import annotations

import tensorflow as tf

# Stands in for -inf on masked logits (as in `ops`).
_MASKED_LOGIT = -1e9


def _padded_blocks(columns, block_size: int):
    """`[num_blocks, block_size, d]` blocks of `columns` (zero rows pad the last one)."""
    count = tf.shape(columns)[0]
    num_blocks = (count + block_size - 1) // block_size
    padding = num_blocks * block_size - count
    padded = tf.pad(columns, [[0, padding], [0, 0]])
    return tf.reshape(padded, [num_blocks, block_size, columns.shape[-1]]), num_blocks


def logsumexp_over_candidates(
    rows,
    columns,
    self_index,
    positive_index,
    similarity: str,
    temperature: float,
    block_size: int,
):
    """Per-row log-sum-exp of `sim(row, column) / temperature` over the candidates,
    and the largest negative logit of each row (for the accuracy).

    Args:
        rows: `[R, d]` float32 anchors.
        columns: `[C, d]` float32 candidates (already unit-normalised for cosine).
        self_index: `[R]` column that is the row itself (excluded), or None.
        positive_index: `[R]` column of each row's positive (a candidate, not a
            negative).
        similarity: `"dot"` (cosine on unit vectors) or `"euclidean"`
            (-1/2 ||row - column||^2).
        temperature: divides the similarity.
        block_size: candidate columns per block.

    Returns:
        `(lse, max_negative)`, each `[R]`; only `lse` has a gradient.
    """
    if similarity not in ("dot", "euclidean"):
        raise ValueError(f"Unknown blockwise `similarity` {similarity!r}.")
    if block_size < 1:
        raise ValueError(f"`block_size` must be positive; got {block_size}.")
    count = tf.shape(columns)[0]
    excluded = tf.fill([tf.shape(rows)[0]], -1) if self_index is None else self_index

    def block_logits(rows, block, start):
        logits = tf.matmul(rows, block, transpose_b=True)
        if similarity == "euclidean":
            logits -= 0.5 * tf.reduce_sum(tf.square(rows), axis=1, keepdims=True)
            logits -= 0.5 * tf.reduce_sum(tf.square(block), axis=1)[None, :]
        logits /= temperature
        index = start + tf.range(block_size)
        candidate = (index[None, :] < count) & (index[None, :] != excluded[:, None])
        negative = candidate & (index[None, :] != positive_index[:, None])
        return logits, candidate, negative

    @tf.custom_gradient
    def kernel(rows, columns):
        blocks, num_blocks = _padded_blocks(columns, block_size)
        lowest = tf.constant(_MASKED_LOGIT, rows.dtype)
        masked = tf.fill([tf.shape(rows)[0]], lowest)

        def forward(i, running_max, running_sum, max_negative):
            logits, candidate, negative = block_logits(rows, blocks[i], i * block_size)
            new_max = tf.maximum(
                running_max, tf.reduce_max(tf.where(candidate, logits, lowest), axis=1)
            )
            exps = tf.where(candidate, tf.exp(logits - new_max[:, None]), tf.zeros_like(logits))
            running_sum = running_sum * tf.exp(running_max - new_max) + tf.reduce_sum(exps, 1)
            block_negative = tf.reduce_max(tf.where(negative, logits, lowest), axis=1)
            return i + 1, new_max, running_sum, tf.maximum(max_negative, block_negative)

        _, running_max, running_sum, max_negative = tf.while_loop(
            lambda i, *_: i < num_blocks,
            forward,
            (tf.constant(0), masked, tf.zeros_like(masked), masked),
        )
        lse = running_max + tf.math.log(running_sum)

        def gradient(upstream_lse, upstream_max_negative):
            del upstream_max_negative  # a max of logits for metrics: no gradient

            def backward(i, row_gradient, column_gradients):
                block = blocks[i]
                logits, candidate, _ = block_logits(rows, block, i * block_size)
                # d lse_r / d logit_rc = softmax over the row's candidates.
                weights = tf.where(candidate, tf.exp(logits - lse[:, None]), tf.zeros_like(logits))
                weights *= upstream_lse[:, None] / temperature
                row_gradient += tf.matmul(weights, block)
                block_gradient = tf.matmul(weights, rows, transpose_a=True)
                if similarity == "euclidean":
                    row_gradient -= tf.reduce_sum(weights, axis=1, keepdims=True) * rows
                    block_gradient -= tf.reduce_sum(weights, axis=0)[:, None] * block
                return i + 1, row_gradient, column_gradients.write(i, block_gradient)

            _, row_gradient, column_gradients = tf.while_loop(
                lambda i, *_: i < num_blocks,
                backward,
                (
                    tf.constant(0),
                    tf.zeros_like(rows),
                    tf.TensorArray(rows.dtype, size=num_blocks, element_shape=blocks.shape[1:]),
                ),
            )
            column_gradient = tf.reshape(column_gradients.stack(), [-1, columns.shape[-1]])
            return row_gradient, column_gradient[:count]

        return (lse, tf.stop_gradient(max_negative)), gradient

    return kernel(rows, columns)


__all__ = ["logsumexp_over_candidates"]
