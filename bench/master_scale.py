"""Benchmark: what N workers cost one real Locust master running our locustfile.

A real master (`locustfiles/chat.py --master --headless --expect-workers N`, the embedded mock as its target) and N
simulated workers in this process. Each simulated worker speaks Locust's worker protocol over ZeroMQ (locust.rpc),
as a real one does: `client_ready`, loadlib's hello (its fingerprint, which the master checks), `spawning` and
`spawning_complete` when given users, a heartbeat every second and a stats report every WORKER_REPORT_INTERVAL,
then a final report at quit. The reports are the project's real payload: built once, before the master starts, by
running Locust's and loadlib's own `report_to_master` listeners on a real Locust environment with our run context,
after --requests chat() calls per report (stream outcomes drawn at random: TTFT, ITL, 128-token answers, 1 % rate
limited) spread over --rows scenarios; each worker sends one of PAYLOADS such payloads in turn.

Measured over a steady window once every worker runs its users:
- master CPU as % of one core (utime + stime from /proc/PID/stat) and per report handled;
- report latency: from a report's send to the master's answer to the heartbeat sent right after it (the master
  handles a worker's messages in order, so this bounds send-to-handled from above; it includes this process's own
  scheduling on a busy machine);
- the master's RSS (/proc/PID/status) at the end of the window.

    python bench/master_scale.py                      # N = 10, 50, 100 with one row
    python bench/master_scale.py --workers 100 --rows 8
"""

# ruff: noqa: E402  (gevent must patch before anything else is imported, as under Locust)
from gevent import monkey

monkey.patch_all()

import gevent
import gevent.event

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from locust import __version__ as locust_version
from locust import task
from locust.argument_parser import get_parser
from locust.env import Environment
from locust.rpc import Message, rpc
from locust.runners import HEARTBEAT_INTERVAL, WORKER_REPORT_INTERVAL
from locust.stats import setup_distributed_stats_event_listeners

import loadlib.locust.user as user_module
from loadlib import options
from loadlib.errors import ErrorClass
from loadlib.locust import LLMUser
from loadlib.locust.context import context
from loadlib.locust.handshake import HELLO, loadlib_version, locustfile_digest
from loadlib.locust.install import wire
from loadlib.providers.base import StreamResult, Usage
from loadlib.transport.stream import StreamOutcome

LOCUSTFILE = "locustfiles/chat.py"
USER_CLASS = "ChatUser"
USERS_PER_WORKER = 10
PAYLOADS = 4
TOKENS = 128
SETTLE_S = 4.0  # after the last worker runs its users: the master's spawn and first merges are over


class Sim(LLMUser):
    host = "http://127.0.0.1:9/v1"

    @task
    def noop(self) -> None:
        pass


def outcome(rng: random.Random) -> StreamOutcome:
    """One stream's outcome drawn at random: TTFT about 200 ms, 128 tokens about 20 ms apart, 1 % rate limited."""
    t0 = time.perf_counter()
    if rng.random() < 0.01:
        out = StreamOutcome(status=ErrorClass.RATE_LIMITED, http_status=429, message="429 Too Many Requests")
        out.t0, out.ttfb_ms, out.e2e_ms = t0, 5.0, 5.0
        return out
    ttft = rng.lognormvariate(5.3, 0.3)
    stamps = array("d", [ttft])
    for _ in range(TOKENS - 1):
        stamps.append(stamps[-1] + rng.lognormvariate(3.0, 0.25))
    end = stamps[-1] + rng.uniform(1, 5)
    out = StreamOutcome(http_status=200, ttfb_ms=ttft - 3, first_event_ms=ttft, ttft_ms=ttft, ttfo_ms=ttft, e2e_ms=end)
    out.t0, out.output_stamps_ms, out.events, out.streamed = t0, stamps, TOKENS + 2, True
    out.response_bytes = 180 * TOKENS
    usage = Usage(prompt_tokens=rng.randint(200, 600), completion_tokens=TOKENS)
    out.result = StreamResult(usage=usage, text_by_choice={0: "x " * TOKENS})
    return out


def payloads(requests: int, rows: int) -> list[dict[str, Any]]:
    """PAYLOADS real report payloads, each after `requests` chat() calls over `rows` scenarios: Locust's listener
    (its request table and errors) and loadlib's (every node part's `ship`) fill them, as on a worker."""
    parser = get_parser()
    if "--llm-provider" not in parser._option_string_actions:  # loadlib's listener added them when imported
        options.add_arguments(parser)
    opts = parser.parse_args(["-f", LOCUSTFILE, "--llm-api-key-env", "none", "--llm-estimate-every", "0"])
    env = Environment(parsed_options=opts, host=Sim.host, user_classes=[Sim])
    env.create_local_runner()
    setup_distributed_stats_event_listeners(env.events, env.runner.stats)
    ctx = context(env)
    wire(ctx)
    ctx.start()
    rng = random.Random(1)
    user_module.stream_call = lambda *_, **__: outcome(rng)
    user = Sim(env)
    made = []
    for _ in range(PAYLOADS):
        for i in range(requests):
            user.chat([{"role": "user", "content": "hi"}], scenario="chat" if i % rows == 0 else f"chat-{i % rows}")
        gevent.sleep(1.1)  # the health sampler's second: its payload has a sample
        data: dict[str, Any] = {}
        env.events.report_to_master.fire(client_id="sim", data=data)
        made.append(Message.unserialize(Message("stats", data, "sim").serialize()).data)  # as the master gets it
    ctx.health.close()
    return made


