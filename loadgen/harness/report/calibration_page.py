"""The report's calibration section (`make calibrate`'s runs): per tool and load, the known and measured figures side
by side with their verdicts, as results.json keeps them under "calibration" (harness/calibrate/calibration.py)."""

from __future__ import annotations

from html import escape

from harness.basics.formats import fmt_figure
from harness.results.records import Run

HEADER = ["tool", "load", "limit", "figure", "known", "measured", "verdict", "why"]
INTRO = (
    "Every load tool against the calibrated server (calibrated/), whose answers are known by construction: a "
    "service time, 1 request in k held an exact delay, 1 answer in m a 503, a CPU burn per request, a rate cap. "
    "Tolerances: req/s within 2 %, p50 to p99.9, max and mean within 5 % or 0.2 ms (a figure the tool gives and "
    "the record lacks is a miss), the 503s counted as non_2xx to within one and the answers in flight, CPU µs "
    "per request within 10 % of the burn where the server is the limit, and loadgen-saturated fired when, and "
    "only when, the tool was the limit."
)
VERDICTS = {True: "pass", False: "miss", None: "n/a"}


def rows(run: Run) -> list[list[str]]:
    """One row per figure of every load (a failed load: one row saying why)."""
    out = []
    for entry in run.calibration or []:
        settings = ", ".join(f"{k}={v}" for k, v in (entry.get("server_settings") or {}).items() if v) or "nothing"
        load = f"{entry['label']} ({settings})"
        if entry.get("failed"):
            out.append([entry["tool"], load, "", "", "", "", "failed", entry["failed"]])
            continue
        for f in entry.get("figures") or []:
            out.append(
                [
                    entry["tool"],
                    load,
                    entry.get("limit", ""),
                    f["figure"],
                    fmt_figure(f["known"]),
                    fmt_figure(f["measured"]),
                    VERDICTS[f["ok"]],
                    f.get("note") or "",
                ]
            )
    return out


def counts(run: Run) -> tuple[int, int]:
    """(figures within tolerance, figures missed), a failed load counted as a miss."""
    passed = missed = 0
    for entry in run.calibration or []:
        missed += bool(entry.get("failed"))
        for f in entry.get("figures") or []:
            passed += f["ok"] is True
            missed += f["ok"] is False
    return passed, missed


def markdown(run: Run) -> list[str]:
    """The section's Markdown lines; none for a run that is not a calibration."""
    if not run.calibration:
        return []
    passed, missed = counts(run)
    lines = [
        "## Calibration",
        "",
        INTRO,
        "",
        f"**{passed} figure(s) within tolerance, {missed} missed.**",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows(run)]
    return lines + [""]


def html(run: Run) -> str:
    """The section as HTML; empty for a run that is not a calibration."""
    if not run.calibration:
        return ""
    passed, missed = counts(run)
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    body = ""
    for row in rows(run):
        style = ' style="background:var(--bad)"' if row[6] in ("miss", "failed") else ""
        body += f"<tr{style}>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
    return (
        f'<h2 id="calibration">Calibration</h2><p class="muted">{escape(INTRO)}</p>'
        f'<p class="sub">{passed} figure(s) within tolerance, {missed} missed.</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
