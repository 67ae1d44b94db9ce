"""The page of a `make versus` run (versus.md and versus.html beside the run's report): the two revisions, per scenario
and run head ÷ base for req/s, p99 and CPU per request with their intervals and verdicts (a chart), the rounds'
series, the A/A line, the two builds' footprints side by side, and the conditions."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any

import harness.report.run_conditions as cond
from harness.report.cells import bytes_text, startup_text
from harness.results.records import Run

METRIC_TITLES = {"rps": "req/s", "p99": "p99", "cost_us": "CPU µs/req"}
FALSE_POSITIVE_RATE = 0.05  # of a 95 % interval, for two identical builds


def builds(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    v = run.conditions["versus"]["builds"]
    return v["base"], v["head"]


def interval_text(iv: dict[str, Any] | None) -> str:
    if not iv:
        return "-"
    return f"{iv['ratio']:.3f} ({iv['low']:.3f}–{iv['high']:.3f})"


def aa_line(run: Run) -> str:
    """What the sitting says of the method's own false positives: an A/A where both builds are one commit, else how to
    run one (an older run's split-halves pass is not repeated: it saw one process only)."""
    v = run.conditions["versus"]
    if v.get("same_build"):
        return (
            "A/A: both builds are the same code, run as two processes; a 95 % interval excludes no change for at "
            f"most {FALSE_POSITIVE_RATE:.0%} of such sittings, so a 'faster' or 'slower' here is the method's "
            "false positive (or a process-to-process difference the starts did not average out)"
        )
    if v.get("kind") == "twin":
        return (
            "A/A: `make twin` measures ours against a second process of it next (a run of its own, "
            f"`<stamp>-twin-{v.get('server')}-aa`, unless AA=0): a ratio against the entry is a gap only beyond what "
            "that sitting reads"
        )
    if v.get("kind") == "duel":
        return (
            f"A/A: `make duel A={v['builds']['head']['name']} B={v['builds']['head']['name']}` runs one server against a "
            f"second process of it; its verdict should read no difference in at least {1 - FALSE_POSITIVE_RATE:.0%} "
            "of sittings"
        )
    return (
        "A/A: `make versus BASE=HEAD` on a clean tree runs one build against itself as two processes; its verdict "
        f"should read no difference in at least {1 - FALSE_POSITIVE_RATE:.0%} of sittings (README, make versus)"
    )


def result_rows(run: Run) -> list[list[str]]:
    rows = []
    for r in run.conditions["versus"]["results"]:
        starts = r.get("starts")  # an older run's rounds were of one start
        row = [f"{r['scenario']} {r['run']}", f"{r['rounds']} in {len(starts)} starts" if starts else str(r["rounds"])]
        answer = r.get("answer")  # older runs: none
        row.append(f"by {METRIC_TITLES.get(answer['metric'], '?')}: {answer['verdict']}" if answer else "-")
        for metric in METRIC_TITLES:
            m = r["metrics"][metric]
            row.append(f"{interval_text(m['interval'])}: {m['verdict']}")
        rows.append(row + [r["stopped"] + ("" if r.get("reached", True) else "; NO ANSWER")])
    return rows


def footprint_rows(run: Run) -> list[list[str]]:
    """The two builds side by side: version, start-up, artifact, memory idle after start and after the run, the
    peak under load (over their records), the image under Docker."""
    base, head = builds(run)
    entries = [run.servers.get(b["name"], {}) for b in (base, head)]
    peaks = [
        max(
            (
                r.samples["server"].peak_rss_mb or 0
                for r in run.records
                if r.server == b["name"] and "server" in (r.samples or {})
            ),
            default=None,
        )
        for b in (base, head)
    ]

    def mb(x: float | None) -> str:
        return "-" if x is None else f"{x:,.1f} MB"

    return [
        ["version", *(e.get("version") or "-" for e in entries)],
        ["start-up", *(startup_text(e.get("startup_s")) for e in entries)],
        ["artifact", *(bytes_text(e.get("artifact_bytes")) for e in entries)],
        ["memory idle after start", *(mb(e.get("rss_idle_mb")) for e in entries)],
        ["memory idle after the run", *(mb(e.get("rss_after_run_mb")) for e in entries)],
        ["peak memory under load", *(mb(p) for p in peaks)],
        ["image (Docker)", *(bytes_text((e.get("placement") or {}).get("image_bytes")) for e in entries)],
    ]


def revision_lines(run: Run) -> list[str]:
    return [
        f"{role}: {b['name']} = {b['asked']} ({b.get('sha') or 'uncommitted'}): {b['subject']}"
        + (" (with uncommitted changes)" if b.get("uncommitted_changes") else "")
        for role, b in zip(("base", "head"), builds(run))
    ]


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def cell(text: object) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(cell(c) for c in row) + " |" for row in rows
    ]


