"""The cache probe's results: per variation, how many requests the response cache answered, the share of the prompt
the provider's prompt cache held for the others, and the TTFT and cost saved against the round's cold first request;
then which variations bust which layer ("what busts the cache"). Counted as integer sums per variation (times in
microseconds, cost in nano-dollars), so workers merge exactly (docs/metrics.md, "Cache probe").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadlib.metrics.scenarios import ScenarioResults, Section, key, num, select

NAME = "cache_probe"
WARMUP = "warmup"  # each round's first request: cold in every layer, the baseline of what is saved
NANO, MICRO = 1e9, 1e3
BUSTED_BELOW = 0.5  # a prompt-cache share under half the best variation's is a bust


HIT_VALUES = ("HIT", "STALE", "REVALIDATED")


def response_hit(headers: dict[str, str]) -> bool | None:
    """Whether a gateway's headers say its response cache answered; None when none of them is there."""
    if not any(h in headers for h in ("x-cache", "cf-cache-status", "x-litellm-cache-key")):
        return None
    values = (headers.get("x-cache", ""), headers.get("cf-cache-status", ""))
    return "x-litellm-cache-key" in headers or any(v.upper().startswith(HIT_VALUES) for v in values)


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
    source = " (inferred from TTFT collapse)" if section["response_cache_source"] == "inferred" else ""
    for layer, label in (("response_cache", f"response cache{source}"), ("prompt_cache", "prompt cache")):
        busted = section["busts"][layer]
        said = "not seen" if busted is None else (", ".join(busted) or "nothing")
        lines.append(f"  busts the {label}: {said}")
    return lines


SECTION = Section(summarize, render)
