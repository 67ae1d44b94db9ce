"""What every export shows, computed once: records grouped per (scenario, run), ranked, with the nginx ceiling.

Records are grouped by their label (harness.results.records.Record.label): the run label, with the runtime and round where
records have a round (an overhead run measures the same run once per runtime and round).

Ranking: harness.results.ranking, the one ordering rule (the report's exports, the console table and `make compare` use it):
every record with a figure takes part (a lower bound where the load generator or the upstream was the limit, ordered
by CPU per request where that decides); only failures, errors and a failed contract are listed apart, unranked."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.basics.formats import fmt_rate
from harness.config.environment import DEFAULT_SLO_P99_MS
from harness.config.manifest import discover
from harness.report import compliance
from harness.report.cells import capacity_text, cost_text, rps_text
from harness.results import capacity as capacity_rules
from harness.results import flags as flag_rules
from harness.results import ranking, round_pairs
from harness.results.ranking import Standing
from harness.results.records import Record, Run

MATRIX_MIN_RUNS = 4  # a scenario with this many runs or more (weather) is shown as a req/s-against-concurrency matrix


@dataclass
class Group:
    """The records of one (scenario, run): those with a figure ranked (harness.results.ranking), the ceiling apart, those
    kept out (harness.results.flag_kinds.kept_out) below."""

    scenario: str
    run: str  # the records' label
    records: list[Record]
    ceiling: Record | None = None  # nginx's record in this group (hello, backend; /weather.json for weather)
    ranked: list[Standing] = field(default_factory=list)
    flagged: list[Record] = field(default_factory=list)  # kept out of the ranking
    twins: tuple[Record, Record] | None = None  # the A/A control in this group: (the twin's record, its server's)
    compliance: dict[str, str] = field(default_factory=dict)  # each probed server's score (report/compliance.py)

    @property
    def by_cost(self) -> bool:
        """Whether CPU per request placed any record (where the load generator was the limit)."""
        return any(s.by_cost for s in self.ranked)

    @property
    def paired(self) -> bool:
        """Whether any of its pairs was ordered by paired rounds (its rounds share the noise: results/round_pairs.py)."""
        return any(s.paired for s in self.ranked)

    @property
    def rule_note(self) -> str:
        """Which rule ordered each pair of the group, and why (issue 41): said under every ranked group."""
        if not self.ranked:
            return ""
        rule = round_pairs.group_rule([s.record for s in self.ranked])
        if not self.paired:
            return f"Ordered by intervals: {rule.why}."
        pairs = [s.record.server for s in self.ranked if s.paired]
        rest = [s.record.server for s in self.ranked if not s.paired]
        return (
            f"Ordered by paired rounds (the geometric mean of per-round ratios, its interval at "
            f"{round_pairs.FALSE_ORDER_RATE:.1%} false orders) between {', '.join(pairs)}: {rule.why}"
            + (
                f"; by intervals wherever {', '.join(rest)} is one of the two (a lower bound, or measured again "
                "outside the rounds)."
                if rest
                else "."
            )
        )

    @property
    def twins_ordered(self) -> bool | None:
        """The A/A control: whether the ranking placed one twin above the other (None: no twins here, or one of
        them is not ranked)."""
        if not self.twins:
            return None
        records = [s.record for s in self.ranked]
        if not all(t in records for t in self.twins):
            return None
        return ranking.ordered(*self.twins, records)

    @property
    def key(self) -> str:
        return slug(f"{self.scenario}-{self.run}")

    @property
    def load(self) -> str:
        return describe_load(self.records[0]) if self.records else ""

    def rank_label(self, record: Record) -> str:
        """ "1", "1–5" (the range of places the intervals allow), or "" for a record that is not ranked."""
        return next((s.label for s in self.ranked if s.record is record), "")

    def leaders(self) -> list[Record]:
        """The records with nothing surely above them (best place 1): one, or several whose places are ranges from 1;
        [] when none is ranked."""
        return [s.record for s in self.ranked if s.rank == 1]


@dataclass
class ScenarioView:
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
    scenarios: list[ScenarioView]
    colors: dict[str, str]
    ceilings: set[str]  # servers with the role "ceiling": shown apart, never ranked
    capacity: dict = field(default_factory=dict)  # {server: {scenario: capacity}} (harness.results.capacity)

    @property
    def slo_p99_ms(self) -> float:
        return self.run.conditions.get("slo_p99_ms") or DEFAULT_SLO_P99_MS

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
    """`text` as a file name's part: letters, digits, '-' and '_' only, so a record's "../../x" names nothing outside
    the report's folder, and short enough for any file system."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-").lower()[:100]


