"""Compare two runs like benchstat: per (server, scenario, run) the change of the median req/s, server CPU per request
and p99 from A to B, and whether it is significant: only where the two medians' confidence intervals do not overlap;
otherwise a tie, "=" (`compare_metric`, its rule in harness.stats.intervals). The report's ordering rule holds here too
(harness.judging.ranking): a req/s figure limited by the load generator or the upstream is a lower bound, so a change of it is
significant only where the other side's interval lies wholly below that bound, or wholly above it by an unbounded
side's interval; the CPU per request still compares.

  python -m harness compare A B    (A, B: run ids under results/, `latest`, a unique prefix, or paths)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import JustifyMethod
from rich.table import Table

from harness.basics.formats import fmt_ms, interval_text
from harness.basics.messages import console, fail, say
from harness.export.command import UNREPORTABLE, RunNotFound, resolve, unreportable
from harness.judging import flags as flag_rules
from harness.judging import ranking
from harness.report.cells import cost_text, rps_text, summary
from harness.results import readable
from harness.results.records import Record, ResultsError, Run
from harness.stats import intervals as stats


def load(run_dir: Path) -> Run:
    """The run, its flags evaluated with today's rules."""
    run = readable.load(run_dir / "results.json")
    flag_rules.evaluate(run)
    return run


@dataclass(frozen=True)
class Change:
    """How a metric moved from A to B."""

    a: float | None  # medians
    b: float | None
    delta: float | None  # relative change of the medians, (b - a) / a
    significant: bool | None  # None: cannot tell (a side has a single attempt or is missing, or not comparable)
    reason: str
    comparable: bool = True  # False: the two runs' schemas give the figure different meanings (MEANING_CHANGES)

    @property
    def delta_pct(self) -> float | None:
        return None if self.delta is None else self.delta * 100


def compare_metric(a: dict[str, Any] | None, b: dict[str, Any] | None) -> Change:
    """Compare two harness.stats.intervals.describe results (the rule is in that module's docstring)."""
    if not a or not b:
        return Change(a["median"] if a else None, b["median"] if b else None, None, None, "missing on one side")
    if a["median"] == 0:
        return Change(a["median"], b["median"], None, None, "A is zero")
    delta = (b["median"] - a["median"]) / a["median"]
    if a["n"] < 2 or b["n"] < 2:
        return Change(a["median"], b["median"], delta, None, "one attempt: uncertainty unknown")
    apart = not stats.overlap(a, b)
    return Change(
        a["median"],
        b["median"],
        delta,
        apart,
        f"intervals {'apart' if apart else 'overlap'}: {interval_text(a)} and {interval_text(b)}",
    )


# figures whose meaning a results schema changed: (the schema it changed in, tool, summary metric, how)
MEANING_CHANGES = ((4, "ab", "p99", "ab's percentiles were whole ms before schema 4, µs since"),)


def meaning_changed(a: Run, b: Run, tool: str | None, metric: str) -> str | None:
    """How `metric` of `tool` means something else in one run than in the other, or None where it does not."""
    return next(
        (
            why
            for since, t, m, why in MEANING_CHANGES
            if (t, m) == (tool, metric) and (a.schema < since) != (b.schema < since)
        ),
        None,
    )


def not_comparable(change: Change, why: str) -> Change:
    return Change(change.a, change.b, change.delta, None, f"not comparable: {why}", comparable=False)


@dataclass
class ComparedRow:
    server: str
    scenario: str
    run: str  # the records' label
    a: Record | None
    b: Record | None
    rps: Change | None = None
    p99: Change | None = None
    cost: Change | None = None

    @property
    def flags(self) -> list[str]:
        return [f"{side}:{name}" for side, r in (("A", self.a), ("B", self.b)) if r for name in flag_rules.names(r)]


