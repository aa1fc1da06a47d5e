"""How a batch of line protocol reaches InfluxDB: one blocking `write(body)` per batch, called from the sink's own
greenlet (never from a user's), with every failure mapped to a `WriteError` that says whether retrying can help.

- `InfluxV1Transport`: InfluxDB 1.x `/write` (database, retention policy, basic auth) over `requests`, which Locust's
  monkey-patching makes cooperative. Also works against the v1 compatibility API of InfluxDB 2.x/3.x.
- `InfluxV2Transport`: InfluxDB 2.x/3.x `/api/v2/write` (token, org, bucket) through influxdb-client in SYNCHRONOUS
  mode. Its batching mode is avoided on purpose: `close()` can block for up to 5 minutes and its reactivex threads
  hang process exit under gevent >= 25.

HTTP libraries are imported when a transport is built, not at module import, so importing loadlib never pulls in
ssl before Locust has monkey-patched it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

DEFAULT_TIMEOUT_S = 10.0
_DROPPED_RE = re.compile(r"dropped=(\d+)")


class WriteError(Exception):
    """A batch was not (fully) written.

    `retryable`: the same batch may succeed later (server down, overloaded, timed out); otherwise the server refused
    it for good (bad line, type conflict, auth, unknown database) and resending would fail again.
    `rejected_points`: for a partial write, how many points of the batch the server dropped (the rest are stored).
    `unknown_outcome`: the request went out and no answer came (a read timeout, a connection closed mid-answer):
    the server may have stored the batch.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after_s: float | None = None,
        rejected_points: int | None = None,
        unknown_outcome: bool = False,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.unknown_outcome = unknown_outcome
        self.status = status
        self.retry_after_s = retry_after_s
        self.rejected_points = rejected_points


def _sent(exc: Exception) -> bool:
    """Whether a failed request may have reached the server: not when the connection was never made (refused, or
    a connect timeout)."""
    text = f"{type(exc).__name__}: {exc}"
    return not any(word in text for word in ("ConnectTimeout", "NewConnectionError", "Connection refused"))


class Transport(Protocol):
    """What the sink needs from a transport."""

    def write(self, body: bytes) -> None:
        """Write one batch of newline-separated points; raise WriteError on failure."""

    def close(self) -> None:
        """Release connections; never raises."""

    def describe(self) -> str:
        """Where points go, for logs; never contains a secret."""


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header given in seconds (HTTP dates are ignored: backoff applies instead)."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def classify_response(status: int, headers: Mapping[str, str] | None, body: str) -> WriteError | None:
    """None for a 2xx; otherwise the WriteError this status means for a write."""
    if 200 <= status < 300:
        return None
    text = " ".join(body.split())[:300]
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    retry_after = parse_retry_after(lowered.get("retry-after"))
    if status in (408, 429) or status >= 500:
        # A 5xx or 408 may come after the points were stored (InfluxDB: a 500 "timeout" write may still complete;
        # one stopping answers in-flight writes with errors): the outcome is unknown. A 429 refused them.
        unknown = status != 429
        return WriteError(
            f"HTTP {status}: {text}", retryable=True, status=status, retry_after_s=retry_after, unknown_outcome=unknown
        )
    match = _DROPPED_RE.search(body) if "partial write" in body else None
    rejected = int(match.group(1)) if match else None
    return WriteError(f"HTTP {status}: {text}", retryable=False, status=status, rejected_points=rejected)


