"""Ground-truth ring (bounded, frozen records out of the GC) and the shared deadline scheduler."""

from __future__ import annotations

import asyncio
import gc

from loadlib.mock.schedule import Scheduler
from loadlib.mock.truth import Stats, TruthLog, TruthRecord, bare_id


def _record(rid: str, events: int = 3) -> TruthRecord:
    rec = TruthRecord(rid, 7, "openai", event_cap=4)
    rec.planned_itl_ms.extend([10.0, 10.5])
    rec.add_events(20.25, 1, 1)
    rec.add_events(30.5, events - 1, events - 1)
    return rec


def test_add_events_caps_stamps_but_counts_everything() -> None:
    rec = _record("a", events=6)
    assert rec.event_times_ms.tolist() == [20.25, 30.5, 30.5, 30.5]
    assert (rec.output_events_sent, rec.output_tokens_sent, rec.first_token_sent_ms) == (6, 6, 20.25)


def test_frozen_record_is_untracked_and_round_trips() -> None:
    log = TruthLog(10)
    rec = _record("r1")
    log.add(rec)
    before = rec.to_dict()
    log.complete(rec, "complete")
    frozen = log._records["r1"]
    assert isinstance(frozen, tuple)
    gc.collect()
    assert not gc.is_tracked(frozen)
    after = log.get("chatcmpl-r1")
    assert after is not None
    assert after.to_dict() == {**before, "outcome": "complete"}
    assert after.to_dict()["mean_itl_ms"] == 5.125


def test_ring_is_bounded_by_count_and_bytes() -> None:
    log = TruthLog(size=5)
    for i in range(12):
        rec = _record(str(i))
        log.add(rec)
        log.complete(rec, "complete")
    assert len(log) == 5
    assert [r.request_id for r in log.last(2)] == ["10", "11"]
    assert log.get("0") is None
    small = TruthLog(size=100, max_stamp_bytes=60)  # each record stores 3 + 2 float32 stamps = 20 bytes
    for i in range(10):
        rec = _record(str(i))
        small.add(rec)
        small.complete(rec, "complete")
    assert len(small) == 3 and small.stamp_bytes == 60
    small.clear()
    assert (len(small), small.stamp_bytes) == (0, 0)


def test_complete_after_eviction_is_harmless() -> None:
    log = TruthLog(size=1)
    old = _record("old")
    log.add(old)
    log.add(_record("new"))
    log.complete(old, "client_closed")
    assert log.get("old") is None and log.stamp_bytes == 0


def test_mean_prompt_counts_every_completed_request_since_the_last_clear() -> None:
    """The answer key's default prompt: all requests since a reset, even those the ring has let go, each once."""
    log = TruthLog(2)
    assert log.mean_prompt_tokens() is None
    for rid, tokens in (("a", 30), ("b", 40), ("c", 0), ("d", 56)):
        rec = _record(rid)
        rec.billed_prompt_tokens = tokens
        log.add(rec)
        log.complete(rec, "complete")
        log.complete(rec, "complete")
    assert log.mean_prompt_tokens() == 42.0 and len(log) == 2
    log.clear()
    assert log.mean_prompt_tokens() is None


def test_bare_id() -> None:
    assert bare_id("chatcmpl-abc") == bare_id("msg_abc") == bare_id("req_abc") == bare_id("abc") == "abc"


def test_stats_reset_keeps_present_state() -> None:
    stats = Stats()
    stats.requests, stats.connections_open, stats.streams_active = 5, 2, 1
    stats.count_response(200)
    stats.reset(keep_open=2)
    d = stats.to_dict()
    assert (d["requests"], d["responses"], d["connections_open"], d["streams_active"]) == (0, {}, 2, 1)


def test_scheduler_runs_in_deadline_order() -> None:
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        sched = Scheduler(loop)
        seen: list[str] = []
        done = loop.create_future()
        now = loop.time()
        sched.at(now + 0.03, lambda: seen.append("c") or done.set_result(None))
        sched.at(now + 0.01, lambda: seen.append("a"))
        sched.at(now + 0.02, lambda: (seen.append("b"), sched.at(now, lambda: seen.append("late"))))
        await asyncio.wait_for(done, 5)
        assert loop.time() >= now + 0.03
        return seen

    assert asyncio.run(main()) == ["a", "b", "late", "c"]
