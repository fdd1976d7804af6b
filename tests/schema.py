"""The layout of a run's `results.json`, as a JSON Schema, and its validator.

    {
      "run": {                      # what ran, where and when (`runner.report.run_record`)
        "preset": "quick", "smoke": false, "seed": 0, "date": "2026-11-27T03:05:55+00:00",
        "versions": {"aninfonce_tf": "0.1.0", "tensorflow": "2.21.0", "keras": "3.15.1",
                     "numpy": "2.4.6", "python": "3.11.7"},
        "config": {...every field of the config...},
        "endpoint": {"step": 2000, "scores": ["mcc", ...]},  # fixed before the run
        "true_concentration": [...] # and the experiment's other metadata
      },
      "variants": {                 # one entry per finished loss variant, in training order
        "aninfonce": {
          "linear_r2": 0.995, "block_r2": {"high": 0.99, "low": 0.99}, ...,  # final scores
          "steps": 2000, "wall_seconds": 36.1, "final_loss": 3.1,
          "curve": [{"step": 500, "seconds": 9.2, "linear_r2": 0.9, ...}, ...],
          "loss_curve": [{"step": 50, "loss": 3.9}, ...],
          "target_reached": {"step": 1500, "seconds": 27.0},   # with --stop-at
          "stopped": "non-finite loss by step 26"               # when it diverged
        }
      },
      "null_values": {...}          # only when a value was NaN or infinite
    }

A score is a number, a list of numbers (`lambda_hat`, `linear_r2_per_latent`) or a
dict of scores (`block_r2`, `backbone`); JSON has no NaN or infinity, so such a value
is written as null and listed in `null_values` (`checkpoints.write_json`, which
`checkpoints.read_json` reverses). docs/results.md describes every entry.

Example:

>>> validate_results({"run": {"preset": None, "smoke": False, "seed": 0,
...     "date": "2026-11-27T03:05:55+00:00", "versions": {"aninfonce_tf": "0.1.0",
...     "tensorflow": "2.21.0", "keras": "3.15.1", "numpy": "2.4.6", "python": "3.11"},
...     "config": {"losses": "infonce", "steps": 2, "seed": 0}},
...     "variants": {"aninfonce": {"steps": 2, "wall_seconds": 1.0, "final_loss": 3.0,
...     "curve": [], "loss_curve": []}}})
Traceback (most recent call last):
...
ValueError: results.json does not follow its schema: variants: 'aninfonce' is not one of the config's losses ['infonce']
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from aninfonce_tf.configs.base import split_list

_NUMBER = {"type": ["number", "null"]}
_POINTS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["step"],
        "properties": {"step": {"type": "integer", "minimum": 1}},
    },
}

RESULTS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "results.json of an aninfonce_tf run",
    "type": "object",
    "required": ["run", "variants"],
    "additionalProperties": False,
    "properties": {
        "run": {
            "description": "What ran, where and when; the experiment's metadata beside.",
            "type": "object",
            "required": ["preset", "smoke", "seed", "date", "versions", "config"],
            "properties": {
                "preset": {"type": ["string", "null"]},
                "smoke": {"type": "boolean"},
                "seed": {"type": "integer"},
                "date": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"},
                "versions": {
                    "type": "object",
                    "required": ["aninfonce_tf", "tensorflow", "keras", "numpy", "python"],
                    "additionalProperties": {"type": "string"},
                },
                "config": {
                    "type": "object",
                    "required": ["losses", "steps", "seed"],
                    "properties": {
                        "losses": {"type": "string"},
                        "steps": {"type": "integer", "minimum": 1},
                        "seed": {"type": "integer"},
                    },
                },
                "endpoint": {
                    "description": "The step and scores the conclusions rest on.",
                    "type": "object",
                    "required": ["step", "scores"],
                    "properties": {
                        "step": {"type": "integer", "minimum": 1},
                        "scores": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "true_concentration": {"type": "array", "items": _NUMBER},
            },
        },
        "variants": {
            "description": "Per finished loss variant its final scores and how it ran.",
            "type": "object",
            "additionalProperties": {"$ref": "#/$defs/variant"},
        },
        "null_values": {
            "description": "The values that were NaN or infinite, by JSON pointer.",
            "type": "object",
            "required": ["note", "values"],
            "properties": {
                "note": {"type": "string"},
                "values": {
                    "type": "object",
                    "additionalProperties": {"enum": ["NaN", "Infinity", "-Infinity"]},
                },
            },
        },
    },
    "$defs": {
        "score": {
            "type": ["number", "null", "array", "object"],
            "items": {"$ref": "#/$defs/score"},
            "additionalProperties": {"$ref": "#/$defs/score"},
        },
        "variant": {
            "type": "object",
            "required": ["steps", "wall_seconds", "final_loss", "curve", "loss_curve"],
            "properties": {
                "steps": {"type": "integer", "minimum": 0},
                "wall_seconds": {"type": "number", "minimum": 0},
                "final_loss": _NUMBER,
                "curve": {
                    **_POINTS,
                    "items": {
                        **_POINTS["items"],
                        "required": ["step", "seconds"],
                        "additionalProperties": {"$ref": "#/$defs/score"},
                    },
                },
                "loss_curve": {
                    **_POINTS,
                    "items": {
                        **_POINTS["items"],
                        "required": ["step", "loss"],
                        "properties": {**_POINTS["items"]["properties"], "loss": _NUMBER},
                        "additionalProperties": False,
                    },
                },
                "target_reached": {
                    "type": ["object", "null"],
                    "required": ["step", "seconds"],
                    "properties": {
                        "step": {"type": "integer", "minimum": 0},
                        "seconds": {"type": "number"},
                    },
                },
                "stopped": {"type": "string"},
                "lambda_hat": {"type": "array", "items": _NUMBER},
            },
            "additionalProperties": {"$ref": "#/$defs/score"},
        },
    },
}


def validate_results(results: Mapping | str | Path) -> None:
    """Checks a `results.json` (its path, or its parsed JSON) against `RESULTS_SCHEMA`
    and what the schema cannot say: each variant is one of the config's `losses`,
    its curves' steps rise and stay within its `steps`, and its matched Lambda_hat
    has a value per true Lambda. Needs the `jsonschema` package.

    Raises:
        ValueError: listing every place where `results` departs from the layout.
    """
    import jsonschema

    if not isinstance(results, Mapping):
        results = json.loads(Path(results).read_text())
    validator = jsonschema.Draft202012Validator(RESULTS_SCHEMA)
    problems = [
        f"{'/'.join(map(str, error.absolute_path)) or 'the document'}: {error.message}"
        for error in validator.iter_errors(results)
    ]
    if not problems:
        problems = _inconsistencies(results)
    if problems:
        raise ValueError("results.json does not follow its schema: " + "; ".join(problems))


def _inconsistencies(results: Mapping) -> list[str]:
    run = results["run"]
    losses = split_list(run["config"]["losses"])
    problems = []
    for name, variant in results["variants"].items():
        where = f"variants/{name}"
        if name not in losses:
            problems.append(f"variants: {name!r} is not one of the config's losses {losses}")
        for key in ("curve", "loss_curve"):
            steps = [point["step"] for point in variant[key]]
            if steps != sorted(set(steps)) or any(s > variant["steps"] for s in steps):
                problems.append(
                    f"{where}/{key}: steps {steps} do not rise within {variant['steps']} steps"
                )
        matched, true = variant.get("lambda_hat_matched"), run.get("true_concentration")
        if matched is not None and true is not None and len(matched) != len(true):
            problems.append(
                f"{where}/lambda_hat_matched: {len(matched)} values for {len(true)} latents"
            )
    return problems


__all__ = ["RESULTS_SCHEMA", "validate_results"]
