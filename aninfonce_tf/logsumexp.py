"""The InfoNCE log-sum-exp over candidates with a hand-written gradient, dense or over
blocks of candidates. Details: docs/speed.md#large-global-batches-the-blockwise-loss"""

from __future__ import annotations

import tensorflow as tf

# Stands in for -inf on masked logits: finite, so 0 * mask never makes a NaN.
MASKED_LOGIT = -1e9


def logsumexp_over_candidates(
    rows,
    columns,
    self_index,
    positive_index,
    similarity: str,
    temperature: float,
    block_size: int | None = None,
):
    """`(lse, margin)`, each `[R]`: per-row log-sum-exp of `sim(row, column) / temperature`
    over the candidates (with a gradient), and the positive's margin over the negatives.

    Args:
        rows: `[R, d]` float32 anchors.
        columns: `[C, d]` float32 candidates (already unit-normalised for cosine).
        self_index: `[R]` column that is the row itself (excluded), or None.
        positive_index: `[R]` column of each row's positive.
        similarity: `"dot"` or `"euclidean"` (-1/2 ||row - column||^2).
        temperature: divides the similarity.
        block_size: candidate columns per block; None: dense.
    """
    excluded = tf.fill([tf.shape(rows)[0]], -1) if self_index is None else self_index
    if block_size is None:
        return _dense(rows, columns, excluded, positive_index, similarity, temperature)
    return _blockwise(rows, columns, excluded, positive_index, similarity, temperature, block_size)


def similarity_logits(rows, columns, similarity: str, temperature: float):
    """`[R, C]` similarities / temperature, `"dot"` or `"euclidean"`, as one matmul."""
    logits = tf.matmul(rows, columns, transpose_b=True)
    if similarity == "euclidean":
        logits -= 0.5 * tf.reduce_sum(tf.square(rows), axis=1, keepdims=True)
        logits -= 0.5 * tf.reduce_sum(tf.square(columns), axis=1)[None, :]
    return logits / temperature


def _masks(index, excluded, positive_index):
    """`(candidate, negative)` `[R, len(index)]` masks of the columns `index`."""
    candidate = index[None, :] != excluded[:, None]
    return candidate, candidate & (index[None, :] != positive_index[:, None])


def _gradients(upstream, weights, row_sums, rows, columns, similarity: str, temperature: float):
    """Gradients of `sum(upstream * lse)` for the rows and columns from softmax `weights`."""
    scale = upstream / temperature
    rows_gradient = scale[:, None] * tf.matmul(weights, columns)
    # [scaled rows, scale]^T x weights in one matmul: the columns' gradient and, in
    # its last row, each column's total weight; both read `weights` once.
    weighted = tf.concat([rows * scale[:, None], scale[:, None]], axis=1)
    transposed = tf.transpose(tf.matmul(weighted, weights, transpose_a=True))
    columns_gradient = transposed[:, :-1]
    if similarity == "euclidean":
        rows_gradient -= (scale * row_sums)[:, None] * rows
        columns_gradient -= transposed[:, -1:] * columns
    return rows_gradient, columns_gradient


def _dense(rows, columns, excluded, positive_index, similarity, temperature):
    @tf.custom_gradient
    def kernel(rows, columns):
        logits = similarity_logits(rows, columns, similarity, temperature)
        candidate, negative = _masks(tf.range(tf.shape(columns)[0]), excluded, positive_index)
        max_negative = tf.reduce_max(tf.where(negative, logits, MASKED_LOGIT), axis=1)
        # The largest candidate is the positive or the largest negative: one pass.
        positive = tf.gather(logits, positive_index, batch_dims=1)
        shift = tf.maximum(max_negative, positive)
        exps = tf.where(candidate, tf.exp(logits - shift[:, None]), tf.zeros_like(logits))
        total = tf.reduce_sum(exps, axis=1)
        lse = shift + tf.math.log(total)

        def gradient(upstream_lse, upstream_margin):
            del upstream_margin  # for metrics: no gradient
            upstream = upstream_lse / total
            return _gradients(upstream, exps, total, rows, columns, similarity, temperature)

        return (lse, tf.stop_gradient(positive - max_negative)), gradient

    return kernel(rows, columns)


def _blockwise(rows, columns, excluded, positive_index, similarity, temperature, block_size):
    count = tf.shape(columns)[0]

    def block_logits(rows, block, start):
        index = start + tf.range(block_size)
        candidate, negative = _masks(index, excluded, positive_index)
        inside = index[None, :] < count  # the last block's zero padding is not a column
        is_positive = index[None, :] == positive_index[:, None]
        logits = similarity_logits(rows, block, similarity, temperature)
        return logits, candidate & inside, negative & inside, is_positive

    @tf.custom_gradient
    def kernel(rows, columns):
        blocks, num_blocks = _padded_blocks(columns, block_size)
        lowest = tf.constant(MASKED_LOGIT, rows.dtype)
        masked = tf.fill([tf.shape(rows)[0]], lowest)

        def forward(i, running_max, running_sum, max_negative, positive):
            logits, candidate, negative, is_positive = block_logits(rows, blocks[i], i * block_size)
            new_max = tf.maximum(
                running_max, tf.reduce_max(tf.where(candidate, logits, lowest), axis=1)
            )
            exps = tf.where(candidate, tf.exp(logits - new_max[:, None]), tf.zeros_like(logits))
            running_sum = running_sum * tf.exp(running_max - new_max) + tf.reduce_sum(exps, 1)
            block_negative = tf.reduce_max(tf.where(negative, logits, lowest), axis=1)
            block_positive = tf.reduce_max(tf.where(is_positive, logits, lowest), axis=1)
            return (
                i + 1,
                new_max,
                running_sum,
                tf.maximum(max_negative, block_negative),
                tf.maximum(positive, block_positive),
            )

        _, running_max, running_sum, max_negative, positive = tf.while_loop(
            lambda i, *_: i < num_blocks,
            forward,
            (tf.constant(0), masked, tf.zeros_like(masked), masked, masked),
        )
        lse = running_max + tf.math.log(running_sum)

        def gradient(upstream_lse, upstream_margin):
            del upstream_margin  # for metrics: no gradient

            def backward(i, row_gradient, column_gradients):
                block = blocks[i]
                logits, candidate, _, _ = block_logits(rows, block, i * block_size)
                # d lse_r / d logit_rc = softmax over the row's candidates.
                weights = tf.where(candidate, tf.exp(logits - lse[:, None]), tf.zeros_like(logits))
                rows_part, block_gradient = _gradients(
                    upstream_lse,
                    weights,
                    tf.reduce_sum(weights, axis=1),
                    rows,
                    block,
                    similarity,
                    temperature,
                )
                return i + 1, row_gradient + rows_part, column_gradients.write(i, block_gradient)

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

        return (lse, tf.stop_gradient(positive - max_negative)), gradient

    return kernel(rows, columns)


def _padded_blocks(columns, block_size: int):
    """`[num_blocks, block_size, d]` blocks of `columns` (zero rows pad the last one)."""
    count = tf.shape(columns)[0]
    num_blocks = (count + block_size - 1) // block_size
    padding = num_blocks * block_size - count
    padded = tf.pad(columns, [[0, padding], [0, 0]])
    return tf.reshape(padded, [num_blocks, block_size, columns.shape[-1]]), num_blocks


__all__ = ["logsumexp_over_candidates", "similarity_logits"]
