"""The probe's findings in the report (harness.probe; docs/probe.md): a compliance table per server (passed, warned
and failed cases by category, each failed case with its RFC section), and the score shown beside every ranking, so
that a fast server's row also says what its parser lets through."""

from __future__ import annotations

from html import escape
from typing import Any

from harness.probe import verdicts
from harness.results.records import Run

NOTE = (
    "Each server answered the probe's raw-socket cases (RFC 9112, RFC 9110 and published request-smuggling "
    "vectors; h2spec over h2c where it speaks it). pass: the answer the RFC requires or prefers; warn: one it "
    "permits but lenient; fail: one it forbids. The score beside each ranking is the share passed or warned. "
    "Findings are facts: the rust server's HTTP/1.1 framing is this project's and is fixed where it fails a MUST "
    "(rust/src/framing.rs); every other parser is its framework's, and its failures are reported as found."
)


def score_text(entry: dict[str, Any] | None) -> str:
    """`88 % · 9 fail (5 smuggling) · h2c 28 fail`: the share not failed, the HTTP/1.1 failures with the category
    that has most of them, and h2spec's failures apart (a reader of a ranking looks for the smuggling)."""
    score = verdicts.score(entry or {})
    if entry is None or score is None:
        return "-"
    counts = entry["counts"]
    h1 = {c: n["fail"] for c, n in counts.items() if c != "all" and not c.startswith("h2c")}
    h2c = sum(n["fail"] for c, n in counts.items() if c.startswith("h2c"))
    failed = sum(h1.values())
    text = f"{score * 100:.0f} % · " + (f"{failed} fail" if failed else "no fail")
    if failed:
        worst = max(h1, key=lambda c: h1[c])
        text += f" ({h1[worst]} {worst})"
    has_h2c = any(c.startswith("h2c") for c in counts)
    return text + (f" · h2c {h2c} fail" if has_h2c else "")


def scores(run: Run) -> dict[str, str]:
    """Each probed server's score text (score_text)."""
    return {server: score_text(entry) for server, entry in (run.compliance or {}).items()}


def rows(entry: dict[str, Any]) -> list[list[str]]:
    """A server's table: category, cases, passed, warned, failed; `all` last."""
    counts = entry["counts"]
    order = [c for c in counts if c != "all"] + ["all"]
    return [
        [c, str(counts[c]["cases"]), str(counts[c]["pass"]), str(counts[c]["warn"]), str(counts[c]["fail"])]
        for c in order
    ]


def failed_cases(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Its failed cases, MUSTs first."""
    failed = [c for c in entry["cases"] if c["verdict"] == "fail"]
    return sorted(failed, key=lambda c: c["level"] != "MUST")


HEADER = ["category", "cases", "passed", "warned", "failed"]
FAILED_HEADER = ["case", "level", "RFC", "what", "sent", "expected", "got"]


def _failed_row(c: dict[str, Any]) -> list[str]:
    return [c["id"], c["level"], c["rfc"], c.get("what", ""), c["sent"][:80], c["expected"], c["got"]]


def html(run: Run) -> str:
    """The report's compliance section; empty when the run probed nothing."""
    if not run.compliance:
        return ""
    out = ['<h2 id="compliance">HTTP compliance</h2>', f'<p class="muted">{escape(NOTE)}</p>']
    for server, entry in run.compliance.items():
        out.append(f"<h3>{escape(_named(run, server))}: {escape(score_text(entry))}</h3>")
        out.append(_html_table(HEADER, rows(entry)))
        if note := (entry.get("h2c") or {}).get("note"):
            out.append(f'<p class="muted">h2c: {escape(note)}</p>')
        failed = failed_cases(entry)
        if failed:
            out.append(
                f"<details><summary>{len(failed)} failed cases</summary>"
                + _html_table(FAILED_HEADER, [_failed_row(c) for c in failed])
                + "</details>"
            )
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
        out += [f"### {_named(run, server)}: {score_text(entry)}", "", *_md_table(HEADER, rows(entry)), ""]
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
