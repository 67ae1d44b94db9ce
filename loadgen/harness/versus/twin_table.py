"""A TechEmpower twin (issue 48) as `make twin` reads it, and what its rounds come to: the twin's twin.toml checked
(the format is docs/twin.md), each round's ratio ours ÷ theirs of req/s and of the
tool's p99 latency, their medians with their order-statistic intervals (harness.basics.stats), the rounds below 1 on
rate and above 1 on p99 (ours slower), each side's median cost a request, and the Markdown tables of twin.md."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.basics import stats
from harness.measuring.steadiness import worst_cv
from harness.report.run_conditions import steadiness_text

TWIN_FILE = "twin.toml"
PATTERNS = ("keep-alive", "connection-per-request")  # the two connection patterns of every route pair
# keep-alive is wrk's; connection per request ab's (as issue 48 measured it), or wrk's sending `Connection: close`
# (CLOSE_TOOL=wrk): ab's one thread makes each connection with more CPU than wrk's, so against a server that takes
# new connections fast ab's CPU, not the server's, can set the pace (finagle/PROFILE.md, 2 Dec)
CLOSE_TOOLS = ("ab", "wrk")


def tool_of(pattern: str, close_tool: str) -> str:
    """The load tool of a connection pattern: wrk for keep-alive, `close_tool` for connection per request."""
    return "wrk" if pattern == "keep-alive" else close_tool


COST_FIELDS = ("user_us", "kernel_us", "switches")  # a request's CPU µs in user space, in the kernel; context switches


class TwinError(Exception):
    """A twin folder, its twin.toml or its server that cannot be used: the message says which and why, in a line."""


@dataclass(frozen=True)
class Twin:
    folder: Path
    ours: str  # our server's manifest name
    run: tuple[str, ...]  # argv, run in `folder`
    port: int
    routes: tuple[tuple[str, str], ...]  # (the twin's path, ours), in twin.toml's order
    entry: str = ""
    versions: str = ""
    env: dict[str, str] = field(default_factory=dict)
    warmup_connections: int = 0

    @property
    def name(self) -> str:
        return self.folder.name


def load_twin(path: Path) -> Twin:
    """The twin of a folder holding twin.toml (or of twin.toml itself): TwinError for a missing file, bad TOML or a
    field missing or of the wrong kind."""
    file = path / TWIN_FILE if path.is_dir() or not path.suffix else path
    if not file.is_file():
        raise TwinError(f"no {TWIN_FILE} in {file.parent}: a twin folder holds one (its format: docs/twin.md)")
    try:
        data = tomllib.loads(file.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TwinError(f"{file}: not valid TOML ({exc})") from None
    return _twin(data, file)


def _twin(data: dict[str, Any], file: Path) -> Twin:
    def bad(key: str, what: str) -> TwinError:
        return TwinError(f"{file}: `{key}` must be {what}")

    ours, run, port = data.get("ours"), data.get("run"), data.get("port")
    if not isinstance(ours, str) or not ours:
        raise bad("ours", 'our server\'s name, e.g. ours = "node"')
    if not isinstance(run, list) or not run or not all(isinstance(a, str) and a for a in run):
        raise bad("run", 'a non-empty list of strings (the argv), e.g. run = ["node", "app.js"]')
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise bad("port", "a port number (1-65535)")
    env, warm = data.get("env", {}), data.get("warmup_connections", 0)
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise bad("env", 'a table of strings, e.g. env = { NODE_ENV = "production" }')
    if not isinstance(warm, int) or isinstance(warm, bool) or warm < 0:
        raise bad("warmup_connections", "a whole number of at least 0")
    routes = data.get("routes")
    if not isinstance(routes, dict) or not routes:
        raise bad("[routes]", 'a table of at least one route, the twin\'s path = ours, e.g. "/plaintext" = "/hello"')
    for theirs, mine in routes.items():
        if not theirs.startswith("/") or not isinstance(mine, str) or not mine.startswith("/"):
            raise bad(f"[routes] {theirs!r}", 'a path = a path, both starting with "/"')
    return Twin(
        folder=file.parent.resolve(),
        ours=ours,
        run=tuple(run),
        port=port,
        routes=tuple(routes.items()),
        entry=str(data.get("entry", "")),
        versions=str(data.get("versions", "")),
        env=dict(env),
        warmup_connections=warm,
    )


def summary(ours: list[float], theirs: list[float]) -> dict[str, Any]:
    """The rounds of one route pair and pattern, req/s round by round: each round's ratio ours ÷ theirs, their median,
    its order-statistic interval, how many rounds fall below 1, and each side's median req/s."""
    if len(ours) != len(theirs) or not ours:
        raise ValueError(f"rounds differ or are none: {len(ours)} of ours, {len(theirs)} of theirs")
    # rounded first, so that the median, its interval and the count below 1 are read off the ratios as written
    ratios = [round(o / t, 4) if t > 0 else float("inf") for o, t in zip(ours, theirs, strict=True)]
    return {
        "ratios": ratios,
        "median_ratio": round(stats.median(ratios), 4),
        "interval": stats.median_interval(ratios),
        "below_1": sum(r < 1 for r in ratios),
        "rounds": len(ratios),
        "ours_median_rps": round(stats.median(ours), 1),
        "theirs_median_rps": round(stats.median(theirs), 1),
    }


