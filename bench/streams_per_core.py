"""Benchmark: how many paced streams one worker core holds (issue 30's target: 2,000 at TTFT 200 ms, ITL 100 ms).

A real headless Locust run of bench/locustfile_bench.py, with a probe of our send, pinned to one core, against the
mock pinned to the other. It prints the errors, the client's own verdict (CPU p90, loop lag p99, saturated or not)
and the TTFT error of every streamed request against the server's own send times: the client's TTFT minus the mock's
`first_token_sent_ms` (the client's counted from just before its send, the mock's from its read of the request),
joined by the server's request id and split on the shared wall clock at the server's read of the request. From the
probe, the part before the read that is ours: t0 to the request's last byte handed to the kernel. The rest before the
read is the server's own read lag.

    python bench/streams_per_core.py                       # 2,000 streams, 60 s (about 1.5 minutes)
    python bench/streams_per_core.py --streams 1000 500    # several sizes, one after the other
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MOCK_CORE, CLIENT_CORE = 1, 0


def locust_cmd(url: str, streams: int, seconds: int, out: Path) -> list[str]:
    """Every user spawned within 10 s; the records and the summary written to `out`."""
    cmd = ["taskset", "-c", str(CLIENT_CORE), sys.executable, "-m", "locust", "-f", "bench/locustfile_send_probe.py"]
    cmd += ["--headless", "-u", str(streams), "-r", str(max(1, streams // 10)), "-t", f"{seconds}s", "--host", url]
    cmd += ["--llm-api-key-env", "none", "--llm-max-tokens", "100", "--only-summary", "--loglevel", "ERROR"]
    return [*cmd, "--llm-records", str(out / "records.jsonl"), "--llm-summary", str(out / "summary.json")]


def truth(mock_url: str) -> dict[str, dict[str, Any]]:
    with urllib.request.urlopen(mock_url + "/mock/truth?limit=1000000", timeout=60) as r:
        return {t["request_id"]: t for t in json.load(r)["records"]}


def ttft_errors(records: list[dict[str, Any]], sent: dict[str, dict[str, Any]]) -> dict[str, list[float]]:
    """For every request with both sides (ms): the client's TTFT minus the server's, and its two parts on the shared
    wall clock: until the server read the request (the client's send, the server's accept and read) and from the
    server's write of the first token to the client's stamp of it (the client's read)."""
    from loadlib.mock.truth import bare_id

    errors: dict[str, list[float]] = {"ttft": [], "to the server": [], "after its write": []}
    for rec in records:
        server = sent.get(bare_id(rec.get("server_request_id") or ""))
        if rec.get("ttft_ms") is None or not server or server["first_token_sent_ms"] is None:
            continue
        errors["ttft"].append(rec["ttft_ms"] - server["first_token_sent_ms"])
        to_server = (server["received_unix"] - rec["start_unix_ns"] / 1e9) * 1e3
        errors["to the server"].append(to_server)
        errors["after its write"].append(errors["ttft"][-1] - to_server)
    return errors


def one_size(streams: int, seconds: int, itl_ms: float) -> None:
    from loadlib.mock import MockConfig, start_subprocess

    cfg = MockConfig(ttft_ms=200.0, itl_ms=itl_ms, output_tokens=100)
    with start_subprocess(cfg, cpu=MOCK_CORE) as mock, tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        env = dict(os.environ, PYTHONPATH=str(ROOT), SEND_PROBE_OUT=str(out / "send.json"))
        code = subprocess.run(locust_cmd(mock.url + "/v1", streams, seconds, out), cwd=ROOT, env=env).returncode
        records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line]
        summary = json.loads((out / "summary.json").read_text())
        report(streams, code, records, summary, ttft_errors(records, truth(mock.url)))
        send = json.loads((out / "send.json").read_text())
        ours = f"{send['p50']:+8.2f} {send['p99']:+8.2f} {send['max']:+8.2f}"
        print(f"    of it our send   {ours}  (t0 to the request's last byte sent)")


def report(
    streams: int, code: int, records: list[dict[str, Any]], summary: dict[str, Any], err: dict[str, list[float]]
) -> None:
    from loadlib.errors import ErrorClass
    from loadlib.mock.engine.sim import quantile

    client = summary.get("client") or {}
    failed = sum(1 for r in records if ErrorClass(r["status"]).is_error)
    print(f"{streams} streams: exit {code}, {len(records)} attempts, {failed} errors")
    print(
        f"  client: saturated {client.get('saturated')}, CPU p90 {client.get('cpu_p90_percent') or 0:.1f} %, "
        f"loop lag p99 {client.get('loop_lag_p99_ms') or 0:.1f} ms"
    )
    print(f"  TTFT error vs the server's send (ms, {len(err['ttft'])} requests), median / p99 / max:")
    for name, values in err.items():
        if values:
            med, p99 = statistics.median(values), quantile(values, 0.99)
            print(f"    {name:<16} {med:+8.2f} {p99:+8.2f} {max(values):+8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, nargs="+", default=[2000])
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--itl-ms", type=float, default=100.0)
    args = ap.parse_args()
    for streams in args.streams:
        one_size(streams, args.seconds, args.itl_ms)


if __name__ == "__main__":
    main()
