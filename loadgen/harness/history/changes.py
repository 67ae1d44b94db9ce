"""The changes in every series of the timeline (E-divisive means, harness.history.edivisive, on the log of each
figure: a change is a ratio whatever the level), their size and confidence, and their cause: a change that most
servers show at the same run (or that the machine's own probe shows) is the machine's; one a server shows alone is
that server's where a commit between the two runs changed its code (`is_code_path`: not only its notes), with those
commits beside it, and unexplained where none did.

A page tests every series with enough runs, each at 5 %: by chance alone about one in twenty would show a change. The
changes kept are those Benjamini-Hochberg keeps at FALSE_DISCOVERY_RATE over all the series tested (Benjamini, Y. and
Hochberg, Y. (1995), "Controlling the False Discovery Rate", JRSS B 57(1)): of the series shown changed, at most that
share, on average, have none. Written out (eight lines of numpy): scipy and statsmodels, which have it, are not
dependencies of the harness."""

from __future__ import annotations

import math
import statistics
import subprocess
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path, PurePosixPath

import numpy as np

from harness.history import edivisive
from harness.history.timeline import ADJUSTED, MACHINE, Series, is_commit, what_changed

UNEXPLAINED = (
    "unexplained"  # neither the machine's nor a commit to the server's code: noise, or what runs do not record
)
SHARED_SHARE = 0.5  # more than this share of the servers measured across a run changing there at once: the machine's
FALSE_DISCOVERY_RATE = 0.05  # Benjamini-Hochberg's level over every series of a page


@dataclass
class SeriesChange:
    server: str
    scenario: str
    run: str
    metric: str
    at: str  # the run id of the first run after the change
    before: float  # the median of the runs between the previous change (or the start) and this one
    after: float  # the median of the runs from this change to the next (or the end)
    change_percent: float
    confidence: float  # 1 - the permutation test's p-value
    cause: str = "server"  # server (a commit changed its code), machine or unexplained
    previous: str = ""  # the run id of the last run before the change
    commit_range: tuple[str, str] = ("?", "?")  # the commits of the runs before and after the change
    conditions: str = ""
    commits: list[str] = field(default_factory=list)  # those of git log previous..at -- <folder> that changed code
    conditions_changed: list[str] = field(default_factory=list)  # what else differs between the two runs

    def to_dict(self) -> dict[str, object]:
        return {
            "server": self.server,
            "scenario": self.scenario,
            "run": self.run,
            "metric": self.metric,
            "at": self.at,
            "before": round(self.before, 4),
            "after": round(self.after, 4),
            "change_percent": round(self.change_percent, 2),
            "confidence": round(self.confidence, 4),
            "cause": self.cause,
            "previous": self.previous,
            "conditions": self.conditions,
            "commit_range": "..".join(self.commit_range),
            "commits": self.commits,
            "conditions_changed": self.conditions_changed,
        }


@dataclass(frozen=True)
class Discovery:
    """How a page's changes were kept: the series tested and the largest p-value Benjamini-Hochberg kept (0: none)."""

    tested: int
    threshold: float

    def sentence(self) -> str:
        return (
            f"changes kept at a false-discovery rate of {FALSE_DISCOVERY_RATE * 100:g} % over {self.tested} series "
            "tested (Benjamini-Hochberg over each series' change-point p-value: "
            + (f"kept where p ≤ {self.threshold:.2g})" if self.threshold else "none passed)")
        )


def benjamini_hochberg(p_values: list[float], rate: float) -> float:
    """The largest p-value that Benjamini-Hochberg's step-up procedure keeps at `rate` (the largest p_(k), sorted,
    with p_(k) <= k rate / m); every p at or below it is kept. 0.0 when none is."""
    ordered = np.sort(np.asarray(p_values, dtype=float))
    ranks = np.arange(1, len(ordered) + 1)
    passing = np.flatnonzero(ordered <= ranks * rate / len(ordered))
    return float(ordered[passing[-1]]) if len(passing) else 0.0


def permutations_for(tested: int) -> int:
    """Shuffles enough that p can reach half the smallest threshold Benjamini-Hochberg may ask of `tested` series
    (rate / tested): 1 / (R + 1) <= rate / (2 tested)."""
    return max(edivisive.PERMUTATIONS, math.ceil(2 * tested / FALSE_DISCOVERY_RATE) - 1)


