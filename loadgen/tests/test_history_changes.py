"""make history's changes over a whole page (harness/history/changes.py): q-values by Benjamini-Hochberg over every
test of the page; a change with 5 runs on each side found; a `server` change needs a commit that changed the
server's inputs, not only its notes, tests or comments; a figure whose meaning a results schema changed (ab's p99,
whole ms before schema 4) is two series, never one with a change at the schema."""

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from test_history import described, history, write_run

from harness.history import commits, confirm, history_command
from harness.history.timeline import Selection

# Benjamini and Hochberg (1995), section 4: fifteen p-values of a trial; at 5 % the procedure keeps the four smallest
# (Bonferroni, 0.05 / 15, three)
PAPERS_P_VALUES = [
    0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344,
    0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.0000,
]  # fmt: skip


def test_benjamini_hochberg_keeps_the_four_smallest_of_its_papers_fifteen_p_values():
    q = confirm.q_values(PAPERS_P_VALUES)
    assert sum(v <= 0.05 for v in q) == 4
    assert q[3] == pytest.approx(0.0095 * 15 / 4) and max(confirm.q_values([0.2, 0.5, 0.9])) == 0.9


def run_id(i: int) -> str:
    """write_run's run i."""
    return f"202611{1 + i // 24:02d}-{i % 24:02d}0000-bench"


def rewrite_run(root: Path, i: int, change: Callable[[dict], None]) -> None:
    path = root / run_id(i) / "results.json"
    run = json.loads(path.read_text())
    change(run)
    path.write_text(json.dumps(run))


def write_rps_run(root: Path, i: int, rates: dict[str, float]) -> None:
    """Run i with only req/s (p99 and CPU µs/req, derived from it in write_run, would be the same series again) and
    no probe rate (no adjusted copy): one independent series per server."""
    write_run(root, i, rates, steadiness={})

    def only_rps(run: dict) -> None:
        for record in run["records"]:
            record["summary"] = {"rps": record["summary"]["rps"]}

    rewrite_run(root, i, only_rps)


def test_a_change_with_five_runs_on_each_side_is_found_over_the_page(tmp_path):
    """Node's req/s drops 20 % after run 5 of 10, the others flat (1 % noise): over the page's tests it is kept, at
    its run, the server's own (E-divisive's permutation test over every series could not reach the page's
    threshold below 13 runs)."""
    rng = np.random.default_rng(11)
    for i in range(10):
        rates = {s: 10_000.0 * np.exp(0.01 * rng.standard_normal()) for s in ["akka", "finagle", "node", "pekko"]}
        rates["node"] *= 0.8 if i >= 5 else 1.0
        write_run(tmp_path, i, rates)
    h = history(tmp_path)
    [node] = [c for c in h.changes if c.metric == "rps"]
    assert (node.server, node.kind, node.at) == ("node", "own", run_id(5)) and node.q_value <= 0.05
    assert node.low_percent < -20 < node.high_percent


