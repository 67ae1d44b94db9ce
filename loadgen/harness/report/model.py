"""What every export shows, computed once: records grouped per (scenario, run), ranked, with the nginx ceiling.

Ranking (`rank`, the one ranking function: the report's exports and the console table use it): among the clean records
of a group (nginx, the ceiling, apart), a record's rank is 1 + the number of records whose req/s interval (the median's
confidence interval, harness.stats.median_interval) lies entirely above its own; touching ends are an overlap. Records
with the same rank are tied and shown as "=2". Two servers are therefore ordered only where their intervals do not
overlap. Overlap is not transitive: with A overlapping B, B overlapping C, and A entirely above C, A and B are "=1" and
C is 2."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness import flags as flag_rules
from harness import stats
from harness.stats import fmt_rate, interval_text

CEILING = flag_rules.CEILING_SERVER
MATRIX_MIN_RUNS = 4  # a scenario with this many runs or more (weather) is shown as a req/s-against-concurrency matrix


@dataclass
class Group:
    """The records of one (scenario, run): clean ones ranked by req/s, the ceiling apart, flagged ones below."""

    scenario: str
    run: str
    records: list[dict]
    ceiling: dict | None = None  # nginx's record in this group (hello, backend; /weather.json for weather)
    ranked: list[dict] = field(default_factory=list)
    flagged: list[dict] = field(default_factory=list)

    @property
    def key(self) -> str:
        return slug(f"{self.scenario}-{self.run}")

    @property
    def load(self) -> str:
        return describe_load(self.records[0]) if self.records else ""


@dataclass
class Scenario:
    name: str
    groups: list[Group]
    description: str = ""

    @property
    def is_matrix(self) -> bool:
        return len(self.groups) >= MATRIX_MIN_RUNS

    @property
    def servers(self) -> list[str]:
        seen: list[str] = []
        for g in self.groups:
            for r in g.records:
                if r["server"] not in seen:
                    seen.append(r["server"])
        return seen


@dataclass
class Model:
    data: dict
    scenarios: list[Scenario]
    colors: dict[str, str]

    @property
    def records(self) -> list[dict]:
        return self.data.get("records") or []

    @property
    def run_id(self) -> str:
        return self.data.get("run_id", "?")

    @property
    def conditions(self) -> dict:
        return self.data.get("conditions") or {}


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-").lower()


def describe_load(r: dict) -> str:
    load = r.get("load") or {}
    parts = [r.get("tool", "?"), f"{r.get('concurrency')} connections"]
    if r.get("threads"):
        parts.append(f"{r['threads']} threads")
    if load.get("duration_s"):
        parts.append(f"{load['duration_s']:g} s")
    if load.get("requests"):
        parts.append(f"{load['requests']:,} requests")
    if load.get("keepalive"):
        parts.append("keep-alive")
    if load.get("calls_per_connection"):
        parts.append(f"{load['calls_per_connection']:,} calls per connection")
    if load.get("rate"):
        parts.append(f"rate {load['rate']:g}/s")
    return ", ".join(parts) + f" on {r.get('path', '?')}"


def is_ceiling(r: dict) -> bool:
    return r.get("server") == CEILING


def rps_of(r: dict) -> float:
    return r.get("rps") or 0.0


RANKING_NOTE = (
    "Ranks: two servers are ordered only where the intervals of their req/s do not overlap; a server's rank is 1 + the "
    "number of servers of its group whose interval lies entirely above its own, so servers with overlapping intervals "
    "share a rank, shown with = (=2: tied second). nginx, the ceiling, is not ranked. Flagged measurements are not "
    "ranked either.")


def rank(records: list[dict]) -> list[dict]:
    """Ranks the clean records of one group (see the module's docstring): sets r["_rank"] (an int) and
    r["_rank_label"] ("2", or "=2" for a tie) on each and returns them by rank, then req/s descending."""
    rps = {id(r): summary(r).get("rps") for r in records}
    for r in records:
        r["_rank"] = 1 + sum(1 for o in records if o is not r and stats.above(rps[id(o)], rps[id(r)]))
    counts: dict[int, int] = {}
    for r in records:
        counts[r["_rank"]] = counts.get(r["_rank"], 0) + 1
    for r in records:
        r["_rank_label"] = ("=" if counts[r["_rank"]] > 1 else "") + str(r["_rank"])
    return sorted(records, key=lambda r: (r["_rank"], -rps_of(r)))


def rank_label(r: dict) -> str:
    """"1", "=2", or "" for a record that is not ranked."""
    return r.get("_rank_label", "")


def leaders(group: "Group") -> list[dict]:
    """The best ranked records of a group: one, or several tied at rank 1; [] when none is ranked."""
    return [r for r in group.ranked if r.get("_rank") == 1]


def build(data: dict, descriptions: dict[str, str] | None = None) -> Model:
    """Groups, ranks and colours; `data` must have been through flags.evaluate."""
    scenarios: dict[str, dict[str, list[dict]]] = {}
    for r in data.get("records") or []:
        scenarios.setdefault(r["scenario"], {}).setdefault(r.get("run", ""), []).append(r)
    out = []
    for name, runs in scenarios.items():
        groups = []
        for run, records in runs.items():
            g = Group(name, run, records)
            ceilings = [r for r in records if is_ceiling(r)]
            g.ceiling = ceilings[0] if ceilings else None
            others = [r for r in records if not is_ceiling(r)]
            for r in records:
                r.pop("_rank", None), r.pop("_rank_label", None)
            g.ranked = rank([r for r in others if r.get("ranked")])
            g.flagged = sorted((r for r in others if not r.get("ranked")), key=rps_of, reverse=True)
            groups.append(g)
        out.append(Scenario(name, groups, (descriptions or {}).get(name, "")))
    order = list(descriptions or {})  # scenarios.toml's order; unknown scenarios after, as they came
    out.sort(key=lambda s: order.index(s.name) if s.name in order else len(order))
    names = list((data.get("servers") or {}).keys())
    for r in data.get("records") or []:
        if r["server"] not in names:
            names.append(r["server"])
    return Model(data, out, colors(names))


# tab10 without its red (red means errors in this report) and grey (nginx), then a few more
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#393b79", "#bcbd22", "#637939",
           "#843c39", "#7b4173"]
CEILING_COLOR = "#333333"


def colors(names: list[str]) -> dict[str, str]:
    """One colour per server, stable across runs: assigned over every server of the repository (sorted), not just the
    ones of this run; nginx dark grey."""
    try:
        from harness.manifest import discover
        known = set(discover())
    except Exception:
        known = set()
    out, i = {}, 0
    for name in sorted(known) + sorted(set(names) - known):  # a server from elsewhere does not shift the others
        if name == CEILING:
            out[name] = CEILING_COLOR
        else:
            out[name] = PALETTE[i % len(PALETTE)]
            i += 1
    return out


# -- cells shared by the HTML, Markdown and CSV exports -------------------------------------------------------------

def summary(r: dict) -> dict:
    return stats.summary_of(r)


def rps_interval(r: dict) -> str:
    """The req/s median's confidence interval with its level: '35,266 – 40,867 (75 %)'."""
    return interval_text(summary(r).get("rps"))


def cv_text(r: dict, metric: str = "rps") -> str:
    s = summary(r).get(metric)
    return "-" if not s or s.get("cv") is None else f"{s['cv']:.1%}"


def n_attempts(r: dict) -> int:
    attempts = r.get("attempts")
    return len(attempts) if isinstance(attempts, list) else 1


def latency(r: dict, key: str) -> float | None:
    return (r.get("latency_ms") or {}).get(key)


def errors_text(r: dict) -> str:
    total = (r.get("errors") or {}).get("total") or 0
    if not total:
        return "0"
    rate = flag_rules.error_rate(r)
    return f"{total:,} ({rate:.1%})" if rate is not None else f"{total:,}"


def cpu(r: dict, role: str) -> float | None:
    """The same utilisation the loadgen-saturated flag judges by."""
    return flag_rules.utilization(r, role)


def cpu_text(r: dict, role: str) -> str:
    value = cpu(r, role)
    return "-" if value is None else f"{value * 100:.0f} %"


def rss_text(r: dict, role: str = "server") -> str:
    value = ((r.get("samples") or {}).get(role) or {}).get("peak_rss_mb")
    return "-" if value is None else f"{value:,.0f} MB"


def attempts_text(r: dict) -> str:
    attempts = r.get("attempts")
    if not isinstance(attempts, list):
        return "-"
    return " / ".join("failed" if a.get("failed") or a.get("rps") is None else fmt_rate(a["rps"]) for a in attempts)


def flag_names(r: dict) -> list[str]:
    return flag_rules.names(r)


def ceiling_of(scenario: Scenario) -> list[float | None]:
    return [g.ceiling.get("rps") if g.ceiling else None for g in scenario.groups]


def bytes_text(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return "-"


def loc_text(loc: dict | None) -> str:
    if not loc:
        return "-"
    if "program" in loc:
        return f"{loc['program']:,} + {loc['config']:,} build/config"
    return f"{loc.get('code', 0):,}"


def startup_text(s: float | None) -> str:
    return "-" if s is None else (f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s")

