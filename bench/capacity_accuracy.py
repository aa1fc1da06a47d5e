"""The capacity search against the batching mock's answer key: three engine settings of different capacity, each
searched --repeats times by a real Locust master and 2 workers, beside `GET /mock/capacity` for the same SLO.

Each setting is a fresh mock process (4 output tokens a request, so steps are short); the SLO is TTFT p95 under
300 ms and under 1 % errors; the search starts at --start (users, or requests/s with `--control rate`), 5 %
precision, --warmup-s of warm-up and a window of at most --window-s per step. Prints per run: the answer, the answer
key's users and rate_per_s (both), the answer's ratio to its key, the key's prompt tokens (the mean of the mock's
requests since it started), the time the key took, the first failing load, the wall time, the steps tried and the
drains before the rate steps that followed a failed one (docs/capacity.md, "The drain"). Then per setting the spread
of the repeats.

    /work/venv/bin/python bench/capacity_accuracy.py [--repeats 3] [--start 8]
    /work/venv/bin/python bench/capacity_accuracy.py --control rate --warmup-s 3 --window-s 6 [--prefill 250]
    /work/venv/bin/python bench/capacity_accuracy.py --saturation   # the fixed-delay mock: where the client gives out
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.answer_keys import answer_key
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
KEY_QUERY = "ttft_p95_ms=300&output_tokens=4"
SETTINGS = {"prefill 1000 ms/1k": 1000.0, "prefill 500 ms/1k": 500.0, "prefill 250 ms/1k": 250.0}  # 10, 15, 23


def one_run(url: str, start: float, out: Path, *search: str) -> tuple[dict, float]:
    code, err, seconds = run_distributed(
        *("--host", url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(out), "--llm-threshold", SLO),
        *("--llm-capacity-start", f"{start:g}", "--llm-capacity-precision", "0.05", *search),
        locustfile="locustfiles/capacity.py",
        timeout=600,
    )
    if code != 0 or not out.exists():
        raise SystemExit(f"run failed, exit {code}: {err[-2000:]}")
    return load(out)["capacity"], seconds


def saturation() -> None:
    """The fixed-delay mock has no capacity limit: the search must stop where the client saturates, a lower bound."""
    with (
        start_subprocess(MockConfig(ttft_ms=10, itl_ms=2, output_tokens=4)) as mock,
        tempfile.TemporaryDirectory() as t,
    ):
        capacity, seconds = one_run(mock.url, 32, Path(t) / "s.json", *STEPS)
    bound = f"lower bound {capacity['lower_bound']}: {capacity['stopped']}"
    print(f"max_users {capacity['max_users']}, {bound} ({seconds:.1f} s)")
    for s in capacity["steps"]:
        ttft, why = s["ttft_ms"]["p95"], s["client_reason"] or ""
        print(f"  {s['users']:>5} users  {s['requests_per_s']:>8.1f} req/s  TTFT p95 {ttft} ms  {why}")


STEPS = ("--llm-capacity-warmup-s", "2", "--llm-capacity-window-s", "5")


def _drains(steps: list[dict]) -> str:
    """The drains' waits in seconds, `!` after one that ran out of time; `-` for none."""
    waits = [f"{s['drain_s']:g}{'' if s['drained'] else '!'}" for s in steps if s.get("drain_s") is not None]
    return ",".join(waits) or "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--start", type=float, default=8)
    ap.add_argument("--control", choices=("users", "rate"), default="users")
    ap.add_argument("--warmup-s", type=float, default=2.0)
    ap.add_argument("--window-s", type=float, default=5.0)
    ap.add_argument("--saturation", action="store_true", help="search the fixed-delay mock instead")
    ap.add_argument("--prefill", type=float, choices=sorted(SETTINGS.values()), help="one setting (ms per 1k)")
    a = ap.parse_args()
    if a.saturation:
        saturation()
        return
    search = ("--llm-capacity-control", a.control, "--llm-capacity-warmup-s", f"{a.warmup_s:g}")
    search += ("--llm-capacity-window-s", f"{a.window_s:g}", "--llm-capacity-inflight-s", "2")
    rate = a.control == "rate"
    head = f"{'setting':<20} {'run':>3} {'answer':>7} {'key users':>9} {'key rate':>8} {'ratio':>6}"
    print(f"{head} {'key s':>5} {'prompt':>6} {'first fail':>10} {'wall s':>7}  steps  drains s (! not drained)")
    for name, prefill in SETTINGS.items():
        if a.prefill is not None and prefill != a.prefill:
            continue
        found = []
        for i in range(a.repeats):
            config = MockConfig(engine="batching", prefill_ms_per_1k=prefill, **ENGINE)
            with start_subprocess(config) as mock, tempfile.TemporaryDirectory() as tmp:
                capacity, seconds = one_run(mock.url, a.start, Path(tmp) / "s.json", *search)
                asked = time.monotonic()
                key = answer_key(mock.url, KEY_QUERY)
                key_s = time.monotonic() - asked
            answer = capacity["max_rate_per_s"] if rate else capacity["max_users"]
            truth = key["rate_per_s"] if rate else key["users"]
            found.append(answer)
            steps = ",".join(f"{s['rate_per_s'] if rate else s['users']:g}" for s in capacity["steps"])
            ratio = answer / truth if truth else float("nan")
            fail = capacity["first_failed_rate_per_s" if rate else "first_failed_users"]
            cells = f"{answer:>7g} {key['users']:>9} {key['rate_per_s']:>8.2f} {ratio:>6.2f} {key_s:>5.1f}"
            cells += f" {key['workload']['prompt_tokens']:>6}"
            drains = _drains(capacity["steps"])
            print(f"{name:<20} {i + 1:>3} {cells} {fail!s:>10} {seconds:>7.1f}  {steps}  {drains}", flush=True)
        spread = (max(found) - min(found)) / max(min(found), 1)
        print(f"{name:<20} repeats {found}: spread {spread * 100:.0f} % of the smallest", flush=True)


if __name__ == "__main__":
    main()
