"""The first screen's answer for every server (issue 76): one matrix of servers × scenario runs, each cell the server's
figure over its column's best, with its range of places where it shares one, built once for every export (the HTML
page, summary.md, the terminal).

- A column per closed-loop scenario run (an open-model scenario is read by capacity, in its section); its best is the
  highest figure of its ranked records (a lower bound's figure is its interval's low end, as every table shows it).
- A cell: figure ÷ best and the group's own range of places (Group.rank_label), `≥` for a lower bound, ⚑ for a flag
  that explains the figure, the reason for a record kept out; `tied` where the ranking does not place it below the
  column's leader (its range of places overlaps the leader's): it reads as tied for first, not second.
- A row per server, in the order of the geometric mean of its ratios; the mean's places are the range its interval
  allows (the geometric mean of each cell's interval ends over ÷ best, one server above another where its low end,
  less the process margin, lies above the other's high end). The ceiling (nginx) is apart and unranked; the A/A twin
  is folded into its original's row, its result said beside the matrix (first_screen.aa_text)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.judging import ranking
from harness.report.cells import figure, flag_names
from harness.report.first_screen import aa_text
from harness.report.model import Group, Model
from harness.results import flag_kinds as kinds
from harness.results.records import Record
from harness.stats import attempt_ranks
from harness.stats import intervals as stats

LOWER_BOUND_FLAGS = set(kinds.LOWER_BOUND)  # said by ≥, not by ⚑


def section_anchor(model: Model, group: Group) -> str:
    """Where a group's measurement is shown: its scenario's section, or the group's own heading in a scenario of a
    few runs each under its heading."""
    scenario = next(s for s in model.scenarios if s.name == group.scenario)
    return scenario.name if scenario.is_matrix or len(scenario.groups) == 1 else group.key


@dataclass(frozen=True)
class Column:
    group: Group
    anchor: str  # the id of the section that shows the group
    best: float | None  # the highest figure of its ranked records

    @property
    def scenario(self) -> str:
        return self.group.scenario

    @property
    def run(self) -> str:
        return self.group.run

    @property
    def title(self) -> str:
        return f"{self.scenario} {self.run}"


@dataclass(frozen=True)
class Cell:
    record: Record | None  # None: the server was not measured in this column
    ratio: float | None  # figure ÷ the column's best; None where it has no figure or is kept out
    place: str = ""  # the group's range of places ("3–5"), "" where unranked
    tied: bool = False  # not placed below the column's leader: reads as tied for first
    lower_bound: bool = False
    flags: tuple[str, ...] = ()  # the flags that explain its figure (≥'s own left to ≥)
    kept_out: str = ""  # the flags that keep it out of the ranking
    interval: tuple[float, float] | None = None  # its figure's interval ÷ the column's best
    best: float | None = None  # the column's best

    @property
    def shared(self) -> bool:
        """Whether its place is a range (it shares it with others)."""
        return "–" in self.place

    @property
    def text(self) -> str:
        """ "0.62 · 3–5", "≥ 0.85", "1.00", "out: errors", or "" where not measured."""
        if self.kept_out:
            return f"out: {self.kept_out}"
        if self.ratio is None:
            return ""
        text = ratio_text(self.record, self.best) if self.record else ""
        return text + (f" · {self.place}" if self.shared else "")

    @property
    def why(self) -> str:
        """What a cell's mark stands for, every flag with its reason (a hover, a footnote)."""
        if self.record is None:
            return "not measured in this run"
        reasons = "; ".join(f"{f.name}: {f.reason}" for f in self.record.flags)
        head = "kept out of the ranking" if self.kept_out else f"place {self.place}" if self.place else "unranked"
        return head + (f"; {reasons}" if reasons else "")


@dataclass(frozen=True)
class ServerRow:
    server: str
    cells: list[Cell]
    mean: float | None  # the geometric mean of its ratios
    interval: tuple[float, float] | None  # the geometric mean of its cells' interval ends
    counted: int  # the columns its mean is over
    place: str = ""  # the mean's range of places among the ranked rows; "" for the ceiling
    compliance: str = "-"  # its probe score (compliance.score_text)
    twin: str | None = None  # its A/A twin, folded into this row
    ceiling: bool = False

    def mean_text(self, complete: int) -> str:
        """ "0.62 · 2–4", with "(5 of 9)" where it is over fewer columns than the matrix has; "" for the ceiling
        (its columns are not every server's), "-" where it has no ratio."""
        if self.ceiling:
            return ""
        if self.mean is None:
            return "-"
        text = f"{self.mean:.2f}" + (f" · {self.place}" if "–" in self.place else "")
        return text + (f" ({self.counted} of {complete})" if self.counted < complete else "")


@dataclass(frozen=True)
class Overview:
    columns: list[Column]
    rows: list[ServerRow]  # ranked servers, best mean first
    ceilings: list[ServerRow]  # apart, unranked
    aa: str | None  # the A/A control's result over the run
    probed: bool  # whether the run probed its servers (the compliance column)
    stepped: list[str] = field(default_factory=list)  # open-model scenarios: read by capacity, in their sections

    @property
    def stepped_note(self) -> str:
        if not self.stepped:
            return ""
        return f"Not in the matrix: {', '.join(self.stepped)}, open-model steps read by capacity (in its section)."

    @property
    def complete(self) -> int:
        """The columns a full row has its mean over."""
        return len(self.columns)


def best_of(group: Group) -> float | None:
    """The highest figure of the group's ranked records: what its ratios are over."""
    figures = [f for s in group.ranked if (f := figure(s.record)) is not None]
    return max(figures) if figures else None


