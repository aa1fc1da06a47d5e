"""The long-document canary: a reference code on a document's last line that the request asks the model to quote.

An answer that quotes it proves the end of the document reached the model, whatever the usage says (a gateway may
count the prompt itself, and a backend may bill what it kept). Pure text functions: the scenario adds and checks
the code, the mock finds it to quote it only when it kept that part of the prompt (docs/scenarios.md).
"""

from __future__ import annotations

import hashlib
import re

LINE = "Reference code: {code}"
INSTRUCTION = (
    "Begin your answer with the document's reference code, given on its last line, exactly as written, then a new line."
)
_CODE = re.compile(r"Reference code: (LD-[0-9A-F]{8})")


def code_for(key: str) -> str:
    """A code derived from the document (its id or text): stable, so prompts repeat and caches keep working."""
    return "LD-" + hashlib.sha256(key.encode()).hexdigest()[:8].upper()


def with_canary(text: str, code: str) -> str:
    """The document with its reference code as the last line."""
    return f"{text}\n\n{LINE.format(code=code)}"


def find(text: str) -> tuple[str, int] | None:
    """The last reference code in `text` and the index just after it; None without one."""
    matches = list(_CODE.finditer(text))
    return (matches[-1].group(1), matches[-1].end()) if matches else None


def quoted(answer: str, code: str) -> bool:
    """Whether the answer quotes the code (case and surrounding punctuation do not matter)."""
    return code.lower() in answer.lower()