def _search(series: Series, most_permutations: int) -> list[edivisive.ChangePoint]:
    """The series' change points at the test's own level, in the order found, on the log of its figures."""
    values = [math.log(p.value) for p in series.points]
    seed = zlib.crc32("|".join(series.key).encode())  # the same series, the same permutations, the same answer
    return edivisive.change_points(values, seed, most_permutations=most_permutations)


def discover(series: list[Series]) -> tuple[list[tuple[Series, list[edivisive.ChangePoint]]], Discovery]:
    """Each series with at least `minimum_runs` runs searched, then Benjamini-Hochberg over their p-values: a series'
    p is its first (most significant) split's, 1 where none passed its own test (above 5 %, which BH at 5 % never
    keeps). A series keeps its change points, in the order found, while p is at or below BH's threshold: the search
    run at that level would have stopped at the first above it."""
    tested = [s for s in series if len(s.points) >= minimum_runs()]
    most = permutations_for(len(tested))
    searched = [(s, _search(s, most)) for s in tested]
    threshold = benjamini_hochberg([found[0].p_value if found else 1.0 for _, found in searched], FALSE_DISCOVERY_RATE)
    kept = [(s, list(takewhile(lambda c: c.p_value <= threshold, found))) for s, found in searched]
    return kept, Discovery(len(tested), threshold)


def series_changes(series: Series, found: list[edivisive.ChangePoint]) -> list[SeriesChange]:
    """The changes of one series at its change points `found`: sizes from the medians between them."""
    found = sorted(found, key=lambda c: c.index)
    cuts = [0, *(c.index for c in found), len(series.points)]
    out = []
    for k, cp in enumerate(found):
        before = statistics.median(p.value for p in series.points[cuts[k] : cp.index])
        after = statistics.median(p.value for p in series.points[cp.index : cuts[k + 2]])
        last, first = series.points[cp.index - 1], series.points[cp.index]
        out.append(
            SeriesChange(
                series.server,
                series.scenario,
                series.run,
                series.metric,
                first.run.run_id,
                before,
                after,
                (after / before - 1) * 100,
                1 - cp.p_value,
                previous=last.run.run_id,
                commit_range=(last.run.commit, first.run.commit),
                conditions=series.conditions,
                conditions_changed=what_changed(last.run, first.run, last.version, first.version),
            )
        )
    return out


