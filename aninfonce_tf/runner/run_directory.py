"""The run directory: claimed for one config, resumed from, written atomically.

A run directory holds `config.json`, `results.json`, a directory per variant
(`history.json`, `loss_curve.json`, `model.keras`, the exported `encoder/`), the
backups a killed run resumes from and the TensorBoard logs. Every file a resume reads
is replaced atomically (`aninfonce_tf.checkpoints`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import tensorflow as tf

from aninfonce_tf.checkpoints import (
    read_json,
    replace_atomically,
    replace_directory_atomically,
    write_json,
)
from aninfonce_tf.configs.base import EXECUTION_FIELDS, RunConfig
from aninfonce_tf.export import export_encoder
from aninfonce_tf.models import ContrastiveModel


def run_directory(out: str | None, name: str) -> Path:
    """`out`, or `runs/<name>-<time>` when unset."""
    path = Path(out) if out else Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def claim_run_directory(run_dir: Path, config: RunConfig) -> dict:
    """Checks that `run_dir` is new or holds a run of the same config and returns the
    results already saved there (resume). `config.json` is written once training
    starts (`run`), so that a run refused before it leaves none to refuse its rerun.

    Raises:
        ValueError: when `run_dir` holds a run of another config; a stale backup
            is never resumed silently.
    """
    config_path = run_dir / "config.json"
    if config_path.exists():
        saved = read_json(config_path)
        current = json.loads(json.dumps(config.resume_key()))
        saved = {k: v for k, v in saved.items() if k not in EXECUTION_FIELDS}
        differing = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
        if differing:
            changes = ", ".join(f"{k}: {saved.get(k)!r} -> {current.get(k)!r}" for k in differing)
            raise ValueError(
                f"{run_dir} holds a run of another config ({changes}); it would resume from "
                "stale checkpoints. Pass a new --out, or delete that directory to start over."
            )
    results_path = run_dir / "results.json"
    saved = read_json(results_path) if results_path.exists() else {}
    # A results.json written before the `run` / `variants` layout holds the variants
    # at its top level.
    return saved.get("variants", saved)


def points_until(path: Path, step: int) -> list[dict]:
    """The points of a history file up to `step` (none when there is no file)."""
    return [p for p in json.loads(path.read_text()) if p["step"] <= step] if path.exists() else []


def drop_events_after(log_dir: Path, step: int) -> None:
    """Removes from the TensorBoard event files in `log_dir` the summaries after `step`,
    which the run resumed there writes again (a file left without any is deleted)."""
    for path in sorted(log_dir.glob("events.out.tfevents.*")):
        records = []
        try:
            for record in tf.data.TFRecordDataset(str(path)):
                records.append(record.numpy())
        except tf.errors.DataLossError:
            pass  # a record torn by the kill: the ones before it stay
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


def save_variant(model: ContrastiveModel, variant_dir: Path, input_spec, export: bool) -> None:
    """`model.keras` and, with `export`, the encoder SavedModel and Lambda_hat, each
    replaced atomically."""
    replace_atomically(variant_dir / "model.keras", model.save)
    if export:
        replace_directory_atomically(
            variant_dir / "encoder", lambda directory: export_encoder(model, directory, input_spec)
        )


def finished(run_dir: Path, saved: dict, name: str) -> bool:
    """Saved with its model, or diverged (which saves none)."""
    return name in saved and ("stopped" in saved[name] or (run_dir / name / "model.keras").exists())


def write_config(run_dir: Path, config: RunConfig) -> None:
    """`config.json`, written once, when the first variant starts training: a run
    refused before then leaves none to refuse its rerun."""
    if not (run_dir / "config.json").exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(run_dir / "config.json", dataclasses.asdict(config))


def write_results(run_dir: Path, record: dict, results: dict) -> None:
    """`results.json`: the `run` record and the results of the variants so far."""
    write_json(run_dir / "results.json", {"run": record, "variants": results})


__all__ = [
    "claim_run_directory",
    "drop_events_after",
    "finished",
    "points_until",
    "run_directory",
    "save_variant",
    "write_config",
    "write_results",
]