HEADER = [
    "scenario run",
    "rounds",
    "answer",
    "req/s head ÷ base",
    "p99 head ÷ base",
    "CPU µs/req head ÷ base",
    "stopped",
]


def budget_text(v: dict[str, Any]) -> str:
    """The sitting's budget, and make versus's goal where it set one (a duel and a twin have none)."""
    goal = f", against a goal of ±{v['resolution'] * 100:g} %" if v.get("resolution") else ""
    return f"{v['budget_s']:g} s of rounds{goal}"


def markdown(run: Run, charts: dict[str, Path]) -> str:
    v = run.conditions["versus"]
    base, head = builds(run)
    lines = [f"# {v['server']}: {head['name']} against {base['name']}", ""]
    lines += [f"- {line}" for line in revision_lines(run)] + [""]
    lines += [f"{budget_text(v)}; {v['method']}.", ""]
    lines += _md_table(HEADER, result_rows(run)) + ["", aa_line(run), ""]
    lines += [f"![{key}](charts/{path.name})" for key, path in charts.items()] + [""]
    lines += ["## Footprints", ""] + _md_table(["", base["name"], head["name"]], footprint_rows(run)) + [""]
    lines += ["## Conditions", ""] + [f"- **{k}**: {val}" for k, val in cond.items(run)] + [""]
    return "\n".join(lines)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{escape(path.stem)}" src="data:image/png;base64,{data}">'


CSS = (
    "body{font:14px/1.45 sans-serif;max-width:1200px;margin:0 auto;padding:24px}table{border-collapse:collapse;"
    "margin:8px 0}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}"
    "img{max-width:100%}.muted{color:#656d76}"
)


def html(run: Run, charts: dict[str, Path]) -> str:
    v = run.conditions["versus"]
    base, head = builds(run)
    body = [
        f"<h1>{escape(v['server'])}: {escape(head['name'])} against {escape(base['name'])}</h1>",
        "<ul>" + "".join(f"<li>{escape(line)}</li>" for line in revision_lines(run)) + "</ul>",
        f'<p class="muted">{escape(budget_text(v))}; {escape(v["method"])}.</p>',
        _html_table(HEADER, result_rows(run)),
        f"<p>{escape(aa_line(run))}</p>",
        *(_img(path) for path in charts.values()),
        "<h2>Footprints</h2>",
        _html_table(["", base["name"], head["name"]], footprint_rows(run)),
        "<h2>Conditions</h2><dl>"
        + "".join(f"<dt><b>{escape(k)}</b></dt><dd>{escape(str(val))}</dd>" for k, val in cond.items(run))
        + "</dl>",
    ]
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>versus {escape(run.run_id)}'
        f"</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write(run: Run, run_dir: Path) -> list[Path]:
    """versus.md, versus.html and their charts (charts/versus-*.png) of a `make versus` run; nothing for another."""
    if not (run.conditions.get("versus") or {}).get("results"):
        return []
    from harness.export import versus_charts as drawing

    v = run.conditions["versus"]
    names = tuple(b["name"] for b in builds(run))
    made = {
        "ratios": drawing.versus_ratios(v["results"], v.get("resolution"), run_dir / "charts" / "versus-ratios.png")
    }
    for r in v["results"]:
        key = f"rounds-{r['scenario']}-{r['run']}"
        made[key] = drawing.versus_rounds(r, names, run_dir / "charts" / f"versus-{key}.png")
    charts = {k: p for k, p in made.items() if p}
    (run_dir / "versus.md").write_text(markdown(run, charts))
    (run_dir / "versus.html").write_text(html(run, charts))
    return [run_dir / "versus.md", run_dir / "versus.html", *charts.values()]
