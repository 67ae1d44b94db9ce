"""What every export shows, computed once: records grouped per (scenario, run), ranked, with the nginx ceiling.

Records are grouped by their label (harness.results.Record.label): the run label, with the runtime and round where
records have a round (an overhead run measures the same run once per runtime and round).

Ranking (`rank`, the one ranking function: the report's exports and the console table use it): among the clean records
of a group (nginx, the ceiling, apart), a record's rank is 1 + the number of records whose req/s interval (the median's
confidence interval, harness.stats.median_interval) lies entirely above its own; touching ends are an overlap. Records
with the same rank are tied and shown as "=2". Two servers are therefore ordered only where their intervals do not
overlap. Overlap is not transitive: with A overlapping B, B overlapping C, and A entirely above C, A and B are "=1" and
C is 2."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness import capacity as capacity_rules
from harness import flags as flag_rules
from harness import stats
from harness.manifest import discover
from harness.results import Record, Run
from harness.stats import fmt_rate, interval_text

MATRIX_MIN_RUNS = 4  # a scenario with this many runs or more (weather) is shown as a req/s-against-concurrency matrix


@dataclass(frozen=True)
class Standing:
    """A clean record's place in its group."""

    record: Record
    rank: int
    tied: bool  # another record of the group has the same rank

    @property
    def label(self) -> str:
        """"2", or "=2" for a tie."""
        return ("=" if self.tied else "") + str(self.rank)


@dataclass
class Group:
    """The records of one (scenario, run): clean ones ranked by req/s, the ceiling apart, flagged ones below."""

    scenario: str
    run: str  # the records' label
    records: list[Record]
    ceiling: Record | None = None  # nginx's record in this group (hello, backend; /weather.json for weather)
    ranked: list[Standing] = field(default_factory=list)
    flagged: list[Record] = field(default_factory=list)

    @property
    def key(self) -> str:
        return slug(f"{self.scenario}-{self.run}")

    @property
    def load(self) -> str:
        return describe_load(self.records[0]) if self.records else ""

    def rank_label(self, record: Record) -> str:
        """"1", "=2", or "" for a record that is not ranked."""
        return next((s.label for s in self.ranked if s.record is record), "")

    def leaders(self) -> list[Record]:
        """The best ranked records: one, or several tied at rank 1; [] when none is ranked."""
        return [s.record for s in self.ranked if s.rank == 1]


@dataclass
class Scenario:
    name: str
    groups: list[Group]
    description: str = ""

    @property
    def is_matrix(self) -> bool:
        return len(self.groups) >= MATRIX_MIN_RUNS and not self.is_stepped

    @property
    def is_stepped(self) -> bool:
        """An open-model scenario of rate steps (latency): shown as latency against offered load, and capacity."""
        return any(flag_rules.offered_rps(r) for g in self.groups for r in g.records)

    @property
    def servers(self) -> list[str]:
        seen: list[str] = []
        for g in self.groups:
            for r in g.records:
                if r.server not in seen:
                    seen.append(r.server)
        return seen


@dataclass
class Model:
    run: Run
    scenarios: list[Scenario]
    colors: dict[str, str]
    ceilings: set[str]  # servers with the role "ceiling": shown apart, never ranked
    capacity: dict = field(default_factory=dict)  # {server: {scenario: capacity}} (harness.capacity)

    @property
    def slo_p99_ms(self) -> float:
        return self.run.conditions.get("slo_p99_ms") or capacity_rules.DEFAULT_SLO_P99_MS

    def capacities(self, scenario: str) -> list[tuple[str, dict]]:
        """(server, capacity) of a stepped scenario, highest capacity first (none last)."""
        found = [(server, by[scenario]) for server, by in self.capacity.items() if scenario in by]
        return sorted(found, key=lambda sc: -(sc[1]["rps"] or 0))

    def is_ceiling(self, server: str) -> bool:
        return server in self.ceilings

    @property
    def records(self) -> list[Record]:
        return self.run.records

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def conditions(self) -> dict:
        return self.run.conditions


def slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-").lower()


def describe_load(r: Record) -> str:
    load = r.load
    parts = [r.tool or "?", f"{r.concurrency} connections"]
    if r.threads:
        parts.append(f"{r.threads} threads")
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
    return ", ".join(parts) + f" on {r.path or '?'}"


def rps_of(r: Record) -> float:
    return r.rps or 0.0


RANKING_NOTE = (
    "Ranks: two servers are ordered only where the intervals of their req/s do not overlap; a server's rank is 1 + the "
    "number of servers of its group whose interval lies entirely above its own, so servers with overlapping intervals "
    "share a rank, shown with = (=2: tied second). nginx, the ceiling, is not ranked. Flagged measurements are not "
    "ranked either.")


def rank(records: list[Record]) -> list[Standing]:
    """The standings of the clean records of one group (see the module's docstring), by rank, then req/s descending."""
    rps = [r.summary.rps for r in records]
    ranks = [1 + sum(1 for j, other in enumerate(rps) if j != i and stats.above(other, own)) for i, own in enumerate(rps)]
    standings = [Standing(r, n, ranks.count(n) > 1) for r, n in zip(records, ranks)]
    return sorted(standings, key=lambda s: (s.rank, -rps_of(s.record)))


