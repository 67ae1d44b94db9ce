"""What the report's first screen shows, for the HTML and Markdown alike: the answer first (the at-a-glance rows:
per scenario and run, the servers that may be first, one line each with its figures and compliance score), then
the method, one paragraph per figure, each under an anchor (`method-<id>`) that the figure it explains links to."""

from __future__ import annotations

from dataclasses import dataclass

from harness.basics.formats import fmt_ms
from harness.judging import ranking
from harness.report.cells import INTERVAL_NOTE, cost_text, latency, rps_text
from harness.report.model import Group, Model, aa_result
from harness.report.run_conditions import machine_note
from harness.results import flag_kinds
from harness.results.records import Record
from harness.stats import attempt_ranks


@dataclass(frozen=True)
class Leader:
    """One of a group's best (best place 1) with its figures as the at-a-glance table shows them."""

    record: Record
    place: str  # its range of places: "1", or "1–7" where it may be lower than first
    of_ceiling: str  # its req/s over the ceiling's ("103%"), "-" without a ceiling
    compliance: str  # its probe score (compliance.py), "-" where the run did not probe it

    @property
    def name(self) -> str:
        """The server with its range of places where it could be lower than first ("socko (1–5)")."""
        return self.record.server + ("" if self.place == "1" else f" ({self.place})")

    @property
    def rate(self) -> str:
        return rps_text(self.record)

    @property
    def cost(self) -> str:
        return cost_text(self.record)

    @property
    def p99(self) -> str:
        return fmt_ms(latency(self.record, "p99"))


@dataclass(frozen=True)
class Glance:
    """One group of the at-a-glance table: its best, by the one ranking rule, and what the reader must know beside."""

    group: Group
    leaders: list[Leader]  # best place 1: one, or several whose places are ranges from 1

    @property
    def scenario(self) -> str:
        return self.group.scenario

    @property
    def run(self) -> str:
        return self.group.run

    @property
    def ranked(self) -> int:
        return len(self.group.ranked)

    @property
    def kept_out(self) -> int:
        return len(self.group.flagged)

    @property
    def notes(self) -> list[tuple[str, str]]:
        """(note, the method paragraph that explains it) for each thing the reader of this row must know."""
        out = []
        if any(ranking.is_lower_bound(leader.record) for leader in self.leaders):
            out.append(("≥: the load generator (or upstream) was the limit", "method-rps"))
        if self.group.by_cost:
            out.append(("ordered by CPU/request where the load generator was the limit", "method-ranking"))
        if self.group.paired:
            out.append(("ordered by paired rounds", "method-ranking"))
        if any(s.by_speed for s in self.group.ranked):
            out.append(("ordered on req/s ÷ each CPU's speed", "method-ranking"))
        if self.group.twins_ordered is not None:
            out.append(("A/A twins ORDERED" if self.group.twins_ordered else "A/A twins tied", "method-aa"))
        return out

    @property
    def note(self) -> str:
        return "; ".join(text for text, _ in self.notes)


def glance(model: Model) -> list[Glance]:
    """The at-a-glance rows of every closed-loop group (stepped scenarios are read by capacity instead)."""
    out = []
    for scenario in model.scenarios:
        if scenario.is_stepped:
            continue
        for group in scenario.groups:
            ceiling = group.ceiling.rps if group.ceiling else None
            leaders = [
                Leader(
                    r,
                    group.rank_label(r),
                    f"{(r.rps or 0.0) / ceiling:.0%}" if ceiling else "-",  # the best have a rate
                    group.compliance.get(r.server, "-"),
                )
                for r in group.leaders()
            ]
            out.append(Glance(group, leaders))
    return out


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


def aa_conditions(model: Model) -> list[tuple[str, str]]:
    """The A/A control as a line of the run's conditions (the matrix folds the twin into its original's row)."""
    text = aa_text(model)
    return [("A/A control", text.removeprefix("A/A control: "))] if text else []


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
        + f" By paired rounds, {attempt_ranks.FALSE_ORDER_RATE:.1%} whatever the rounds."
    )


FIGURES = [
    (
        "method-matrix",
        "Every server, scenario by scenario",
        "A column per scenario run; its best is the highest req/s of its ranked servers (a lower bound counted at its "
        "interval's low end, as the tables show it), each cell that server's figure over it (÷ best in the scenario's "
        "section) and its range of places the ranking's of that run. Bold: the ranking does not place the server below "
        "the column's leader (the best-placed server with the highest figure), so their ranges of places overlap and "
        "it reads as tied, not second. A row's mean is the geometric mean of its ratios, over the columns it has a "
        "figure in (fewer are said); its interval the geometric mean of its cells' interval ends over the same best; "
        f"one server is above another where its low end, less {attempt_ranks.PROCESS_MARGIN * 100:g} % (what two "
        "processes of one server differ by), lies above the other's high end, and its places are the range that "
        "leaves. The ceiling (nginx serving files) is apart and never ranked; an A/A twin is folded into its "
        "original's row.",
    ),
    (
        "method-rps",
        "req/s",
        "The median of the attempts; whiskers and bands are its confidence interval, CV the attempts' "
        "spread (coefficient of variation). ≥ marks a lower bound: the load generator or the upstream was the "
        "limit, so the server may do more.",
    ),
    (
        "method-latency",
        "Latency",
        "Latency percentiles (p50, p99 ms) are those of the median attempt; the spectrum charts and a mix's "
        "endpoints read every request's whole distribution instead.",
    ),
    (
        "method-cpu",
        "CPU",
        "CPU is the share of the CPUs each side was pinned to; µs/req the server's CPU time per request (median of "
        "the attempts, with its interval).",
    ),
    (
        "method-ceiling",
        "Ceiling",
        "The ceiling is nginx serving the same bytes from a static file (the dashed line in the charts); "
        "'of ceiling' is a server's req/s over it.",
    ),
]


def method(model: Model) -> list[tuple[str, str, str]]:
    """(anchor, title, paragraph) of every paragraph of the method, in reading order; the A/A control and the
    machine's steadiness where the run has them."""
    flags = (
        f"Flags explain a figure; only {flag_kinds.kept_out()} keep a record out of the ranking (listed apart under "
        "its measurement, with the reason)."
    )
    out = [*FIGURES, ("method-flags", "Flags", flags), ("method-intervals", "Intervals", INTERVAL_NOTE)]
    out.append(("method-ranking", "Ranks", _sentence(method_note(model).removeprefix("Ranks: "))))
    if aa := aa_text(model):
        out.append(("method-aa", "The A/A control", aa.removeprefix("A/A control: ")))  # begins with a server
    if machine := machine_note(model.conditions):
        out.append(("method-machine", "The machine", _sentence(machine.removeprefix("The machine itself: "))))
    return out


def _sentence(text: str) -> str:
    """`text` begun with a capital, once the label its paragraph's title now gives is cut from its front."""
    return text[:1].upper() + text[1:]
