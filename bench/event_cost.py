"""Benchmark: CPU per streamed token, layer by layer, so that the cost of each part of the paced path shows.

Each layer runs in its own process pinned to one core (the mock on the other): N streams back to back against the
same mock; it prints CPU-µs per token (user + system of the process tree over a steady window, tokens counted by the
mock), the median of interleaved repeats. Each layer adds one stage to the one before:

    bare      gevent sockets, recv until the chunked body ends: what any gevent reader pays per wake-up
    stamped   + recvmsg with the kernel's arrival stamp (SO_TIMESTAMPNS)
    framing   + the HTTP response parser (geventhttpclient's llhttp, our Response)
    sse       + the SSE decoder (loadlib.transport.sse)
    adapter   + the OpenAI adapter's parser and the output stamps
    stream    loadlib's whole attempt (`stream_call`: deadlines, watchdog, first-byte stamper, classification)
    locust    a headless Locust run of bench/locustfile_bench.py (records, statistics, Locust)
    aiohttp   the reference client (bench/reference_client.py): the yardstick of the targets
    reactor   one greenlet reading every socket through one epoll (no per-socket wait): a floor below `bare`
    reactor+  the reactor with the `adapter` layer's work per read (stamp, HTTP, SSE, adapter): a reactor read model

    python bench/event_cost.py                       # 128 streams, TTFT 200 ms, 10 ms/token, every layer (~8 min)
    python bench/event_cost.py --itl-ms 0 --streams 32 --layers stream,aiohttp
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MOCK_CORE, CLIENT_CORE = 1, 0
STAGES = ("bare", "stamped", "framing", "sse", "adapter")
LAYERS = (*STAGES, "stream", "locust", "aiohttp", "reactor", "reactor+")
LAST_CHUNK = b"0\r\n\r\n"


def request_bytes(url: str) -> tuple[str, int, bytes]:
    """(host, port, the raw request) of a streamed chat completion at `url`."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    body = json.dumps(_body()).encode()
    head = f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
    return parts.hostname or "", parts.port or 80, (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def _body() -> dict:
    messages = [{"role": "user", "content": "Tell me about load testing."}]
    return {"model": "mock-llm", "messages": messages, "max_tokens": 256, "stream": True}


def child_staged(stage: str, url: str, streams: int, seconds: float) -> None:
    """N greenlets, each a keep-alive socket, reading with the stages up to `stage` (see the module's docstring)."""
    from gevent import monkey

    monkey.patch_all()
    import gevent

    import socket

    host, port, request = request_bytes(url)
    end = time.perf_counter() + seconds
    read = _reader(stage)

    def one() -> None:
        sock = socket.create_connection((host, port))
        if stage != "bare":
            sock.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
        while time.perf_counter() < end:
            sock.sendall(request)
            read(sock)

    gevent.joinall([gevent.spawn(one) for _ in range(streams)])


def _reader(stage: str) -> Any:
    """A function that reads one response from a socket, doing the work of the stages up to `stage`."""
    if stage == "bare":
        return _read_bare
    from array import array

    from loadlib.providers.registry import get_adapter
    from loadlib.transport.connection import Response
    from loadlib.transport.sse import SSEDecoder
    from loadlib.transport.stamps import kernel_stamp

    depth = STAGES.index(stage)
    adapter = get_adapter("openai")

    def read(sock: Any) -> None:
        resp, decoder, parser, stamps = Response("POST"), SSEDecoder(), adapter.new_parser(), array("d")
        tail, raw = b"", sock._sock
        while not (resp.message_complete if depth >= 2 else tail.endswith(LAST_CHUNK)):
            try:
                data, ancillary, _, _ = raw.recvmsg(65536, 64)
            except BlockingIOError:
                sock._wait(sock._read_event)
                continue
            stamp = kernel_stamp(ancillary)
            if depth < 2:
                tail = (tail + data)[-8:]
                continue
            resp.feed(data)
            if depth >= 3 and resp.buffered:
                for at, event, payload in decoder.feed(resp.take_body(), stamp):
                    if depth >= 4 and parser.feed(event, payload) & 1:
                        stamps.append(at)

    return read


def _read_bare(sock: Any) -> None:
    tail = b""
    while not tail.endswith(LAST_CHUNK):
        data = sock.recv(65536)
        if not data:
            return
        tail = (tail + data)[-8:]


def child_reactor(url: str, streams: int, seconds: float, parse: bool) -> None:
    """One greenlet reads every socket: a raw epoll, woken through one gevent watcher on its fd. With `parse`, each
    read also gets the `adapter` layer's work (kernel stamp, HTTP framing, SSE, the OpenAI parser, output stamps)."""
    from gevent import get_hub, monkey

    monkey.patch_all()
    from gevent.monkey import get_original

    import select
    import socket

    host, port, request = request_bytes(url)
    epoll = get_original("select", "epoll")()
    socks: dict[int, Any] = {}
    readers: dict[int, Any] = {}
    for _ in range(streams):
        raw = socket.create_connection((host, port))._sock
        raw.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
        socks[raw.fileno()], readers[raw.fileno()] = raw, _ReactorRead(parse)
        raw.sendall(request)
        epoll.register(raw.fileno(), select.EPOLLIN)
    hub, end = get_hub(), time.perf_counter() + seconds
    watcher = hub.loop.io(epoll.fileno(), 1)
    while time.perf_counter() < end:
        hub.wait(watcher)
        for fd, _ in epoll.poll(0):
            try:
                data, ancillary, _, _ = socks[fd].recvmsg(65536, 64)
            except BlockingIOError:
                continue
            if readers[fd].feed(data, ancillary):
                readers[fd] = _ReactorRead(parse)
                socks[fd].sendall(request)


class _ReactorRead:
    """One response read by the reactor: True from `feed` once it has ended."""

    def __init__(self, parse: bool) -> None:
        from array import array

        from loadlib.providers.registry import get_adapter
        from loadlib.transport.connection import Response
        from loadlib.transport.sse import SSEDecoder

        self.parse, self.tail = parse, b""
        if parse:
            self.resp, self.decoder = Response("POST"), SSEDecoder()
            self.parser, self.stamps = get_adapter("openai").new_parser(), array("d")

    def feed(self, data: bytes, ancillary: Any) -> bool:
        if not self.parse:
            self.tail = (self.tail + data)[-8:]
            return self.tail.endswith(LAST_CHUNK)
        from loadlib.transport.stamps import kernel_stamp

        resp, stamp = self.resp, kernel_stamp(ancillary)
        resp.feed(data)
        if resp.buffered:
            for at, event, payload in self.decoder.feed(resp.take_body(), stamp or 0.0):
                if self.parser.feed(event, payload) & 1:
                    self.stamps.append(at)
        return resp.message_complete


def child_stream(url: str, streams: int, seconds: float) -> None:
    """N greenlets calling loadlib's `stream_call` back to back."""
    from gevent import monkey

    monkey.patch_all()
    import gevent

    from loadlib.config import Timeouts, make_endpoint
    from loadlib.providers.base import ChatRequest
    from loadlib.providers.registry import get_adapter
    from loadlib.transport.connection import Connection
    from loadlib.transport.stream import stream_call

    ep = make_endpoint(url, model="mock-llm", api_key_env="none")
    adapter = get_adapter("openai")
    http = adapter.build(ep.base_path, ep.model, None, ChatRequest(messages=_body()["messages"], max_tokens=256))
    end = time.perf_counter() + seconds

    def one() -> None:
        conn = Connection(ep, Timeouts())
        while time.perf_counter() < end:
            stream_call(conn, adapter, http)

    gevent.joinall([gevent.spawn(one) for _ in range(streams)])


def layer_cmd(layer: str, url: str, streams: int, seconds: float) -> list[str]:
    if layer == "locust":
        cmd = [sys.executable, "-m", "locust", "-f", "bench/locustfile_bench.py", "--headless", "-u", str(streams)]
        cmd += ["-r", str(streams), "-t", f"{int(seconds)}s", "--host", url, "--llm-api-key-env", "none"]
        return [*cmd, "--llm-max-tokens", "256", "--only-summary", "--loglevel", "ERROR"]
    if layer == "aiohttp":
        cmd = [sys.executable, "bench/reference_client.py", "--url", url, "--streams", str(streams)]
        return [*cmd, "--duration", str(seconds), "--out", os.devnull]
    return [sys.executable, __file__, "--child", layer, "--url", url, "--streams", str(streams), "--seconds", "600"]


def mock_tokens(url: str) -> int:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/mock/stats", timeout=5) as r:
        return int(json.load(r)["tokens_sent"])


def measure(layer: str, url: str, streams: int, warmup: float, window: float) -> tuple[float, float]:
    """(CPU-µs, of which system) per token of one layer's process tree over `window` seconds after `warmup`."""
    import psutil

    cmd = ["taskset", "-c", str(CLIENT_CORE), *layer_cmd(layer, url, streams, warmup + window + 5)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL)
    try:
        time.sleep(warmup)
        ps = psutil.Process(proc.pid)
        (user0, sys0), tok0 = _tree_cpu(ps), mock_tokens(url)
        time.sleep(window)
        (user1, sys1), tok1 = _tree_cpu(ps), mock_tokens(url)
    finally:
        proc.kill()
        proc.wait()
    per = 1e6 / max(tok1 - tok0, 1)
    return (user1 + sys1 - user0 - sys0) * per, (sys1 - sys0) * per


def _tree_cpu(ps: Any) -> tuple[float, float]:
    times = [p.cpu_times() for p in [ps, *ps.children(recursive=True)]]
    return sum(t.user for t in times), sum(t.system for t in times)


def run_child(args: argparse.Namespace) -> None:
    if args.child in ("reactor", "reactor+"):
        child_reactor(args.url, args.streams, args.seconds, parse=args.child == "reactor+")
    elif args.child == "stream":
        child_stream(args.url, args.streams, args.seconds)
    else:
        child_staged(args.child, args.url, args.streams, args.seconds)


def print_table(args: argparse.Namespace, costs: dict[str, list[tuple[float, float]]]) -> None:
    print(f"{args.streams} streams, TTFT {args.ttft_ms:g} ms, ITL {args.itl_ms:g} ms: CPU-µs per token")
    print(f"  {'layer':<9}{'median':>7}{'system':>8}  {'runs':<24}{'vs aiohttp':>10}")
    ref = statistics.median(c for c, _ in costs["aiohttp"]) if "aiohttp" in costs else None
    for layer, values in costs.items():
        med, system = statistics.median(c for c, _ in values), statistics.median(s for _, s in values)
        runs = ", ".join(f"{c:.1f}" for c, _ in values)
        ratio = f"{med / ref:.2f}x" if ref else "-"
        print(f"  {layer:<9}{med:7.1f}{system:8.1f}  {runs:<24}{ratio:>10}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=128)
    ap.add_argument("--itl-ms", type=float, default=10.0, help="the mock's gap between tokens (0: as fast as it can)")
    ap.add_argument("--ttft-ms", type=float, default=200.0)
    ap.add_argument("--layers", default=",".join(LAYERS), help=f"comma-separated, of: {', '.join(LAYERS)}")
    ap.add_argument("--repeats", type=int, default=3, help="runs per layer, interleaved; the median is printed")
    ap.add_argument("--window-s", type=float, default=8.0)
    ap.add_argument("--child", choices=[*STAGES, "stream", "reactor", "reactor+"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=600.0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run_child(args)
        return
    from loadlib.mock import MockConfig, start_subprocess

    layers = [layer for layer in args.layers.split(",") if layer]
    unknown = sorted(set(layers) - set(LAYERS))
    if unknown:
        raise SystemExit(f"unknown layer(s) {', '.join(unknown)}: pick from {', '.join(LAYERS)}")
    costs: dict[str, list[tuple[float, float]]] = {layer: [] for layer in layers}
    with start_subprocess(MockConfig(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, output_tokens=256), cpu=MOCK_CORE) as m:
        for _ in range(args.repeats):
            for layer in layers:
                costs[layer].append(measure(layer, m.url + "/v1", args.streams, 4.0, args.window_s))
                print(f"... {layer}: {costs[layer][-1][0]:.1f} µs/token", file=sys.stderr, flush=True)
    print_table(args, costs)


if __name__ == "__main__":
    main()
