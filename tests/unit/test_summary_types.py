"""The summary's types (loadlib.metrics.summary_types) and its JSON schema name the same keys: a key the code adds
must be in both, so a reader of the file and a reader of the code see one contract."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loadlib.metrics.summary_types import Outcome, Row, Summary, ThresholdResult
from tests.support.checkout import ROOT

SCHEMA = json.loads((ROOT / "schemas" / "summary-v1.schema.json").read_text())


def keys(node: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(every property, the required ones) of a schema object."""
    return set(node.get("properties", {})), set(node.get("required", []))


@pytest.mark.parametrize(
    ("typed", "node"),
    [
        (Summary, SCHEMA),
        (Row, SCHEMA["$defs"]["row"]),
        (ThresholdResult, SCHEMA["$defs"]["threshold"]),
        (Outcome, SCHEMA["$defs"]["verdict"]),
    ],
    ids=["summary", "row", "threshold", "verdict"],
)
def test_the_types_and_the_schema_name_the_same_keys(typed: Any, node: dict[str, Any]) -> None:
    properties, required = keys(node)
    assert set(typed.__annotations__) == properties
    assert required <= typed.__required_keys__, "a key the schema requires is optional in the type"
