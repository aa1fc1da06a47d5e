"""A run's inputs for the run report (docs/reports.md): `--llm-records` JSONL files read as columns, and the summary.

Why columns: a report over 1,000,000 records must stay far below 2 GB, and a list of dicts of them would not. Each
line is parsed with orjson, its few numbers go into a bounded chunk of tuples, and every CHUNK lines the chunk
becomes numpy arrays; no dict outlives its line. Inter-token gaps are never kept: each chunk's gaps are binned into
one fixed log-scale histogram and dropped. Strings (scenario and endpoint, status) become small integer codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from loadlib.errors import NOT_ERRORS as NOT_ERROR_CLASSES
from loadlib.gcpause import no_cyclic_gc
from loadlib.metrics.summary import row_name

CHUNK = 1024  # rows per chunk: small enough that its objects stay in cache and their memory is reused
NUMERIC = (
    "ttft_ms",
    "e2e_ms",
    "tpot_ms",
    "stream_tpot_ms",
    "prompt_tokens",
    "prompt_tokens_est",
    "completion_tokens",
    "completion_tokens_est",
    "cost_usd",
)
# ITL bins cut each power of two into 8 (9 % wide), told from the float's bits as loadlib's histograms do (no
# logarithm per gap); gaps outside 1 µs .. 1,000,000 ms count in the end bins.
ITL_SUB_BITS = 3
_ITL_SHIFT = 52 - ITL_SUB_BITS
ITL_MIN_MS, ITL_MAX_MS = 2.0**-10, 2.0**20
_ITL_FIRST = int(np.float64(ITL_MIN_MS).view(np.int64)) >> _ITL_SHIFT
_ITL_BINS = (int(np.float64(ITL_MAX_MS).view(np.int64)) >> _ITL_SHIFT) - _ITL_FIRST
ITL_EDGES = (np.arange(_ITL_FIRST, _ITL_FIRST + _ITL_BINS + 1, dtype=np.int64) << _ITL_SHIFT).view(np.float64)
SUMMARY_MAX_BYTES = 64 << 20
OK = "ok"
NOT_ERRORS = frozenset(c.value for c in NOT_ERROR_CLASSES)


class InputError(Exception):
    """A path the report cannot use; the message is the one line the command prints before exiting 2."""


@dataclass(frozen=True)
class Records:
    """Every attempt of the run as columns, one entry per record; NaN where a record holds null."""

    groups: tuple[str, ...]  # "scenario @ endpoint" by code, sorted as the summary's rows
    statuses: tuple[str, ...]  # status by code, sorted
    group: np.ndarray  # int32 code into groups
    status: np.ndarray  # int32 code into statuses
    start_ns: np.ndarray  # int64 start_unix_ns (0: unknown)
    ttft: np.ndarray
    e2e: np.ndarray
    tpot: np.ndarray
    stream_tpot: np.ndarray
    prompt: np.ndarray  # input tokens: the server's count, else our estimate
    output: np.ndarray  # output tokens likewise
    cost: np.ndarray
    itl_counts: np.ndarray  # successful attempts' gaps per ITL_EDGES bin
    itl_zeros: int  # gaps of 0 ms (events read together): a log axis cannot show them
    runs: tuple[str, ...]  # run ids seen
    workers: int  # worker ids seen
    skipped_lines: int  # non-blank lines that were not a JSON object

    def __len__(self) -> int:
        return len(self.group)

    @property
    def errors(self) -> np.ndarray:
        """Attempts that count as errors: neither a success nor a hedge's cancelled loser (ErrorClass.is_error)."""
        return ~np.isin(self.status, [i for i, s in enumerate(self.statuses) if s in NOT_ERRORS])

    @property
    def ok(self) -> np.ndarray:
        """Successful attempts: the only ones whose timings enter a distribution (docs/metrics.md)."""
        return self.status == self.statuses.index(OK) if OK in self.statuses else np.zeros(len(self), bool)


