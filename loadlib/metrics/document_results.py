"""The long-document scenario's results: whole-document outcomes, the two truncation checks and what their
disagreements show, map-reduce overhead and the context probe, recorded by its users (loadlib.scenarios.long_document)
and declared by its ScenarioSpec as `SECTION`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadlib.histogram import Histogram
from loadlib.metrics.scenarios import MAX_ROWS, ScenarioResults, Section, hist, key, num, select


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


_WHOLE = ("fits", "context_length_exceeded", "truncated", "unverified", "error")


def summarize(r: ScenarioResults, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    whole = {k[0]: v for k, v in select(r, "long_document", "whole").items()}
    if whole:
        out["whole"] = {name: whole.get(name, 0) for name in _WHOLE}
    chunked = {k[0]: v for k, v in select(r, "long_document", "chunked").items()}
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
    checks = select(r, "long_document", "checks")
    if checks:
        out["checks"] = _truncation_checks(checks, hist(r, "long_document", "short_billed_pct"))
    probe = select(r, "long_document", "probe_step")
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
            "failure": max(failed[smallest], key=lambda k: failed[smallest][k]) if smallest is not None else None,
            "largest_billed": int(billed.max) if (billed := hist(r, "long_document", "probe_billed")).count else None,
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
        f"long_document truncation checks: canary quoted {num(canary['quoted'])}, missing {num(canary['missing'])}; "
        f"billing fits {num(billing['fits'])}, truncated {num(billing['truncated'])}, "
        f"no usage {num(billing['unverified'])}; decided by the canary on {num(decided['canary'])} requests, by "
        f"billing on {num(decided['billing'])}"
    )
    return line + (f"; the two disagree on {num(c['disagree'])}" if c["disagree"] else "")


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
            f"{num(c['quoted_truncated'])} answers quoted the reference code though billing said truncated: the end of "
            "the document reached the model; the server counts fewer prompt tokens than our tokenizer, or dropped "
            "part of the middle"
        )
    return out


def _short_hint(n: int, of: int, pct: dict[str, float] | None) -> str:
    kept = f" ({_pct_range(pct)} of them)" if pct else ""
    return (
        f"{UNQUOTED.format(n=num(n), of=num(of))} and the server counted fewer prompt tokens than were sent{kept}, "
        "within --doc-truncation-ratio: the server most likely kept only part of the document and billed what it kept"
    )


def _pct_range(pct: dict[str, float]) -> str:
    lo, hi = pct["min"], pct["max"]
    return f"{lo:.0f} %" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} %"


def _whole_hint(n: int, of: int, quoted: int) -> str:
    head = f"{UNQUOTED.format(n=num(n), of=num(of))} while usage said the prompt fit"
    if quoted:
        return (
            f"{head}: the end of the document most likely never reached the model; other answers quoted theirs "
            f"({num(quoted)}), so the model does quote, and the usage counted the prompt as sent, not what the model "
            "kept (a gateway counting the prompt itself?)"
        )
    return (
        f"{head}: the end of the document most likely never reached the model (the usage counted the prompt as "
        "sent), unless the model does not quote reference codes at all; no answer quoted one, so this run cannot "
        "tell which. Add a document far inside the context (e.g. --doc-tokens 1000,16000): if its code is quoted, "
        "the long ones were cut; if it is missing too, the model does not quote, and only then is --doc-canary off "
        "the way out"
    )


def render(doc: dict[str, Any]) -> list[str]:
    """Whole-document outcomes, the truncation checks and their hints, chunking overhead, the probe's limit."""
    out = []
    whole = doc.get("whole")
    if whole:
        out.append("long_document (whole): " + ", ".join(f"{k} {num(v)}" for k, v in whole.items()))
    if doc.get("checks"):
        out.append(_checks_line(doc["checks"]))
        out += [f"  {hint}" for hint in truncation_hints(doc["checks"])]
    ch = doc.get("chunked")
    if ch:
        out.append(
            f"long_document (chunked): {num(ch['completed'])}/{num(ch['documents'])} documents, "
            f"{num(ch['chunks'])} chunks; {num(ch['chunk_tokens_sent'])} chunk tokens sent for "
            f"{num(ch['document_tokens'])} document tokens: overlap overhead {num(ch['overlap_overhead_pct'])} %; "
            f"all prompt tokens {num(ch['prompt_tokens_sent'])} (+{num(ch['prompt_overhead_pct'])} %)"
        )
    if doc.get("probe"):
        out.append(_probe_line(doc["probe"]))
    return out


def _probe_line(pr: dict[str, Any]) -> str:
    fail = pr.get("smallest_failure")
    limit = (
        f"limit between {num(pr.get('largest_fit'))} (fits) and {num(fail)} ({pr.get('failure')}) prompt tokens"
        if fail is not None
        else f"no limit found up to {num(pr.get('largest_fit'))} prompt tokens"
    )
    billed = pr.get("largest_billed")
    billed_text = f"; the server billed at most {num(billed)}" if billed is not None else ""
    return f"long_document (probe): {len(pr.get('steps') or [])} sizes tried; {limit}{billed_text}"


SECTION = Section(summarize, render)
