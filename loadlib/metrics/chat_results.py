"""The support-chat scenario's results: turns, their prompt growth and TTFT, the system-prompt sweep and the
conversations, recorded by its users (loadlib.scenarios.support_chat) and declared by its ScenarioSpec as `SECTION`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadlib.metrics.scenarios import MAX_ROWS, ScenarioResults, Section, hist, key, num, pct, select


def chat_turn(
    r: ScenarioResults,
    turn: int,
    prompt_tokens: int | None,
    ttft_ms: float | None,
    step: int | None,
    growth: float | None = None,
) -> None:
    """One support-chat request: its turn, prompt size and TTFT (successful requests carry a TTFT), and after the
    first turn the prompt's growth per turn since its conversation's first turn."""
    r.count(key("support_chat", "turn", turn))
    if prompt_tokens is not None:
        r.observe(key("support_chat", "turn_prompt", turn), prompt_tokens)
    if growth is not None:
        r.observe(key("support_chat", "turn_growth"), growth)
    if ttft_ms is not None:
        r.observe(key("support_chat", "turn_ttft", turn), ttft_ms)
        if step is not None:
            r.observe(key("support_chat", "sweep_ttft", step), ttft_ms)
    if step is not None:
        r.count(key("support_chat", "sweep", step))


def conversation(r: ScenarioResults, event: str) -> None:
    """`started`, `completed` (every turn answered) or `abandoned` (a turn failed)."""
    r.count(key("support_chat", "conversations", event))


def summarize(r: ScenarioResults, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    turns = select(r, "support_chat", "turn")
    if not turns:
        return None
    by_turn = []
    for (turn,), n in sorted(turns.items(), key=lambda kv: int(kv[0][0]))[:MAX_ROWS]:
        prompt = hist(r, "support_chat", "turn_prompt", turn)
        ttft = hist(r, "support_chat", "turn_ttft", turn)
        by_turn.append(
            {
                "turn": int(turn),
                "requests": n,
                "prompt_tokens_mean": round(prompt.mean, 1) if prompt.mean is not None else None,
                "ttft_p50_ms": pct(ttft, 50),
                "ttft_p95_ms": pct(ttft, 95),
            }
        )
    sweep = []
    for (step,), n in sorted(select(r, "support_chat", "sweep").items(), key=lambda kv: int(kv[0][0]))[:MAX_ROWS]:
        ttft = hist(r, "support_chat", "sweep_ttft", step)
        sweep.append(
            {"system_tokens": int(step), "requests": n, "ttft_p50_ms": pct(ttft, 50), "ttft_p95_ms": pct(ttft, 95)}
        )
    convs = {k[0]: v for k, v in select(r, "support_chat", "conversations").items()}
    grown = hist(r, "support_chat", "turn_growth").mean
    growth = round(grown, 1) if grown is not None else None
    return {
        "conversations": convs,
        "turns": by_turn,
        "prompt_tokens_per_turn": growth,
        "sweep": sweep or None,
    }


def render(chat: dict[str, Any]) -> list[str]:
    """Conversations, prompt growth, then one line per turn and per system-prompt size."""
    convs = chat.get("conversations") or {}
    out = [
        f"support_chat: {num(convs.get('started', 0))} conversations ({num(convs.get('completed', 0))} completed, "
        f"{num(convs.get('abandoned', 0))} abandoned); prompt grows {num(chat.get('prompt_tokens_per_turn'))} "
        "tokens per turn"
    ]
    for t in chat.get("turns") or []:
        out.append(
            f"  turn {t['turn']}: {num(t['requests'])} requests, prompt {num(t['prompt_tokens_mean'])} tokens, "
            f"TTFT p50 {num(t['ttft_p50_ms'])} p95 {num(t['ttft_p95_ms'])} ms"
        )
    for st in chat.get("sweep") or []:
        out.append(
            f"  system prompt {num(st['system_tokens'])} tokens: {num(st['requests'])} requests, "
            f"TTFT p50 {num(st['ttft_p50_ms'])} p95 {num(st['ttft_p95_ms'])} ms"
        )
    return out


SECTION = Section(summarize, render)
