"""A hostile HTTP server: it answers like an OpenAI-compatible chat endpoint, then misbehaves on purpose.

Point a client (this suite, an SDK, a proxy) at it to see what the client does when a server floods it, never ends
a line, drips its head one byte a second, sends JSON fields of the wrong type, breaks chunked framing mid-stream,
echoes the API key back, refuses the key, or serves a certificate nobody trusts. A well-behaved client classifies
every outcome, in bounded time and memory, and never shows the key.

    python -m loadlib.mock.hostile --list   # or: --behaviour flood --port 8900
    locust -f locustfiles/chat.py --host http://127.0.0.1:8900/v1 --llm-api-key-env none

Any path answers (`--host http://127.0.0.1:PORT/v1` works); a header `x-hostile: NAME` picks the behaviour per
request; `GET /hostile/stats` counts requests. Standard library only (plus `trustme` for `--tls`): raw sockets, just
enough HTTP/1.1 to read a request, a thread per connection so no misbehaviour waits for another.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

SSE = "Content-Type: text/event-stream"
JSON = "Content-Type: application/json"
CHUNKED = "Transfer-Encoding: chunked"
CLOSE = "Connection: close"
DONE = b"data: [DONE]\n\n"
WRITE_SIZE = 65536  # one write of the flooding behaviours
LINGER_S = 10.0  # how long a broken response waits for the client to hang up first
STATS_PATH = "/hostile/stats"
BAD_KEY = {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}


@dataclass
class Request:
    """One request as read off the wire: header names lower-cased, body by Content-Length."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def key(self) -> str:
        """The API key the client sent (`Authorization: Bearer K` or `x-api-key: K`), '' when none."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
        return self.headers.get("x-api-key", "")


class Peer:
    """One client connection: requests read through a buffer, responses written raw (no framing added). `number`
    counts the server's connections (0 = its first), `answered` the requests answered on this one, `idle_since` is
    when the last answer ended (monotonic clock; None before the first)."""

    def __init__(self, sock: socket.socket, number: int = 0) -> None:
        self.sock = sock
        self.rfile = sock.makefile("rb")
        self.send = sock.sendall
        self.number = number
        self.answered = 0
        self.idle_since: float | None = None

    def read_request(self) -> Request | None:
        """The next request, or None at the end of the connection or on something that is not HTTP/1.x."""
        parts = self.rfile.readline(WRITE_SIZE).decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return None
        headers = self._headers()
        if headers is None:
            return None
        body = self.rfile.read(int(headers.get("content-length") or 0))
        return Request(parts[0], parts[1], headers, body)

    def _headers(self) -> dict[str, str] | None:
        """Header lines up to the blank one; repeated names keep the last value (enough to misbehave)."""
        headers: dict[str, str] = {}
        while True:
            line = self.rfile.readline(WRITE_SIZE)
            if not line.endswith(b"\n"):
                return None  # cut short or too long
            if line in (b"\r\n", b"\n"):
                return headers
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()

    def linger(self) -> None:
        """Wait (bounded) for the client to hang up first, so it reads all we sent before it sees our end."""
        self.sock.settimeout(LINGER_S)
        with suppress(OSError):
            while self.sock.recv(WRITE_SIZE):
                pass


@dataclass
class Exchange:
    """What a behaviour answers: the request, where to write, the request's number on this server, the options."""

    peer: Peer
    req: Request
    n: int
    line_bytes: int | None  # --line-mb
    rate: float | None  # --rate-mb, in bytes per second
    tally: Callable[[str], None] = lambda _: None  # counts a fault the behaviour injected (GET /hostile/stats)


Behaviour = Callable[[Exchange], bool]  # answers one request; True keeps the connection alive
BEHAVIOURS: dict[str, tuple[Behaviour, str]] = {}


def behaviour(name: str, description: str) -> Callable[[Behaviour], Behaviour]:
    """Register a behaviour under `name`, with the one line `--list` shows."""

    def register(fn: Behaviour) -> Behaviour:
        BEHAVIOURS[name] = (fn, description)
        fn.__doc__ = fn.__doc__ or description
        return fn

    return register