def build(run: Run, descriptions: dict[str, str] | None = None) -> Model:
    """Groups, ranks and colours; `run` must have been through flags.evaluate."""
    ceilings = run.with_role("ceiling")
    scenarios: dict[str, dict[str, list[Record]]] = {}
    for r in run.records:
        scenarios.setdefault(r.scenario, {}).setdefault(r.label, []).append(r)
    out = []
    for name, runs in scenarios.items():
        groups = []
        for label, records in runs.items():
            g = Group(name, label, records)
            g.ceiling = next((r for r in records if r.server in ceilings), None)
            others = [r for r in records if r.server not in ceilings]
            g.ranked = rank([r for r in others if r.ranked])
            g.flagged = sorted((r for r in others if not r.ranked), key=rps_of, reverse=True)
            groups.append(g)
        out.append(Scenario(name, groups, (descriptions or {}).get(name, "")))
    order = list(descriptions or {})  # scenarios.toml's order; unknown scenarios after, as they came
    out.sort(key=lambda s: order.index(s.name) if s.name in order else len(order))
    names = list(run.servers)
    for r in run.records:
        if r.server not in names:
            names.append(r.server)
    model = Model(run, out, colors(names, ceilings), ceilings)
    model.capacity = capacity_rules.of_run(run, model.slo_p99_ms)
    return model


# tab10 without its red (red means errors in this report) and grey (nginx), then a few more
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#393b79", "#bcbd22", "#637939",
           "#843c39", "#7b4173"]
CEILING_COLOR = "#333333"


def colors(names: list[str], ceilings: set[str]) -> dict[str, str]:
    """One colour per server, stable across runs: assigned over every server of the repository (sorted), not just the
    ones of this run; nginx dark grey."""
    try:
        known = set(discover())
    except Exception:  # a manifest that no longer reads: colour this run's servers alone
        known = set()
    out, i = {}, 0
    for name in sorted(known) + sorted(set(names) - known):  # a server from elsewhere does not shift the others
        if name in ceilings:
            out[name] = CEILING_COLOR
        else:
            out[name] = PALETTE[i % len(PALETTE)]
            i += 1
    return out


# -- cells shared by the exports ---------------------------------------------------------------------------------------

def capacity_text(c: dict) -> str:
    """"12,345 req/s", "≥ 12,345 req/s" (the load generator was the limit above it), or why there is none."""
    if not c["rps"]:
        return "none: " + c.get("why", "")
    return ("≥ " if c["lower_bound"] else "") + f"{fmt_rate(c['rps'])} req/s"


def capacity_rows(model: Model, scenario: Scenario) -> list[list[str]]:
    """The capacity table of a stepped scenario: server, capacity, the step that set it, its p99, notes."""
    return [[server, capacity_text(c), c["step"] or "-", "-" if c["p99_ms"] is None else f"{c['p99_ms']:.2f}",
             c.get("why", "") if c["rps"] else ""] for server, c in model.capacities(scenario.name)]


CAPACITY_HEADER = ["server", "capacity", "step", "p99 ms", "note"]


def step_rows(model: Model, scenario: Scenario) -> list[list[str]]:
    """Per server and step: offered → achieved req/s, p99 (corrected), errors, held or why not."""
    rows = []
    for server, c in model.capacities(scenario.name):
        for s in c["steps"]:
            rows.append([server, s["step"], fmt_rate(s["offered_rps"]), fmt_rate(s["achieved_rps"]) if s["achieved_rps"] else "-",
                         "-" if s["p99_ms"] is None else f"{s['p99_ms']:.2f}", f"{s['errors']:,}",
                         "held" if s["held"] else s["why_not"]])
    return rows


STEP_HEADER = ["server", "step", "offered req/s", "achieved req/s", "p99 ms", "errors", "within target"]


def rps_interval(r: Record) -> str:
    """The req/s median's confidence interval with its level: '35,266 – 40,867 (75 %)'."""
    return interval_text(r.summary.rps)


def cv_text(r: Record, metric: str = "rps") -> str:
    s = getattr(r.summary, metric)
    return "-" if not s or s.get("cv") is None else f"{s['cv']:.1%}"


def latency(r: Record, key: str) -> float | None:
    return r.latency_ms.get(key)


def errors_text(r: Record) -> str:
    total = r.errors.total
    if not total:
        return "0"
    rate = flag_rules.error_rate(r)
    return f"{total:,} ({rate:.1%})" if rate is not None else f"{total:,}"


def cpu(r: Record, role: str) -> float | None:
    """The same utilisation the loadgen-saturated flag judges by."""
    return flag_rules.utilization(r, role)


def cpu_text(r: Record, role: str) -> str:
    value = cpu(r, role)
    return "-" if value is None else f"{value * 100:.0f} %"


def peak_rss(r: Record, role: str = "server") -> float | None:
    sample = r.samples.get(role)
    return sample.peak_rss_mb if sample else None


def rss_text(r: Record, role: str = "server") -> str:
    value = peak_rss(r, role)
    return "-" if value is None else f"{value:,.0f} MB"


def attempts_text(r: Record) -> str:
    return " / ".join(fmt_rate(a.rps) if a.measured else "failed" for a in r.attempts)


def flag_names(r: Record) -> list[str]:
    return flag_rules.names(r)


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