def rows(a: Run, b: Run) -> list[ComparedRow]:
    """Every (server, scenario, run) of either run, in A's order then B's new ones."""

    def index(run: Run) -> dict[tuple[str, str, str], Record]:
        return {(r.server, r.scenario, r.label): r for r in run.records}

    ia, ib = index(a), index(b)
    keys = list(ia) + [k for k in ib if k not in ia]
    out = []
    for key in keys:
        ra, rb = ia.get(key), ib.get(key)
        row = ComparedRow(*key, ra, rb)
        if ra and rb:
            row.rps = compare_metric(summary(ra).rps, summary(rb).rps)
            row.p99 = compare_metric(summary(ra).p99, summary(rb).p99)
            row.cost = compare_metric(summary(ra).cost_us, summary(rb).cost_us)
            changed = meaning_changed(a, b, ra.tool, "p99")
            if changed:
                row.p99 = not_comparable(row.p99, changed)
            if row.rps.significant and (ranking.is_lower_bound(ra) or ranking.is_lower_bound(rb)):
                # a lower bound moved: the change is real only where one side lies wholly above the other's bound
                real = ranking.above_by_rate(rb, ra) or ranking.above_by_rate(ra, rb)
                if not real:
                    row.rps = Change(
                        row.rps.a,
                        row.rps.b,
                        row.rps.delta,
                        False,
                        "a side is a lower bound (the load generator was the limit) that the other's interval reaches",
                    )
        out.append(row)
    return out


def condition_differences(a: Run, b: Run) -> list[str]:
    """What differs between the runs' conditions and could explain a change on its own."""
    ca, cb = a.conditions, b.conditions
    out = []
    for key in ("profile", "runtime", "repeat", "cpus", "git_commit"):
        if ca.get(key) != cb.get(key):
            out.append(f"{key}: {ca.get(key)} → {cb.get(key)}")
    ma, mb = ca.get("machine") or {}, cb.get("machine") or {}
    for key in ("cpu_model", "logical_cpus", "kernel", "hostname"):
        if ma.get(key) != mb.get(key):
            out.append(f"machine {key}: {ma.get(key)} → {mb.get(key)}")
    idle_a, idle_b = ((c.get("cpu_idle") or {}).get("in_force", "machine") for c in (ca, cb))  # none: halting
    if idle_a != idle_b:
        out.append(f"idle CPUs: {idle_a} → {idle_b} (a latency-bound load's rate moves with it: docs/idle-cpus.md)")
    meter_a, meter_b = (_meter(c) for c in (ca, cb))
    if meter_a != meter_b:
        out.append(
            f"CPU speed meter: {meter_a} → {meter_b} (it takes about 0.5 % of each CPU, and the ranking divides by its "
            "reading: docs/cpu-speed.md)"
        )
    for name in sorted(set(ca.get("tools") or {}) | set(cb.get("tools") or {})):
        if (ca.get("tools") or {}).get(name) != (cb.get("tools") or {}).get(name):
            out.append(f"tool {name}: {(ca.get('tools') or {}).get(name)} → {(cb.get('tools') or {}).get(name)}")
    sa, sb = a.servers, b.servers
    for name in sorted(set(sa) & set(sb)):
        if sa[name].get("version") != sb[name].get("version"):
            out.append(f"{name} version: {sa[name].get('version')} → {sb[name].get('version')}")
    return out


def _meter(conditions: dict[str, Any]) -> str:
    """Whether a run read each CPU's speed: "on" or "off" (a run from before the meter: off)."""
    return "on" if str(conditions.get("cpu_meter") or "off").startswith("on") else "off"


def _spread(summary: dict[str, Any] | None) -> str:
    if not summary:
        return ""
    return f" ±{summary['cv']:.0%}" if summary.get("cv") is not None else " (n=1)"


def _verdict(change: Change | None, higher_is_better: bool) -> tuple[str, str]:
    """(text, rich style) of a change."""
    if change is None or change.delta is None:
        return "", ""
    pct = f"{change.delta_pct:+.1f}%"
    if not change.comparable:
        return f"{pct} n/c", "dim"
    if change.significant is None:
        return f"{pct} ?", "dim"
    if not change.significant:
        return f"= ({pct})", "dim"
    better = (change.delta > 0) == higher_is_better
    return pct, "green" if better else "red"


def table(a: Run, b: Run, compared: list[ComparedRow]) -> Table:
    t = Table(title=f"A = {a.run_id}   B = {b.run_id}: measurements in both runs", title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("server", "left"),
        ("scenario", "left"),
        ("run", "left"),
        ("A req/s", "right"),
        ("B req/s", "right"),
        ("Δ req/s", "right"),
        ("A µs/req", "right"),
        ("B µs/req", "right"),
        ("Δ µs/req", "right"),
        ("A p99 ms", "right"),
        ("B p99 ms", "right"),
        ("Δ p99", "right"),
        ("flags", "left"),
    )
    for col, just in columns:
        t.add_column(col, justify=just)
    for row in compared:
        if not row.a or not row.b:
            continue  # listed under the table (only_in)
        sa, sb = summary(row.a), summary(row.b)
        d_rps, s_rps = _verdict(row.rps, higher_is_better=True)
        d_p99, s_p99 = _verdict(row.p99, higher_is_better=False)
        d_cost, s_cost = _verdict(row.cost, higher_is_better=False)
        t.add_row(
            row.server,
            row.scenario,
            row.run,
            rps_text(row.a) + _spread(sa.rps),
            rps_text(row.b) + _spread(sb.rps),
            f"[{s_rps}]{d_rps}[/{s_rps}]" if s_rps else d_rps,
            cost_text(row.a),
            cost_text(row.b),
            f"[{s_cost}]{d_cost}[/{s_cost}]" if s_cost else d_cost,
            fmt_ms((sa.p99 or {}).get("median")),
            fmt_ms((sb.p99 or {}).get("median")),
            f"[{s_p99}]{d_p99}[/{s_p99}]" if s_p99 else d_p99,
            "[yellow]" + " ".join(row.flags) + "[/yellow]" if row.flags else "",
        )
    return t


