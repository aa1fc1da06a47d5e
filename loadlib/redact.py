"""Secrets by value: the keys this run holds are masked wherever text leaves the process.

Masking key *shapes* (`sk-...`, `Bearer ...`, in `providers.errors_body.short`) misses a key echoed without its
prefix, JSON-escaped or URL-encoded by a server or a proxy. A `Redactor` knows the actual values (every configured
key variable's) and masks each in all those forms: as is, without any prefix segment (`sk-`, `sk-proj-`, `gsk_`...),
URL-encoded and JSON-escaped. Records, the summary, Locust's failures, logs, the web UI and InfluxDB all receive
text that went through it. Values shorter than MIN_SECRET are not masked (a placeholder key such as `x` would mask
every x).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

MIN_SECRET = 6
MASK = "<redacted>"
_PREFIX_END = re.compile(r"[-_]")


def secret_forms(secret: str) -> set[str]:
    """Every form in which `secret` may come back: with and without its prefix segments, URL-encoded, JSON-escaped."""
    cores = {secret}
    for match in _PREFIX_END.finditer(secret[:24]):
        rest = secret[match.end() :]
        if len(rest) >= max(MIN_SECRET + 2, len(secret) // 2):
            cores.add(rest)
    forms: set[str] = set()
    for core in cores:
        forms |= {core, quote(core, safe=""), quote_plus(core), json.dumps(core)[1:-1]}
        forms.add(json.dumps(core)[1:-1].replace("/", "\\/"))
    return {f for f in forms if len(f) >= MIN_SECRET}


class Redactor:
    """Masks the given secret values in text. Without secrets it returns text unchanged at almost no cost."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= MIN_SECRET:
                forms |= secret_forms(secret)
        ordered = sorted(forms, key=len, reverse=True)  # longest first: a full key before its suffix
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @classmethod
    def from_environment(cls, variables: Iterable[str | None], environ: Mapping[str, str] | None = None) -> Redactor:
        """A redactor for the values of the named environment variables (unset or empty ones are skipped)."""
        env = os.environ if environ is None else environ
        return cls(env.get(name, "") for name in variables if name)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def optional(self, text: str | None) -> str | None:
        return None if text is None else self(text)

    def mapping(self, values: dict[str, str]) -> dict[str, str]:
        return {k: self(v) for k, v in values.items()} if self._pattern is not None else values


class RedactingFilter(logging.Filter):
    """Masks secrets in every log line a handler emits (message, arguments and traceback)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.redactor:
            return True
        record.msg = self.redactor(record.getMessage())
        record.args = ()
        if record.exc_info:
            record.exc_text = self.redactor(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.exc_text:
            record.exc_text = self.redactor(record.exc_text)
        return True


def install_log_filter(redactor: Redactor, logger: Any = None) -> RedactingFilter:
    """Put one redacting filter on every handler of `logger` (the root logger by default), replacing any earlier
    one of ours, so that a later run's secrets replace the earlier run's."""
    target = logger or logging.getLogger()
    new = RedactingFilter(redactor)
    for handler in target.handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
            handler.removeFilter(old)
        handler.addFilter(new)
    return new
