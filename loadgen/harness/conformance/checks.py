"""The response checks of cases_response.py, each a function of the reply (wire.Reply): "checked" when the responses
are what the cited sentence asks, "n/a: ..." when the premise did not occur (passes), or what is wrong (the case's
level then decides between fail and warn, verdicts.py)."""

from __future__ import annotations

from collections.abc import Callable

from harness.conformance.wire import Reply

HELLO = b"Hello World"
BACKEND = b"<h1>Say hello to akka-http</h1>"


def _answered(reply: Reply, n: int) -> str:
    """Why the reply cannot be checked (fewer than `n` responses, or unreadable), or ""."""
    if reply.problem:
        return reply.problem
    if len(reply.responses) < n:
        return f"{len(reply.responses)} of {n} responses ({reply.describe()})"
    return ""


def head_no_content(reply: Reply) -> str:
    return _answered(reply, 2) or ("checked" if reply.responses[1].body == HELLO else "the GET after HEAD misread")


def head_same_fields(reply: Reply) -> str:
    if problem := _answered(reply, 2):
        return problem
    head, get = reply.responses[0].header("content-type"), reply.responses[1].header("content-type")
    return "checked" if head == get else f"Content-Type {head!r} to HEAD, {get!r} to GET"


def has_date(reply: Reply) -> str:
    return _answered(reply, 1) or ("checked" if reply.responses[0].header("date") else "no Date")


def allow_on_405(reply: Reply) -> str:
    if problem := _answered(reply, 1):
        return problem
    first = reply.responses[0]
    if first.status != 405:
        return f"n/a: answered {first.status}"
    return "checked" if first.header("allow") is not None else "405 without Allow"


def no_content_304(reply: Reply) -> str:
    if problem := _answered(reply, 1):
        return problem
    if reply.responses[0].status != 304:
        return f"n/a: answered {reply.responses[0].status}"
    return _answered(reply, 2) or ("checked" if reply.responses[1].body == HELLO else "the GET after 304 misread")


def no_te_to_http10(reply: Reply) -> str:
    if problem := _answered(reply, 1):
        return problem
    return "Transfer-Encoding to HTTP/1.0" if reply.responses[0].header("transfer-encoding") else "checked"


def close_echoed(reply: Reply) -> str:
    if problem := _answered(reply, 1):
        return problem
    options = (reply.responses[0].header("connection") or "").lower()
    return "checked" if "close" in options else "no Connection: close"


def exact_bodies(reply: Reply) -> str:
    if problem := _answered(reply, 2):
        return problem
    bodies = [r.body for r in reply.responses[:2]]
    return "checked" if bodies == [BACKEND, HELLO] else f"bodies {bodies!r}"


def not_cl_and_te(reply: Reply) -> str:
    if problem := _answered(reply, 2):
        return problem
    both = [r.status for r in reply.responses if r.header("transfer-encoding") and r.header("content-length")]
    return f"Content-Length with Transfer-Encoding in {both}" if both else "checked"


def version_11(reply: Reply) -> str:
    if problem := _answered(reply, 1):
        return problem
    version = reply.responses[0].version
    return "checked" if version == "1.1" else f"HTTP/{version}"


CHECKS: dict[str, Callable[[Reply], str]] = {
    f.__name__: f
    for f in (
        head_no_content,
        head_same_fields,
        has_date,
        allow_on_405,
        no_content_304,
        no_te_to_http10,
        close_echoed,
        exact_bodies,
        not_cl_and_te,
        version_11,
    )
}