def head(status: str, *headers: str) -> bytes:
    """A response head; no framing header is added, each behaviour picks its own (or none)."""
    return ("\r\n".join([f"HTTP/1.1 {status}", *headers]) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def event(obj: Any) -> bytes:
    """One SSE `data:` event holding `obj` as compact JSON."""
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def delta(text: str, **extra: Any) -> dict[str, Any]:
    """A chat-completion chunk carrying `text` as content."""
    choice = {"index": 0, "delta": {"content": text}}
    return {"object": "chat.completion.chunk", "model": "hostile", "choices": [choice], **extra}


def usage(prompt: Any = 12, completion: Any = 20, **extra: Any) -> dict[str, Any]:
    """The final, choice-less chunk with the usage counts."""
    counts = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return {"object": "chat.completion.chunk", "choices": [], "usage": counts, **extra}


def completion(n: int) -> dict[str, Any]:
    """A valid non-streamed chat completion."""
    message = {"role": "assistant", "content": "A whole answer in one body, as a non-streaming server sends it."}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    counts = {"prompt_tokens": 12, "completion_tokens": 14, "total_tokens": 26}
    return {"id": f"hostile-{n}", "object": "chat.completion", "model": "hostile", "choices": [choice], "usage": counts}


def send_json(x: Exchange, status: str, obj: Any, *headers: str) -> bool:
    """A JSON response (`obj`, or its bytes) with Content-Length: the connection stays usable."""
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    x.peer.send(head(status, JSON, f"Content-Length: {len(body)}", *headers) + body)
    return True


def send_stream(x: Exchange, events: Iterable[bytes], pause_s: float = 0.0, *headers: str) -> bool:
    """A complete chunked SSE response, one chunk per event, `pause_s` between them: the connection stays usable."""
    x.peer.send(head("200 OK", SSE, CHUNKED, *headers))
    for i, data in enumerate(events):
        time.sleep(pause_s if i else 0.0)
        x.peer.send(chunk(data))
    x.peer.send(b"0\r\n\r\n")
    return True


@behaviour("long-line", "200 SSE, close-delimited: `data: ` then a line of x that never ends (or after --line-mb)")
def long_line(x: Exchange) -> bool:
    x.peer.send(head("200 OK", SSE, CLOSE) + b"data: ")
    block, left = b"x" * WRITE_SIZE, x.line_bytes
    while left is None or left > 0:
        x.peer.send(block if left is None else block[: min(left, WRITE_SIZE)])
        left = None if left is None else left - WRITE_SIZE
        if x.rate:
            time.sleep(WRITE_SIZE / x.rate)
    x.peer.send(b"\n\n" + DONE)
    return False


@behaviour("drip", "slowloris: the response head one byte per second, and it never ends")
def drip(x: Exchange) -> bool:
    opening = head("200 OK", SSE, "X-Drip: ")[:-4]  # without the blank line that would end the head
    for byte in itertools.chain(opening, itertools.repeat(ord("."))):
        x.peer.send(bytes((byte,)))
        time.sleep(1.0)
    return False


TYPE_FAULTS: dict[str, dict[str, Any]] = {
    "usage-list": {"choices": [], "usage": [12, 20]},
    "usage-string": {"choices": [], "usage": "12 in, 20 out"},
    "usage-number": {"choices": [], "usage": 32},
    "content-number": {"choices": [{"index": 0, "delta": {"content": 42}}]},
    "refusal-number": {"choices": [{"index": 0, "delta": {"refusal": 7}}]},
    "index-string": {"choices": [{"index": "0", "delta": {"content": "i "}}]},
    "finish-number": {"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]},
    "tool-calls-object": {"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0, "id": "call_1"}}}]},
}
BAD_COUNTS = "usage-counts"  # a usage object of the right type whose counts are not counts (1e20, -5)


def wrong_types_mix(n: int) -> list[str]:
    """The faults of request `n`: none, the bad counts, or two type faults; the mix cycles with the counter."""
    kinds = list(TYPE_FAULTS)
    m = n % (len(kinds) + 2)
    if m == 0:
        return []
    if m == 1:
        return [BAD_COUNTS]
    return sorted({kinds[m - 2], kinds[(m * 3) % len(kinds)]})


@behaviour("wrong-types", "200 SSE: good chunks mixed with fields of the wrong JSON type; the mix varies per request")
def wrong_types(x: Exchange) -> bool:
    mix = wrong_types_mix(x.n)
    rid = f"wt-{x.n}-{'+'.join(mix) or 'good'}"  # the id tells a test which faults this response carried
    faults = [TYPE_FAULTS[k] for k in mix if k in TYPE_FAULTS]
    events = []
    for i in range(10):
        events.append(event(delta(f"w{i} ", id=rid)))
        if i % 3 == 1 and faults:
            events.append(event({"id": rid, **faults.pop()}))
    final = usage(1e20, -5, id=rid) if BAD_COUNTS in mix else usage(id=rid)
    return send_stream(x, [*events, event(final), DONE], 0.0, f"x-request-id: {rid}")


@behaviour("close-json", "200 JSON, Connection: close, no Content-Length: a valid chat completion, then close")
def close_json(x: Exchange) -> bool:
    x.peer.send(head("200 OK", JSON, CLOSE) + json.dumps(completion(x.n)).encode())
    return False


@behaviour("chunked-error-head", "chunked head, one good chunk and an invalid chunk size line, in one write")
def chunked_error_head(x: Exchange) -> bool:
    x.peer.send(head("200 OK", SSE, CHUNKED) + chunk(event(delta("ok "))) + b"zz-not-a-size\r\n")
    x.peer.linger()
    return False


@behaviour("chunked-error-mid", "chunked SSE: a few good chunks, then (in a later write) an invalid chunk size line")
def chunked_error_mid(x: Exchange) -> bool:
    x.peer.send(head("200 OK", SSE, CHUNKED))
    for i in range(3):
        x.peer.send(chunk(event(delta(f"m{i} "))))
        time.sleep(0.03)
    x.peer.send(b"not-a-size\r\n")
    x.peer.linger()
    return False


@behaviour("json-reply", "200 JSON with Content-Length: a valid non-streamed chat completion (keep-alive)")
def json_reply(x: Exchange) -> bool:
    return send_json(x, "200 OK", completion(x.n))


def without_prefix(key: str) -> str:
    """The key without its prefix segments: everything up to the last `-` or `_` in its first 24 characters."""
    cut = max(key[:24].rfind("-"), key[:24].rfind("_"))
    return key[cut + 1 :]


@behaviour("echo-key", "echoes the API key it got: a 400 error holding it in four forms, or a 200 stream carrying it")
def echo_key(x: Exchange) -> bool:
    key = x.req.key or "no-key-sent"
    return _echo_error(x, key) if x.n % 2 == 0 else _echo_stream(x, key)


def _echo_error(x: Exchange, key: str) -> bool:
    """400 whose message holds the key as is, without prefix, URL-encoded and JSON-escaped with `\\/`."""
    message = f"Invalid key {key} (core {without_prefix(key)}, url {quote(key, safe='')}, escaped @ESCAPED@)"
    error = {"message": message, "type": "invalid_request_error", "code": "invalid_key"}
    escaped = json.dumps(key)[1:-1].replace("/", "\\/")  # legal JSON, and what PHP servers send
    return send_json(x, "400 Bad Request", json.dumps({"error": error}).replace("@ESCAPED@", escaped).encode())


def _echo_stream(x: Exchange, key: str) -> bool:
    """200 stream: chunk ids = the key, finish reason = the key without prefix, x-request-id = the key URL-encoded."""
    events = [event(delta(f"e{i} ", id=key)) for i in range(5)]
    stop = {"id": key, "choices": [{"index": 0, "delta": {}, "finish_reason": without_prefix(key)}]}
    tail = [event(stop), event(usage(id=key)), DONE]
    return send_stream(x, [*events, *tail], 0.0, f"x-request-id: {quote(key, safe='')}")


@behaviour("unauthorized", "HTTP 401 invalid_api_key JSON error (keep-alive)")
def unauthorized(x: Exchange) -> bool:
    return send_json(x, "401 Unauthorized", {"error": BAD_KEY})


@behaviour("slow-ok", "a well-behaved stream (the control): 20 content events 10 ms apart, usage, [DONE]")
def slow_ok(x: Exchange) -> bool:
    events = [event(delta(f"s{i} ", id=f"ok-{x.n}")) for i in range(20)]
    return send_stream(x, [*events, event(usage(id=f"ok-{x.n}")), DONE], 0.01)


class HostileServer(socketserver.ThreadingTCPServer):
    """Threads per connection, so a drip or a flood never holds up another client; counts what it served."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    block_on_close = False

    def __init__(self, args: argparse.Namespace, tls: ssl.SSLContext | None = None) -> None:
        super().__init__((args.host, args.port), Handler)
        self.behaviour = args.behaviour
        self.tls = tls
        self.line_bytes = None if args.line_mb is None else int(args.line_mb * (1 << 20))
        self.rate = args.rate_mb * (1 << 20) if args.rate_mb else None
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.numbers = itertools.count()  # connections, in the order they were accepted

    def secure(self, sock: socket.socket) -> socket.socket:
        """The TLS handshake (in the connection's own thread); a client refusing the certificate is counted."""
        with self.lock:
            self.counts["connections"] += 1
        if self.tls is None:
            return sock
        try:
            return self.tls.wrap_socket(sock, server_side=True)
        except OSError:
            with self.lock:
                self.counts["tls_failures"] += 1
            raise

    def answer(self, peer: Peer, req: Request) -> bool:
        """Route one request: the stats endpoint, or the behaviour (the server's, or the request's `x-hostile`)."""
        x = Exchange(peer, req, 0, self.line_bytes, self.rate, self.tally)
        if req.path.split("?")[0] == STATS_PATH:
            return send_json(x, "200 OK", self.stats())
        name = req.headers.get("x-hostile", self.behaviour)
        if name not in BEHAVIOURS:
            return send_json(x, "400 Bad Request", {"error": {"message": f"no behaviour {name!r} (see --list)"}})
        with self.lock:
            x.n = self.counts["requests"]
            self.counts["requests"] += 1
            self.counts[f"behaviour:{name}"] += 1
        kept = BEHAVIOURS[name][0](x)
        peer.answered += 1
        peer.idle_since = time.monotonic()
        return kept

    def tally(self, fault: str) -> None:
        with self.lock:
            self.counts[f"injected:{fault}"] += 1

    def stats(self) -> dict[str, Any]:
        """What `GET /hostile/stats` answers: requests, connections, TLS handshakes refused, requests per behaviour,
        and the faults behaviours counted as injected (the ground truth a client's counts are checked against)."""
        with self.lock:
            counts = dict(self.counts)
        by_name = {k.partition(":")[2]: v for k, v in counts.items() if k.startswith("behaviour:")}
        injected = {k.partition(":")[2]: v for k, v in counts.items() if k.startswith("injected:")}
        fixed = {k: counts.get(k, 0) for k in ("requests", "connections", "tls_failures")}
        return {**fixed, "by_behaviour": by_name, "injected": injected}


class Handler(socketserver.BaseRequestHandler):
    """One connection: requests answered in turn until a behaviour ends it or the client goes away."""

    server: HostileServer

    def handle(self) -> None:
        """Serve the connection; a client that hangs up or refuses our certificate ends it quietly."""
        sock = self.request
        try:
            sock = self.server.secure(self.request)
            peer = Peer(sock, next(self.server.numbers))
            with peer.rfile:  # the socket's descriptor stays open while its file object is
                while (req := peer.read_request()) is not None and self.server.answer(peer, req):
                    pass
        except (OSError, ValueError):
            pass  # the client went away or did not speak HTTP: that is its business, not a server error
        finally:
            if sock is not self.request:
                sock.close()  # a TLS socket; socketserver closes the plain one


def tls_context(workdir: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a throwaway certificate for 127.0.0.1 and localhost; returns it and the PEM a client
    would have to trust (trustme's throwaway CA, or the self-signed certificate made with the openssl CLI)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        import trustme
    except ImportError:
        return ctx, _openssl_certificate(ctx, workdir)
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    ca.cert_pem.write_to_path(str(workdir / "ca.pem"))
    return ctx, workdir / "ca.pem"


def _openssl_certificate(ctx: ssl.SSLContext, workdir: Path) -> Path:
    """The fallback without trustme: a self-signed certificate from the openssl command line."""
    if shutil.which("openssl") is None:
        raise SystemExit("error: --tls needs the Python package trustme or the openssl command")
    cert, key = workdir / "cert.pem", workdir / "key.pem"
    subj = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
    cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", *subj]
    subprocess.run([*cmd, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    ctx.load_cert_chain(cert, key)
    return cert


def listing() -> str:
    """Every behaviour with its one-line description."""
    width = max(map(len, BEHAVIOURS))
    return "\n".join(f"{name:<{width}}  {desc}" for name, (_, desc) in sorted(BEHAVIOURS.items()))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; the help lists every behaviour, so `--help` alone tells what the tool can do."""
    parser = argparse.ArgumentParser(
        prog="python -m loadlib.mock.hostile",
        description=__doc__.split("\n\n")[0] + " Behaviours:\n\n" + listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="The first line on stdout is 'hostile server (NAME) listening on URL'; it serves until killed. "
        "A header 'x-hostile: NAME' overrides the behaviour per request; GET /hostile/stats counts requests.",
    )
    parser.add_argument("--behaviour", "--behavior", choices=sorted(BEHAVIOURS), metavar="NAME", help="see --list")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: a free one, printed)")
    parser.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a throwaway self-signed certificate made at start-up (trustme's throwaway CA, else the "
        "openssl CLI): self-signed on purpose, nobody trusts it, to check what a client does with an untrusted "
        "certificate. The PEM to trust instead (SSL_CERT_FILE=PATH) is printed on the second stdout line.",
    )
    parser.add_argument("--line-mb", type=float, default=None, help="long-line: end the line after N MiB")
    parser.add_argument("--rate-mb", type=float, default=None, help="flood, long-line: send at most N MiB/s")
    parser.add_argument("--list", action="store_true", help="list the behaviours and exit")
    args = parser.parse_args(argv)
    if not args.list and not args.behaviour:
        parser.error("--behaviour NAME is required (see --list)")
    return args


def main(argv: list[str] | None = None) -> int:
    """`python -m loadlib.mock.hostile`: list, or serve until killed (the TLS material is removed on the way out)."""
    args = parse_args(argv)
    if args.list:
        print(listing())
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        tls, trust = tls_context(workdir) if args.tls else (None, None)
        server = HostileServer(args, tls)
        serve(server, args.behaviour, trust)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def serve(server: HostileServer, name: str, trust: Path | None) -> None:
    """Announce the URL (first stdout line, flushed) and serve until SIGTERM or Ctrl-C."""
    host, port = str(server.server_address[0]), server.server_address[1]
    print(f"hostile server ({name}) listening on {'https' if trust else 'http'}://{host}:{port}", flush=True)
    if trust is not None:
        print(f"certificate to trust: {trust}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with server, suppress(KeyboardInterrupt):  # leaving the block closes the listening socket
        server.serve_forever(poll_interval=0.5)


for _more in ("body", "end", "framing", "keepalive", "memory", "status", "usage"):  # each registers its behaviours
    importlib.import_module(f"loadlib.mock.hostile_{_more}")

if __name__ == "__main__":  # main of the imported module, whose registry the other modules fill
    sys.exit(__import__("loadlib.mock.hostile", fromlist=["main"]).main())
