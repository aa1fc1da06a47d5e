"""The cache probe's results: per variation, how many requests the response cache answered, the share of the prompt
the provider's prompt cache held for the others, and the TTFT and cost saved against the round's cold first request;
then which variations bust which layer ("what busts the cache"). Counted as integer sums per variation (times in
microseconds, cost in nano-dollars), so workers merge exactly (docs/metrics.md, "Cache probe").

A response-cache hit is read from a gateway's headers; without any, from the whole answer (`Round`): a cache returns
a stored answer without decoding it, so its text repeats an earlier answer's and its events come at once. A TTFT
collapse alone proves nothing: a prompt-cache hit cuts the prefill as much, and its decode keeps its pace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loadlib.metrics.scenarios import ScenarioResults, Section, key, num, select
from loadlib.records.record import RequestRecord

NAME = "cache_probe"
WARMUP = "warmup"  # each round's first request: cold in every layer, the baseline of what is saved
NANO, MICRO = 1e9, 1e3
BUSTED_BELOW = 0.5  # a prompt-cache share under half the best variation's is a bust
INFER_BELOW = 0.1  # no cache header: a repeated answer whose events come under a tenth of the cold one's gap apart


HIT_VALUES = ("HIT", "STALE", "REVALIDATED")


def response_hit(headers: dict[str, str]) -> bool | None:
    """Whether a gateway's headers say its response cache answered; None when none of them is there."""
    if not any(h in headers for h in ("x-cache", "cf-cache-status", "x-litellm-cache-key")):
        return None
    values = (headers.get("x-cache", ""), headers.get("cf-cache-status", ""))
    return "x-litellm-cache-key" in headers or any(v.upper().startswith(HIT_VALUES) for v in values)


@dataclass(frozen=True, slots=True)
class Answer:
    """What the inference reads of one answer: its text's digest and its pace, the mean gap between its output
    events (0 for an answer in one event, None for none)."""

    digest: bytes
    gap_ms: float | None


def answer(text: str, record: RequestRecord) -> Answer | None:
    """The answer of a successful request; None without text (nothing to compare)."""
    if not text:
        return None
    events = record.output_events
    gap = record.stream_tpot_ms if events > 1 else (0.0 if events == 1 else None)
    return Answer(hashlib.blake2b(text.encode(), digest_size=16).digest(), gap)


@dataclass(slots=True)
class Round:
    """One round's answers so far (one user's, one after another): the cold answer's pace and every text seen."""

    cold_gap_ms: float | None = None
    texts: set[bytes] = field(default_factory=set)

    def replayed(self, seen: Answer) -> bool:
        """Whether a response cache gave this answer: its text is an earlier answer's of the round AND its events
        came under INFER_BELOW of the cold answer's gap apart (all at once). Identical text alone is a deterministic
        model's; a collapsed TTFT alone, a prompt-cache hit's."""
        cold = self.cold_gap_ms
        fast = cold is not None and cold > 0 and seen.gap_ms is not None and seen.gap_ms < cold * INFER_BELOW
        return fast and seen.digest in self.texts

    def add(self, seen: Answer, cold: bool) -> None:
        if cold and self.cold_gap_ms is None:
            self.cold_gap_ms = seen.gap_ms
        self.texts.add(seen.digest)


def count(r: ScenarioResults, variation: str, **n: float) -> None:
    for name, value in n.items():
        r.count(key(NAME, variation, name), round(value))


def gauge_changes(r: ScenarioResults, variation: str, changes: tuple[str, ...]) -> None:
    r.gauge(key(NAME, variation, "changes"), "+".join(changes))


def _by_variation(r: ScenarioResults) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (variation, name), n in select(r, NAME).items():
        out.setdefault(variation, {})[name] = n
    return out


def _mean(c: dict[str, int], total: str, n: str, scale: float) -> float | None:
    return c.get(total, 0) / c[n] / scale if c.get(n) else None


def _row(name: str, c: dict[str, int], base: dict[str, int], inferred: bool, changes: str) -> dict[str, Any]:
    hits = c.get("inferred_hits" if inferred else "response_hits", 0)
    whole = c.get("whole_prompt_tokens", 0)
    ttft, base_ttft = _mean(c, "ttft_us", "ttft_n", MICRO), _mean(base, "ttft_us", "ttft_n", MICRO)
    cost, base_cost = _mean(c, "cost_nusd", "costed", NANO), _mean(base, "cost_nusd", "costed", NANO)
    requests = c.get("requests", 0)
    return {
        "name": name,
        "changes": [p for p in changes.split("+") if p],
        "requests": requests,
        "answered": c.get("answered", 0),
        "response_cache_hits": hits,
        "prompt_cache_hit_share": round(c.get("cached_tokens", 0) / whole, 6) if whole else None,
        "ttft_saved_ms": round(base_ttft - ttft, 3) if ttft is not None and base_ttft is not None else None,
        "cost_saved_usd": round((base_cost - cost) * requests, 9) if cost is not None and base_cost else None,
    }