def p99_summary(ours: list[float | None], theirs: list[float | None]) -> dict[str, Any]:
    """The rounds of one route pair and pattern, each side's p99 latency (ms) round by round as its tool gave it (None:
    it gave none): each round's ratio ours ÷ theirs, None where a side has no p99 or one of 0 (ab's whole-ms table
    rounds a fast p99 down to 0: no ratio is made of it); and over the rounds that have a ratio, their median, its
    order-statistic interval, how many are above 1 (ours slower), their count, and each side's median p99 in them.
    Those are None when no round has a ratio."""
    if len(ours) != len(theirs):
        raise ValueError(f"rounds differ: {len(ours)} of ours, {len(theirs)} of theirs")
    ratios = [
        round(o / t, 4) if o is not None and t is not None and o > 0 and t > 0 else None
        for o, t in zip(ours, theirs, strict=True)
    ]
    known = [(o, t, r) for o, t, r in zip(ours, theirs, ratios, strict=True) if r is not None]
    out: dict[str, Any] = {"ratios": ratios, "rounds": len(known), "ours_ms": ours, "theirs_ms": theirs}
    if not known:
        return out | dict.fromkeys(("median_ratio", "interval", "above_1", "ours_median_ms", "theirs_median_ms"))
    ours_known, theirs_known, ratios_known = ([float(x) for x in column] for column in zip(*known, strict=True))
    return out | {
        "median_ratio": round(stats.median(ratios_known), 4),
        "interval": stats.median_interval(ratios_known),
        "above_1": sum(r > 1 for r in ratios_known),
        "ours_median_ms": round(stats.median(ours_known), 3),
        "theirs_median_ms": round(stats.median(theirs_known), 3),
    }


def cost_summary(sides: dict[str, list[dict[str, float] | None]]) -> dict[str, Any]:
    """Each side's median of each of a request's costs (COST_FIELDS) over the rounds where it was read; a side's None
    when it was read in none."""
    out: dict[str, Any] = {}
    for side, costs in sides.items():
        known = [c for c in costs if c is not None]
        out[side] = {f: round(stats.median([c[f] for c in known]), 3) for f in COST_FIELDS} if known else None
    return out


def again_summary(ours: list[float], again: list[float]) -> dict[str, Any]:
    """The A/A of one route pair and pattern: ours ÷ ours again round by round, as summary() reads ours ÷ theirs."""
    both = summary(ours, again)
    return {k: v for k, v in both.items() if k not in ("ours_median_rps", "theirs_median_rps")} | {
        "again_median_rps": both["theirs_median_rps"]
    }