def handling(reports: list[dict[str, Any]], workers: int = 100, rounds: int = 3) -> dict[str, float]:
    """The master's work per report, part by part, in this process: a MasterRunner environment with our run
    context wired, fed `rounds` reports of each of `workers` workers (milliseconds of CPU per report, the least of
    3 repeats). `unpack` is msgpack; each of our parts is named by its key; `Locust and the rest` is the whole
    worker_report event less our parts: Locust's own listeners (request table, errors, user counts)."""
    parser = get_parser()
    opts = parser.parse_args(["-f", LOCUSTFILE, "--master", "--llm-api-key-env", "none"])
    env = Environment(parsed_options=opts, host=Sim.host, user_classes=[Sim])
    env.create_master_runner("127.0.0.1", free_port())
    ctx = context(env)
    wire(ctx)
    ctx.start()
    packed = [Message("stats", r, "sim").serialize() for r in reports]
    names = [f"sim_{i:03d}" for i in range(workers)]
    batch = [(n, packed[(i + k) % len(packed)]) for k in range(rounds) for i, n in enumerate(names)]
    out = {"unpack": best_ms(lambda: [Message.unserialize(b) for _, b in batch], len(batch))}
    datas = [(n, Message.unserialize(b).data) for n, b in batch]
    whole = best_ms(lambda: [env.events.worker_report.fire(client_id=n, data=d) for n, d in datas], len(batch))
    for part in ctx.parts:
        if part.key:
            out[part.key] = best_ms(lambda p=part: [p.merge(d[p.key], n) for n, d in datas if p.key in d], len(batch))
    out["Locust and the rest"] = max(whole - sum(v for k, v in out.items() if k != "unpack"), 0.0)
    env.runner.quit()
    return out


