"""make history on hostile or mistaken input (issue 72): every results.json read through harness/results/readable.py
and the values history uses checked, so that a forged run folder (an option-shaped git_commit, deep nesting, a huge
integer, a zero median, a wrong-typed section, a 600 MB file) is one line naming the file, the rest of the page is
drawn, and nothing is written outside results/history/; a revision from a file reaches git only as a hex commit after
--end-of-options; git missing, or a SINCE not understood, is one line; the page is written atomically; the default
runs are inside the repository."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_history import write_run

from harness.history import commits, history_command, run_cache, timeline
from harness.history.timeline import Selection


def run_id(i: int) -> str:
    return f"202611{1 + i // 24:02d}-{i % 24:02d}0000-bench"


def rewrite(root: Path, i: int, change) -> Path:
    path = root / run_id(i) / "results.json"
    run = json.loads(path.read_text())
    change(run)
    path.write_text(json.dumps(run))
    return path


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` (but results/history/) with its size and modification time."""
    out = {}
    for path in root.rglob("*"):
        if path.is_file() and "history" not in path.relative_to(root).parts[:2]:
            st = path.stat()
            out[str(path)] = (st.st_size, st.st_mtime_ns)
    return out


def forge(root: Path, victim: Path) -> dict[str, Path]:
    """Twelve good runs of four servers, then one forged run folder per finding; the forged ones' results.json."""
    rng = np.random.default_rng(72)
    for i in range(12):
        write_run(root, i, {s: 1000.0 * (k + 1) * np.exp(0.02 * rng.standard_normal()) for k, s in enumerate("abcd")})
    forged = {}

    def option_commit(run: dict) -> None:
        run["conditions"]["git_commit"] = f"--output={victim}"

    def huge_integer(run: dict) -> None:
        run["records"][0]["summary"]["rps"]["median"] = 10**400

    def zero_median(run: dict) -> None:
        for record in run["records"]:
            for described in record["summary"].values():
                described["median"] = 0
                described["ci"] = {**described["ci"], "low": 0, "high": 0}
        for reading in run["conditions"]["steadiness"].values():
            reading["rate"] = {"server": 0, "loadgen": 0}

    def wrong_section(run: dict) -> None:
        run["conditions"]["versus"] = "head"

    def wrong_record(run: dict) -> None:
        run["records"][1]["summary"] = "fast"

    def wrong_interval(run: dict) -> None:
        run["records"][0]["summary"]["rps"]["ci"]["low"] = "low"

    for i, change in enumerate(
        [option_commit, huge_integer, zero_median, wrong_section, wrong_record, wrong_interval], start=12
    ):
        write_run(root, i, {s: 1000.0 for s in "abcd"})
        forged[change.__name__] = rewrite(root, i, change)
    write_run(root, 18, {s: 1000.0 for s in "abcd"})
    deep = root / run_id(18) / "results.json"
    deep.write_text(deep.read_text()[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    forged["deep"] = deep
    big = root / "20261101-190000-bench" / "results.json"
    big.parent.mkdir()
    with big.open("wb") as f:
        f.truncate(600 * 2**20)  # sparse: 600 MB that costs no disk
    forged["big"] = big
    return forged


def test_forged_run_folders_are_one_line_each_and_the_rest_of_the_page_is_drawn(tmp_path, monkeypatch, capsys):
    runs, out, victim = tmp_path / "runs", tmp_path / "results", tmp_path / "victim.txt"
    victim.write_text("mine\n")
    forged = forge(runs, victim)
    write_run(runs, 20, {"a": 1000.0, "$\\foo$": 1000.0, "c": 1000.0})
    rewrite(runs, 20, lambda run: run["records"][0].update(scenario="$\\foo$"))
    monkeypatch.setattr(history_command, "RESULTS", out)
    before = snapshot(tmp_path)
    assert history_command.cmd_history(str(runs / "*"), "", "", [], "text", {}) == 0
    printed = capsys.readouterr()
    lines = (printed.out + printed.err).splitlines()
    for name, path in forged.items():
        naming = [line for line in lines if str(path.parent.name) in line and "left out" in line]
        assert len(naming) == 1, (name, lines)
    assert "Traceback" not in printed.err
    assert "13 runs" in printed.out  # twelve good runs and the one with a scenario named $\foo$
    assert (out / "history" / "index.html").stat().st_size > 10_000  # the charts drawn
    assert "<h2>$\\foo$</h2>" in (out / "history" / "index.html").read_text()  # its chart drawn
    assert snapshot(tmp_path) == before  # nothing written outside results/history/
    assert victim.read_text() == "mine\n"
    assert sorted(p.name for p in (out / "history").iterdir()) == ["index.html", "index.md", "runs.json"]


@pytest.mark.parametrize(
    "text, ok",
    [("c5ae8ce", True), ("0" * 40, True), ("C5AE8CE", True), ("--output=x", False), ("HEAD", False), ("c5ae", False)],
)
def test_a_revision_from_a_file_must_be_a_hex_commit(text, ok):
    assert timeline.is_commit(text) is ok


def test_git_gets_the_revisions_after_end_of_options(monkeypatch, tmp_path):
    seen = []

    def run(argv, **kwargs):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(commits.subprocess, "run", run)
    commits.Commits().touching_code("aaaaaaa", "bbbbbbb", tmp_path)
    [argv] = seen
    assert argv.index("--end-of-options") < argv.index("aaaaaaa..bbbbbbb")
    assert commits.Commits().touching_code("--output=x", "bbbbbbb", tmp_path).problem
    assert len(seen) == 1  # the option-shaped one never reached git


def test_git_missing_is_a_problem_named_not_a_traceback(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    touched = commits.Commits().touching_code("aaaaaaa", "bbbbbbb", tmp_path)
    assert touched.code == [] and "git" in touched.problem


def test_a_since_not_understood_is_said(tmp_path, monkeypatch, capsys):
    write_run(tmp_path / "runs", 0, {"a": 1000.0})
    monkeypatch.setattr(history_command, "RESULTS", tmp_path / "out")
    assert history_command.cmd_history(str(tmp_path / "runs" / "*"), "", "yesterday", [], "text", {}) == 2
    printed = capsys.readouterr().out
    assert "SINCE=yesterday is not understood" in printed and "no run folder" not in printed
    assert history_command.cmd_history(str(tmp_path / "runs" / "*"), "", "2026-11-01", [], "text", {}) == 0


def test_the_page_is_written_atomically(tmp_path, monkeypatch):
    """Each file goes to a temporary name beside it and is renamed over the old one (os.replace): a reader sees the old
    page or the new, never half of one."""
    replaced = []
    real = os.replace
    monkeypatch.setattr(run_cache.os, "replace", lambda a, b: (replaced.append((Path(a), Path(b))), real(a, b)))
    run_cache.write_atomically(tmp_path / "index.md", "new\n")
    [(temporary, final)] = replaced
    assert final == tmp_path / "index.md" and temporary.parent == tmp_path and temporary != final
    assert final.read_text() == "new\n" and list(tmp_path.iterdir()) == [final]


def test_the_default_runs_are_inside_the_repository():
    assert all(not pattern.startswith("..") for pattern in history_command.DEFAULT_RUNS.split())
    assert history_command.DEFAULT_RUNS == "results/*"


def test_a_damaged_run_is_named_by_its_file(tmp_path):
    write_run(tmp_path, 0, {"a": 1000.0})
    write_run(tmp_path, 1, {"a": 1000.0})
    rewrite(tmp_path, 1, lambda run: run["conditions"].update(git_commit="--output=/tmp/x"))
    skipped: list[str] = []
    runs = timeline.read_runs(Selection([str(tmp_path / "*")]), skipped)
    assert [info.run_id for info, _ in runs] == [run_id(0)]
    assert len(skipped) == 1 and str(tmp_path / run_id(1) / "results.json") in skipped[0]


def test_a_run_read_before_is_not_validated_again_unless_its_file_changed(tmp_path, monkeypatch):
    for i in range(3):
        write_run(tmp_path / "runs", i, {"a": 1000.0, "b": 2000.0, "c": 3000.0})
    cache_file = tmp_path / "history" / "runs.json"
    first = run_cache.RunCache(cache_file)
    timeline.read_runs(Selection([str(tmp_path / "runs" / "*")]), [], first)
    first.save()
    validated = []
    real = timeline.readable.load
    monkeypatch.setattr(timeline.readable, "load", lambda path, **kw: (validated.append(path), real(path, **kw))[1])
    rewrite(tmp_path / "runs", 2, lambda run: run["conditions"].update(git_commit="--output=/tmp/x"))
    skipped: list[str] = []
    runs = timeline.read_runs(Selection([str(tmp_path / "runs" / "*")]), skipped, run_cache.RunCache(cache_file))
    assert validated == [tmp_path / "runs" / run_id(2) / "results.json"]  # only the changed one read again
    assert [info.run_id for info, _ in runs] == [run_id(0), run_id(1)] and len(skipped) == 1