def describe_load(r: Record) -> str:
    load = r.load
    parts = [r.tool or "?", f"{r.concurrency} connections"]
    last = next((a for a in reversed(r.attempts) if a.processes), None)
    if last and len(last.processes) > 1:
        parts.append(f"{len(last.processes)} processes on {len({c for p in last.processes for c in p['cores']})} cores")
    if r.threads:
        parts.append(f"{r.threads} threads")
    if last and last.loadgen_note:
        parts.append(f"not all of the load generator's cores: {last.loadgen_note}")
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


def build(run: Run, descriptions: dict[str, str] | None = None) -> Model:
    """Groups, ranks and colours; `run` must have been through flags.evaluate."""
    ceilings = run.with_role("ceiling")
    calibrated = run.with_role("calibrated")  # its records are judged against known answers (calibration_page.py)
    scenarios: dict[str, dict[str, list[Record]]] = {}
    for r in (r for r in run.records if r.server not in calibrated):
        scenarios.setdefault(r.scenario, {}).setdefault(r.label, []).append(r)
    out = []
    scores = compliance.scores(run)
    for name, runs in scenarios.items():
        groups = []
        for label, records in runs.items():
            g = Group(name, label, records, compliance=scores)
            g.ceiling = next((r for r in records if r.server in ceilings), None)
            others = [r for r in records if r.server not in ceilings]
            g.ranked = ranking.rank([r for r in others if r.ranked])
            g.flagged = sorted((r for r in others if not r.ranked), key=rps_of, reverse=True)
            twins = [(r, o) for r in records for o in records if run.twin_of(r.server) == o.server]
            g.twins = twins[0] if twins else None
            groups.append(g)
        out.append(ScenarioView(name, groups, (descriptions or {}).get(name, "")))
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
PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#393b79",
    "#bcbd22",
    "#637939",
    "#843c39",
    "#7b4173",
]
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


@dataclass(frozen=True)
class Glance:
    """One row of the at-a-glance table (Markdown and HTML alike): a group's best, by the one ranking rule."""

    scenario: str
    run: str
    best: list[Record]  # best place 1: one, or several whose places are ranges from 1
    ceiling: Record | None
    ranked: int
    kept_out: int
    by_cost: bool  # CPU per request placed someone in this group (the load generator was the limit)
    twins_ordered: bool | None  # the A/A control in this group (None: no twins ranked here)
    places: tuple[str, ...] = ()  # each best's range of places ("1", "1–5"), as the tables show it
    paired: bool = False  # some of the group's pairs were ordered by paired rounds (results/round_pairs.py)

    def name_of(self, i: int) -> str:
        """The i-th best's name, with its range of places where it could be lower than first ("socko (1–5)")."""
        place = self.places[i] if i < len(self.places) else "1"
        return self.best[i].server + ("" if place == "1" else f" ({place})")

    @property
    def names(self) -> str:
        return " = ".join(self.name_of(i) for i in range(len(self.best)))

    @property
    def rates(self) -> str:
        return " = ".join(rps_text(r) for r in self.best)

    @property
    def costs(self) -> str:
        return " = ".join(cost_text(r) for r in self.best)

    @property
    def of_ceiling(self) -> str:
        if not self.best or not self.ceiling or not self.ceiling.rps:
            return "-"
        return " = ".join(f"{(r.rps or 0.0) / self.ceiling.rps:.0%}" for r in self.best)  # the best have a rate

    @property
    def note(self) -> str:
        parts = []
        if any(ranking.is_lower_bound(r) for r in self.best):
            parts.append("≥: the load generator (or upstream) was the limit")
        if self.by_cost:
            parts.append("ordered by CPU/request where the load generator was the limit")
        if self.paired:
            parts.append("ordered by paired rounds")
        if self.twins_ordered is not None:
            parts.append("A/A twins ORDERED" if self.twins_ordered else "A/A twins tied")
        return "; ".join(parts)


def glance(model: Model) -> list[Glance]:
    """The at-a-glance rows of every closed-loop group (stepped scenarios are read by capacity instead)."""
    return [
        Glance(
            scenario.name,
            group.run,
            group.leaders(),
            group.ceiling,
            len(group.ranked),
            len(group.flagged),
            group.by_cost,
            group.twins_ordered,
            tuple(group.rank_label(r) for r in group.leaders()),
            group.paired,
        )
        for scenario in model.scenarios
        if not scenario.is_stepped
        for group in scenario.groups
    ]