def only_in(compared: list[ComparedRow]) -> list[str]:
    """Measurements one run has and the other has not, per scenario (benchstat leaves them out of its table)."""
    out = []
    for side in ("A", "B"):
        alone = [row for row in compared if (row.b is None if side == "A" else row.a is None)]
        by_scenario: dict[str, set[str]] = {}
        for row in alone:
            by_scenario.setdefault(row.scenario, set()).add(row.server)
        if alone:
            out.append(
                f"{len(alone)} measurements only in {side}: "
                + "; ".join(f"{scenario} ({', '.join(sorted(servers))})" for scenario, servers in by_scenario.items())
            )
    return out


def schema_notes(a: Run, b: Run, compared: list[ComparedRow]) -> list[str]:
    """One line per figure the two runs' schemas give different meanings, where the table shows it."""
    whys = sorted({row.p99.reason for row in compared if row.p99 and not row.p99.comparable})
    return [
        f"A is results schema {a.schema}, B schema {b.schema}: {why.removeprefix('not comparable: ')}, so "
        "their p99 are not comparable (Δ shown 'n/c', never significant)"
        for why in whys
    ]


def geomean_line(compared: list[ComparedRow]) -> str | None:
    """benchstat's summary: the geometric mean of B/A over the pairs that are clean on both sides."""
    ratios = [row.rps.b / row.rps.a for row in compared if row.rps and row.rps.a and row.rps.b and not row.flags]
    g = stats.geomean_ratio(ratios)
    if g is None:
        return None
    return f"geomean of B/A req/s over {len(ratios)} measurements clean in both runs: {g:.3f} ({(g - 1) * 100:+.1f}%)"


LEGEND = (
    "Δ: change of the medians from A to B (req/s: the attempts' median; µs/req: the server's CPU per request; "
    "p99: the median of the attempts' p99); ≥: a lower bound, the load generator or the upstream was the limit. "
    "= : a tie, the two medians' confidence intervals overlap (order-statistic intervals of the median: the "
    "attempts' min–max with 3 attempts, at 75 %), whatever the size of Δ; ? : a side has a single attempt, so "
    "nothing is known of its uncertainty; n/c: not comparable, the runs' schemas measure it differently; a coloured Δ is significant, the intervals are apart (green better, red "
    "worse). ±N% after a figure is its spread (CV). "
    "flags A:name / B:name: that side's number is flagged and should not be trusted as it stands."
)


def compare(a_dir: Path, b_dir: Path) -> tuple[Table, list[str]]:
    """The comparison table and the notes to print under it."""
    a, b = load(Path(a_dir)), load(Path(b_dir))
    compared = rows(a, b)
    notes = []
    differences = condition_differences(a, b)
    if differences:
        notes.append("the runs' conditions differ: " + "; ".join(differences))
    notes += only_in(compared) + schema_notes(a, b, compared)
    line = geomean_line(compared)
    if line:
        notes.append(line)
    notes.append(LEGEND)
    return table(a, b, compared), notes


def cmd_compare(run_a: str, run_b: str) -> int:
    """`make compare A=... B=...`: prints the table; 2 when a run cannot be found or read."""
    try:
        a_dir, b_dir = resolve(run_a), resolve(run_b)
        t, notes = compare(a_dir, b_dir)
        console.print(t)
    except (RunNotFound, ResultsError, OSError) as exc:
        fail(str(exc))
        return 2
    except UNREPORTABLE as exc:
        fail(unreportable(f"{a_dir / 'results.json'} or {b_dir / 'results.json'}", exc))
        return 2
    for note in notes:
        say(note)
    return 0
