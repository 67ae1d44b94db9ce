"""A synthetic page generator for make history's tests (issue 73): runs of several servers measured as a bench
measures them, each record the median of its attempts with the harness's own interval (harness.stats.intervals.describe);
shared effects of the day and of each bench that move every server alike, a process effect per server and run, each
attempt's own noise; an A/A twin (node-twin: node's code, a second process); a planted change of one server's own,
a machine's day, a schema change; and a git repository whose commits the runs were measured at: decoys that touch
only notes, tests or comments, and one commit that changes a server's code."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.history import changes, timeline
from harness.history.commits import Scope
from harness.history.timeline import Selection
from harness.results.records import Run
from harness.stats.intervals import describe

SERVERS = ("akka", "finagle", "node", "node-twin", "play", "rust", "express")
LEVELS = {"akka": 9000, "finagle": 11000, "node": 7000, "node-twin": 7000, "play": 8000, "rust": 20000, "express": 5000}
RUNS_A_DAY = 4


@dataclass
class Page:
    """What a page is made of: runs, servers, noise, and what changes where (run indexes from 0)."""

    runs: int = 15
    servers: tuple[str, ...] = SERVERS
    attempts: int = 6
    attempt_noise: float = 0.06  # each attempt's own (log sd)
    process_noise: float = 0.02  # a server's process, run to run
    day_noise: float = 0.05  # shared by every server on one day (RUNS_A_DAY runs)
    bench_noise: float = 0.03  # shared by every server in one run
    # server -> (first run, factor) or (first run, factor, the run it is reverted at)
    planted: dict[str, tuple[int, float] | tuple[int, float, int]] = field(default_factory=dict)
    machine: tuple[int, float] | None = None  # (first run, factor of every server)
    schema_at: int | None = None  # runs from here are schema 5, those before 3 (ab's p99 in whole ms)
    tool: str = "wrk"
    tool_switch: tuple[int, str, float] | None = None  # (first run, another tool, its figures' factor)
    bound: tuple[str, int, float] | None = None  # (server, first run, factor): its req/s a loadgen-saturated bound
    commits: list[str] = field(default_factory=list)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


DECOYS_BEFORE = [
    ("base", {}),
    ("decoy: rust notes", {"rust/PROFILE.md": "# rust\nfaster, maybe\n"}),
    ("decoy: rust comment", {"rust/src/main.rs": "// the server\n// serves hello\nfn main() { serve(1); }\n"}),
    ("decoy: node notes and a test", {"node/README.md": "node\n", "node/tests/hello.test.js": "t(2)\n"}),
]
CODE = ("rust: a slower parser", {"rust/src/main.rs": "// the server\n// serves hello\nfn main() { serve(2); }\n"})
DECOYS_AFTER = [
    (
        "decoy: rust comment again",
        {"rust/src/main.rs": "// the server, slower\n// serves hello\nfn main() { serve(2); }\n"},
    ),
    ("decoy: rust test", {"rust/tests/hello.rs": "#[test] fn t() {}\n"}),
    ("decoy: docs", {"akka/docs/notes.md": "n\n", "akka/flame.svg": "<svg/>"}),
]


def make_repository(repo: Path) -> tuple[list[str], str, list[str]]:
    """A repository with every server's folder: the commits before the code change (decoys), the code change to
    rust/, the decoys after; their ids."""
    for server in SERVERS:
        (repo / server.removesuffix("-twin") / "src").mkdir(parents=True, exist_ok=True)
        (repo / server.removesuffix("-twin") / "src" / "main.rs").write_text("fn main() { serve(1); }\n")
    git(repo, "init", "-q")
    ids = []
    for message, files in [*DECOYS_BEFORE, CODE, *DECOYS_AFTER]:
        for name, text in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", message)
        ids.append(git(repo, "rev-parse", "--short=12", "HEAD"))
    return ids[: len(DECOYS_BEFORE)], ids[len(DECOYS_BEFORE)], ids[len(DECOYS_BEFORE) + 1 :]


def commits_for(runs: int, change_at: int | None, ids: tuple[list[str], str, list[str]]) -> list[str]:
    """Each run's commit: decoys spread over the runs before `change_at`, the code change at it, decoys after; with
    no change, decoys only."""
    before, code, after = ids
    at = runs if change_at is None else change_at
    out = [before[min(len(before) - 1, i * len(before) // at)] for i in range(at)]
    return out + [([code] + after)[min(len(after), i)] for i in range(runs - at)]


def run_dicts(page: Page, rng: np.random.Generator) -> list[dict]:
    """The page's results.json contents, oldest first."""
    days = rng.normal(0, page.day_noise, page.runs // RUNS_A_DAY + 1)
    out = []
    for i in range(page.runs):
        shared = days[i // RUNS_A_DAY] + rng.normal(0, page.bench_noise)
        machine = page.machine[1] if page.machine and i >= page.machine[0] else 1.0
        records = []
        for server in page.servers:
            first, factor, *until = page.planted.get(server.removesuffix("-twin"), (page.runs, 1.0))
            level = LEVELS[server] * machine * (factor if first <= i < (until or [page.runs])[0] else 1.0)
            process = shared + rng.normal(0, page.process_noise)
            rates = level * np.exp(process + rng.normal(0, page.attempt_noise, page.attempts))
            p99 = 2e4 / rates
            if page.schema_at is not None and i < page.schema_at:
                p99 = np.round(p99)
            tool = page.tool
            if page.tool_switch and i >= page.tool_switch[0]:
                tool, rates = page.tool_switch[1], rates * page.tool_switch[2]
            flags = []
            if page.bound and server == page.bound[0] and i >= page.bound[1]:
                rates, flags = rates * page.bound[2], [{"flag": "loadgen-saturated", "reason": "the load generator"}]
            summary = {"rps": describe(list(rates)), "p99": describe(list(p99)), "cost_us": describe(list(4e6 / rates))}
            records.append(
                {"server": server, "scenario": "hello", "run": "c100", "tool": tool, "concurrency": 100}
                | {"attempts": [], "summary": summary, "flags": flags}
            )
        run_id = f"202611{1 + i // 24:02d}-{i % 24:02d}0000-bench"
        conditions = {
            "started_at": f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00+0000",
            "runtime": "local",
            "profile": "quick",
            "cpus": {"server": [0], "loadgen": [1]},
            "git_commit": page.commits[i] if page.commits else f"{i:07x}",
            "repeat": page.attempts,
            "machine": {"hostname": "vm", "cpu_model": "AMD EPYC", "logical_cpus": 2, "kernel": "6.18"},
        }
        schema = 5 if page.schema_at is None or i >= page.schema_at else 3
        out.append({"schema": schema, "run_id": run_id, "conditions": conditions, "servers": {}, "records": records})
    return out


def scope_of(repo: Path):
    return lambda name: Scope(repo, (name.removesuffix("-twin"),))


def analyse(page: Page, seed: int, repo: Path | None = None) -> changes.Found:
    """The page generated with `seed`, read as make history reads runs (in memory), its changes found."""
    runs = []
    for d in run_dicts(page, np.random.default_rng(seed)):
        run = Run.from_dict(d, d["run_id"])
        runs.append((timeline.run_info(run), run))
    series = timeline.build_series(runs, Selection([]))
    return changes.find_changes(series, scope_of(repo) if repo else (lambda name: None))


def run_index(run_id: str) -> int:
    """The run index of run_dicts' run id."""
    return (int(run_id[6:8]) - 1) * 24 + int(run_id[9:11])
