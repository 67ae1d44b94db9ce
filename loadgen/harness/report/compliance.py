"""The probe's findings in the report (harness.conformance; docs/probe.md): a compliance table per server (cases passed,
warned as lenient, warned as strict and failed by category, each failed or warned case with the RFC sentence that
judged it), the version probed, and the score shown beside every ranking: HTTP/1.1's MUST failures first, then the
share passed over the same case set for every server, h2c's apart."""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import Any

from harness.conformance import verdicts
from harness.results.records import Run

NOTE = (
    "Each server answered the probe's raw-socket cases (RFC 9112, RFC 9110, published request-smuggling vectors, "
    "two-step desync sequences and checks of the responses themselves; h2spec over h2c where it speaks it), each "
    "judged by the RFC sentence it quotes. pass: the answer the RFC requires or prefers; warn-lenient: a MAY or "
    "SHOULD (or the permissive side of a MUST's either/or) taken the permissive way; warn-strict: refused where the "
    "RFC asks or permits acceptance (fails closed); fail: a MUST broken. The score beside each ranking: HTTP/1.1's "
    "MUST failures, then the share of its cases passed (the same cases for every server), then h2c's share apart. "
    "Findings are facts: the rust server's HTTP/1.1 framing is this project's and is fixed where it fails a MUST "
    "(rust/src/framing.rs); every other parser is its framework's, and its failures are reported as found."
)


def score_text(entry: dict[str, Any] | None) -> str:
    """`2 MUST fail (host) · 81 % passed · h2c 96 %`: HTTP/1.1's MUST failures with the category that has most of
    them, the share of its cases passed (one case set for every server), and h2c's share apart where it was probed."""
    if entry is None or verdicts.score(entry) is None:
        return "-"
    counts = entry["counts"]
    musts = Counter(c["category"] for c in verdicts.must_failures(entry))
    failed = sum(musts.values())
    text = f"{failed} MUST fail ({musts.most_common(1)[0][0]})" if failed else "no MUST fail"
    text += f" · {verdicts.score(entry) * 100:.0f} % passed"  # type: ignore[operator]
    h2c = verdicts.share_passed(counts.get("h2c"))
    return text + (f" · h2c {h2c * 100:.0f} %" if h2c is not None else "")


def scores(run: Run) -> dict[str, str]:
    """Each probed server's score text (score_text)."""
    return {server: score_text(entry) for server, entry in (run.compliance or {}).items()}


def rows(entry: dict[str, Any]) -> list[list[str]]:
    """A server's table: category, cases, passed, lenient, strict, failed (MUST); `all` (HTTP/1.1) and `h2c` last."""
    counts = entry["counts"]
    order = [c for c in counts if c not in ("all", "h2c")] + [c for c in ("all", "h2c") if c in counts]
    return [
        [
            "HTTP/1.1, all" if c == "all" else "h2c, all" if c == "h2c" else c,
            str(counts[c]["cases"]),
            str(counts[c]["pass"]),
            str(counts[c].get("warn-lenient", counts[c].get("warn", 0))),
            str(counts[c].get("warn-strict", 0)),
            f"{counts[c]['fail']} ({counts[c].get('must_fail', '?')})",
        ]
        for c in order
    ]


def failed_cases(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Its failed cases, HTTP/1.1's MUSTs first, h2c's last."""
    failed = [c for c in entry["cases"] if c["verdict"] == "fail"]
    return sorted(failed, key=lambda c: (verdicts.is_h2c(c["category"]), c["level"] != "MUST"))


def warned_cases(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Its HTTP/1.1 cases that warned, strict ones first."""
    warned = [c for c in entry["cases"] if c["verdict"].startswith("warn") and not verdicts.is_h2c(c["category"])]
    return sorted(warned, key=lambda c: c["verdict"] != "warn-strict")


HEADER = ["category", "cases", "passed", "lenient", "strict", "failed (MUST)"]
FAILED_HEADER = ["case", "verdict", "level", "requirement", "what", "sent", "expected", "got"]


def requirement_text(c: dict[str, Any]) -> str:
    """The sentence that judged a case: `RFC 9112 §3.2 (MUST): "A server MUST ..."`, or its section alone."""
    quoted = c.get("requirement") or []
    if not quoted:
        return f"{c['rfc']} ({c['level']})"
    return "; ".join(f'{q["section"]} ({q["level"]}): "{q["quote"]}"' for q in quoted)


def _failed_row(c: dict[str, Any]) -> list[str]:
    return [
        c["id"], c["verdict"], c["level"], requirement_text(c), c.get("what", ""), c["sent"][:80], c["expected"],
        c["got"],
    ]  # fmt: skip


def html(run: Run) -> str:
    """The report's compliance section; empty when the run probed nothing."""
    if not run.compliance:
        return ""
    out = ['<h2 id="compliance">HTTP compliance</h2>', f'<p class="muted">{escape(NOTE)}</p>']
    for server, entry in run.compliance.items():
        out.append(f"<h3>{escape(_named(run, server))}: {escape(score_text(entry))}</h3>")
        out.append(f'<p class="muted">version probed: {escape(str(entry.get("version", "unknown")))}</p>')
        out.append(_html_table(HEADER, rows(entry)))
        if note := (entry.get("h2c") or {}).get("note"):
            out.append(f'<p class="muted">h2c: {escape(note)}</p>')
        for label, cases in (("failed", failed_cases(entry)), ("warned", warned_cases(entry))):
            if cases:
                rows_html = _html_table(FAILED_HEADER, [_failed_row(c) for c in cases])
                out.append(f"<details><summary>{len(cases)} {label} cases</summary>{rows_html}</details>")
    return "\n".join(out)


def _named(run: Run, server: str) -> str:
    """The server with its stack (whose parser answered), as its manifest gives it."""
    stack = (run.servers.get(server) or {}).get("stack")
    return f"{server} ({stack})" if stack else server


def _html_table(header: list[str], body: list[list[str]]) -> str:
    head = "".join(f'<th class="l">{escape(h)}</th>' for h in header)
    cells = "".join("<tr>" + "".join(f'<td class="l">{escape(v)}</td>' for v in row) + "</tr>" for row in body)
    return f'<div class="scroll"><table><tr>{head}</tr>{cells}</table></div>'


def markdown(run: Run) -> list[str]:
    """The same section as Markdown lines."""
    if not run.compliance:
        return []
    out = ["## HTTP compliance", "", NOTE, ""]
    for server, entry in run.compliance.items():
        out += [
            f"### {_named(run, server)}: {score_text(entry)}",
            "",
            f"Version probed: {entry.get('version', 'unknown')}",
            "",
        ]
        out += [*_md_table(HEADER, rows(entry)), ""]
        failed = failed_cases(entry)
        if failed:
            out += [
                f"Failed cases ({len(failed)}):",
                "",
                *_md_table(FAILED_HEADER, [_failed_row(c) for c in failed]),
                "",
            ]
    return out


def _md_table(header: list[str], body: list[list[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(cell(v) for v in row) + " |" for row in body
    ]