class _Columns:
    """The chunked accumulator behind read_records: rows of plain tuples, turned into arrays a chunk at a time."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.group_ids: dict[tuple[Any, Any], int] = {}
        self.status_ids: dict[Any, int] = {}
        self.sources: set[tuple[Any, Any]] = set()
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.itl_counts = np.zeros(len(ITL_EDGES) - 1, np.int64)
        self.itl_zeros = 0
        self.skipped = 0

    def flush(self) -> None:
        """The chunk's columns as numpy arrays, its successful attempts' gaps into the ITL histogram."""
        if not self.rows:
            return
        cols = list(zip(*self.rows, strict=True))
        self.rows = []
        groups = _codes(self.group_ids, list(zip(cols[1], cols[2], strict=True)))
        statuses = _codes(self.status_ids, cols[3])
        self.sources.update(zip(cols[4], cols[5], strict=True))
        ok = (statuses == self.status_ids.get(OK, -1)).tolist()
        gaps = np.fromiter(chain.from_iterable(g or () for g in compress(cols[6], ok)), np.float64)
        counts, zeros = itl_histogram(gaps)
        self.itl_counts += counts
        self.itl_zeros += zeros
        self.parts.append((_ints(cols[0]), groups, statuses, _floats(cols[len(_HEAD) :])))


_HEAD = ("start_unix_ns", "scenario", "endpoint", "status", "run_id", "worker_id", "itl_ms")
FIELDS = (*_HEAD, *NUMERIC)
_ROW = itemgetter(*FIELDS)


def _codes(ids: dict[Any, int], keys: Sequence[Any]) -> np.ndarray:
    """Each key's code, new keys numbered in the order first seen."""
    try:
        for key in dict.fromkeys(keys):
            ids.setdefault(key, len(ids))
    except TypeError:
        raise InputError("a record's scenario, endpoint or status is not a string") from None
    return np.fromiter(map(ids.__getitem__, keys), np.int32, len(keys))


def _floats(cols: Sequence[tuple[Any, ...]]) -> np.ndarray:
    """Numeric columns as float64, one row per field, null as NaN; InputError for a value that is not a number."""
    try:
        return np.array(cols, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"a record field among {', '.join(NUMERIC)} is not a number") from None


