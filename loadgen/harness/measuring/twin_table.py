"""A TechEmpower twin (issue 48) as `make twin` reads it, and what its rounds come to: the twin's twin.toml checked
(the format is /work/te/SPEC.md's, kept outside this repository), each round's ratio ours ÷ theirs, their median
with its order-statistic interval (harness.basics.stats), the rounds below 1, and the Markdown table of twin.md."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.basics import stats
from harness.report.run_conditions import steadiness_text

TWIN_FILE = "twin.toml"
PATTERNS = ("keep-alive", "connection-per-request")  # wrk, ab: the two connection patterns of every route pair
TOOL_OF = {"keep-alive": "wrk", "connection-per-request": "ab"}


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
        raise TwinError(f"no {TWIN_FILE} in {file.parent}: a twin folder holds one (see /work/te/SPEC.md)")
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


def first_of_round(k: int) -> str:
    """Who is measured first in round k (from 0): ours on even rounds, theirs on odd ones."""
    return "ours" if k % 2 == 0 else "theirs"


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


def worst_cv(probe: dict[str, Any] | None) -> float | None:
    """The larger of the probe's two CPUs' coefficients of variation."""
    if not probe:
        return None
    return max((c for c in probe["cv"].values() if c is not None), default=None)


def markdown(result: dict[str, Any]) -> str:
    """twin.md: the table, one line per route pair and pattern, with the probe's reading before and after."""
    before, after = (worst_cv(result["steadiness"].get(w)) for w in ("before", "after"))
    probe = f"{_pct(before)} → {_pct(after)}"
    lines = [
        f"# {result['ours']} ÷ TechEmpower twin {result['twin']} ({result['stamp']})",
        "",
        f"Entry: {result['entry'] or '-'}; versions: {result['versions'] or '-'}.",
        f"Both servers on CPU {result['cpus']['server']}, the load tools on CPU {result['cpus']['loadgen']}; "
        f"{result['rounds']} alternating round{'s' if result['rounds'] != 1 else ''} (ours first on even rounds), "
        f"{result['attempt_s']:g} s per attempt.",
        "",
        "| route pair (ours ÷ theirs) | pattern | median ratio | interval | rounds below 1 | ours req/s | theirs req/s | probe CV before → after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["pairs"]:
        ci = row["interval"]
        interval = f"{ci['low']:.3f}-{ci['high']:.3f} ({ci['level']:.0%})" if ci else "-"
        lines.append(
            f"| {row['ours_path']} ÷ {row['theirs_path']} | {row['pattern']} | {row['median_ratio']:.3f} | "
            f"{interval} | {row['below_1']} of {row['rounds']} | {row['ours_median_rps']:,.0f} | "
            f"{row['theirs_median_rps']:,.0f} | {probe} |"
        )
    lines += ["", *(f"Probe {w}: {steadiness_text(result['steadiness'].get(w))}." for w in ("before", "after")), ""]
    return "\n".join(lines)


def _pct(cv: float | None) -> str:
    return "-" if cv is None else f"{cv * 100:.1f} %"
