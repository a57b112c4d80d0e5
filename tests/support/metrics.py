"""Checking metrics output: the snapshot against its JSON Schema, Prometheus text parsed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from prometheus_client.parser import text_string_to_metric_families

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "metrics.schema.json"
_validator = jsonschema.Draft202012Validator(
    json.loads(SCHEMA_PATH.read_text()), format_checker=jsonschema.FormatChecker()
)


def validate_snapshot(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Validate ``snapshot`` (after a JSON round trip, as a reader gets it); return it."""
    wire = json.loads(json.dumps(snapshot))
    errors = sorted(_validator.iter_errors(wire), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
    return wire


def prometheus_samples(text: bytes) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Parsed Prometheus text: sample name -> {sorted label items: value}."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def labels(**kw: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(kw.items()))
