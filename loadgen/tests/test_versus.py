"""`make versus` (issue 33): the paired-ratio interval and its verdict words; the Maven property in spray's and socko's
versions; and, on real node servers on loopback, two builds from two revisions of a temporary clone of this repository
(a commit there makes /hello do more work): the command's mechanics (rounds in random order, records and the
comparison kept, the page written, idle memory recorded), a BASE that does not exist (exit 2) or does not build
(exit 1), and nothing left behind (worktree, servers, ports) after it ends, also after Ctrl-C in the middle of its
rounds or of its build. Durations are kept short: mechanics are asserted, never speed."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.basics.machine import port_owner
from harness.basics.paths import REPO
from harness.config.manifest import SERVERS_DIR_VAR, discover
from harness.config.maven import resolve_properties
from harness.results.store import RESULTS
from harness.stats import paired
from harness.versus.checkout import WORKTREES, Worktree, resolve

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = REPO / "loadgen"
PORTS = {"node": 9510, "nginx": 9520}  # this file's range; the base build lands on the next free port (9511)


# -- the interval and the words ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("df, expected", [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (30, 2.0423)])
def test_t_quantile_matches_the_tables(df, expected):
    assert paired.t_quantile(0.95, df) == pytest.approx(expected, abs=1e-4)


def test_the_interval_is_the_t_interval_of_the_mean_log_ratio():
    ratios = [1.04, 1.06, 1.05, 1.03]
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 3)
    got = paired.ratio_interval(ratios)
    assert got.n == 4
    assert got.ratio == pytest.approx(math.exp(mean))
    assert got.low == pytest.approx(math.exp(mean - 3.18245 * sd / 2), rel=1e-5)
    assert got.high == pytest.approx(math.exp(mean + 3.18245 * sd / 2), rel=1e-5)
    assert got.half_width == pytest.approx(math.exp(3.18245 * sd / 2) - 1, rel=1e-4)
    assert paired.ratio_interval([1.1]) is None


def test_with_several_starts_the_interval_is_taken_over_the_starts_means():
    starts = [[1.10, 1.12, 1.08], [0.95, 0.97], [1.02, 1.00, 1.01, 1.03]]
    means = [sum(math.log(r) for r in s) / len(s) for s in starts]
    mean = sum(means) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in means) / 2)
    got = paired.grouped_interval(starts)
    assert (got.n, got.starts) == (9, 3)
    assert got.ratio == pytest.approx(math.exp(mean))
    assert got.low == pytest.approx(math.exp(mean - 4.30265 * sd / math.sqrt(3)), rel=1e-5)
    assert got.high == pytest.approx(math.exp(mean + 4.30265 * sd / math.sqrt(3)), rel=1e-5)
    # the rounds alone (one pair of processes each start) would claim far less: 9 rounds' t interval is narrower
    assert paired.ratio_interval([r for s in starts for r in s]).half_width < got.half_width / 2
    assert paired.grouped_interval([[], [1.04, 1.06, 1.05, 1.03]]) == paired.ratio_interval([1.04, 1.06, 1.05, 1.03])
    assert paired.grouped_interval([[1.1], []]) is None
    assert paired.verdict(got).endswith("(95 %, 9 rounds in 3 starts)")
    assert paired.verdict(paired.grouped_interval([[1.0, 1.01, 0.99]])).endswith("(95 %, 3 rounds, one start)")


def test_ratios_pair_rounds_and_skip_a_round_one_side_lacks():
    base = {1: 100.0, 2: 200.0, 3: None, 4: 50.0}
    head = {1: 110.0, 2: 180.0, 3: 90.0}
    assert paired.paired_ratios(base, head) == [1.1, 0.9]


def test_the_verdict_in_words():
    faster = paired.RatioInterval(1.041, 1.020, 1.063, 12)
    assert paired.verdict(faster) == "faster by 4.1 % (2.0–6.3 %, 95 %)"
    slower = paired.RatioInterval(0.90, 0.85, 0.95, 8)
    assert paired.verdict(slower) == "slower by 10.0 % (5.0–15.0 %, 95 %)"
    same = paired.RatioInterval(1.002, 0.985, 1.018, 30)
    assert paired.verdict(same) == "no difference beyond ±1.8 % (95 %, 30 rounds, one start)"
    assert paired.verdict(slower, "cost_us") == "cheaper by 10.0 % (5.0–15.0 %, 95 %)"
    assert paired.verdict(faster, "p99") == "higher p99 by 4.1 % (2.0–6.3 %, 95 %)"
    assert (
        paired.verdict(paired.RatioInterval(1.0, 0.3, 3.2, 2))
        == "not resolved: head ÷ base lies within 0.3×–3.2× (95 %, 2 rounds, one start)"
    )
    assert paired.verdict(None).startswith("not enough rounds")
    assert not same.excludes_no_change() and slower.excludes_no_change() and faster.excludes_no_change()


def test_spray_and_socko_versions_have_their_scala_version_resolved():
    servers = discover(REPO)
    for name in ("spray", "socko"):
        printed = f"{name} x, akka y, scala ${{scala-2.11.version}} JRE z"
        assert resolve_properties(printed, servers[name].folder) == f"{name} x, akka y, scala 2.11.12 JRE z"
    assert resolve_properties("scala ${no.such.property}", servers["spray"].folder) == "scala ${no.such.property}"


@pytest.mark.parametrize("name", ["akka", "pekko", "finagle", "play", "spray", "socko"])
def test_every_jvm_server_s_version_names_its_scala_version(name):
    """Its manifest's version command, run in its folder as the Servers table runs it: no empty or unresolved
    property (finagle and play printed "scala " where the property is the parent pom's)."""
    server = discover(REPO)[name]
    printed = subprocess.run(
        ["bash", "-c", server.version], cwd=server.folder, capture_output=True, text=True, timeout=60
    ).stdout
    resolved = resolve_properties(printed, server.folder)
    assert "${" not in resolved and re.search(r"scala 2\.1[13]\.\d+", resolved), resolved


# -- real builds of a temporary clone ----------------------------------------------------------------------------------

# a few tens of µs of computation per /hello, kept (the sink) so that the JIT cannot drop it
SLOWER_HELLO = (
    "    case '/hello':\n"
    "      { let x = 0; for (let i = 0; i < 20000; i++) x += Math.sqrt(i); globalThis.workSink = x; }\n"
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """This repository cloned, a commit on top whose /hello computes a while first, and a side branch `broken` whose
    node build fails; node's packages copied in for the working tree (the base's worktree runs npm ci)."""
    if not (REPO / "node" / "node_modules" / ".bin" / "node").exists():
        pytest.skip("node is not built here (make build SERVERS=node)")
    path = tmp_path_factory.mktemp("versus") / "clone"
    subprocess.run(["git", "clone", "-q", "--shared", str(REPO), str(path)], check=True)
    for args in (("config", "user.email", "test@example.com"), ("config", "user.name", "test")):
        git(path, *args)
    git(path, "checkout", "-q", "-b", "broken")
    manifest = path / "node" / "manifest.toml"
    manifest.write_text(
        re.sub(r"(?m)^build = .*$", 'build = "echo this build is broken >&2; exit 3"', manifest.read_text(), count=1)
    )
    git(path, "commit", "-qam", "node's build broken")
    git(path, "checkout", "-q", "-")
    source = path / "node" / "node-server.js"
    source.write_text(source.read_text().replace("    case '/hello':\n", SLOWER_HELLO, 1))
    git(path, "commit", "-qam", "hello does more work")
    shutil.copytree(REPO / "node" / "node_modules", path / "node" / "node_modules", symlinks=True)
    return path


def harness(clone: Path, *args: str, launch: list[str] | None = None, **popen):
    """The harness's `versus` on node's hello; `launch`: its command line up to the command (default `-m harness`)."""
    env = {
        **os.environ,
        "RUNTIME": "local",
        SERVERS_DIR_VAR: str(clone),
        "PORTS": " ".join(f"{k}={v}" for k, v in PORTS.items()),
    }
    argv = [*(launch or [sys.executable, "-m", "harness"]), "versus", "--server", "node", "--scenarios", "hello", *args]
    if popen:
        return subprocess.Popen(
            argv, cwd=LOADGEN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen
        )
    return subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True, timeout=400)


def assert_nothing_left(clone: Path) -> None:
    assert not [p for p in WORKTREES.glob("*") if p.is_dir()], list(WORKTREES.iterdir())
    assert git(clone, "worktree", "list").count("\n") == 0  # the clone itself only
    for port in (9510, 9511, 9520, 10510, 10511):
        assert port_owner("127.0.0.1", port) is None, port
    strays = [
        p.info
        for p in psutil.process_iter(["pid", "cmdline", "cwd"])
        if str(WORKTREES) in " ".join(p.info["cmdline"] or []) + (p.info["cwd"] or "")
        or str(clone) in (p.info["cwd"] or "")
    ]
    assert not strays


def test_two_revisions_compared_in_rounds_of_random_order(clone, short_bench, monkeypatch):
    before = set(RESULTS.glob("*-versus-node"))  # short_bench: warm-ups of 3 runs, attempts of 1 s: several starts
    monkeypatch.setenv("CPU_METER", "1")  # as `make versus` runs it: each CPU's speed beside every attempt
    done = harness(clone, "--base", "HEAD~1", "--budget-s", "45", "--seed", "7", launch=short_bench())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    (run_dir,) = set(RESULTS.glob("*-versus-node")) - before
    run = json.loads((run_dir / "results.json").read_text())
    versus = run["conditions"]["versus"]
    base, head = versus["builds"]["base"], versus["builds"]["head"]
    assert base["sha"] == git(clone, "rev-parse", "HEAD~1") and head["sha"] is None
    assert (base["name"], head["name"]) == (f"node@{base['sha'][:7]}", "node@worktree")
    (result,) = versus["results"]
    assert result["rounds"] >= 2 and len(result["order"]) == result["rounds"]
    # in starts: both builds started afresh for each (a process keeps its own speed), the rounds numbered across them
    starts = result["starts"]
    assert len(starts) >= 2 and [n for s in starts for n in s] == list(range(1, result["rounds"] + 1))
    for name in ("node@worktree", f"node@{git(clone, 'rev-parse', '--short=7', 'HEAD~1')}"):
        assert done.stdout.count(f"starting {name} on port") == len(starts), done.stdout
    assert result["metrics"]["rps"]["interval"]["starts"] == len(starts)
    assert all(sorted(order) == ["base", "head"] for order in result["order"])
    # ABBA within each start, the leader alternating from start to start
    leaders = [result["order"][s[0] - 1][0] for s in starts]
    assert all(a != b for a, b in zip(leaders, leaders[1:]))
    for s in starts:
        assert [result["order"][n - 1] for n in s[1::2]] == [result["order"][n - 1][::-1] for n in s[::2]][
            : len(s[1::2])
        ]
    assert versus["seed"] == 7
    rps = result["metrics"]["rps"]
    assert len(rps["ratios"]) == result["rounds"] and rps["interval"]["n"] == result["rounds"]
    assert re.fullmatch(r"(faster|slower) by .*|no difference beyond .*|not resolved: .*", rps["verdict"])
    assert result["stopped"].startswith("the planned starts done") and result["rounds_per_start"] % 2 == 0
    records = {r["server"]: r for r in run["records"]}
    assert set(records) == {base["name"], head["name"]}
    assert all(len(r["attempts"]) == result["rounds"] for r in records.values())
    for name in records:
        assert run["servers"][name]["rss_idle_mb"] > 0 and run["servers"][name]["rss_after_run_mb"] > 0
        assert run["servers"][name]["twin_of"] == "node"
    page = (run_dir / "versus.md").read_text()
    assert rps["verdict"] in page and "A/A" in page and "memory idle after start" in page
    assert (run_dir / "versus.html").exists() and (run_dir / "charts" / "versus-ratios.png").exists()
    assert f"req/s: {rps['verdict']}" in " ".join(done.stdout.split())  # long lines are wrapped
    # on the server CPU's speed where both builds were bound on it (node's /hello nearly always is), else as measured
    cost = result["metrics"]["cost_us"]
    if cost["on"] != "as measured":
        assert cost["on"] == "multiplied by the server CPU's speed (CPU_METER=1)", cost
        assert rps["on"] == "divided by the server CPU's speed (CPU_METER=1)", rps
        assert "on CPU µs/req multiplied by the server CPU's speed" in cost["verdict"]
        assert cost["speed_ratio"]["n"] == result["rounds"] and cost["interval_as_measured"]["n"] == result["rounds"]
    else:
        assert rps["on"] == "as measured" and "speed_note" not in rps
    assert all(a["samples"]["server"]["cpu_speed"] > 0 for r in records.values() for a in r["attempts"])
    summary = (run_dir / "summary.md").read_text()  # the Servers table of every run: idle memory after start / run
    assert re.search(r"\| node@worktree \|.*\| \d+ / \d+ MB \|", summary), summary
    assert_nothing_left(clone)


def test_a_base_that_does_not_exist_is_one_line_and_exit_2(clone):
    done = harness(clone, "--base", "no-such-revision")
    assert done.returncode == 2
    assert done.stdout.strip().count("\n") == 0 and "BASE=no-such-revision: no such git revision" in done.stdout
    assert_nothing_left(clone)


def test_a_base_that_does_not_build_is_exit_1(clone):
    done = harness(clone, "--base", "broken")
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("error: building node@") and "failed (exit 3)" in last, done.stdout
    assert "this build is broken" in done.stdout and "Traceback" not in done.stdout + done.stderr
    assert_nothing_left(clone)


def test_a_worktree_a_killed_versus_left_is_removed_by_the_next(clone):
    left = Worktree(clone, resolve(clone, "HEAD~1", "BASE"), "node-base")
    left.__enter__()  # and never left, as after a SIGKILL
    assert left.path.is_dir() and str(left.path) in git(clone, "worktree", "list")
    done = harness(clone, "--base", "broken")
    assert done.returncode == 1, done.stdout
    assert f"removing the worktree a killed `make versus` left: {left.path}" in " ".join(done.stdout.split())
    assert_nothing_left(clone)


@pytest.mark.parametrize("when", ["round 1:", "building node@"])
def test_ctrl_c_leaves_no_worktree_server_or_build_behind(clone, when):
    proc = harness(clone, "--base", "HEAD~1", "--budget-s", "120", start_new_session=True)
    seen, deadline = "", time.monotonic() + 240
    try:
        while when not in seen and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
        assert when in seen, seen
        os.kill(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, seen + out
    assert "Traceback" not in seen + out
    assert_nothing_left(clone)


# -- what is checked before anything is built -------------------------------------------------------------------------

# the harness with every build counted (a line in $BUILDS) and, where $MISSING_TOOL names one, that tool not found
COUNTING_LAUNCH = """
import os, sys
from harness.versus import checkout
from harness.tools import availability
real_build, real_find = checkout.build, availability.find_binary
def counted(*args, **kwargs):
    with open(os.environ["BUILDS"], "a") as out:
        out.write("build\\n")
    return real_build(*args, **kwargs)
checkout.build = counted
availability.find_binary = lambda tool: None if tool.binary == os.environ.get("MISSING_TOOL") else real_find(tool)
from harness import cli
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("case", ["unknown scenario", "port in use", "missing tool"])
def test_bad_input_is_one_line_and_exit_2_before_any_build(clone, tmp_path, monkeypatch, case):
    builds = tmp_path / "builds"
    monkeypatch.setenv("BUILDS", str(builds))
    args = ["--base", "HEAD~1"]
    if case == "missing tool":
        monkeypatch.setenv("MISSING_TOOL", "wrk")
    launch = [sys.executable, "-c", COUNTING_LAUNCH]
    if case == "unknown scenario":
        argv = [*launch, "versus", "--server", "node", "--scenarios", "no-such-scenario", *args]
        env = {
            **os.environ,
            "RUNTIME": "local",
            SERVERS_DIR_VAR: str(clone),
            "PORTS": " ".join(f"{k}={v}" for k, v in PORTS.items()),
        }
        done = subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True, timeout=120)
    else:
        with socket.socket() as holder:
            if case == "port in use":
                holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                holder.bind(("127.0.0.1", PORTS["node"]))
                holder.listen()
            done = harness(clone, *args, launch=launch)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in done.stdout + done.stderr, done.stdout
    assert {"unknown scenario": "no-such-scenario", "port in use": str(PORTS["node"]), "missing tool": "wrk"}[
        case
    ] in errors[0]
    assert not builds.exists(), builds.read_text()  # nothing was built
    assert_nothing_left(clone)
