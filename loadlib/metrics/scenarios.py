"""Scenario-specific results: what a scenario found beyond latency (turn growth, context outcomes, overlap cost,
schema validity, determinism, audit files, open-loop rate), merged across workers like the LLM statistics.

Each node counts into one `ScenarioResults` (flat string keys, mergeable histograms), shipped with worker reports and
merged on the master by the scenario node part (loadlib.locust.scenario_part); at the end `scenario_summary` turns
the keys into one dict per scenario (their SLOs are thresholds: loadlib.verdicts.slo) and `render_scenarios` gives the
short block after the LLM table. Scenario users record through the small functions below, so the key scheme lives
here only.
"""

from __future__ import annotations

from typing import Any

from loadlib.metrics.histogram import Histogram

SEP = "|"
MAX_ROWS = 50  # turns, sweep steps or probe steps shown per scenario


class ScenarioResults:
    """Counters, histograms and gauges of one node. Counters and histograms ship and reset with every worker
    report; gauges (configuration facts such as a worker's target rate) ship every time and are never reset."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.hists: dict[str, Histogram] = {}
        self.gauges: dict[str, Any] = {}

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def observe(self, key: str, value: float) -> None:
        h = self.hists.get(key)
        if h is None:
            h = self.hists[key] = Histogram()
        h.record(value)

    def gauge(self, key: str, value: Any) -> None:
        self.gauges[key] = value

    def serialize(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "hists": {k: h.to_dict() for k, h in self.hists.items()},
            "gauges": dict(self.gauges),
        }

    def reset(self) -> None:
        self.counts = {}
        self.hists = {}

    def merge_serialized(self, data: dict[str, Any]) -> None:
        for k, n in (data.get("counts") or {}).items():
            self.count(k, int(n))
        for k, hd in (data.get("hists") or {}).items():
            h = Histogram.from_dict(hd)
            if k in self.hists:
                self.hists[k].merge(h)
            else:
                self.hists[k] = h
        self.gauges.update(data.get("gauges") or {})

    @property
    def empty(self) -> bool:
        return not (self.counts or self.hists or self.gauges)


def key(*parts: Any) -> str:
    return SEP.join(str(p) for p in parts)


# recording (called by the scenario users)


def chat_turn(
    r: ScenarioResults, turn: int, prompt_tokens: int | None, ttft_ms: float | None, step: int | None
) -> None:
    """One support-chat request: its turn, prompt size and TTFT (successful requests carry a TTFT)."""
    r.count(key("support_chat", "turn", turn))
    if prompt_tokens is not None:
        r.observe(key("support_chat", "turn_prompt", turn), prompt_tokens)
    if ttft_ms is not None:
        r.observe(key("support_chat", "turn_ttft", turn), ttft_ms)
        if step is not None:
            r.observe(key("support_chat", "sweep_ttft", step), ttft_ms)
    if step is not None:
        r.count(key("support_chat", "sweep", step))


def conversation(r: ScenarioResults, event: str) -> None:
    """`started`, `completed` (every turn answered) or `abandoned` (a turn failed)."""
    r.count(key("support_chat", "conversations", event))


def document_outcome(r: ScenarioResults, mode: str, outcome: str) -> None:
    """A whole-document or probe request: fits, context_length_exceeded, truncated, unverified or error."""
    r.count(key("long_document", mode, outcome))


def document_checks(
    r: ScenarioResults,
    mode: str,
    canary: str | None,
    billing: str | None,
    counted: str | None = None,
    billed_pct: float | None = None,
) -> None:
    """What each truncation check said of one answered request (None: that check could not tell), and how the
    server's prompt count stood to ours (`short` or `whole`; None without usage), which tells a server that billed
    what it kept from usage counted as sent. `billed_pct` (billed / sent) is kept for an unquoted answer billed short
    but not short enough for the billing check, so the console can say how much the server kept."""
    r.count(key("long_document", "checks", mode, canary or "none", billing or "none", counted or "none"))
    if canary == "missing" and billing == "fits" and counted == "short" and billed_pct is not None:
        r.observe(key("long_document", "short_billed_pct"), billed_pct)


def chunked_document(
    r: ScenarioResults, document_tokens: int, chunk_tokens: int, prompt_tokens: int, chunks: int, ok: bool
) -> None:
    """A map-reduce summary: document tokens vs. chunk tokens sent (overlap included) and all prompt tokens."""
    r.count(key("long_document", "chunked", "documents"))
    r.count(key("long_document", "chunked", "completed" if ok else "failed"))
    r.count(key("long_document", "chunked", "document_tokens"), document_tokens)
    r.count(key("long_document", "chunked", "chunk_tokens"), chunk_tokens)
    r.count(key("long_document", "chunked", "prompt_tokens"), prompt_tokens)
    r.count(key("long_document", "chunked", "chunks"), chunks)


def probe_step(r: ScenarioResults, tokens: int, outcome: str, billed: int | None) -> None:
    """A probe request of `tokens` prompt tokens; `billed` is the server's count (a truncating server stops
    billing more than its real window, which shows as the largest billed count)."""
    r.count(key("long_document", "probe_step", tokens, outcome))
    if billed is not None:
        r.observe(key("long_document", "probe_billed"), billed)


def compliance_check(r: ScenarioResults, valid: bool) -> None:
    r.count(key("compliance", "schema", "valid" if valid else "invalid"))


def compliance_compare(r: ScenarioResults, matched: bool) -> None:
    r.count(key("compliance", "compare", "matched" if matched else "differed"))


def audit_written(r: ScenarioResults, path: str) -> None:
    r.count(key("compliance", "audit", path))


def open_loop_config(r: ScenarioResults, worker: str, target_rps: float, process: str) -> None:
    r.gauge(key("open_loop", "target", worker), target_rps)
    r.gauge(key("open_loop", "process"), process)


def open_loop_sent(r: ScenarioResults) -> None:
    r.count(key("open_loop", "sent"))


# summary


def _select(r: ScenarioResults, *prefix: str) -> dict[tuple[str, ...], Any]:
    """Counts whose key starts with `prefix`, keyed by the remaining parts."""
    head = key(*prefix) + SEP
    return {tuple(k[len(head) :].split(SEP)): v for k, v in r.counts.items() if k.startswith(head)}


def _hist(r: ScenarioResults, *parts: Any) -> Histogram:
    return r.hists.get(key(*parts)) or Histogram()


def _p(h: Histogram, q: int) -> float | None:
    v = h.percentile(q)
    return round(v, 3) if v is not None else None


def _most(counts: dict[str, int]) -> str:
    """The key counted most (the first of a tie, as max keeps it)."""
    return max(counts, key=lambda k: counts[k])


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def _support_chat(r: ScenarioResults) -> dict[str, Any] | None:
    turns = _select(r, "support_chat", "turn")
    if not turns:
        return None
    by_turn = []
    for (turn,), n in sorted(turns.items(), key=lambda kv: int(kv[0][0]))[:MAX_ROWS]:
        prompt = _hist(r, "support_chat", "turn_prompt", turn)
        ttft = _hist(r, "support_chat", "turn_ttft", turn)
        by_turn.append(
            {
                "turn": int(turn),
                "requests": n,
                "prompt_tokens_mean": round(prompt.mean, 1) if prompt.mean is not None else None,
                "ttft_p50_ms": _p(ttft, 50),
                "ttft_p95_ms": _p(ttft, 95),
            }
        )
    sweep = []
    for (step,), n in sorted(_select(r, "support_chat", "sweep").items(), key=lambda kv: int(kv[0][0]))[:MAX_ROWS]:
        ttft = _hist(r, "support_chat", "sweep_ttft", step)
        sweep.append(
            {"system_tokens": int(step), "requests": n, "ttft_p50_ms": _p(ttft, 50), "ttft_p95_ms": _p(ttft, 95)}
        )
    convs = {k[0]: v for k, v in _select(r, "support_chat", "conversations").items()}
    first, last = by_turn[0], by_turn[-1]
    growth = None
    if first["prompt_tokens_mean"] is not None and last["prompt_tokens_mean"] is not None and len(by_turn) > 1:
        growth = round((last["prompt_tokens_mean"] - first["prompt_tokens_mean"]) / (last["turn"] - first["turn"]), 1)
    return {
        "conversations": convs,
        "turns": by_turn,
        "prompt_tokens_per_turn": growth,
        "sweep": sweep or None,
    }


_WHOLE = ("fits", "context_length_exceeded", "truncated", "unverified", "error")


def _long_document(r: ScenarioResults) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    whole = {k[0]: v for k, v in _select(r, "long_document", "whole").items()}
    if whole:
        out["whole"] = {name: whole.get(name, 0) for name in _WHOLE}
    chunked = {k[0]: v for k, v in _select(r, "long_document", "chunked").items()}
    if chunked:
        doc = chunked.get("document_tokens", 0)
        sent = chunked.get("chunk_tokens", 0)
        prompt = chunked.get("prompt_tokens", 0)
        out["chunked"] = {
            "documents": chunked.get("documents", 0),
            "completed": chunked.get("completed", 0),
            "chunks": chunked.get("chunks", 0),
            "document_tokens": doc,
            "chunk_tokens_sent": sent,
            "overlap_overhead_pct": round((sent - doc) / doc * 100.0, 3) if doc else None,
            "prompt_tokens_sent": prompt,
            "prompt_overhead_pct": round((prompt - doc) / doc * 100.0, 3) if doc else None,
        }
    checks = _select(r, "long_document", "checks")
    if checks:
        out["checks"] = _truncation_checks(checks, _hist(r, "long_document", "short_billed_pct"))
    probe = _select(r, "long_document", "probe_step")
    if probe:
        steps: dict[int, dict[str, int]] = {}
        for (tokens, outcome), n in probe.items():
            steps.setdefault(int(tokens), {})[outcome] = n
        fits = [t for t, o in steps.items() if set(o) <= {"fits"}]
        failed = {t: o for t, o in steps.items() if "context_length_exceeded" in o or "truncated" in o}
        smallest = min(failed) if failed else None
        out["probe"] = {
            "steps": [{"prompt_tokens": t, "outcomes": steps[t]} for t in sorted(steps)][:MAX_ROWS],
            "largest_fit": max(fits) if fits else None,
            "smallest_failure": smallest,
            "failure": _most(failed[smallest]) if smallest is not None else None,
            "largest_billed": int(billed.max) if (billed := _hist(r, "long_document", "probe_billed")).count else None,
        }
    return out or None


_DISAGREE = (("quoted", "truncated"), ("missing", "fits"))


def _truncation_checks(checks: dict[tuple[str, ...], int], short_pct: Histogram) -> dict[str, Any]:
    """Both checks' counts over answered requests, which one decided how often, where they disagreed, and for the
    unquoted answers billing let pass, whether the server counted the prompt short (it billed what it kept) or whole
    (the usage counted the prompt as sent)."""
    canary = {"quoted": 0, "missing": 0}
    billing = {"fits": 0, "truncated": 0, "unverified": 0}
    decided = {"canary": 0, "billing": 0}
    missing_fits = {"counted_short": 0, "counted_whole": 0}
    disagree = quoted_truncated = 0
    for (_, seen, billed, *rest), n in checks.items():
        if seen in canary:
            canary[seen] += n
            decided["canary"] += n
        elif billed in ("fits", "truncated"):
            decided["billing"] += n
        if billed in billing:
            billing[billed] += n
        disagree += n if (seen, billed) in _DISAGREE else 0
        quoted_truncated += n if (seen, billed) == ("quoted", "truncated") else 0
        if (seen, billed) == ("missing", "fits"):
            missing_fits["counted_short" if rest[:1] == ["short"] else "counted_whole"] += n
    return {
        "canary": canary,
        "billing": billing,
        "decided_by": decided,
        "disagree": disagree,
        "missing_fits": {**missing_fits, "short_billed_pct": _range(short_pct)},
        "quoted_truncated": quoted_truncated,
    }


def _range(h: Histogram) -> dict[str, float] | None:
    return {"min": round(h.min, 1), "max": round(h.max, 1)} if h.count else None


def _checks_line(c: dict[str, Any]) -> str:
    canary, billing, decided = c["canary"], c["billing"], c["decided_by"]
    line = (
        f"long_document truncation checks: canary quoted {_n(canary['quoted'])}, missing {_n(canary['missing'])}; "
        f"billing fits {_n(billing['fits'])}, truncated {_n(billing['truncated'])}, "
        f"no usage {_n(billing['unverified'])}; decided by the canary on {_n(decided['canary'])} requests, by "
        f"billing on {_n(decided['billing'])}"
    )
    return line + (f"; the two disagree on {_n(c['disagree'])}" if c["disagree"] else "")


UNQUOTED = "{n} of {of} answers did not quote the document's reference code"


def truncation_hints(c: dict[str, Any]) -> list[str]:
    """What the checks' disagreements show, one sentence each, saying only what the counts support. An unquoted
    answer billed as fitting is a truncation the usage did not see, or a model that will not quote: only answers
    that did quote tell the two apart (the model quotes, so the misses are cuts), so without any the hint says how
    to tell and never advises turning off the one check that saw a problem. A prompt counted short is the server
    billing what it kept, never a gateway's count (docs/scenarios.md, "Truncation checks")."""
    canary, mf = c["canary"], c.get("missing_fits") or {}
    of = canary["quoted"] + canary["missing"]
    out = []
    if mf.get("counted_short"):
        out.append(_short_hint(mf["counted_short"], of, mf.get("short_billed_pct")))
    if mf.get("counted_whole"):
        out.append(_whole_hint(mf["counted_whole"], of, canary["quoted"]))
    if c.get("quoted_truncated"):
        out.append(
            f"{_n(c['quoted_truncated'])} answers quoted the reference code though billing said truncated: the end of "
            "the document reached the model; the server counts fewer prompt tokens than our tokenizer, or dropped "
            "part of the middle"
        )
    return out


