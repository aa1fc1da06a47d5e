"""A record lists at most MAX_ITL gaps; the rest travel as a histogram, so a long stream's memory is bounded while the
statistics still see every gap (docs/metrics.md, "Memory")."""

from __future__ import annotations

from array import array
from itertools import pairwise
from typing import Any

import orjson

from loadlib.config import Limits
from loadlib.histogram import Histogram
from loadlib.metrics.stats import LLMStats
from loadlib.outputs.records import record_line
from loadlib.providers.base import StreamResult
from loadlib.records.build import build_record, output_events
from loadlib.records.pricing import PriceTable
from loadlib.records.record import RequestRecord
from loadlib.transport.stream import MAX_ITL, StreamOutcome, keep_beyond
from tests.support.wire import call, http_head

PRICES = PriceTable.from_mapping({"models": {}}, "test")
EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
DONE = b"data: [DONE]\n\n"


def record(out: StreamOutcome) -> RequestRecord:
    fields: dict[str, Any] = {"run_id": "r", "scenario": "s", "endpoint": "e", "provider": "openai", "model": "m"}
    return build_record(out, worker_id="w", request_id="1", start_unix_ns=1, prices=PRICES, **fields)


def streamed(stamps: list[float]) -> StreamOutcome:
    """An outcome whose output stamps went through the stream's own keeping rule."""
    out = StreamOutcome(ttft_ms=stamps[0], e2e_ms=stamps[-1] + 5.0, streamed=True, output_stamps_ms=array("d"))
    for t in stamps:
        if len(out.output_stamps_ms) <= MAX_ITL:
            out.output_stamps_ms.append(t)
        else:
            keep_beyond(out, t)
    out.result = StreamResult(text_by_choice={0: "x"})
    return out


def test_a_short_stream_keeps_every_gap() -> None:
    r = record(streamed([float(i) for i in range(MAX_ITL + 1)]))
    assert len(r.itl_ms) == MAX_ITL and r.itl_dropped == 0 and r.itl_rest is None
    assert r.output_events == MAX_ITL + 1


def test_a_long_stream_lists_the_first_gaps_and_counts_the_rest() -> None:
    n = MAX_ITL * 3
    stamps = [float(i * i % 7 + 10 * i) for i in range(n)]
    out = streamed(stamps)
    assert len(out.output_stamps_ms) == MAX_ITL + 2 and out.output_stamps_ms[-1] == stamps[-1]
    r = record(out)
    assert len(r.itl_ms) == MAX_ITL and r.itl_dropped == n - 1 - MAX_ITL == output_events(out) - 1 - MAX_ITL
    assert r.output_events == n
    assert r.stream_tpot_ms == (stamps[-1] - stamps[0]) / (n - 1)
    assert r.stream_tail_ms == 5.0
    assert r.itl_ms == tuple(b - a for a, b in pairwise(stamps[: MAX_ITL + 1]))


def test_statistics_see_every_gap_as_if_all_were_listed() -> None:
    stamps = [float(3 * i + i % 5) for i in range(MAX_ITL * 2 + 7)]
    stats = LLMStats()
    stats.add(record(streamed(stamps)))
    every = Histogram()
    every.record_many([b - a for a, b in pairwise(stamps)])
    assert stats.entry("s", "e").itl_ms == every


def test_the_rest_goes_into_the_records_file_as_a_histogram() -> None:
    r = record(streamed([float(i) for i in range(MAX_ITL + 50)]))
    line = orjson.loads(orjson.dumps(record_line(r)))
    assert line["itl_dropped"] == 49 and len(line["itl_ms"]) == MAX_ITL
    assert Histogram.from_dict(line["itl_rest"]).count == 49


def test_a_real_stream_past_the_cap_keeps_a_bounded_number_of_stamps() -> None:
    n = MAX_ITL + 300
    out = call([http_head(connection="close"), EVENT * n + DONE], limits=Limits())
    assert out.status.value == "ok", out.message
    assert len(out.output_stamps_ms) == MAX_ITL + 2 and out.itl_rest is not None
    assert output_events(out) == n and record(out).itl_dropped == n - 1 - MAX_ITL


def test_a_real_stream_past_the_text_cap_keeps_its_head_and_the_record_counts_the_rest() -> None:
    n = 3000
    out = call([http_head(connection="close"), EVENT * n + DONE], limits=Limits(text=1024))
    assert out.status.value == "ok", out.message
    assert out.result is not None and out.result.text == "a" * 1024
    line = record_line(record(out))
    assert (line["text_dropped"], line["output_events"]) == (n - 1024, n)