def _ints(col: tuple[Any, ...]) -> np.ndarray:
    """start_unix_ns as int64, a missing one as 0 (unknown)."""
    try:
        return np.array(col, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.array([int(v) if isinstance(v, int | float) else 0 for v in col], dtype=np.int64)


def itl_histogram(gaps: np.ndarray) -> tuple[np.ndarray, int]:
    """Counts of positive gaps per ITL_EDGES bin (values beyond the range go to the end bins), and the zero gaps."""
    positive = np.clip(gaps[gaps > 0], ITL_MIN_MS, np.nextafter(ITL_MAX_MS, 0.0))
    counts = np.bincount((positive.view(np.int64) >> _ITL_SHIFT) - _ITL_FIRST, minlength=_ITL_BINS)
    return counts, int(np.count_nonzero(gaps == 0))


def read_records(paths: Iterable[Path]) -> Records:
    """Every record of every file, streamed line by line; raises InputError for a file that cannot be read."""
    cols = _Columns()
    # reading makes no reference cycles (each dict dies with its line), yet a chunk of live tuples would make the
    # cyclic collector scan them again and again: paused while reading (about a third of the time)
    with no_cyclic_gc():
        for path in paths:
            try:
                _read_file(path, cols)
            except InputError as exc:
                raise InputError(f"{path}: {exc}") from None
    return _assemble(cols)


def _read_file(path: Path, cols: _Columns) -> None:
    """Line by line: parse, take the row's fields as one tuple (a C call), drop the dict."""
    loads, rows, row = orjson.loads, cols.rows, _ROW
    try:
        with path.open("rb") as f:
            for line in f:
                try:
                    d = loads(line)
                    rows.append(row(d))
                except orjson.JSONDecodeError:
                    cols.skipped += bool(line.strip())
                    continue
                except (KeyError, TypeError):
                    if type(d) is not dict:
                        cols.skipped += 1
                        continue
                    rows.append(tuple(map(d.get, FIELDS)))
                if len(rows) >= CHUNK:
                    cols.flush()
                    rows = cols.rows
        cols.flush()
    except OSError as exc:
        raise InputError(exc.strerror or str(exc)) from None


def _assemble(cols: _Columns) -> Records:
    """The chunks joined, codes renumbered so groups and statuses come sorted."""
    starts, groups, statuses, nums = _joined(cols.parts)
    group_names, group_map = _sorted_codes(cols.group_ids, _group_name)
    status_names, status_map = _sorted_codes(cols.status_ids, str)
    prompt, output = _preferred(nums[4], nums[5]), _preferred(nums[6], nums[7])
    return Records(
        groups=group_names,
        statuses=status_names,
        group=group_map[groups],
        status=status_map[statuses],
        start_ns=starts,
        ttft=nums[0],
        e2e=nums[1],
        tpot=nums[2],
        stream_tpot=nums[3],
        prompt=prompt,
        output=output,
        cost=nums[8],
        itl_counts=cols.itl_counts,
        itl_zeros=cols.itl_zeros,
        runs=tuple(sorted({str(run) for run, _ in cols.sources if run is not None})),
        workers=len({worker for _, worker in cols.sources if worker is not None}),
        skipped_lines=cols.skipped,
    )


def _joined(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    if not parts:
        empty = np.zeros(0, np.int32)
        return np.zeros(0, np.int64), empty, empty, np.zeros((len(NUMERIC), 0))
    return tuple(np.concatenate([p[i] for p in parts], axis=-1) for i in range(4))


def _group_name(key: tuple[Any, Any]) -> str:
    return row_name(key[0], key[1])


def _sorted_codes(ids: dict[Any, int], name: Any) -> tuple[tuple[str, ...], np.ndarray]:
    """Names sorted, and the map from first-seen codes to sorted codes."""
    names = {code: name(key) for key, code in ids.items()}
    order = sorted(names, key=names.__getitem__)
    remap = np.zeros(max(len(order), 1), np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return tuple(names[c] for c in order), remap


def _preferred(server: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """The server's count where there is one, else our estimate (docs/records.md, "Derived values")."""
    return np.where(np.isnan(server), estimate, server)


def kind_of(path: Path) -> str:
    """'records' or 'summary', told by content: a summary is one JSON object with "rows", records are JSON lines."""
    first = _first_line(path)
    if first is None:
        return "records"  # an empty records file: a worker that sent nothing
    try:
        head = orjson.loads(first)
    except orjson.JSONDecodeError:
        head = None
    if isinstance(head, dict):
        if "rows" in head:
            return "summary"
        if "status" in head or "start_unix_ns" in head:
            return "records"
        raise InputError(f"{path}: line 1 is JSON but neither a request record nor a summary")
    whole = _whole_json(path)
    if isinstance(whole, dict) and "rows" in whole:
        return "summary"
    raise InputError(f"{path}: neither a records JSONL file (--llm-records) nor a summary JSON (--llm-summary)")


def _first_line(path: Path) -> bytes | None:
    try:
        with path.open("rb") as f:
            for line in f:
                if line.strip():
                    return line
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    return None


def _whole_json(path: Path) -> Any:
    """The file as one JSON value, None when it is not one (or too large to be a summary)."""
    try:
        if path.stat().st_size > SUMMARY_MAX_BYTES:
            return None
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        return None
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None


def load_summary(path: Path) -> dict[str, Any]:
    """The summary JSON (--llm-summary); InputError when it is not one."""
    data = _whole_json(path)
    if not isinstance(data, dict) or "rows" not in data:
        raise InputError(f'{path}: not a summary JSON (--llm-summary): no "rows"')
    return data