def _short_hint(n: int, of: int, pct: dict[str, float] | None) -> str:
    kept = f" ({_pct_range(pct)} of them)" if pct else ""
    return (
        f"{UNQUOTED.format(n=_n(n), of=_n(of))} and the server counted fewer prompt tokens than were sent{kept}, "
        "within --doc-truncation-ratio: the server most likely kept only part of the document and billed what it kept"
    )


def _pct_range(pct: dict[str, float]) -> str:
    lo, hi = pct["min"], pct["max"]
    return f"{lo:.0f} %" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} %"


def _whole_hint(n: int, of: int, quoted: int) -> str:
    head = f"{UNQUOTED.format(n=_n(n), of=_n(of))} while usage said the prompt fit"
    if quoted:
        return (
            f"{head}: the end of the document most likely never reached the model; other answers quoted theirs "
            f"({_n(quoted)}), so the model does quote, and the usage counted the prompt as sent, not what the model "
            "kept (a gateway counting the prompt itself?)"
        )
    return (
        f"{head}: the end of the document most likely never reached the model (the usage counted the prompt as "
        "sent), unless the model does not quote reference codes at all; no answer quoted one, so this run cannot "
        "tell which. Add a document far inside the context (e.g. --doc-tokens 1000,16000): if its code is quoted, "
        "the long ones were cut; if it is missing too, the model does not quote, and only then is --doc-canary off "
        "the way out"
    )


