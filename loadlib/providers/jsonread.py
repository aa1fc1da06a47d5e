"""JSON that orjson refused, read again: the grammar allows what orjson cannot hold, and says why the rest is not JSON.

orjson refuses a lone UTF-16 surrogate escape (`"\\ud83d"`), which the JSON grammar allows (RFC 8259 section 8.2
calls such strings unpredictable, not invalid) and which a gateway that cuts text by UTF-16 units, or Python's
`json.dumps` of such a cut, sends: half an emoji failed a whole request. The standard library reads it; every lone
surrogate becomes U+FFFD and is counted, so the record can say so. This runs only after orjson failed: the hot path
stays orjson's. What is still not JSON gets a message naming why: NaN or Infinity (which Python's `json.dumps`
writes), gzip, invalid UTF-8 and where (errors_body.not_json).
"""

from __future__ import annotations

import json
import re
from typing import Any

from loadlib.errors import NotJSONError
from loadlib.providers import errors_body

_LONE = re.compile("[\ud800-\udfff]")  # decoded, a pair is one character: any surrogate left is lone
REPLACEMENT = "\ufffd"
MENDED_NOTE = "lone UTF-16 surrogate escapes (half a character each) were read as U+FFFD"


class _Constant(ValueError):
    """A NaN, Infinity or -Infinity literal: Python's json reads them, the JSON grammar has none."""


def _refuse(name: str) -> Any:
    raise _Constant(name)


def reread(data: bytes, what: str) -> tuple[Any, int]:
    """`data` that orjson refused, as (the value, how many lone surrogates in it became U+FFFD); NotJSONError saying
    why when it is not JSON (`what` names what it should have been: "chat completion event")."""
    replaced = [0]
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse)  # strict UTF-8: no encoded surrogates
        return _mend(value, replaced), replaced[0]
    except _Constant as exc:
        raise NotJSONError(f"{what} is not JSON: it holds {exc.args[0]}, which JSON does not allow") from None
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise NotJSONError(errors_body.not_json(what, data)) from None


def _mend(value: Any, replaced: list[int]) -> Any:
    """`value` with every lone surrogate of its strings (keys too) replaced, counted in `replaced[0]`."""
    kind = type(value)
    if kind is str:
        mended, n = _LONE.subn(REPLACEMENT, value)
        replaced[0] += n
        return mended
    if kind is dict:
        return {_mend(k, replaced): _mend(v, replaced) for k, v in value.items()}
    if kind is list:
        return [_mend(v, replaced) for v in value]
    return value
