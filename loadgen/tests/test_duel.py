"""`make duel` (issue 74): two servers, or two processes of one, on versus's paired engine. Its verdicts on the rounds
of a recorded sitting (B against A in words, a B answering one request in ten with 503 withheld, processes that
settle on different levels named); on real node processes on loopback, an A/A sitting's mechanics (both started
afresh for each start, ABBA rounds, the records and the comparison kept, nothing left behind); and bad input, one line
and exit 2 before anything is built. Durations are kept short: mechanics are asserted, never speed."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest
from ports import free_port
from test_versus_design import attempt, record, recorded_sides, sides

from harness.basics.machine import port_owner
from harness.basics.paths import REPO
from harness.results.store import RESULTS
from harness.stats import paired
from harness.versus import evidence
from harness.versus.sitting import ratios_by_start

LOADGEN = REPO / "loadgen"
PORTS = {"node": free_port(), "nginx": free_port()}  # the OS's choice; node's second process takes the next free one
NAMES = ("akka", "pekko")


def verdict(base, head, starts, rounds_per_start: int | None = None) -> str:
    by_start = ratios_by_start((base, head), starts, "rps")
    records = {side.role: record(side.server.name) for side in (base, head)}
    proof = evidence.Evidence(
        tuple(evidence.side_evidence(s.role, s.server.name, s.attempts, records[s.role]) for s in (base, head)),
        len(starts),
        0.02,
        evidence.rounds_spread(by_start),
        evidence.starts_spread(by_start),
        rounds_per_start,
    )
    return evidence.verdict_line(paired.grouped_interval(by_start), "rps", proof, NAMES)


def test_the_answer_says_b_against_a_by_name():
    assert verdict(*recorded_sides(head_factor=1.25)).startswith("pekko faster than akka by 2")
    assert verdict(*recorded_sides(head_factor=0.8)).startswith("pekko slower than akka by 2")
    assert verdict(*recorded_sides()).startswith("no difference beyond ±")


def test_a_b_answering_one_request_in_ten_with_503_gets_a_withheld_verdict():
    line = verdict(*recorded_sides(head_factor=1.25, head_errors_every=10))
    assert line.startswith("withheld: head akka@head answered") and "non_2xx" in line and "faster" not in line


def test_processes_that_settle_on_different_levels_are_named_not_averaged_away():
    """B's process reads 15 % above A's in one start and 10 % below in another, each steady within its start."""
    base, head = sides()
    starts, n = [], 0
    for level in (1.0, 1.15, 0.9, 1.05):
        block = []
        for k in range(4):
            n += 1
            wobble = 1 + 0.004 * (-1) ** k
            base.attempts.append(attempt(n, 10_000 * wobble))
            head.attempts.append(attempt(n, 10_000 * level / wobble))
            block.append(n)
        starts.append(block)
    line = verdict(base, head, starts, rounds_per_start=4)
    assert "PROCESSES DIFFER: the starts' means spread ±" in line
    steady = verdict(*recorded_sides(), rounds_per_start=4)
    assert "PROCESSES DIFFER" not in steady


def duel(*args: str, launch: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RUNTIME": "local", "PORTS": " ".join(f"{k}={v}" for k, v in PORTS.items())}
    argv = [*launch, "duel", *args]
    return subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True, timeout=400)


@pytest.mark.integration
def test_an_a_a_duel_of_node_runs_two_processes_in_abba_starts(short_bench):
    if not (REPO / "node" / "node_modules").exists():
        pytest.skip("node is not built here (make build SERVERS=node)")
    before = set(RESULTS.glob("*-duel-node"))
    done = duel(
        "--a", "node", "--b", "node", "--scenarios", "hello", "--budget-s", "70", "--seed", "3", launch=short_bench()
    )
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = set(RESULTS.glob("*-duel-node")) - before
    run = json.loads((run_dir / "results.json").read_text())
    versus = run["conditions"]["versus"]
    assert versus["kind"] == "duel" and versus["seed"] == 3 and versus["same_build"] is True
    assert (versus["builds"]["base"]["name"], versus["builds"]["head"]["name"]) == ("node", "node-twin")
    (result,) = versus["results"]
    starts = result["starts"]
    assert len(starts) >= 2 and [n for s in starts for n in s] == list(range(1, result["rounds"] + 1))
    for name in ("node", "node-twin"):
        assert done.stdout.count(f"starting {name} on port") == len(starts), done.stdout
    leaders = [result["order"][s[0] - 1][0] for s in starts]
    assert all(a != b for a, b in zip(leaders, leaders[1:]))
    answer = result["answer"]["verdict"]
    pattern = r"node-twin (faster|slower|costlier|cheaper|higher p99|lower p99) than node by .*|no difference beyond .*"
    assert re.match(pattern + r"|not resolved: node-twin ÷ node .*", answer), answer
    assert {r["server"] for r in run["records"]} == {"node", "node-twin"}
    page = (run_dir / "versus.md").read_text()  # the sitting's page (a duel sets no goal, as make versus does)
    assert page.startswith("# node: node-twin against node") and "A/A: both builds are the same code" in page
    for port in (PORTS["node"], PORTS["node"] + 1, PORTS["nginx"]):
        assert port_owner("127.0.0.1", port) is None, port


@pytest.mark.integration
@pytest.mark.parametrize(
    "args, said",
    [
        (("--a", "node", "--b", "nosuch"), "B='nosuch': no such server"),
        (("--a", "nosuch", "--b", "node"), "A='nosuch': no such server"),
        (("--a", "node", "--b", "nginx", "--scenarios", "tweets"), "a duel measures both on the same endpoint"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_build(args, said):
    done = duel(*args, "--budget-s", "10", launch=[sys.executable, "-m", "harness"])
    assert done.returncode == 2, done.stdout + done.stderr
    assert said in done.stdout + done.stderr and "building" not in done.stdout and "Traceback" not in done.stderr


def test_the_interval_reads_b_over_a():
    base, head, starts = recorded_sides(head_factor=1.25)
    interval = paired.grouped_interval(ratios_by_start((base, head), starts, "rps"))
    assert interval is not None and math.isclose(interval.ratio, 1.25, rel_tol=0.02)