@pytest.mark.parametrize(
    "path, code",
    [
        ("node/node-server.js", True),
        ("node/package-lock.json", True),
        ("rust/src/main.rs", True),
        ("nginx/static/hello", True),
        ("python/requirements.txt", True),
        ("node/PROFILE.md", False),
        ("node/README.md", False),
        ("akka/DIFF-pekko.md", False),
        ("node/notes.txt", False),
        ("node/flame.svg", False),
        ("node/profile.PNG", False),
        ("node/docs/how-it-runs.js", False),
        ("node/tests/hello.test.js", False),
        ("rust/tests/hello.rs", False),
        ("akka/src/test/scala/RoutesSpec.scala", False),
        ("jvm-contract/java/src/main/java/Env.java", True),
    ],
)
def test_a_code_path_is_anything_in_the_folder_but_its_notes_and_tests(path, code):
    assert commits.is_code_path(path) is code


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def server_repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository with node/: its code and notes, then a commit of notes only (PROFILE.md, README.md, an image, a
    docs/ page), then one that changes its code, then one that changes only its comments; the four commits' ids."""
    repo = tmp_path / "repo"
    (repo / "node" / "docs").mkdir(parents=True)
    git(repo, "init", "-q")
    commits = []
    for message, files in [
        ("node: the server", {"node-server.js": "serve(1)\n", "PROFILE.md": "# node\n"}),
        ("node: notes", {"PROFILE.md": "# node\nfaster\n", "README.md": "r\n", "flame.svg": "<svg/>", "docs/a.js": ""}),
        ("node: a faster parser", {"node-server.js": "serve(2)\n"}),
        ("node: comments", {"node-server.js": "// the server\nserve(2)\n\n"}),
    ]:
        for name, text in files.items():
            (repo / "node" / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", message)
        commits.append(git(repo, "rev-parse", "--short", "HEAD"))
    return repo, commits


@pytest.mark.integration
def test_commits_that_changed_only_a_servers_notes_or_comments_are_not_its_code(server_repo):
    repo, (first, notes, code, comments) = server_repo
    found = commits.Commits()
    assert found.touching_code(first, notes, repo / "node").code == []
    assert found.touching_code(code, comments, repo / "node").code == []
    assert found.touching_code(first, code, repo / "node").code == [f"{code} node: a faster parser"]
    assert found.touching_code(first, "deadbeef", repo / "node").problem.startswith("git log")


@pytest.mark.integration
@pytest.mark.parametrize("after, cause", [("notes", "unexplained"), ("code", "server")])
def test_a_servers_own_change_is_its_only_after_a_commit_to_its_code(tmp_path, server_repo, after, cause):
    """Node's req/s drops 20 % after run 8 of 16, the others flat: the change is node's alone. Between runs at the
    first commit and runs at the notes-only one it is unexplained; at the code commit, the server's, with it."""
    repo, (first, notes, code, _) = server_repo
    rng = np.random.default_rng(11)
    for i in range(16):
        rates = {s: 10_000.0 * np.exp(0.01 * rng.standard_normal()) for s in ["akka", "finagle", "node", "pekko"]}
        rates["node"] *= 0.8 if i >= 8 else 1.0
        write_run(tmp_path / "runs", i, rates, git_commit=first if i < 8 else {"notes": notes, "code": code}[after])
    found = history_command.gather(Selection([str(tmp_path / "runs" / "*")]), lambda name: repo / name).changes
    [node] = [c for c in found if c.server == "node" and c.metric == "rps"]
    assert node.cause == cause and node.kind == "own"
    assert node.commits == ([f"{code} node: a faster parser"] if after == "code" else [])


def test_abs_p99_is_two_series_split_at_the_schema_that_changed_its_meaning(tmp_path):
    """Node measured by ab, wrk for rust: eight runs of results schema 3, where ab's p99 is whole ms (11 ms), then
    eight of schema 5, where it is µs (11.4 ms). One series would show a +4 % change at the schema, which is ab's
    resolution, not node's: node's p99 is two series split there (make compare's rule), the page says so, nothing
    changes; rust's wrk p99, whose meaning no schema changed, stays one series."""
    rng = np.random.default_rng(43)
    for i in range(16):
        write_run(tmp_path, i, {"node": 10_000.0, "rust": 20_000.0})
        p99 = {
            "node": 11.4 * np.exp(0.005 * rng.standard_normal()),
            "rust": 2.5 * np.exp(0.005 * rng.standard_normal()),
        }

        def as_recorded(run: dict, i: int = i, p99: dict[str, float] = p99) -> None:
            run["schema"] = 3 if i < 8 else 5
            for record in run["records"]:
                record["tool"] = "ab" if record["server"] == "node" else "wrk"
                whole_ms = record["tool"] == "ab" and i < 8
                record["summary"]["p99"] = described(
                    round(p99[record["server"]]) if whole_ms else p99[record["server"]]
                )

        rewrite_run(tmp_path, i, as_recorded)
    h = history(tmp_path)
    assert not [c for c in h.changes if c.metric.startswith("p99")], h.changes
    node = [s for s in h.series if s.server == "node" and s.metric == "p99"]
    assert [(s.since, len(s.points)) for s in node] == [("", 8), (run_id(8), 8)]
    assert "whole ms before schema 4" in node[1].why
    assert [len(s.points) for s in h.series if s.server == "rust" and s.metric == "p99"] == [16]
    assert any(
        n.startswith(f"p99 of 1 series split in two at {run_id(8)}") and n.endswith(": node hello c100")
        for n in h.notes
    )
