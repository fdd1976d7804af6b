"""TensorBoard's event files of a resumed run, the summaries after its step dropped."""

from __future__ import annotations

from pathlib import Path

import tensorflow as tf

from aninfonce_tf.checkpoints import replace_atomically


def drop_events_after(log_dir: Path, step: int, aside: Path) -> None:
    """Removes the summaries after `step` from the event files in `log_dir` (unreadable
    files: moved to `aside`)."""
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        records = []
        try:
            for record in tf.data.TFRecordDataset(str(path)):
                records.append(record.numpy())
        except tf.errors.DataLossError:  # a record torn by the kill: the ones before it stay
            if not records:
                aside.mkdir(parents=True, exist_ok=True)
                path.rename(aside / path.name)
                print(f"   {path}: its first record does not read; kept aside in {aside}")
                continue
        events = [tf.compat.v1.Event.FromString(record) for record in records]
        kept = [r for r, e in zip(records, events, strict=True) if e.step <= step]
        if not any(e.summary.value and e.step <= step for e in events):
            path.unlink()
        elif len(kept) < len(records):

            def write(temporary: Path, kept=kept) -> None:
                with tf.io.TFRecordWriter(str(temporary)) as writer:
                    for record in kept:
                        writer.write(record)

            replace_atomically(path, write)


__all__ = ["drop_events_after"]