def best_ms(call: Any, per: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best / per * 1000


class SimWorker:
    """One simulated worker: Locust's worker protocol on its own ZeroMQ socket, real payloads."""

    def __init__(self, index: int, port: int, reports: list[dict[str, Any]], fingerprint: dict[str, Any]) -> None:
        self.id = f"sim_{index:03d}_{os.getpid()}"
        self.client = rpc.Client("127.0.0.1", port, self.id)
        self.reports, self.fingerprint, self.index = reports, fingerprint, index
        self.classes: dict[str, int] = {USER_CLASS: 0}
        self.state = "ready"
        self.acked = False
        self.admitted = gevent.event.Event()
        self.running = gevent.event.Event()
        self.quit = gevent.event.Event()
        self.beats = self.answers = 0  # heartbeats sent, answered (the master answers each, in order)
        self.pending: tuple[int, float] | None = None  # the heartbeat after the last report and the report's send
        self.latencies: list[float] = []
        self.sent = 0

    def send(self, kind: str, data: Any = None) -> None:
        self.client.send(Message(kind, data, self.id))

    def start(self) -> list[gevent.Greenlet]:
        self.send("client_ready", locust_version)
        return [gevent.spawn(self.listen), gevent.spawn(self.heartbeats), gevent.spawn(self.report)]

    def listen(self) -> None:
        while not self.quit.is_set():
            msg = self.client.recv()
            if msg.type == "ack" and not self.acked:  # loadlib's gate: acknowledged, held until the hello
                self.acked = True
                self.send(HELLO, self.fingerprint)
            elif msg.type == "ack":  # Locust's own: admitted, from now on every heartbeat is answered
                self.admitted.set()
            elif msg.type == "spawn":
                self.send("spawning")
                self.classes = dict(msg.data["user_classes_count"])
                self.send("spawning_complete", {"user_classes_count": self.classes, "user_count": self.users})
                self.state = "running"
                self.running.set()
            elif msg.type == "heartbeat":
                self.answers += 1
                if self.pending is not None and self.answers >= self.pending[0]:
                    self.latencies.append(time.perf_counter() - self.pending[1])
                    self.pending = None
            elif msg.type == "quit":
                self.state = "stopped"
                self.send("stats", self.payload(final=True))
                self.quit.set()

    @property
    def users(self) -> int:
        return sum(self.classes.values())

    def heartbeats(self) -> None:
        """Once a second from admission on (the master does not answer a worker it has not admitted, and the
        report latency counts answers)."""
        self.admitted.wait()
        while not self.quit.is_set():
            self.heartbeat()
            gevent.sleep(HEARTBEAT_INTERVAL)

    def heartbeat(self) -> None:
        data = {"state": self.state, "current_cpu_usage": 20.0, "current_memory_usage": 150_000_000}
        self.send("heartbeat", data)
        self.beats += 1

    def payload(self, final: bool = False) -> dict[str, Any]:
        data = dict(self.reports[self.sent % len(self.reports)])
        data["user_count"], data["user_classes_count"] = self.users, dict(self.classes)
        data["llm_workers"] = dict(data.get("llm_workers") or {}, final=final)
        self.sent += 1
        return data

    def report(self) -> None:
        """Every WORKER_REPORT_INTERVAL once running (spread over the interval as workers start apart): the report,
        then at once a heartbeat whose answer says the master has handled the report."""
        self.running.wait()
        gevent.sleep(WORKER_REPORT_INTERVAL * self.index / 100 % WORKER_REPORT_INTERVAL)
        while not self.quit.is_set():
            data = self.payload()
            sent = time.perf_counter()
            self.send("stats", data)
            self.heartbeat()
            self.pending = (self.beats, sent)
            gevent.sleep(WORKER_REPORT_INTERVAL)


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def master(workers: int, port: int, seconds: int, summary: Path) -> subprocess.Popen:
    users = workers * USERS_PER_WORKER
    cmd = [sys.executable, "-m", "locust", "-f", LOCUSTFILE, "--master", "--headless", "--expect-workers"]
    cmd += [str(workers), "--expect-workers-max-wait", "60", "--master-bind-host", "127.0.0.1"]
    cmd += ["--master-bind-port", str(port), "-u", str(users), "-r", str(users), "-t", f"{seconds}s"]
    cmd += ["--llm-final-report-wait-s", "10", "--loglevel", "WARNING", "--only-summary", "--llm-summary", str(summary)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def measure(workers: int, reports: list[dict[str, Any]], window: float, summary: Path) -> dict[str, float]:
    port = free_port()
    proc = master(workers, port, int(window + SETTLE_S + 40), summary)
    time.sleep(1.0)
    fingerprint = {"loadlib": loadlib_version(), "locustfile": locustfile_digest(LOCUSTFILE), "options": {}}
    sims = [SimWorker(i, port, reports, fingerprint) for i in range(workers)]
    greenlets = [g for s in sims for g in s.start()]
    try:
        if not all(s.running.wait(timeout=90) for s in sims):
            raise SystemExit(f"not every worker was given users: {proc.stderr.read()[-2000:] if proc.poll() else ''}")
        gevent.sleep(SETTLE_S)
        for s in sims:
            s.latencies.clear()
        cpu0, t0, sent0 = cpu_s(proc.pid), time.monotonic(), sum(s.sent for s in sims)
        gevent.sleep(window)
        cpu1, t1, sent1 = cpu_s(proc.pid), time.monotonic(), sum(s.sent for s in sims)
        rss = rss_mb(proc.pid)
    finally:
        proc.terminate()  # the master quits: each simulated worker answers with its final report
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        gevent.killall(greenlets, block=False)
        for s in sims:
            s.client.close(linger=0)
    lat = sorted(x for s in sims for x in s.latencies)
    handled = max(sent1 - sent0, 1)
    sent = sum(int(s.reports[i % len(s.reports)]["llm_workers"]["requests"]) for s in sims for i in range(s.sent))
    counted = json.loads(summary.read_text())["total"]["count"] if summary.exists() else None
    return {
        "sent": sent,
        "counted": counted,
        "cpu_pct": (cpu1 - cpu0) / (t1 - t0) * 100,
        "cpu_ms_per_report": (cpu1 - cpu0) / handled * 1000,
        "reports": handled,
        "lat_p50_ms": statistics.median(lat) * 1000 if lat else float("nan"),
        "lat_p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000 if lat else float("nan"),
        "rss_mb": rss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--rows", type=int, default=1, help="scenarios per payload (rows of the statistics)")
    parser.add_argument("--requests", type=int, default=100, help="chat() calls per report and worker")
    parser.add_argument("--window", type=float, default=30.0, help="seconds measured per N")
    args = parser.parse_args()
    reports = payloads(args.requests, args.rows)
    size = statistics.mean(len(Message("stats", r, "sim").serialize()) for r in reports)
    print(f"payload: {args.requests} requests over {args.rows} row(s), {size / 1024:.1f} KiB msgpack on average")
    parts = handling(reports)
    print("master CPU per report, in-process:", ", ".join(f"{k} {v:.2f} ms" for k, v in parts.items()), end="")
    print(f"; together {sum(parts.values()):.2f} ms")
    heads = ("workers", "reports/s", "CPU % core", "ms CPU/report", "lat p50", "lat p99", "RSS MB")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (7, 9, 10, 13, 8, 8, 7), strict=True)))
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.workers:
            m = measure(n, reports, args.window, Path(tmp) / f"summary-{n}.json")
            print(
                f"{n:7d} {m['reports'] / args.window:9.1f} {m['cpu_pct']:10.1f} {m['cpu_ms_per_report']:13.2f} "
                f"{m['lat_p50_ms']:6.1f}ms {m['lat_p99_ms']:6.1f}ms {m['rss_mb']:7.0f}   "
                f"(summary counts {m['counted']} of {m['sent']} requests sent)",
                flush=True,
            )


if __name__ == "__main__":
    main()