def ratio_of(record: Record, best: float | None) -> float | None:
    shown = figure(record)
    return shown / best if shown is not None and best and record.ranked else None


def ratio_text(record: Record, best: float | None) -> str:
    """ "0.62", "≥ 0.85" for a lower bound, "-" where there is none (kept out, no best): the matrix's cell's ratio."""
    ratio = ratio_of(record, best)
    return "-" if ratio is None else ("≥ " if ranking.is_lower_bound(record) else "") + f"{ratio:.2f}"


def _column(model: Model, group: Group) -> Column:
    return Column(group, section_anchor(model, group), best_of(group))


def _not_below(group: Group) -> set[int]:
    """The ids of the group's ranked records the ranking does not place below its leader (the best place-1 record
    by figure): tied with it for first."""
    firsts = [s.record for s in group.ranked if s.rank == 1]
    if not firsts:
        return set()
    leader = max(firsts, key=lambda r: figure(r) or 0.0)
    records = [s.record for s in group.ranked]
    above = ranking.ancestors(records)
    at = records.index(leader)
    return {id(r) for i, r in enumerate(records) if at not in above[i]}


def cell_of(column: Column, record: Record | None, tied: set[int]) -> Cell:
    """One server's cell in one column."""
    if record is None:
        return Cell(None, None)
    if not record.ranked:
        kept = [f.name for f in record.flags if f.name in kinds.EXCLUDING] or ["unranked"]
        return Cell(record, None, kept_out=", ".join(kept))
    best = column.best
    ratio = ratio_of(record, best)
    found = stats.interval(record.summary.rps if record.summary else None)
    interval = (found[0] / best, found[1] / best) if found and best else None
    return Cell(
        record,
        ratio,
        place=column.group.rank_label(record),
        tied=id(record) in tied,
        lower_bound=ranking.is_lower_bound(record),
        flags=tuple(n for n in flag_names(record) if n not in LOWER_BOUND_FLAGS),
        interval=interval,
        best=best,
    )


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(max(v, 1e-9)) for v in values) / len(values))


def server_row(model: Model, server: str, cells: list[Cell], twin: str | None = None) -> ServerRow:
    ratios = [c.ratio for c in cells if c.ratio is not None]
    spans = [c.interval for c in cells if c.interval is not None]
    return ServerRow(
        server,
        cells,
        _geomean(ratios) if ratios else None,
        (_geomean([s[0] for s in spans]), _geomean([s[1] for s in spans])) if spans else None,
        len(ratios),
        compliance=model.compliance_of(server),
        twin=twin,
        ceiling=model.is_ceiling(server),
    )


def places(rows: list[ServerRow]) -> list[ServerRow]:
    """The rows with their mean's range of places, best mean first (rows without a mean last, unplaced)."""
    margin = 1 + attempt_ranks.PROCESS_MARGIN
    spans = [r.interval for r in rows if r.interval is not None]
    out = []
    for row in rows:
        if row.interval is None:
            out.append(row)
            continue
        low, high = row.interval
        above = sum(1 for s in spans if s[0] > high * margin)
        below = sum(1 for s in spans if low > s[1] * margin)
        best, worst = 1 + above, len(spans) - below
        out.append(_with_place(row, f"{best}–{worst}" if worst > best else str(best)))
    return sorted(out, key=lambda r: (r.mean is None, -(r.mean or 0.0), r.server))


def _with_place(row: ServerRow, place: str) -> ServerRow:
    return ServerRow(row.server, row.cells, row.mean, row.interval, row.counted, place, row.compliance, row.twin)


def build(model: Model) -> Overview:
    """The matrix of `model`'s closed-loop groups."""
    groups = [g for s in model.scenarios if not s.is_stepped for g in s.groups]
    columns = [_column(model, g) for g in groups]
    tied = [_not_below(g) for g in groups]
    servers = [s for s in dict.fromkeys(r.server for g in groups for r in g.records)]
    twins = {model.run.twin_of(s): s for s in servers if model.run.twin_of(s) in servers}
    ranked: list[ServerRow] = []
    ceilings: list[ServerRow] = []
    for server in servers:
        if server in twins.values():
            continue  # folded into its original's row
        cells = [
            cell_of(c, next((r for r in c.group.records if r.server == server), None), t) for c, t in zip(columns, tied)
        ]
        row = server_row(model, server, cells, twins.get(server))
        (ceilings if row.ceiling else ranked).append(row)
    stepped = [s.name for s in model.scenarios if s.is_stepped]
    return Overview(columns, places(ranked), ceilings, aa_text(model), bool(model.run.compliance), stepped)


def shade(ratio: float | None) -> float:
    """How strongly a cell is shaded, 0–1, by its ratio (a ceiling's above 1 as 1)."""
    return 0.0 if ratio is None else max(0.0, min(ratio, 1.0))


def twins_note(overview: Overview) -> str:
    """Which rows hold an A/A twin, and what the control found."""
    folded = [(r.twin, r.server) for r in overview.rows if r.twin]
    if not folded:
        return ""
    names = ", ".join(
        f"{twin} (the same {server} under a second name) is folded into {server}'s row" for twin, server in folded
    )
    return f"{names}. {overview.aa or ''}".strip()


LEGEND = (
    "Each cell is the server's req/s over its column's best (1.00), with its range of places where it shares one "
    "(0.62 · 3–5: third to fifth); bold where the ranking does not place it below the column's "
    "leader, so it reads as tied for first; ≥ a lower bound (the load generator or the upstream was the limit); ⚑ a "
    "flag that explains the figure; out: kept out of the ranking, with the flag that keeps it out. Rows go by the "
    "geometric mean of the server's ratios, with the range of places its interval allows."
)
