"""A request mix's endpoints in the report (docs/mixes.md): per server and run, each path's share against its weight
and its own p50/p90/p99/p99.9 inside the mix, beside the same path measured alone in its own scenario of the same
run (where the run has it), so a reader sees what the blend costs each route."""

from __future__ import annotations

from html import escape

from harness.basics.distribution import Distribution, problem
from harness.basics.formats import fmt_ms
from harness.results.records import Record, Run

HEADER = [
    "server",
    "run",
    "path",
    "weight %",
    "share % (± tolerance)",
    "requests",
    "errors",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "p99.9 ms",
    "alone: p50 / p99 ms (scenario · run)",
]
NOTE = (
    "Each endpoint's percentiles are read from its own requests' histogram inside the mix (every measured attempt "
    "pooled), never averaged, as is the whole's row (every request of the mix; its requests and errors count the requests that got no answer too); the share is of the mix's answered requests, flagged (mix-shares) when further than "
    "its tolerance (4 binomial standard errors) from the weight. Alone: the same path's record in its own "
    "scenario of this run, on the same server."
)


def _alone(run: Run, mixed: Record, path: str) -> str:
    """The same path measured alone on the same server in this run: p50 / p99 of its record, or '-'."""
    same = [
        r
        for r in run.records
        if r.server == mixed.server
        and r.path == path
        and not r.endpoints
        and r.scenario != mixed.scenario
        and r.rps is not None
    ]
    if not same:
        return "-"
    keepalive = bool(mixed.load.get("keepalive"))
    alone = next((r for r in same if bool(r.load.get("keepalive")) == keepalive), same[0])
    return (
        f"{fmt_ms(alone.latency_ms.get('p50'))} / {fmt_ms(alone.latency_ms.get('p99'))} "
        f"({alone.scenario} · {alone.label})"
    )


def rows(run: Run, scenario: str) -> list[list[str]]:
    """One row per endpoint of every record of the mix `scenario`, in the mix's order."""
    out = []
    for record in run.records:
        if record.scenario != scenario or not record.endpoints:
            continue
        for path, e in record.endpoints.items():
            within = "" if e.get("share_within_tolerance", True) else " ⚑"
            share = f"{e.get('share_pct', 0):.2f} (± {e.get('share_tolerance_pct', 0):.2f}){within}"
            figures = e.get("latency_ms") or {}
            out.append(
                [
                    record.server,
                    record.label,
                    path,
                    f"{e['weight']:g}",
                    share,
                    f"{e['requests']:,}",
                    f"{e['errors']:,}",
                    *(fmt_ms(figures.get(k)) for k in ("p50", "p90", "p99", "p99.9")),
                    _alone(run, record, path),
                ]
            )
        out.append(_whole(record))
    return out


def _whole(record: Record) -> list[str]:
    """The mix's whole read the endpoints' way, from every measured attempt's requests pooled (the record's
    latency_histogram), where the record's own latency_ms are the medians of its attempts' figures."""
    pooled = None
    if record.latency_histogram and problem(record.latency_histogram) is None:
        pooled = Distribution.decode(record.latency_histogram).latency_ms()
    figures = [fmt_ms(pooled.get(k)) if pooled else "-" for k in ("p50", "p90", "p99", "p99.9")]
    return [
        record.server,
        record.label,
        "(whole, pooled)",
        "100",
        "100",
        f"{record.requests:,}",
        f"{record.errors.total:,}",
        *figures,
        "-",
    ]


def markdown(run: Run, scenario: str) -> list[str]:
    """The mix's endpoints as Markdown lines; [] for a scenario that is not a mix."""
    table = rows(run, scenario)
    if not table:
        return []
    lines = [
        f"### {scenario} · endpoints inside the mix",
        "",
        NOTE,
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    return lines + ["| " + " | ".join(row) + " |" for row in table] + [""]


def html(run: Run, scenario: str) -> str:
    """The mix's endpoints as an HTML section; '' for a scenario that is not a mix."""
    table = rows(run, scenario)
    if not table:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in table)
    return (
        f"<h3>{escape(scenario)} · endpoints inside the mix</h3><p class=muted>{escape(NOTE)}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
