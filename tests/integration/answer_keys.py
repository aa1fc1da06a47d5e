"""The batching mock's answer key (`GET /mock/capacity`, docs/mock.md) for the capacity checks."""

from __future__ import annotations

import json
import urllib.request
from typing import Any


def answer_key(url: str, query: str) -> dict[str, Any]:
    """The key for `query` (asked after a run: the run's prompts set its mean prompt)."""
    with urllib.request.urlopen(f"{url}/mock/capacity?{query}", timeout=120) as r:
        found: dict[str, Any] = json.loads(r.read())
    return found
