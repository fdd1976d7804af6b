"""The memory a setting needs, estimated before anything is built and refused, naming
the fix, where it cannot fit. Details: docs/runner.md#checks-before-and-during-training"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

# The most elements of a tensor whose shape TensorFlow's int32 ops count (the latents'
# draws, `latent_distributions.standard_normal`).
MAX_ELEMENTS = 2**31 - 1
# The largest global batch: the loss indexes its 2 x batch rows with int32.
MAX_BATCH_SIZE = MAX_ELEMENTS // 2
# Copies of the loss's [rows, candidates] float32 logits alive at once: the logits,
# their exponentials, the mask and the gradient.
LOGIT_COPIES = 4
# Copies of each trained float32 value: the weight, its gradient and Adam's two moments.
STATE_COPIES = 4
FLOAT_BYTES = 4
# Copies of a held-out image set a run holds: the array and the tensors made of it.
IMAGE_SET_COPIES = 2
# A container's memory limit under cgroup v2.
CGROUP_MEMORY_LIMIT = "/sys/fs/cgroup/memory.max"


def physical_memory() -> int | None:
    """The host memory this process may use in bytes (a cgroup limit when lower; None: unknown)."""
    limits = []
    with contextlib.suppress(AttributeError, OSError, ValueError):  # not POSIX
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    with contextlib.suppress(OSError, ValueError):  # no limit ("max"), or no cgroup v2
        limits.append(int(Path(CGROUP_MEMORY_LIMIT).read_text().strip()))
    return min(limits) if limits else None


def loss_bytes(batch_size: int, block_size: int = 0) -> int:
    """Bytes of the contrastive loss of `batch_size` pairs (dense, or in `block_size` blocks).

    Example:

    >>> f"{loss_bytes(100_000) / 1e9:.0f} GB dense, {loss_bytes(100_000, 1024) / 1e9:.1f} GB in blocks"
    '640 GB dense, 3.3 GB in blocks'
    """
    rows = 2 * batch_size
    return LOGIT_COPIES * rows * min(block_size or rows, rows) * FLOAT_BYTES


def embedding_bytes(batch_size: int, inputs: int, width: int) -> int:
    """Bytes of the layer mapping `inputs` features to `width` dimensions and of 2B embeddings.

    Example:

    >>> f"{embedding_bytes(128, 100, 10**8) / 1e9:.0f} GB"
    '571 GB'
    """
    weights = STATE_COPIES * (inputs + 1) * width
    return (weights + LOGIT_COPIES * 2 * batch_size * width) * FLOAT_BYTES


@dataclasses.dataclass(frozen=True)
class Allocation:
    """Memory a run takes whole: `nbytes` (an estimate) for `what`, and the `fix`.

    Example:

    >>> Allocation(2 * 10**9, "`eval_size` 10000000", "pass a smaller --eval-size").nbytes
    2000000000
    """

    nbytes: int
    what: str
    fix: str


def image_set(count: int, side: int, channels: int, field: str) -> Allocation:
    """`count` float32 images a run holds whole (a held-out set sized by `field`).

    Example:

    >>> image_set(10**6, 32, 3, "eval_size").nbytes / 1e9
    24.576
    """
    return Allocation(
        IMAGE_SET_COPIES * count * side * side * channels * FLOAT_BYTES,
        f"`{field}` {count} ({side} x {side} x {channels} float32 images held whole)",
        f"pass a smaller --{field.replace('_', '-')}",
    )


def check_allocations(allocations: Sequence[Allocation], memory: int | None = None) -> None:
    """Raises `ValueError` naming the largest of `allocations` if together they exceed memory.

    Example:

    >>> check_allocations([Allocation(60 * 10**9, "`generator_draws` 10**8", "pass fewer"),
    ...                    Allocation(10**9, "`eval_size` 10**6", "pass a smaller one")],
    ...                   memory=16 * 10**9)
    Traceback (most recent call last):
    ...
    ValueError: `generator_draws` 10**8 needs about 60.0 GB of memory (with the rest of the run, 61.0 GB) and this machine has 16.0 GB: pass fewer.
    """
    largest = max(allocations, key=lambda allocation: allocation.nbytes)
    total = sum(allocation.nbytes for allocation in allocations)
    check_fits(largest.nbytes, largest.what, largest.fix, memory, total)


def largest_block_that_fits(batch_size: int, memory: int) -> int | None:
    """The largest power-of-two `--loss-block-size` taking at most half of `memory`, or None."""
    block = 1
    if loss_bytes(batch_size, block) > memory // 2:
        return None
    while block * 2 < 2 * batch_size and loss_bytes(batch_size, block * 2) <= memory // 2:
        block *= 2
    return block


def check_fits(
    needed: int, what: str, fix: str, memory: int | None = None, total: int | None = None
) -> None:
    """Raises `ValueError` when `needed` bytes (or the run's `total`) exceed `memory`.

    Args:
        needed: the estimate, in bytes.
        what: what needs them, e.g. "`batch_size` 100000 (the dense loss)".
        fix: what to do instead, e.g. "pass a smaller --batch-size".
        memory: the machine's memory in bytes (default `physical_memory()`).
        total: the bytes of everything held with `what` (default: `needed`).

    Example:

    >>> check_fits(64 * 2**30, "`embedding_dim` 100000000", "pass a smaller --embedding-dim",
    ...            memory=16 * 2**30)
    Traceback (most recent call last):
    ...
    ValueError: `embedding_dim` 100000000 needs about 68.7 GB of memory and this machine has 17.2 GB: pass a smaller --embedding-dim.
    """
    memory = physical_memory() if memory is None else memory
    total = needed if total is None else total
    if memory is not None and total > memory:
        rest = f"{total / 1e9:.1f}"
        whole = f" (with the rest of the run, {rest} GB)" if rest != f"{needed / 1e9:.1f}" else ""
        raise ValueError(
            f"{what} needs about {needed / 1e9:.1f} GB of memory{whole} and this machine has "
            f"{memory / 1e9:.1f} GB: {fix}."
        )


def check_loss(batch_size: int, block_size: int = 0, blockwise: bool = True) -> None:
    """Raises `ValueError` for a batch whose loss int32 cannot index or memory cannot hold.

    Example:

    >>> check_loss(2**31)
    Traceback (most recent call last):
    ...
    ValueError: `batch_size` must be at most 1073741823 (TensorFlow indexes the loss's 2 x batch_size rows with int32); got 2147483648.
    """
    if batch_size > MAX_BATCH_SIZE:
        raise ValueError(
            f"`batch_size` must be at most {MAX_BATCH_SIZE} (TensorFlow indexes the loss's "
            f"2 x batch_size rows with int32); got {batch_size}."
        )
    available = physical_memory()
    if available is None:
        return
    block = largest_block_that_fits(batch_size, available) if blockwise else None
    how = f"blocks of {block_size}" if block_size else "the dense loss"
    check_fits(
        loss_bytes(batch_size, block_size),
        f"`batch_size` {batch_size} ({how}: {LOGIT_COPIES} copies of its 2B x candidates "
        "float32 logits)",
        (f"pass --loss-block-size {block} (the blockwise loss), or " if block else "")
        + "a smaller --batch-size",
        available,
    )


__all__ = [
    "Allocation",
    "LOGIT_COPIES",
    "MAX_BATCH_SIZE",
    "MAX_ELEMENTS",
    "STATE_COPIES",
    "FLOAT_BYTES",
    "IMAGE_SET_COPIES",
    "check_allocations",
    "check_fits",
    "check_loss",
    "embedding_bytes",
    "image_set",
    "largest_block_that_fits",
    "loss_bytes",
    "physical_memory",
]