def _pattern(row: dict[str, Any]) -> str:
    """A pair's pattern and its tool (a twin.json written before the tool was kept: the pattern alone)."""
    tool = row.get("tool")
    if tool == "wrk" and row["pattern"] == "connection-per-request":
        tool = "wrk, `Connection: close`"
    return f"{row['pattern']} ({tool})" if tool else row["pattern"]


def markdown(result: dict[str, Any]) -> str:
    """twin.md: the table, one line per route pair and pattern, with the probe's reading before and after. A pair
    without p99 figures (a twin.json written before they were kept) reads n/a in their columns."""
    before, after = (worst_cv(result["steadiness"].get(w)) for w in ("before", "after"))
    probe = f"{_pct(before)} → {_pct(after)}"
    lines = [
        f"# {result['ours']} ÷ TechEmpower twin {result['twin']} ({result['stamp']})",
        "",
        f"Entry: {result['entry'] or '-'}; versions: {result['versions'] or '-'}.",
        f"{'Ours, the twin and ours again' if _has_again(result['pairs']) else 'Both servers'} on CPU "
        f"{result['cpus']['server']}, the load tools on CPU {result['cpus']['loadgen']}; "
        f"{result['rounds']} round{'s' if result['rounds'] != 1 else ''}, the sides' order rotated each round, "
        f"{result['attempt_s']:g} s per attempt.",
        "",
        "| route pair (ours ÷ theirs) | pattern | median ratio | interval | rounds below 1 | ours req/s | theirs req/s "
        "| p99 ratio | p99 interval | p99 rounds above 1 | ours p99 ms | theirs p99 ms | probe CV before → after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["pairs"]:
        p99 = row.get("p99") or {}
        above = f"{p99['above_1']} of {p99['rounds']}" if p99.get("above_1") is not None else "n/a"
        p99_ratio = f"{p99['median_ratio']:.3f}" if p99.get("median_ratio") is not None else "n/a"
        lines.append(
            f"| {row['ours_path']} ÷ {row['theirs_path']} | {_pattern(row)} | {row['median_ratio']:.3f} | "
            f"{_interval(row['interval'], '-')} | {row['below_1']} of {row['rounds']} | {row['ours_median_rps']:,.0f} | "
            f"{row['theirs_median_rps']:,.0f} | {p99_ratio} | {_interval(p99.get('interval'), 'n/a')} | {above} | "
            f"{ms_text(p99.get('ours_median_ms'))} | {ms_text(p99.get('theirs_median_ms'))} | {probe} |"
        )
    lines += [
        "",
        "p99: each side's p99 latency as its tool measured it (wrk --latency, from a request's write, so without its "
        "connect; ab's percentiles, connect included), the ratio ours ÷ theirs round by round, its median and "
        "interval; above 1, ours answered slower. n/a: a tool gave no p99.",
        "",
        *again_lines(result["pairs"]),
        *climb_lines(result.get("climb")),
        *cost_lines(result["pairs"]),
        *speed_lines(result["pairs"]),
        *(f"Probe {w}: {steadiness_text(result['steadiness'].get(w))}." for w in ("before", "after")),
        "",
    ]
    return "\n".join(lines)


def _has_again(pairs: list[dict[str, Any]]) -> bool:
    return any("again" in row for row in pairs)


def again_lines(pairs: list[dict[str, Any]]) -> list[str]:
    """The A/A's table (none when the run had no A/A): ours ÷ ours again, as the first table reads ours ÷ theirs."""
    if not _has_again(pairs):
        return []
    lines = [
        "| route pair | pattern | A/A: ours ÷ ours again | interval | rounds below 1 | ours again req/s |",
        "|---|---|---|---|---|---|",
    ]
    for row in pairs:
        aa = row.get("again")
        if aa:
            lines.append(
                f"| {row['ours_path']} | {row['pattern']} | {aa['median_ratio']:.3f} | {_interval(aa['interval'], '-')} "
                f"| {aa['below_1']} of {aa['rounds']} | {aa['again_median_rps']:,.0f} |"
            )
    return [
        *lines,
        "",
        "A/A: our server started a second time the same way, on a port of its own, measured in the same rounds: what "
        "this sitting reads between two identical servers. A ratio against the twin is a gap only beyond that.",
        "",
    ]


def climb_lines(climb: dict[str, Any] | None) -> list[str]:
    """How the warm-up's climb ended for each side (none for a twin.json written before it was kept)."""
    if not climb:
        return []
    sides = [
        f"{label} {c['rps'][-1] or 0:,.0f} req/s after {c['connections']:,} connections "
        f"({'flat from turn ' + str(c['flat_at_turn']) if c.get('flat_at_turn') else 'still climbing'})"
        for label, c in climb["sides"].items()
        if c["rps"]
    ]
    return [f"Warm-up, connection per request in turns for {climb['seconds']:g} s: {'; '.join(sides)}.", ""]


def cost_lines(pairs: list[dict[str, Any]]) -> list[str]:
    """twin.md's second table: what a request cost each side, the medians over the rounds (n/a: not read)."""
    lines = [
        "| route pair (ours ÷ theirs) | pattern | CPU µs a request, ours (user + kernel) | theirs | "
        "context switches a request, ours | theirs |",
        "|---|---|---|---|---|---|",
    ]
    for row in pairs:
        cost = row.get("cost") or {}
        cpu = {side: _cpu_text(cost.get(side)) for side in ("ours", "theirs")}
        switches = {side: f"{cost[side]['switches']:.2f}" if cost.get(side) else "n/a" for side in ("ours", "theirs")}
        lines.append(
            f"| {row['ours_path']} ÷ {row['theirs_path']} | {row['pattern']} | {cpu['ours']} | {cpu['theirs']} | "
            f"{switches['ours']} | {switches['theirs']} |"
        )
    return [
        *lines,
        "",
        "Cost: what the measured server's process (its children included) spent during each attempt, from /proc, "
        "over the requests answered; the median over the rounds.",
        "",
    ]


def _cpu_text(cost: dict[str, float] | None) -> str:
    if not cost:
        return "n/a"
    return f"{cost['user_us'] + cost['kernel_us']:.0f} ({cost['user_us']:.0f} + {cost['kernel_us']:.0f})"


def ms_text(ms: float | None, unit: str = "") -> str:
    """A latency in ms to three figures (whole ms from 100 up) followed by `unit`, or n/a when there is none."""
    if ms is None:
        return "n/a"
    return (f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}") + unit


def speed_lines(pairs: list[dict[str, Any]]) -> list[str]:
    """twin.md's table of the ratios on the server CPU's speed (twin_speeds.py), a line per route pair and pattern
    (none for a twin.json written before the meter)."""
    if not any("on_speed" in row for row in pairs):
        return []
    lines = [
        "On the server CPU's speed (each attempt's req/s ÷ the speed the meter read on the server's CPU during it, "
        "where every attempt of both sides is bound on that CPU; else as measured):",
        "",
        "| route pair (ours ÷ theirs) | pattern | figure | median ratio | interval | rounds below 1 | A/A median "
        "| A/A interval | meter ours ÷ theirs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in pairs:
        speed = row.get("on_speed") or {"rule": "as measured: no reading"}
        head = f"| {row['ours_path']} ÷ {row['theirs_path']} | {row['pattern']} |"
        if "median_ratio" not in speed:
            lines.append(f"{head} {speed['rule']} | | | | | | |")
            continue
        again = speed.get("again") or {}
        lines.append(
            f"{head} speed | {speed['median_ratio']:.3f} | {_interval(speed['interval'], '-')} | {speed['below_1']} of "
            f"{speed['rounds']} | {_ratio_text(again.get('median_ratio'))} | {_interval(again.get('interval'), '-')} | "
            f"{speed['meter']['median_ratio']:.3f}, {_interval(speed['meter']['interval'], '-')} |"
        )
    return [*lines, ""]


def _ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(ci: dict[str, Any] | None, none: str) -> str:
    return f"{ci['low']:.3f}-{ci['high']:.3f} ({ci['level']:.0%})" if ci else none


def _pct(cv: float | None) -> str:
    return "-" if cv is None else f"{cv * 100:.1f} %"