def _compliance(r: ScenarioResults) -> dict[str, Any] | None:
    schema = {k[0]: v for k, v in _select(r, "compliance", "schema").items()}
    compare = {k[0]: v for k, v in _select(r, "compliance", "compare").items()}
    audit = _select(r, "compliance", "audit")
    if not (schema or compare or audit):
        return None
    valid, invalid = schema.get("valid", 0), schema.get("invalid", 0)
    matched, differed = compare.get("matched", 0), compare.get("differed", 0)
    return {
        "checked": valid + invalid,
        "schema_valid": valid,
        "schema_invalid": invalid,
        "schema_valid_share": _share(valid, valid + invalid),
        "repeat_pairs": matched + differed,
        "deterministic": matched,
        "nondeterministic": differed,
        "deterministic_share": _share(matched, matched + differed),
        "audit_files": [{"path": SEP.join(k), "lines": n} for k, n in sorted(audit.items())],
    }


def _open_loop(r: ScenarioResults, duration_s: float | None) -> dict[str, Any] | None:
    head = key("open_loop", "target") + SEP
    targets = {k[len(head) :]: v for k, v in r.gauges.items() if k.startswith(head)}
    if not targets:
        return None
    sent = r.counts.get(key("open_loop", "sent"), 0)
    return {
        "target_rps": round(sum(float(v) for v in targets.values()), 3),
        "process": r.gauges.get(key("open_loop", "process")),
        "workers": len(targets),
        "sent": sent,
        "achieved_rps": round(sent / duration_s, 3) if duration_s else None,
    }


