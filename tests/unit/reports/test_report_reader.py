"""Reading records for the run report (loadlib.reports.records_in): columns of numpy arrays built a bounded chunk at
a time, never a dict per record kept for all records; what each column holds; telling records from a summary."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import orjson
import pytest

from loadlib.errors import ErrorClass
from loadlib.reports import records_in
from loadlib.reports.records_in import ITL_EDGES, InputError, Records, kind_of, load_summary, read_records
from tests.unit.reports.test_report import attempt, failed, known_run, summary_of, write_jsonl

ARRAYS = ("group", "status", "start_ns", "ttft", "e2e", "tpot", "stream_tpot", "prompt", "output", "cost")


def test_columns_hold_each_records_values(tmp_path):
    rec = read_records([write_jsonl(tmp_path / "r.jsonl", known_run())])
    assert len(rec) == 16
    assert rec.groups == ("chat @ a", "long_document @ b") and rec.statuses == ("ok", "rate_limited", "stream_broken")
    for name in ARRAYS:
        column = getattr(rec, name)
        assert isinstance(column, np.ndarray) and column.dtype != object and len(column) == 16, name
    assert rec.ttft[:3].tolist() == [10.0, 20.0, 30.0] and np.isnan(rec.ttft[10])  # null becomes NaN
    assert rec.output[11] == 7 and np.isnan(rec.prompt[10])  # the estimate where the server gave no count
    assert rec.ok.sum() == 14 and rec.statuses[rec.status[10]] == "rate_limited"
    assert rec.start_ns[1] - rec.start_ns[0] == 500_000_000  # exact nanoseconds
    assert (rec.runs, rec.workers, rec.skipped_lines) == (("run-1",), 2, 0)


def test_inter_token_gaps_are_binned_from_successful_attempts_only(tmp_path):
    records = [attempt(0, itl_ms=(0.0, 10.0, 10.0, 0.5)), failed(1, ErrorClass.STREAM_BROKEN, itl_ms=(3.0, 3.0))]
    rec = read_records([write_jsonl(tmp_path / "r.jsonl", records)])
    assert rec.itl_zeros == 1 and rec.itl_counts.sum() == 3
    hit = np.flatnonzero(rec.itl_counts)
    assert [(ITL_EDGES[i], ITL_EDGES[i + 1], rec.itl_counts[i]) for i in hit] == [(0.5, 0.5625, 1), (10.0, 11.0, 2)]


def test_chunks_give_the_same_columns_as_one_pass(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "r.jsonl", known_run())
    whole = read_records([path])
    monkeypatch.setattr(records_in, "CHUNK", 3)
    chunked = read_records([path, path])
    for name in ARRAYS:
        a, b = getattr(whole, name), getattr(chunked, name)
        assert np.array_equal(np.concatenate([a, a]), b, equal_nan=True), name
    assert np.array_equal(chunked.itl_counts, 2 * whole.itl_counts)


def test_reading_keeps_no_dict_per_record(tmp_path, monkeypatch):
    """Peak memory while reading 4,000 records in chunks of 200 stays a fraction of what their dicts alone take."""
    path = write_jsonl(tmp_path / "r.jsonl", [attempt(i, itl_ms=(12.5,) * 30) for i in range(4000)])
    lines = path.read_bytes().splitlines()
    tracemalloc.start()
    try:
        dicts = [orjson.loads(line) for line in lines]
        _, as_dicts = tracemalloc.get_traced_memory()
        del dicts
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        monkeypatch.setattr(records_in, "CHUNK", 200)
        rec = read_records([path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(rec) == 4000
    assert peak - base < as_dicts / 5, (peak - base, as_dicts)


def test_lines_that_are_not_records_are_counted_and_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    write_jsonl(path, [attempt(0), attempt(1)])
    path.write_bytes(path.read_bytes() + b"\n[1, 2]\n{truncated by a kil\n\n")
    rec = read_records([path])
    assert len(rec) == 2 and rec.skipped_lines == 2


def test_a_record_missing_fields_reads_them_as_null(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"scenario": "chat", "endpoint": "a", "status": "ok", "start_unix_ns": 5, "ttft_ms": 3}))
    rec = read_records([path])
    assert rec.ttft.tolist() == [3.0] and np.isnan(rec.cost[0]) and rec.groups == ("chat @ a",)


def test_a_field_that_is_not_a_number_is_an_input_error(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [attempt(0)])
    path.write_text(path.read_text().replace('"ttft_ms":10.0', '"ttft_ms":"fast"'))
    with pytest.raises(InputError, match=r"r\.jsonl: a record field among ttft_ms"):
        read_records([path])


def test_records_and_summaries_are_told_apart_by_content(tmp_path):
    records = write_jsonl(tmp_path / "records.json", known_run())  # the name says nothing
    pretty = tmp_path / "s.jsonl"
    pretty.write_text(json.dumps(summary_of(known_run()), indent=2))
    one_line = tmp_path / "s1"
    one_line.write_text(json.dumps(summary_of(known_run())))
    (tmp_path / "empty").write_text("")
    assert [kind_of(p) for p in (records, pretty, one_line, tmp_path / "empty")] == [
        "records",
        "summary",
        "summary",
        "records",
    ]
    assert load_summary(pretty)["rows"][0]["name"] == "chat @ a"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("not json at all\n", "neither a records JSONL file"),
        ('{"locust": "stats"}\n', "line 1 is JSON but neither a request record nor a summary"),
        ("[1, 2, 3]\n", "neither a records JSONL file"),
    ],
)
def test_other_files_are_input_errors(tmp_path, text, why):
    path = tmp_path / "x.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=why):
        kind_of(path)


def test_an_empty_read_has_empty_columns():
    rec = read_records([])
    assert isinstance(rec, Records) and len(rec) == 0 and rec.groups == () and not rec.ok.any()
