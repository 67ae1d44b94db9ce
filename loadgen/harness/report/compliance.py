"""The probe's findings in the report (harness.probe; docs/probe.md): a compliance table per server (passed, warned
and failed cases by category, each failed case with its RFC section), and the score shown beside every ranking, so
that a fast server's row also says what its parser lets through."""
from __future__ import annotations

from html import escape
from typing import Any

from harness.probe import verdicts
from harness.results.records import Run

NOTE = ("Each server answered the probe's raw-socket cases (RFC 9112, RFC 9110 and published request-smuggling "
        "vectors; h2spec over h2c where it speaks it). pass: the answer the RFC requires or prefers; warn: one it "
        "permits but lenient; fail: one it forbids. The score beside each ranking is the share passed or warned.")


def score_text(entry: dict[str, Any] | None) -> str:
    """`92 % · 11 fail (6 smuggling)`: the share not failed, the failures and the category with most of them."""
    score = verdicts.score(entry or {})
    if entry is None or score is None:
        return "-"
    counts = entry["counts"]
    failed = counts["all"]["fail"]
    if not failed:
        return f"{score * 100:.0f} % · no fail"
    worst, most = max(((c, n["fail"]) for c, n in counts.items() if c != "all"), key=lambda cn: cn[1])
    return f"{score * 100:.0f} % · {failed} fail ({most} {worst})"


def scores(run: Run) -> dict[str, str]:
    """Each probed server's score text (score_text)."""
    return {server: score_text(entry) for server, entry in (run.compliance or {}).items()}


def rows(entry: dict[str, Any]) -> list[list[str]]:
    """A server's table: category, cases, passed, warned, failed; `all` last."""
    counts = entry["counts"]
    order = [c for c in counts if c != "all"] + ["all"]
    return [[c, str(counts[c]["cases"]), str(counts[c]["pass"]), str(counts[c]["warn"]), str(counts[c]["fail"])]
            for c in order]


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
        out.append(f"<h3>{escape(server)}: {escape(score_text(entry))}</h3>")
        out.append(_html_table(HEADER, rows(entry)))
        if note := (entry.get("h2c") or {}).get("note"):
            out.append(f'<p class="muted">h2c: {escape(note)}</p>')
        failed = failed_cases(entry)
        if failed:
            out.append(f"<details><summary>{len(failed)} failed cases</summary>"
                       + _html_table(FAILED_HEADER, [_failed_row(c) for c in failed]) + "</details>")
    return "\n".join(out)


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
        out += [f"### {server}: {score_text(entry)}", "", *_md_table(HEADER, rows(entry)), ""]
        failed = failed_cases(entry)
        if failed:
            out += [f"Failed cases ({len(failed)}):", "", *_md_table(FAILED_HEADER, [_failed_row(c) for c in failed]),
                    ""]
    return out


def _md_table(header: list[str], body: list[list[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(cell(v) for v in row) + " |" for row in body])