def scenario_summary(r: ScenarioResults, summary: dict[str, Any]) -> dict[str, Any] | None:
    """The scenario part of the end-of-run summary (None when no scenario recorded anything)."""
    parts = {
        "support_chat": _support_chat(r),
        "long_document": _long_document(r),
        "compliance": _compliance(r),
        "open_loop": _open_loop(r, summary.get("duration_s")),
    }
    out: dict[str, Any] = {k: v for k, v in parts.items() if v is not None}
    return out or None


def _n(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if v and abs(v) < 1:
            return f"{v:.3g}"
        return f"{v:.1f}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def render_scenarios(summary: dict[str, Any]) -> str:
    """The short text block printed after the LLM table ("" when there is nothing scenario-specific)."""
    s = summary.get("scenarios") or {}
    if not s:
        return ""
    out = ["Scenario results"]
    chat = s.get("support_chat")
    if chat:
        convs = chat.get("conversations") or {}
        out.append(
            f"support_chat: {_n(convs.get('started', 0))} conversations ({_n(convs.get('completed', 0))} completed, "
            f"{_n(convs.get('abandoned', 0))} abandoned); prompt grows {_n(chat.get('prompt_tokens_per_turn'))} "
            "tokens per turn"
        )
        for t in chat.get("turns") or []:
            out.append(
                f"  turn {t['turn']}: {_n(t['requests'])} requests, prompt {_n(t['prompt_tokens_mean'])} tokens, "
                f"TTFT p50 {_n(t['ttft_p50_ms'])} p95 {_n(t['ttft_p95_ms'])} ms"
            )
        for st in chat.get("sweep") or []:
            out.append(
                f"  system prompt {_n(st['system_tokens'])} tokens: {_n(st['requests'])} requests, "
                f"TTFT p50 {_n(st['ttft_p50_ms'])} p95 {_n(st['ttft_p95_ms'])} ms"
            )
    doc = s.get("long_document")
    if doc:
        whole = doc.get("whole")
        if whole:
            out.append("long_document (whole): " + ", ".join(f"{k} {_n(v)}" for k, v in whole.items()))
        if doc.get("checks"):
            out.append(_checks_line(doc["checks"]))
            out += [f"  {hint}" for hint in truncation_hints(doc["checks"])]
        ch = doc.get("chunked")
        if ch:
            out.append(
                f"long_document (chunked): {_n(ch['completed'])}/{_n(ch['documents'])} documents, "
                f"{_n(ch['chunks'])} chunks; {_n(ch['chunk_tokens_sent'])} chunk tokens sent for "
                f"{_n(ch['document_tokens'])} document tokens: overlap overhead {_n(ch['overlap_overhead_pct'])} %; "
                f"all prompt tokens {_n(ch['prompt_tokens_sent'])} (+{_n(ch['prompt_overhead_pct'])} %)"
            )
        pr = doc.get("probe")
        if pr:
            fail = pr.get("smallest_failure")
            limit = (
                f"limit between {_n(pr.get('largest_fit'))} (fits) and {_n(fail)} ({pr.get('failure')}) prompt tokens"
                if fail is not None
                else f"no limit found up to {_n(pr.get('largest_fit'))} prompt tokens"
            )
            billed = pr.get("largest_billed")
            billed_text = f"; the server billed at most {_n(billed)}" if billed is not None else ""
            out.append(f"long_document (probe): {len(pr.get('steps') or [])} sizes tried; {limit}{billed_text}")
    comp = s.get("compliance")
    if comp:
        valid = comp.get("schema_valid_share")
        det = comp.get("deterministic_share")
        out.append(
            f"compliance: {_n(comp['checked'])} outputs checked, schema-valid "
            f"{_n(valid * 100 if valid is not None else None)} %; deterministic "
            f"{_n(det * 100 if det is not None else None)} % of {_n(comp['repeat_pairs'])} repeats"
        )
        for a in comp.get("audit_files") or []:
            out.append(f"  audit file: {a['path']} ({_n(a['lines'])} lines)")
    ol = s.get("open_loop")
    if ol:
        out.append(
            f"open loop ({ol.get('process')}): target {_n(ol.get('target_rps'))} req/s, achieved "
            f"{_n(ol.get('achieved_rps'))} req/s ({_n(ol.get('sent'))} sent)"
        )
    return "\n".join(out)