def minimum_runs(level: float = edivisive.SIGNIFICANCE) -> int:
    """The fewest runs in which a change can reach p <= `level` at all: both sides at least MIN_SEGMENT long, and few
    enough orderings that p can reach the level (a split of n into a and n - a has C(n, a) of them)."""
    n = 2 * edivisive.MIN_SEGMENT
    while 2 / math.comb(n, n // 2) > level:
        n += 1
    return n


def _steps(series: list[Series]) -> dict[tuple[str, str, str, str, str], dict[str, float]]:
    """(scenario, run, metric, conditions, run id) -> server -> the log ratio of its figure from the run before."""
    out: dict[tuple[str, str, str, str, str], dict[str, float]] = {}
    for s in series:
        for a, b in zip(s.points, s.points[1:]):
            out.setdefault((s.scenario, s.run, s.metric, s.conditions, b.run.run_id), {})[s.server] = math.log(
                b.value / a.value
            )
    return out


def moved_alike(c: SeriesChange, steps: dict[tuple[str, str, str, str, str], dict[str, float]]) -> bool:
    """More than SHARED_SHARE of the other servers measured across that run in the same scenario run (at least two)
    moved the same way there by at least half the change: a step every server took, though too short or noisy a
    series to be found a change in theirs."""
    size = math.log(c.after / c.before)
    others = [
        v
        for server, v in steps.get((c.scenario, c.run, c.metric, c.conditions, c.at), {}).items()
        if server != c.server
    ]
    alike = [v for v in others if v * size > 0 and abs(v) >= abs(size) / 2]
    return len(alike) >= 2 and len(alike) > SHARED_SHARE * len(others)


def attribute(changes: list[SeriesChange], series: list[Series]) -> None:
    """Each change's cause: `machine` where the probe changed at that run (a raw figure's change: one that dividing by
    the probe leaves is not the probe's), where more than SHARED_SHARE of the servers measured on both sides of
    that run (and at least two) show a change of the same metric there, or where they moved alike (`moved_alike`)."""
    steps = _steps([s for s in series if s.server != MACHINE])
    probe_at = {c.at for c in changes if c.server == MACHINE}
    covering: dict[tuple[str, str], set[str]] = {}
    for s in series:
        for later in s.points[1:]:  # measured on both sides of that run
            covering.setdefault((later.run.run_id, s.metric), set()).add(s.server)
    changed: dict[tuple[str, str], set[str]] = {}
    for c in changes:
        changed.setdefault((c.at, c.metric), set()).add(c.server)
    for c in changes:
        servers = covering.get((c.at, c.metric), set()) - {MACHINE}
        shared = changed[(c.at, c.metric)] - {MACHINE}
        probe_moved = c.at in probe_at and not c.metric.endswith(ADJUSTED)  # left after dividing: not the probe's
        found_alike = len(shared) >= 2 and len(shared) > SHARED_SHARE * len(servers)
        if c.server == MACHINE or probe_moved or found_alike or moved_alike(c, steps):
            c.cause = "machine"


def find_changes(series: list[Series], folder_of: Callable[[str], Path | None]) -> tuple[list[SeriesChange], Discovery]:
    """Every series' changes kept at the page's false-discovery rate (`discover`), attributed, newest first; a
    server's own with the commits that touched its folder; and how they were kept."""
    kept, discovery = discover(series)
    changes = [c for s, found in kept for c in series_changes(s, found)]
    attribute(changes, series)
    commits = Commits()
    for c in changes:
        if c.cause != "server":
            continue
        folder = folder_of(c.server)
        touched = commits.touching_code(*c.commit_range, folder) if folder else Touched([], "its folder is not known")
        c.commits = touched.code or ([f"({touched.problem})"] if touched.problem else [])
        if not touched.code:  # no commit changed what runs: not the server's, as far as the runs can tell
            c.cause = UNEXPLAINED
    order = {p.run.run_id: p.run.started_at or p.run.run_id for s in series for p in s.points}
    newest_first = sorted(
        changes, key=lambda c: (str(order.get(c.at, c.at)), c.server, c.scenario, c.run, c.metric), reverse=True
    )
    return newest_first, discovery


NOTE_SUFFIXES = (".md", ".txt", ".rst", ".png", ".svg", ".jpg", ".jpeg", ".gif")
BUILD_TEXT_FILES = ("requirements", "CMakeLists")  # .txt files a build reads: code


def is_code_path(path: str) -> bool:
    """Whether a path changed in a server's folder (as git prints it) changes what is built and run: anything but its
    notes. Notes are Markdown and text (PROFILE.md, README.md, DIFF notes), reStructuredText, images (PNG, SVG, JPEG,
    GIF) and whatever lies under a docs/ folder; a .txt a build reads (requirements*.txt, CMakeLists.txt) is code."""
    name = PurePosixPath(path)
    if name.suffix == ".txt" and name.name.startswith(BUILD_TEXT_FILES):
        return True
    return "docs" not in name.parts[:-1] and name.suffix.lower() not in NOTE_SUFFIXES


@dataclass(frozen=True)
class Touched:
    """The commits between two runs that changed a server's code (`git log --oneline` lines), or why none is known."""

    code: list[str]
    problem: str = ""


class Commits:
    """Per pair of commits and folder, the commits between them that changed code there, each asked of git once (in
    the repository that holds the folder)."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, str, Path], Touched] = {}

    def touching_code(self, a: str, b: str, folder: Path) -> Touched:
        """`git log A..B -- <folder>` with the paths each commit changed there; the commits with a code path among
        them (`is_code_path`): a commit that changed only the server's notes is not one."""
        if "?" in (a, b):
            return Touched([], "a run's commit is not recorded")
        if not (is_commit(a) and is_commit(b)):  # read from files: only a commit reaches git, never an option
            return Touched([], "a run's commit is not a hex commit")
        key = (a, b, folder)
        if a != b and key not in self.known:
            try:
                proc = subprocess.run(
                    ["git", "-C", str(folder), "log", "--format=%x1e%h %s", "--name-only"]
                    + ["--end-of-options", f"{a}..{b}", "--", "."],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=60,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                self.known[key] = Touched([], f"git log {a}..{b} could not run: {exc}")
                return self.known[key]
            if proc.returncode != 0:
                self.known[key] = Touched(
                    [], f"git log {a}..{b} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
                )
            else:
                commits = [chunk.strip("\n").splitlines() for chunk in proc.stdout.split("\x1e")[1:]]
                self.known[key] = Touched([c[0] for c in commits if any(is_code_path(p) for p in c[1:] if p)])
        return self.known.get(key, Touched([]))