def _busts(rows: list[dict[str, Any]]) -> dict[str, list[str] | None]:
    """Which variations bust each layer; None for a layer the probe saw no sign of (the `none` variation's answers
    did not all come from the response cache; no variation that reached the model found anything in the prompt
    cache). Judged on answered requests: one the run's end cut off, or an error, is neither hit nor miss."""
    none = next((v for v in rows if v["name"] == "none"), None)
    response = None
    if none is not None and none["answered"] and none["response_cache_hits"] == none["answered"]:
        response = [v["name"] for v in rows if v["response_cache_hits"] < v["answered"]]
    shares = [v["prompt_cache_hit_share"] for v in rows if v["prompt_cache_hit_share"] is not None]
    best = max(shares, default=0.0)
    prompt = None
    if best > 0:
        prompt = [v["name"] for v in rows if (s := v["prompt_cache_hit_share"]) is not None and s < best * BUSTED_BELOW]
    return {"prompt_cache": prompt, "response_cache": response}


def summarize(r: ScenarioResults, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """`scenarios.cache_probe`: the variations in the order they were sent, and what busts each layer."""
    counts = _by_variation(r)
    base = counts.pop(WARMUP, {})
    if not counts:
        return None
    inferred = not any(c.get("header_seen") for c in [*counts.values(), base])
    order = [n for n in r.gauges.get(key(NAME, "order"), "").split(",") if n in counts]
    names = order + sorted(set(counts) - set(order))
    rows = [_row(n, counts[n], base, inferred, r.gauges.get(key(NAME, n, "changes"), "")) for n in names]
    return {
        "rounds": base.get("requests", 0),
        "response_cache_source": "inferred" if inferred else "header",
        "variations": rows,
        "busts": _busts(rows),
    }


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.1f} %"


def _verdict(name: str, busted: list[str] | None, measured: bool = True) -> str:
    """What the table says beside a figure: nothing for a layer not seen or a figure not measured."""
    return "" if busted is None or not measured else (" BUSTS" if name in busted else " kept")


def table_rows(section: dict[str, Any]) -> list[list[str]]:
    """The table's rows: one per variation."""
    busts = section["busts"]
    return [
        [
            v["name"],
            num(v["requests"]),
            num(v["response_cache_hits"]) + _verdict(v["name"], busts["response_cache"]),
            _pct(v["prompt_cache_hit_share"])
            + _verdict(v["name"], busts["prompt_cache"], v["prompt_cache_hit_share"] is not None),
            num(v["ttft_saved_ms"]),
            "-" if v["cost_saved_usd"] is None else f"{v['cost_saved_usd']:.6f}",
        ]
        for v in section["variations"]
    ]


TABLE_HEADER = [
    "variation",
    "requests",
    "response-cache hits",
    "prompt-cache hit share",
    "TTFT saved ms",
    "cost saved $",
]


def render(section: dict[str, Any]) -> list[str]:
    """The table "what busts the cache", then one line per layer."""
    rows = [TABLE_HEADER, *table_rows(section)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_HEADER))]
    lines = [f"cache probe: what busts the cache ({num(section['rounds'])} rounds)"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return lines + ["  " + line for line in verdicts(section)]


def verdicts(section: Mapping[str, Any]) -> list[str]:
    """One line per layer: what busts it, or that the probe saw no such cache."""
    prompt = section["busts"]["prompt_cache"]
    said = "no prompt cache seen" if prompt is None else f"busts the prompt cache: {', '.join(prompt) or 'nothing'}"
    return [_response_verdict(section), said]


def _response_verdict(section: Mapping[str, Any]) -> str:
    """What busts the response cache; "no response cache seen" when no request came from one; or why it is not
    judged (some did, but not every answer of `none`: a cache that forgets, or a guess that missed)."""
    busted = section["busts"]["response_cache"]
    inferred = section["response_cache_source"] == "inferred"
    if busted is not None:
        how = " (inferred from repeated answers sent all at once)" if inferred else ""
        return f"busts the response cache{how}: {', '.join(busted) or 'nothing'}"
    hits = sum(v["response_cache_hits"] for v in section["variations"])
    if not hits:
        return "no response cache seen" + (" (no cache header; no answer repeated at once)" if inferred else "")
    none = next((v for v in section["variations"] if v["name"] == "none"), None)
    if none is None:
        return f"the response cache is not judged: {hits} hits, and no `none` variation to judge against"
    got = f"`none` got {none['response_cache_hits']} of its {none['answered']} answers from it"
    return f"the response cache is not judged: {hits} hits, but {got}"


SECTION = Section(summarize, render)