def validate_url(url: str) -> str:
    """The base URL without a trailing slash; raises ValueError when it is not http(s)://host[:port][/path]."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    if parts.username or parts.password:
        raise ValueError("credentials do not belong in the URL (use the environment variables)")
    return url.rstrip("/")


class InfluxV1Transport:
    """POST {url}/write?db=&rp=&precision=ns with optional basic auth; creates the database once if it is missing."""

    def __init__(
        self,
        url: str,
        database: str,
        *,
        rp: str | None = None,
        username: str | None = None,
        password: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        create_database: bool = True,
    ) -> None:
        import requests

        self.url = validate_url(url)
        self.database = database
        self.rp = rp or None
        self.timeout = (min(timeout_s, 5.0), timeout_s)
        self.auto_create_database = create_database
        self._requests = requests
        self._session = requests.Session()
        if username:
            self._session.auth = (username, password or "")
        self._params = {"db": database, "precision": "ns"}
        if self.rp:
            self._params["rp"] = self.rp
        self._headers = {"Content-Type": "text/plain; charset=utf-8"}

    def describe(self) -> str:
        rp = f" rp={self.rp}" if self.rp else ""
        return f"InfluxDB v1 {self.url} db={self.database}{rp}"

    def write(self, body: bytes) -> None:
        resp = self._post_write(body)
        if resp.status_code == 404 and "database not found" in resp.text and self.auto_create_database:
            self.create_database()
            resp = self._post_write(body)
        error = classify_response(resp.status_code, resp.headers, resp.text)
        if error is not None:
            raise error

    def _post_write(self, body: bytes) -> Any:
        try:
            return self._session.post(
                f"{self.url}/write", params=self._params, data=body, headers=self._headers, timeout=self.timeout
            )
        except self._requests.RequestException as exc:
            raise WriteError(f"{type(exc).__name__}: {exc}", retryable=True, unknown_outcome=_sent(exc)) from exc

    def create_database(self) -> None:
        """CREATE DATABASE (a no-op when it exists); needs admin rights when InfluxDB has auth enabled."""
        query = 'CREATE DATABASE "{}"'.format(self.database.replace("\\", "\\\\").replace('"', '\\"'))
        try:
            self._session.post(f"{self.url}/query", data={"q": query}, timeout=self.timeout)
        except self._requests.RequestException as exc:
            raise WriteError(f"{type(exc).__name__}: {exc}", retryable=True) from exc

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing must never fail the run
            self._session.close()


class InfluxV2Transport:
    """influxdb-client `WriteApi` in SYNCHRONOUS mode: POST {url}/api/v2/write?org=&bucket=&precision=ns with
    `Authorization: Token ...`. The client's own retries are off; the sink retries with backoff."""

    def __init__(self, url: str, token: str, org: str, bucket: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        from influxdb_client import InfluxDBClient, WritePrecision
        from influxdb_client.client.write_api import SYNCHRONOUS
        from influxdb_client.rest import ApiException
        from urllib3.exceptions import HTTPError

        self.url = validate_url(url)
        self.org = org
        self.bucket = bucket
        self._precision = WritePrecision.NS
        self._api_exception = ApiException
        self._http_error = HTTPError
        self._client = InfluxDBClient(url=self.url, token=token, org=org, timeout=int(timeout_s * 1000))
        self._write_api = self._client.write_api(write_options=SYNCHRONOUS)

    def describe(self) -> str:
        return f"InfluxDB v2 {self.url} org={self.org} bucket={self.bucket}"

    def write(self, body: bytes) -> None:
        try:
            self._write_api.write(bucket=self.bucket, org=self.org, record=body, write_precision=self._precision)  # type: ignore[arg-type]  # WritePrecision.NS is typed str
        except self._api_exception as exc:
            if not exc.status:  # raised for transport problems (e.g. TLS) before any HTTP status
                raise WriteError(f"{type(exc).__name__}: {exc.reason}", retryable=True) from exc
            raw = exc.body if exc.body is not None else (exc.reason or "")
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            headers = dict(exc.headers or {})
            error = classify_response(int(exc.status), headers, text) or WriteError(
                f"HTTP {exc.status}: {text}", retryable=False, status=exc.status
            )
            raise error from exc
        except (self._http_error, OSError) as exc:
            raise WriteError(f"{type(exc).__name__}: {exc}", retryable=True, unknown_outcome=_sent(exc)) from exc

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing must never fail the run
            self._write_api.close()
            self._client.close()
