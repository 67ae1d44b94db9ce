"""What a case is (the bytes it sends, the RFC sentence that sets its level and patterns, the answers that pass, that
warn as lenient and that warn as strict) and the helpers the cases are written with (cases_syntax.py,
cases_request_line.py, cases_framing.py, cases_desync.py, cases_response.py)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.conformance.requirements import REQUIREMENTS

HOST = "Host: probe"
PATH = "/hello"  # every server answers GET /hello with 200 and `Hello World` (CONTRACT.md)
# what passes or warns, in verdicts.py's patterns, where several groups of cases share it
REJECT = ("400",)
REJECT_OR_CLOSE = ("400", "close")
OTHER_ERROR = ("refused",)  # refused with another status than the 400 the RFC prefers (or where it names none)
OK = ("200",)
WAIT = ("none", "400+close", "408+close", "close")  # an unfinished request: wait for the rest, or give up and close


@dataclass(frozen=True)
class Case:
    """One probe: `sent` on a fresh connection (and `then` once the first answer came, for a two-step case);
    `passes`, `lenient` and `strict` in verdicts.py's patterns; `cites` the RFC sentences (requirements.py) whose
    first sets `level`; `check` a response check (checks.py) judged on the responses themselves; `heads` how many of
    the first responses answer HEAD requests."""

    id: str
    category: str
    cites: tuple[str, ...]
    what: str
    sent: bytes
    passes: tuple[str, ...]
    lenient: tuple[str, ...] = ()
    strict: tuple[str, ...] = ()
    then: bytes = b""
    check: str = ""
    heads: int = 0

    @property
    def level(self) -> str:
        return REQUIREMENTS[self.cites[0]].level

    @property
    def rfc(self) -> str:
        return REQUIREMENTS[self.cites[0]].section

    def quotes(self) -> list[dict[str, str]]:
        """Each cited sentence with its section and keyword, as results.json keeps them."""
        return [
            {"section": REQUIREMENTS[c].section, "level": REQUIREMENTS[c].level, "quote": REQUIREMENTS[c].quote}
            | ({"why": REQUIREMENTS[c].why} if REQUIREMENTS[c].why else {})
            for c in self.cites
        ]


def case(
    case_id: str, cites: str, what: str, sent: bytes, *patterns: tuple[str, ...], **more: object
) -> dict[str, object]:
    """A case's row, its category given by `group`; `cites`: requirement names separated by spaces; `patterns`: the
    outcomes that pass, then those that warn lenient, then those that warn strict (the last two may be left out)."""
    named = dict(zip(("passes", "lenient", "strict"), patterns))
    return {"case_id": case_id, "cites": tuple(cites.split()), "what": what, "sent": sent, **named, **more}


def group(category: str, rows: list[dict[str, object]]) -> list[Case]:
    """Cases of one category from `case` rows; an unknown requirement name is a mistake in the table."""
    out = []
    for row in rows:
        fields = dict(row)
        case_id = str(fields.pop("case_id"))
        unknown = [c for c in fields["cites"] if c not in REQUIREMENTS]  # type: ignore[attr-defined]
        if unknown:
            raise ValueError(f"case {case_id} cites {unknown}, not in harness/conformance/requirements.py")
        out.append(Case(case_id, category, **fields))  # type: ignore[arg-type]
    return out


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