def aa_result(model: Model) -> dict | None:
    """The A/A control over the run: in how many groups the twins were ranked, and ordered (the method's own false
    positives), against the rate the method promises for the attempts taken."""
    groups = [g for s in model.scenarios for g in s.groups if g.twins_ordered is not None]
    twins = groups[0].twins if groups else None
    if not twins:
        return None
    n = min(len([a for a in t.attempts if a.measured]) for g in groups for t in g.twins or ())
    return {
        "server": twins[1].server,
        "twin": twins[0].server,
        "groups": len(groups),
        "ordered": [f"{g.scenario} {g.run}" for g in groups if g.twins_ordered],
        "expected_rate": ranking.false_order_rate(n) if n else None,
        "attempts": n,
    }


def aa_text(model: Model) -> str | None:
    result = aa_result(model)
    if not result:
        return None
    ordered = result["ordered"]
    rate = result["expected_rate"]
    return (
        f"A/A control: {result['server']} was measured twice, as {result['server']} and {result['twin']}, in "
        f"{result['groups']} groups; the ranking ordered the twins in {len(ordered)}"
        + (f" ({', '.join(ordered)})" if ordered else "")
        + (
            f". With {result['attempts']} attempts each the method orders two identical servers "
            f"{rate:.1%} of the time per group, so about {rate * result['groups']:.1f} of {result['groups']} is "
            "expected by chance."
            if rate is not None
            else "."
        )
    )


def method_note(model: Model) -> str:
    """The ranking rule with the false-order rate of the attempts this run took."""
    counts = sorted({len([a for a in r.attempts if a.measured]) for r in model.records if r.ranked} - {0, 1})
    rates = ", ".join(f"{ranking.false_order_rate(n):.1%} with {n} attempts" for n in counts)
    return (
        ranking.METHOD_NOTE
        + (
            f" Two identical servers are ordered by this rule {rates} (2·n!·n!/(2n)!: their attempts "
            "exchangeable, all of one above all of the other)."
            if rates
            else ""
        )
        + f" By paired rounds, {round_pairs.FALSE_ORDER_RATE:.1%} whatever the rounds."
    )


# -- cells shared by the exports ---------------------------------------------------------------------------------------

PROTOCOL_CHANGE_HEADER = "h2c best ÷ h1"


def protocol_change(scenario: ScenarioView, server: str) -> str:
    """In a scenario with an HTTP/1.1 baseline run and h2c runs (h2-hello): the server's best h2c median over its
    HTTP/1.1 one, with the run it came from ('×1.85 (c16-m100)'); '' where either is missing."""
    mine = [r for g in scenario.groups for r in g.records if r.server == server and r.rps]
    h1 = [r for r in mine if r.load.get("protocol") == "h1"]
    h2 = [r for r in mine if r.load.get("protocol") == "h2c"]
    if not h1 or not h2:
        return ""
    best = max(h2, key=lambda r: r.rps or 0.0)  # each has a rate (`mine`)
    return f"×{(best.rps or 0.0) / (h1[0].rps or 1.0):.2f} ({best.run})"


def has_protocol_change(scenario: ScenarioView) -> bool:
    return any(protocol_change(scenario, s) for s in scenario.servers)


def capacity_rows(model: Model, scenario: ScenarioView) -> list[list[str]]:
    """The capacity table of a stepped scenario: server, capacity, the step that set it, its p99, notes."""
    return [
        [
            server,
            capacity_text(c),
            c["step"] or "-",
            "-" if c["p99_ms"] is None else f"{c['p99_ms']:.2f}",
            c.get("why", "") if c["rps"] else "",
        ]
        for server, c in model.capacities(scenario.name)
    ]


CAPACITY_HEADER = ["server", "capacity", "step", "p99 ms", "note"]


def step_rows(model: Model, scenario: ScenarioView) -> list[list[str]]:
    """Per server and step: offered → achieved req/s, p99 (corrected), errors, held or why not."""
    rows = []
    for server, c in model.capacities(scenario.name):
        for s in c["steps"]:
            rows.append(
                [
                    server,
                    s["step"],
                    fmt_rate(s["offered_rps"]),
                    fmt_rate(s["achieved_rps"]) if s["achieved_rps"] else "-",
                    "-" if s["p99_ms"] is None else f"{s['p99_ms']:.2f}",
                    f"{s['errors']:,}",
                    "held" if s["held"] else s["why_not"],
                ]
            )
    return rows


STEP_HEADER = ["server", "step", "offered req/s", "achieved req/s", "p99 ms", "errors", "within target"]
