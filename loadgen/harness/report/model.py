"""What every export shows, computed once: records grouped per (scenario, run), ranked, with the nginx ceiling.

Records are grouped by their label (harness.results.records.Record.label): the run label, with the runtime and round where
records have a round (an overhead run measures the same run once per runtime and round).

Ranking: harness.judging.ranking, the one ordering rule (the report's exports, the console table and `make compare` use it):
every record with a figure takes part (a lower bound where the load generator or the upstream was the limit, ordered
by CPU per request where that decides); only failures, errors and a failed contract are listed apart, unranked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.config.environment import DEFAULT_SLO_P99_MS
from harness.config.manifest import discover
from harness.judging import capacity as capacity_rules
from harness.judging import flags as flag_rules
from harness.judging import ranking, round_pairs
from harness.judging.ranking import Standing
from harness.report import compliance
from harness.results.records import Record, Run
from harness.stats import attempt_ranks

MATRIX_MIN_RUNS = 4  # a scenario with this many runs or more (weather) is shown as a req/s-against-concurrency matrix


@dataclass
class Group:
    """The records of one (scenario, run): those with a figure ranked (harness.judging.ranking), the ceiling apart, those
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
        """Whether any of its pairs was ordered by paired rounds (its rounds share the noise: judging/round_pairs.py)."""
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
            f"{attempt_ranks.FALSE_ORDER_RATE:.1%} false orders) between {', '.join(pairs)}: {rule.why}"
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
    capacity: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # {server: {scenario: capacity}}
    scores: dict[str, str] = field(default_factory=dict)  # each probed server's compliance score (compliance.py)

    @property
    def slo_p99_ms(self) -> float:
        return self.run.conditions.get("slo_p99_ms") or DEFAULT_SLO_P99_MS

    def capacities(self, scenario: str) -> list[tuple[str, dict[str, Any]]]:
        """(server, capacity) of a stepped scenario, highest capacity first (none last)."""
        found = [(server, by[scenario]) for server, by in self.capacity.items() if scenario in by]
        return sorted(found, key=lambda sc: -(sc[1]["rps"] or 0))

    def compliance_of(self, server: str) -> str:
        """The server's probe score (compliance.py), "-" where the run did not probe it."""
        return self.scores.get(server, "-")

    def is_ceiling(self, server: str) -> bool:
        return server in self.ceilings

    @property
    def records(self) -> list[Record]:
        return self.run.records

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def conditions(self) -> dict[str, Any]:
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
    model = Model(run, out, colors(names, ceilings), ceilings, scores=scores)
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


def aa_result(model: Model) -> dict[str, Any] | None:
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
