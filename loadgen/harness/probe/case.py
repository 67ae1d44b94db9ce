"""What a case is (the bytes it sends, what the RFC requires of the answer, where it says so) and the helpers the
cases are written with (cases_syntax.py, cases_request_line.py, cases_framing.py)."""

from __future__ import annotations

from dataclasses import dataclass

MUST, SHOULD, MAY = "MUST", "SHOULD", "MAY"
HOST = "Host: probe"
PATH = "/hello"  # every server answers GET /hello with 200 (CONTRACT.md)
# what passes or warns, in verdicts.py's patterns, where several groups of cases share it
REJECT = ("400",)
REJECT_OR_CLOSE = ("400", "close")
OTHER_ERROR = ("refused",)  # refused with another status than the 400 the RFC prefers (or where it names none)
OK = ("200",)
LENIENT = ("200",)
WAIT = ("none", "400+close", "408+close", "close")  # an unfinished request: wait for the rest, or give up and close


@dataclass(frozen=True)
class Case:
    """One probe: `sent` on a fresh connection; `passes` and `warns` in verdicts.py's patterns; `rfc` the section
    the requirement is in and `level` its keyword; `what` in a few words, for the report."""

    id: str
    category: str
    rfc: str
    level: str
    what: str
    sent: bytes
    passes: tuple[str, ...]
    warns: tuple[str, ...] = ()


def request(line: str, *headers: str, body: bytes = b"", eol: bytes = b"\r\n") -> bytes:
    """A request: its request-line, header lines, the empty line and `body`, each line ended by `eol`."""
    head = eol.join(x.encode("latin-1") for x in (line, *headers))
    return head + eol + eol + body


def get(*headers: str, line: str = f"GET {PATH} HTTP/1.1") -> bytes:
    """GET /hello with a Host and `headers`."""
    return request(line, HOST, *headers)


def post(*headers: str, body: bytes = b"") -> bytes:
    """POST /hello with a Host, `headers` (its framing) and `body`."""
    return request(f"POST {PATH} HTTP/1.1", HOST, *headers, body=body)


Row = tuple[str, str, str, bytes, tuple[str, ...], tuple[str, ...]]


def group(category: str, rfc: str, rows: list[Row]) -> list[Case]:
    """Cases of one category from rows of (id, level, what, sent, passes, warns); a row's `what` may start with
    `§x.y:` for a section other than the category's `rfc`."""
    out = []
    for case_id, level, what, sent, passes, warns in rows:
        section = rfc
        if what.startswith(("RFC", "§")) and ":" in what:
            where, what = what.split(":", 1)
            section = where if where.startswith("RFC") else rfc.split("§")[0] + where
        out.append(Case(case_id, category, section.strip(), level, what.strip(), sent, passes, warns))
    return out
