"""A request mix's endpoints in the report (docs/mixes.md): per run of the mix and per path, the servers ranked by the
path's p99 inside the mix (harness.judging.endpoint_ranking: the same intervals and rules as every ranking), each
with its share against the weight and its own p50/p90/p99/p99.9, beside the same path measured alone in its own
scenario of the same run (where the run has it), so a reader sees what the blend costs each route; then the whole
mix ranked by req/s like every record."""

from __future__ import annotations

from html import escape

from harness.basics.distribution import Distribution, problem
from harness.basics.formats import fmt_ms, interval_text
from harness.judging import endpoint_ranking, ranking
from harness.results.records import Record, Run

HEADER = [
    "path",
    "# by p99",
    "server",
    "p50 ms",
    "p99 ms",
    "alone: p50 / p99 ms (scenario · run)",
    "p99 of the attempts (interval)",
    "p90 ms",
    "p99.9 ms",
    "share % (weight ± tolerance)",
    "requests",
    "errors",
]
LEFT = {0, 2, 5}  # the columns aligned left in HTML: path, server, alone
WHOLE = "whole (# by req/s)"
NOTE = (
    "Per run of the mix, each path's servers ranked by that path's p99 inside the mix (# by p99: each attempt's p99 "
    "of the path from its own requests, their median and its interval; a server is above another when its interval "
    "lies wholly below the other's, and a range of places such as 1–3 is what the intervals allow, as every ranking "
    "here), then the whole mix ranked by req/s like every record (its row pooled). Each endpoint's p50–p99.9 are read from its own "
    "requests' histogram inside the mix (every measured attempt pooled), never averaged, as is the whole's row "
    "(every request of the mix; its requests and errors count the requests that got no answer too); the share is of "
    "the mix's answered requests, flagged (mix-shares) when further than its tolerance (4 binomial standard errors) "
    "from the weight. Alone: the same path's record in its own scenario of this run, on the same server (its own "
    "tool and load), so a row reads what the blend costs the route."
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


def _endpoint_row(run: Run, record: Record, path: str, place: str) -> list[str]:
    e = (record.endpoints or {}).get(path)
    if e is None:
        return [path, place, record.server] + ["-"] * (len(HEADER) - 3)
    within = "" if e.get("share_within_tolerance", True) else " ⚑"
    figures = e.get("latency_ms") or {}
    share = f"{e.get('share_pct', 0):.2f} ({e['weight']:g} ± {e.get('share_tolerance_pct', 0):.2f}){within}"
    return [
        path,
        place,
        record.server,
        fmt_ms(figures.get("p50")),
        fmt_ms(figures.get("p99")),
        _alone(run, record, path),
        _attempts_p99(record, path),
        fmt_ms(figures.get("p90")),
        fmt_ms(figures.get("p99.9")),
        share,
        f"{e['requests']:,}",
        f"{e['errors']:,}",
    ]


def _attempts_p99(record: Record, path: str) -> str:
    """'6.20 (5.90 – 6.40, 87.5 %)': the median of the attempts' p99 on the path with its interval."""
    found = endpoint_ranking.summary(record, path)
    if not found:
        return "-"
    return f"{fmt_ms(found['median'])} ({interval_text(found, fmt_ms).replace(' (', ', ').rstrip(')')})"


def run_rows(run: Run, records: list[Record]) -> list[list[str]]:
    """One run of a mix: per path, its servers in their order on that path (those that do not take part last,
    unranked), then the whole mix per server in the whole's order."""
    out = []
    for path in endpoint_ranking.paths(records):
        standings = endpoint_ranking.rank(records, path)
        placed = [s.record for s in standings]
        out += [_endpoint_row(run, s.record, path, s.label) for s in standings]
        out += [_endpoint_row(run, r, path, "-") for r in records if r not in placed]
    whole = ranking.rank([r for r in records if ranking.takes_part(r)])
    labels = {id(s.record): s.label for s in whole}
    ordered = [s.record for s in whole] + [r for r in records if id(r) not in labels]
    return out + [_whole(r, labels.get(id(r), "-")) for r in ordered]


def runs(run: Run, scenario: str) -> dict[str, list[Record]]:
    """The mix's records with endpoints by run label, in the order measured."""
    out: dict[str, list[Record]] = {}
    for record in run.records:
        if record.scenario == scenario and record.endpoints:
            out.setdefault(record.label, []).append(record)
    return out


def _whole(record: Record, place: str) -> list[str]:
    """The mix's whole read the endpoints' way, from every measured attempt's requests pooled (the record's
    latency_histogram), where the record's own latency_ms are the medians of its attempts' figures."""
    pooled = None
    if record.latency_histogram and problem(record.latency_histogram) is None:
        pooled = Distribution.decode(record.latency_histogram).latency_ms()
    p50, p90, p99, p999 = (fmt_ms(pooled.get(k)) if pooled else "-" for k in ("p50", "p90", "p99", "p99.9"))
    return [
        WHOLE,
        place,
        record.server,
        p50,
        p99,
        "-",
        "-",
        p90,
        p999,
        "100",
        f"{record.requests:,}",
        f"{record.errors.total:,}",
    ]


def markdown(run: Run, scenario: str) -> list[str]:
    """The mix's endpoints as Markdown lines, a table per run; [] for a scenario that is not a mix."""
    by_run = runs(run, scenario)
    if not by_run:
        return []
    lines = [f"### {scenario} · endpoints inside the mix", "", NOTE, ""]
    for label, records in by_run.items():
        lines += [f"**{scenario} · {label}**", "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        lines += ["| " + " | ".join(row) + " |" for row in run_rows(run, records)] + [""]
    return lines


def html(run: Run, scenario: str) -> str:
    """The mix's endpoints as an HTML section, a table per run; '' for a scenario that is not a mix."""
    by_run = runs(run, scenario)
    if not by_run:
        return ""
    head = "".join(f'<th class="{"l" if i in LEFT else ""}">{escape(h)}</th>' for i, h in enumerate(HEADER))
    out = [f"<h3>{escape(scenario)} · endpoints inside the mix</h3><p class=muted>{escape(NOTE)}</p>"]
    for label, records in by_run.items():
        body = "".join(
            "<tr>"
            + "".join(f'<td class="{"l" if i in LEFT else ""}">{escape(c)}</td>' for i, c in enumerate(row))
            + "</tr>"
            for row in run_rows(run, records)
        )
        out.append(
            f'<p class="load"><b>{escape(scenario)} · {escape(label)}</b></p>'
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
        )
    return "".join(out)
