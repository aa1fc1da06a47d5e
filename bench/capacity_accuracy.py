"""The capacity search against the batching mock's answer key: three engine settings of different capacity, each
searched --repeats times by a real Locust master and 2 workers, beside `GET /mock/capacity` for the same SLO.

Each setting is a fresh mock process (4 output tokens a request, so steps are short); the SLO is TTFT p95 under
300 ms and under 1 % errors; the search starts at --start users, 5 % precision, 2 s of warm-up and a window of at
most 5 s per step. Prints per run: max_users, the answer key's users, their ratio, the steps tried, the first
failing load, the wall time; then per setting the spread of the repeats.

    /work/venv/bin/python bench/capacity_accuracy.py [--repeats 3] [--start 8]
    /work/venv/bin/python bench/capacity_accuracy.py --saturation   # the fixed-delay mock: where the client gives out
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import load, run_distributed

SLO = "ttft p95 < 300ms; error_rate < 1%"
# prefill-bound (one prompt's worth of tokens a step): the answer key does not hang on sub-ms turnaround; no prefix
# cache: the chat prompts share their system prompt, the answer key's workload shares nothing
ENGINE = {
    "step_base_ms": 6.0,
    "decode_ms_per_seq": 0.5,
    "max_batched_tokens": 64,
    "output_tokens": 4,
    "prefix_caching": "off",
}
SETTINGS = {"prefill 1000 ms/1k": 1000.0, "prefill 500 ms/1k": 500.0, "prefill 250 ms/1k": 250.0}  # 10, 15, 23


def one_run(url: str, start: int, out: Path) -> tuple[dict, float]:
    code, err, seconds = run_distributed(
        *("--host", url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(out), "--llm-threshold", SLO),
        *("--llm-capacity-start", str(start), "--llm-capacity-precision", "0.05"),
        *("--llm-capacity-warmup-s", "2", "--llm-capacity-window-s", "5"),
        locustfile="locustfiles/capacity.py",
        timeout=600,
    )
    if code != 0 or not out.exists():
        raise SystemExit(f"run failed, exit {code}: {err[-2000:]}")
    return load(out)["capacity"], seconds


def answer_key(url: str) -> int:
    with urllib.request.urlopen(f"{url}/mock/capacity?ttft_p95_ms=300&output_tokens=4", timeout=120) as r:
        return int(json.loads(r.read())["users"])


def saturation() -> None:
    """The fixed-delay mock has no capacity limit: the search must stop where the client saturates, a lower bound."""
    with (
        start_subprocess(MockConfig(ttft_ms=10, itl_ms=2, output_tokens=4)) as mock,
        tempfile.TemporaryDirectory() as t,
    ):
        capacity, seconds = one_run(mock.url, 32, Path(t) / "s.json")
    bound = f"lower bound {capacity['lower_bound']}: {capacity['stopped']}"
    print(f"max_users {capacity['max_users']}, {bound} ({seconds:.1f} s)")
    for s in capacity["steps"]:
        ttft, why = s["ttft_ms"]["p95"], s["client_reason"] or ""
        print(f"  {s['users']:>5} users  {s['requests_per_s']:>8.1f} req/s  TTFT p95 {ttft} ms  {why}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--start", type=int, default=8)
    ap.add_argument("--saturation", action="store_true", help="search the fixed-delay mock instead")
    a = ap.parse_args()
    if a.saturation:
        saturation()
        return
    head = f"{'setting':<20} {'run':>3} {'max_users':>9} {'key':>4} {'ratio':>6} {'first fail':>10} {'wall s':>7}"
    print(f"{head}  steps")
    for name, prefill in SETTINGS.items():
        found = []
        for i in range(a.repeats):
            config = MockConfig(engine="batching", prefill_ms_per_1k=prefill, **ENGINE)
            with start_subprocess(config) as mock, tempfile.TemporaryDirectory() as tmp:
                capacity, seconds = one_run(mock.url, a.start, Path(tmp) / "s.json")
                key = answer_key(mock.url)
            users = capacity["max_users"]
            found.append(users)
            steps = ",".join(str(s["users"]) for s in capacity["steps"])
            ratio = users / key if key else float("nan")
            fail = capacity["first_failed_users"]
            print(f"{name:<20} {i + 1:>3} {users:>9} {key:>4} {ratio:>6.2f} {fail!s:>10} {seconds:>7.1f}  {steps}")
        spread = (max(found) - min(found)) / max(min(found), 1)
        print(f"{name:<20} repeats {found}: spread {spread * 100:.0f} % of the smallest")


if __name__ == "__main__":
    main()
