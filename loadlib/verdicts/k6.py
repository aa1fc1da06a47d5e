"""k6 compatibility of the threshold grammar (docs/thresholds.md, "Coming from k6"): what k6's words mean here.

People bring k6 thresholds: its metric names (`http_req_duration`), its aggregation words for rates and counters
(`rate<0.01`), its per-threshold objects in a thresholds file (`{threshold, abortOnFail, delayAbortEval}`) and its
durations (`10s`, `1m30s`). k6's own names are refused (loadlib has other metrics, measured otherwise), but with
the loadlib word in the one-line refusal; the object form and durations are accepted. Pure.
"""

from __future__ import annotations

import re
from decimal import Decimal

# k6 metric -> what loadlib calls it (or why it has none), for the refusal of an unknown metric
METRIC_HINTS: dict[str, str] = {
    "http_req_duration": "in loadlib that is 'e2e' (k6's name)",
    "http_req_failed": "in loadlib that is 'error_rate' (k6's name)",
    "http_reqs": "in loadlib that is 'requests' (k6's name; per second: 'requests_per_s')",
    "http_req_waiting": "in loadlib that is 'ttfb' (k6's name; the first generated token is 'ttft')",
    "iterations": "in loadlib that is 'requests' (k6's name: loadlib counts requests, not iterations)",
    "iteration_duration": "loadlib judges requests, not iterations: the nearest is 'e2e' (k6's name)",
    "checks": "loadlib has no checks metric: judge the answers with 'schema_valid' or 'error_rate' (k6's name)",
}

# k6's aggregation word of a Rate or Counter metric, which loadlib's metrics of that kind imply
AGGREGATE_HINTS: dict[str, str] = {
    "rate": "k6's 'rate' is implied here: write 'METRIC OP NUMBER', e.g. 'error_rate < 1%'",
    "count": "k6's 'count' is implied here: write 'METRIC OP NUMBER', e.g. 'errors < 10'",
    "value": "k6's 'value' is implied here: write 'METRIC OP NUMBER'",
}

# the keys of k6's per-threshold object, {threshold: "p(95) < 200", abortOnFail: true, delayAbortEval: "10s"}
OBJECT_KEYS = ("threshold", "abortOnFail", "delayAbortEval")
_SNAKE = {"abort_on_fail": "abortOnFail", "delay_abort_eval": "delayAbortEval", "expression": "threshold"}

_UNIT_S = {"ms": Decimal("0.001"), "s": Decimal(1), "m": Decimal(60), "h": Decimal(3600)}
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h))+")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def duration_s(text: str) -> float | None:
    """k6's duration (`10s`, `500ms`, `1m30s`, `1.5h`) in seconds; None when it is not one. A bare number has no
    unit in k6's sense (milliseconds or seconds?), so it is not a duration here."""
    compact = text.strip()
    if not _DURATION.fullmatch(compact):
        return None
    return float(sum(Decimal(n) * _UNIT_S[u] for n, u in _PART.findall(compact)))


def key_hint(key: str) -> str:
    """The k6 spelling of a misspelt object key, '' when there is none."""
    fixed = _SNAKE.get(key) or next((k for k in OBJECT_KEYS if k.lower() == key.lower()), "")
    return f"k6 spells it {fixed!r}" if fixed else ""
