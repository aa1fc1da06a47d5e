"""Hostile behaviours about what a 200 body holds: JSON the grammar allows that a strict parser refuses (a lone UTF-16
surrogate escape), a literal the grammar does not allow (NaN), an HTML page, and nothing at all.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. A client must read the lone
surrogate (as U+FFFD, and say so), and name what is wrong with the others (docs/metrics.md, "Error classes"): NaN is
not JSON, a text/html page is not the API's answer and carries no token, an empty body is an empty response.
"""

from __future__ import annotations

from loadlib.mock.hostile import CHUNKED, DONE, SSE, Exchange, behaviour, delta, event, head, send_stream, usage

# An emoji (U+1F600) is the UTF-16 pair D83D DE00: a gateway that cuts text by UTF-16 units sends each half alone.
HALVES = ("\ud83d", "\ude00")
LOGIN_PAGE = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body><form>Sign in</form></body></html>"


@behaviour("lone-surrogate", "200 SSE: an emoji's UTF-16 halves in two events, each a lone surrogate escape (\\ud83d)")
def lone_surrogate(x: Exchange) -> bool:
    """Python's json.dumps writes a lone surrogate as the escape `\\ud83d`, which the JSON grammar allows."""
    rid = f"surrogate-{x.n}"
    events = [event(delta("smile ", id=rid)), *(event(delta(half, id=rid)) for half in HALVES)]
    return send_stream(x, [*events, event(delta(" done", id=rid)), event(usage(id=rid)), DONE], 0.0)


@behaviour("nan-logprob", "200 SSE: good deltas, one whose logprob is the literal NaN (Python's json.dumps), [DONE]")
def nan_logprob(x: Exchange) -> bool:
    rid = f"nan-{x.n}"
    bad = event({**delta("n ", id=rid), "logprobs": {"content": [{"token": "n", "logprob": float("nan")}]}})
    return send_stream(x, [event(delta("a ", id=rid)), bad, event(usage(id=rid)), DONE], 0.0)


@behaviour("html-200", "HTTP 200 text/html: a sign-in page with Content-Length, as a login proxy answers (keep-alive)")
def html_200(x: Exchange) -> bool:
    x.peer.send(head("200 OK", "Content-Type: text/html; charset=utf-8", f"Content-Length: {len(LOGIN_PAGE)}"))
    x.peer.send(LOGIN_PAGE)
    return True


@behaviour("empty-200", "HTTP 200 text/event-stream with Content-Length: 0 (keep-alive)")
def empty_200(x: Exchange) -> bool:
    x.peer.send(head("200 OK", SSE, "Content-Length: 0"))
    return True


@behaviour("empty-chunked-200", "HTTP 200 text/event-stream, chunked, whose body is only the last chunk (keep-alive)")
def empty_chunked_200(x: Exchange) -> bool:
    x.peer.send(head("200 OK", SSE, CHUNKED) + b"0\r\n\r\n")
    return True
