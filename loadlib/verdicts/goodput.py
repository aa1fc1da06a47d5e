"""Per-request SLOs and goodput: the share of requests that met every one of them (docs/thresholds.md, "Goodput").

Goodput in the sense of DistServe (OSDI '24): a request counts as good only when it succeeded and each of its own
latencies was within its bound, e.g. `ttft <= 500ms, tpot <= 50ms`. Unlike percentile thresholds, this judges every
request: 95 % good requests means 95 % of users were served within all bounds at once, which no combination of
per-metric percentiles says. Counted per attempt on the worker (loadlib.locust.parts.StatsPart), merged exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from loadlib.errors import ConfigError, ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.verdicts.thresholds import UNITS

BOUNDED = ("ttft", "ttfo", "ttfb", "tpot", "e2e")
_UNITS = UNITS["latency"]  # the threshold grammar's latency units: bare = ms
_BOUND = re.compile(r"\s*(?P<metric>[A-Za-z_]\w*)\s*(?P<op><=|<)\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>\w*)\s*")
_FLAG = "--llm-request-slo"
_EXAMPLE = "e.g. 'ttft <= 500ms, tpot <= 50ms'"


@dataclass(frozen=True, slots=True)
class RequestSLO:
    """Bounds as (record attribute, limit in ms, strict); `text` is the SLO as the user wrote it."""

    text: str
    bounds: tuple[tuple[str, float, bool], ...]

    def meets(self, r: RequestRecord) -> bool:
        """A successful attempt with every bounded latency within its bound. A missing latency fails its bound,
        except TPOT: an answer of one token has no time per output token to exceed."""
        if r.status is not ErrorClass.OK:
            return False
        for attr, limit, strict in self.bounds:
            v = getattr(r, attr)
            if v is None:
                if attr == "tpot_ms":
                    continue
                return False
            if v > limit or (strict and v == limit):
                return False
        return True


def parse_request_slo(text: str | None) -> RequestSLO | None:
    """`ttft <= 500ms, tpot < 50ms` (',' or ';' between bounds) to a RequestSLO; None when empty; ConfigError of one
    line on anything else."""
    items = [i for i in re.split(r"[,;]", text or "") if i.strip()]
    if not items:
        return None
    return RequestSLO(" and ".join(i.strip() for i in items), tuple(_bound(i) for i in items))


def _bound(item: str) -> tuple[str, float, bool]:
    m = _BOUND.fullmatch(item)
    if m is None:
        raise ConfigError(f"{_FLAG} {item.strip()!r}: write METRIC <= NUMBER[ms|s], {_EXAMPLE}")
    metric, unit = m["metric"].lower(), m["unit"]
    if metric not in BOUNDED:
        raise ConfigError(f"{_FLAG} {item.strip()!r}: unknown metric {metric!r}; valid: {', '.join(BOUNDED)}")
    if unit not in _UNITS:
        raise ConfigError(f"{_FLAG} {item.strip()!r}: unit {unit!r} is not ms or s")
    return f"{metric}_ms", float(Decimal(m["num"]) * _UNITS[unit]), m["op"] == "<"
