"""A run in which no request succeeded: its one line names the dominant error class with its count and what to set,
from one table of hints (loadlib.verdicts.no_success)."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.errors import NOT_ERRORS, ErrorClass
from loadlib.verdicts.no_success import HINTS, OTHER, hint, no_success

HOST = "http://127.0.0.1:8000/v1"
CONTEXT_SAID = (
    "This model's maximum context length is 4096 tokens. However, your messages resulted in 8086 tokens. Please "
    "reduce the length of the messages."
)


def run(errors: dict[str, int], ok: int = 0, scenario: str = "chat", cut_off: int = 0) -> dict[str, Any]:
    failed = sum(errors.values())
    total = {"count": ok + failed + cut_off, "ok": ok, "cut_off": cut_off, "errors_total": failed, "errors": errors}
    return {"meta": {"host": HOST, "model": "tiny-llama"}, "total": total, "rows": [{"scenario": scenario}]}


def test_a_run_with_one_success_or_no_failure_has_no_such_line() -> None:
    assert no_success(run({"http_5xx": 11}, ok=1)) is None
    assert no_success(run({}, ok=0, cut_off=4)) is None, "nothing completed is another verdict (invalid)"
    assert no_success({}) is None


def test_every_prompt_over_the_context_names_the_servers_window_and_the_document_sizes() -> None:
    line = no_success(
        run({"context_length_exceeded": 426}, scenario="long_document"), {"context_length_exceeded": CONTEXT_SAID}
    )
    assert line == (
        "no request succeeded (426 failed: context_length_exceeded 426): every prompt was over the model's context "
        "(4,096 tokens, says the server): serve a longer context (vLLM --max-model-len, llama.cpp --ctx-size) or send "
        "shorter documents (--doc-tokens under 4,096, less the instructions and --doc-max-tokens)"
    )
    unsaid = no_success(run({"context_length_exceeded": 3}))
    assert unsaid is not None and "model's context: serve" in unsaid and "shorter prompts" in unsaid


def test_the_dominant_class_leads_and_picks_the_hint() -> None:
    errors = {"timeout_ttft": 2, "http_5xx": 10, "connect_error": 1, "stream_broken": 1}
    line = no_success(run(errors, cut_off=2), {"http_5xx": "upstream   timed\nout"})
    assert line is not None
    assert line.startswith(
        "no request succeeded (14 failed: http_5xx 10, timeout_ttft 2, connect_error 1 and 1 more classes; 2 cut off "
        'by the end): the server failed every request (the server: "upstream timed out"): look at the server behind '
        f"{HOST}"
    ), line


@pytest.mark.parametrize(
    ("error_class", "says"),
    [
        ("http_4xx", "check the key (the variable --llm-api-key-env names), the model (--llm-model tiny-llama)"),
        ("rate_limited", "lower the load"),
        ("connect_error", f"no connection to {HOST} held"),
        ("timeout_ttft", "raise --llm-timeout-ttft"),
        ("http_redirect", "point --host at the final URL"),
    ],
)
def test_each_class_points_at_what_to_set(error_class: str, says: str) -> None:
    assert says in hint(error_class, run({error_class: 1}), {})


def test_the_table_covers_every_error_class_and_each_hint_formats() -> None:
    errors = {c.value for c in ErrorClass if c not in NOT_ERRORS and c is not ErrorClass.CIRCUIT_OPEN}
    assert set(HINTS) == errors, "circuit_open is no attempt; every other error class has its hint"
    for name in HINTS:
        text = hint(name, run({name: 1}), {name: "the server's {words}"})
        assert "{" not in text.replace("{words}", "") and text != OTHER, name
    assert hint("no_such_class", run({}), {}) == OTHER
