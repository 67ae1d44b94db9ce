"""`make twin` (issue 48): a twin's twin.toml read and refused line by line, the rounds' statistics on known numbers,
and a real twin run on loopback (the tests' contract responder as ours and as the twin, very short rounds): both
started, checked, alternated, stopped, and twin.json written in its shape, its p99 figures those of the tools' own
output."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness.basics import cpu_speed
from harness.basics.cpus import CpuPlan
from harness.basics.machine import port_owner
from harness.cli.subcommands import twin_inputs
from harness.config.manifest import ManifestError, Server, discover
from harness.config.manifest import twin as manifest_twin
from harness.tools import TOOLS
from harness.tools.availability import PreflightError
from harness.versus import twins
from harness.versus.twin_table import (
    TwinError,
    cost_lines,
    cost_summary,
    load_twin,
    markdown,
    ms_text,
    p99_summary,
    summary,
)
from harness.versus.twin_warmup import TwinOptions, TwinSide, rotated

RESPONDER = Path(__file__).parent / "responders" / "contract_server.py"
INTEGRATION_LOCK = Path("/tmp/harness-integration.lock")
ROUTES = '["id", "hello", "backend", "tweets", "factorial", "fibonacci"]'
GOOD = """
ours = "node"
entry = "TechEmpower frameworks/JavaScript/nodejs"
run = ["node", "app.js"]
port = 9505
env = { NODE_ENV = "production" }
warmup_connections = 0
[routes]
"/plaintext" = "/hello"
"/json" = "/v1/tweets"
"""


def twin_folder(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "nodejs"
    folder.mkdir(exist_ok=True)
    (folder / "twin.toml").write_text(text)
    return folder


def test_a_twin_toml_is_read_with_its_routes_in_order(tmp_path):
    twin = load_twin(twin_folder(tmp_path, GOOD))
    assert (twin.ours, twin.run, twin.port, twin.name) == ("node", ("node", "app.js"), 9505, "nodejs")
    assert twin.routes == (("/plaintext", "/hello"), ("/json", "/v1/tweets"))
    assert twin.env == {"NODE_ENV": "production"} and twin.warmup_connections == 0
    assert load_twin(twin_folder(tmp_path, GOOD) / "twin.toml") == twin  # the file itself names the same twin


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.replace('ours = "node"\n', ""), "`ours` must be our server's name"),
        (lambda t: t.replace('run = ["node", "app.js"]', "run = []"), "`run` must be a non-empty list"),
        (lambda t: t.replace('run = ["node", "app.js"]', 'run = "node app.js"'), "`run` must be a non-empty list"),
        (lambda t: t.replace("port = 9505", "port = 70000"), r"`port` must be a port number \(1-65535\)"),
        (lambda t: t.replace("port = 9505", 'port = "9505"'), "`port` must be a port number"),
        (lambda t: t.replace('NODE_ENV = "production"', "NODE_ENV = 1"), "`env` must be a table of strings"),
        (lambda t: t.replace("warmup_connections = 0", "warmup_connections = -5"), "`warmup_connections` must be"),
        (lambda t: t.split("[routes]")[0] + "[routes]\n", "`\\[routes\\]` must be a table of at least one route"),
        (lambda t: t.replace('"/json" = "/v1/tweets"', '"json" = "/v1/tweets"'), "`\\[routes\\] 'json'` must be"),
        (lambda t: t.replace('"/json" = "/v1/tweets"', '"/json" = 3'), "`\\[routes\\] '/json'` must be"),
        (lambda t: t + "port = [", "not valid TOML"),
    ],
)
def test_a_bad_twin_toml_is_refused_in_one_line_naming_its_field(tmp_path, change, message):
    with pytest.raises(TwinError, match=message) as caught:
        load_twin(twin_folder(tmp_path, change(GOOD)))
    assert str(twin_folder(tmp_path, GOOD) / "twin.toml") in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_folder_without_twin_toml_is_refused(tmp_path):
    with pytest.raises(TwinError, match=f"no twin.toml in {tmp_path}"):
        load_twin(tmp_path)


def test_an_unknown_server_a_twin_of_another_and_a_missing_tool_are_refused_before_the_lock(tmp_path, monkeypatch):
    servers = discover()
    args = argparse.Namespace(server="nope", twin=str(twin_folder(tmp_path, GOOD)), rounds="", close_tool="ab")
    with pytest.raises(ManifestError, match="unknown server 'nope': one of .*node"):
        twin_inputs(args, servers)
    args.server = "express"
    with pytest.raises(TwinError, match="is the twin of 'node', not of 'express'"):
        twin_inputs(args, servers)
    args.server, args.close_tool = "node", "oha"
    with pytest.raises(TwinError, match="CLOSE_TOOL is ab or wrk \\(connection per request's tool\\), not 'oha'"):
        twin_inputs(args, servers)
    args.close_tool = "ab"
    monkeypatch.setenv("PATH", str(tmp_path))  # neither wrk nor ab found
    with pytest.raises(PreflightError, match="load tool\\(s\\) not installed: ab, wrk"):
        twin_inputs(args, servers)
    with pytest.raises(TwinError, match="is the twin of 'node', not of 'express'"):  # run_twin itself checks too
        twins.run_twin(
            servers["express"],
            load_twin(twin_folder(tmp_path, GOOD)),
            CpuPlan((0,), (1,), (1,)),
            TwinOptions(),
            tmp_path,
        )


def test_the_rounds_ratios_median_interval_and_count_below_one_on_known_numbers():
    ours = [90.0, 110.0, 95.0, 100.0, 80.0, 120.0, 99.0]
    out = summary(ours, [100.0] * 7)
    assert out["ratios"] == [0.9, 1.1, 0.95, 1.0, 0.8, 1.2, 0.99]
    assert out["median_ratio"] == 0.99
    assert out["below_1"] == 4  # 1.0 itself is not below
    # 7 rounds: [x_(2), x_(6)] covers the median 87.5 % of the time, short of 95 %: min-max at 1 - 2/128
    assert out["interval"] == {"low": 0.8, "high": 1.2, "level": 0.984375, "method": "order-statistic", "k": 1}
    assert (out["ours_median_rps"], out["theirs_median_rps"], out["rounds"]) == (99.0, 100.0, 7)
    ten = summary([float(x) for x in range(91, 101)], [100.0] * 10)  # 10 rounds: [x_(2), x_(9)] at 97.9 %
    assert (ten["interval"]["low"], ten["interval"]["high"], ten["interval"]["k"]) == (0.92, 0.99, 2)
    assert ten["median_ratio"] == 0.955 and ten["below_1"] == 9
    one = summary([2.0], [3.0])  # the median and its interval read off the same rounded ratio, printed alike
    assert one["ratios"] == [0.6667] and one["median_ratio"] == one["interval"]["low"] == one["interval"]["high"]
    with pytest.raises(ValueError, match="rounds differ"):
        summary([1.0], [1.0, 2.0])


def test_the_rounds_p99_ratios_median_interval_and_count_above_one_on_known_numbers():
    out = p99_summary([1.2, 0.9, 2.0, 1.0, 3.3, 1.1, 0.5], [1.0] * 7)
    assert out["ratios"] == [1.2, 0.9, 2.0, 1.0, 3.3, 1.1, 0.5]
    assert out["median_ratio"] == 1.1 and out["above_1"] == 4  # 1.0 itself is not above: not slower
    assert out["interval"] == {"low": 0.5, "high": 3.3, "level": 0.984375, "method": "order-statistic", "k": 1}
    assert (out["rounds"], out["ours_median_ms"], out["theirs_median_ms"]) == (7, 1.1, 1.0)
    assert (out["ours_ms"], out["theirs_ms"]) == ([1.2, 0.9, 2.0, 1.0, 3.3, 1.1, 0.5], [1.0] * 7)
    with pytest.raises(ValueError, match="rounds differ"):
        p99_summary([1.0], [1.0, 2.0])


def test_a_round_without_a_p99_on_either_side_has_no_ratio_and_is_left_out_not_counted_as_zero():
    # round 1: ours gave none; round 2: theirs gave 0 (ab's whole-ms table of a fast p99); rounds 0 and 3 have ratios
    out = p99_summary([3.0, None, 2.0, 1.0], [2.0, 1.0, 0.0, 4.0])
    assert out["ratios"] == [1.5, None, None, 0.25]
    assert (out["rounds"], out["median_ratio"], out["above_1"]) == (2, 0.875, 1)
    assert (out["interval"]["low"], out["interval"]["high"]) == (0.25, 1.5)
    assert (out["ours_median_ms"], out["theirs_median_ms"]) == (2.0, 3.0)  # over the same two rounds
    none = p99_summary([None, None], [1.0, None])
    assert none["ratios"] == [None, None] and none["rounds"] == 0
    assert none["median_ratio"] is none["interval"] is none["above_1"] is none["ours_median_ms"] is None
    assert none["theirs_median_ms"] is None


def test_the_sides_order_rotates_so_each_goes_first_in_turn_two_sides_alternating():
    ours, theirs, again = (TwinSide(label, 0, 0, ("/",), 0) for label in ("ours", "theirs", "again"))
    assert [[s.label for s in rotated([ours, theirs], k)][0] for k in range(4)] == ["ours", "theirs", "ours", "theirs"]
    assert [[s.label for s in rotated([ours, theirs, again], k)] for k in range(4)] == [
        ["ours", "theirs", "again"],
        ["theirs", "again", "ours"],
        ["again", "ours", "theirs"],
        ["ours", "theirs", "again"],
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def integration_lock():
    with INTEGRATION_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the machine's other real-server tests wait their turn, as this one does
        yield


def loopback_pair(tmp_path: Path) -> tuple[Server, Path]:
    """The contract responder as our server `probe` and, on another port, as the twin (its folder's twin.toml)."""
    ours_port, twin_port = free_port(), free_port()
    servers = tmp_path / "servers" / "probe"
    servers.mkdir(parents=True)
    (servers / "manifest.toml").write_text(
        f'[[server]]\nname = "probe"\nport = {ours_port}\nroutes = {ROUTES}\nstartup_timeout_s = 30\n'
        f'run = ["{sys.executable}", "{RESPONDER}", "{{port}}", "probe"]\n'
    )
    folder = twin_folder(
        tmp_path,
        f'ours = "probe"\nrun = ["{sys.executable}", "{RESPONDER}", "{twin_port}", "te"]\nport = {twin_port}\n'
        f'warmup_connections = 50\n[routes]\n"/hello" = "/hello"\n"/v1/tweets" = "/v1/tweets"\n',
    )
    return discover(tmp_path / "servers")["probe"], folder


@pytest.mark.parametrize("close_tool", ["ab", "wrk"])
def test_a_real_twin_run_rotates_its_sides_writes_twin_json_and_leaves_nothing_running(
    integration_lock, meter_on, tmp_path, close_tool
):
    server, folder = loopback_pair(tmp_path)
    twin = load_twin(folder)
    options = TwinOptions(
        rounds=2, attempt_s=1, warmup_s=1, concurrency=4, startup_timeout_s=30, warmup_max_s=1, close_tool=close_tool
    )
    out = twins.run_twin(server, twin, CpuPlan((0,), (1,), (1,)), options, root=tmp_path / "results")

    assert out.name.endswith("-twin-probe") and (out / "twin.md").is_file() and (out / "twin.log").is_file()
    result = json.loads((out / "twin.json").read_text())
    assert (result["ours"], result["twin"], result["rounds"], result["cpus"]) == (
        "probe", "nodejs", 2, {"server": "0", "loadgen": "1"}
    )  # fmt: skip
    assert [(p["ours_path"], p["theirs_path"], p["pattern"], p["tool"]) for p in result["pairs"]] == [
        ("/hello", "/hello", "keep-alive", "wrk"),
        ("/hello", "/hello", "connection-per-request", close_tool),
        ("/v1/tweets", "/v1/tweets", "keep-alive", "wrk"),
        ("/v1/tweets", "/v1/tweets", "connection-per-request", close_tool),
    ]
    assert all(a["errors"] == 0 for a in result["attempts"])  # wrk closing: every answer said it closes
    for i, pair in enumerate(result["pairs"]):
        assert len(pair["ratios"]) == pair["rounds"] == 2 and 0 <= pair["below_1"] <= 2
        assert all(r > 0 for r in pair["ours_rps"] + pair["theirs_rps"])
        assert pair["ratios"] == [round(o / t, 4) for o, t in zip(pair["ours_rps"], pair["theirs_rps"])]
        # the A/A: ours ÷ ours again, round by round, from the attempts of the second process
        mine = [a for a in result["attempts"] if (a["pair"], a["pattern"]) == (i // 2, pair["pattern"])]
        again = [a["rps"] for a in mine if a["side"] == "again"]
        assert pair["again"]["ratios"] == [round(o / a, 4) for o, a in zip(pair["ours_rps"], again)]
        assert pair["again"]["rounds"] == 2 and pair["again"]["again_median_rps"] == round(sum(again) / 2, 1)
    assert_p99_from_the_tools_output(result, out, close_tool)
    assert_costs_read_and_summarised(result, out)
    assert_speeds_read_and_divided(result, out)
    sides = [(a["round"], a["pair"], a["pattern"], a["side"]) for a in result["attempts"]]
    assert len(sides) == 2 * 2 * 2 * 3
    assert sides[:3] == [(0, 0, "keep-alive", s) for s in ("ours", "theirs", "again")]  # round 0: ours first
    assert sides[12:15] == [(1, 0, "keep-alive", s) for s in ("theirs", "again", "ours")]  # round 1: rotated by one
    assert_climbed_alike(result, out, (server.warmup_connections, twin.warmup_connections), close_tool)
    assert result["steadiness"] == {"before": None, "after": None}  # no probe asked for
    # ours was checked against the contract in a process of its own, stopped before the measured one started; the A/A
    # is a third process
    pids = result["ours_pids"]
    assert len({pids["checked"], pids["measured"], pids["again"]}) == 3
    assert not any(psutil.pid_exists(pid) for pid in pids.values())
    table = (out / "twin.md").read_text()
    closing = "ab" if close_tool == "ab" else "wrk, `Connection: close`"
    assert f"| /hello ÷ /hello | connection-per-request ({closing}) |" in table
    assert (
        "| /hello ÷ /hello | keep-alive (wrk) |" in table and "| /hello | keep-alive | " in table.split("A/A: ours")[1]
    )
    assert (
        "Ours, the twin and ours again on CPU 0, the load tools on CPU 1; 2 rounds, the sides' order rotated" in table
    )
    assert port_owner("127.0.0.1", server.port) is None and port_owner("127.0.0.1", twin.port) is None
    assert not [p for p in psutil.Process().children(recursive=True) if "contract_server" in " ".join(p.cmdline())]


@pytest.fixture
def meter_on():
    cpu_speed.choose(True)  # as `make twin` runs (CPU_METER=1)
    yield
    cpu_speed.choose(False)


def assert_speeds_read_and_divided(result: dict, out: Path) -> None:
    """Every attempt has both CPUs' speeds and shares; each pair is on the server CPU's speed or says why not, and
    on the speed its ratios are ours ÷ theirs of req/s ÷ the server CPU's speed, round by round."""
    for a in result["attempts"]:
        assert set(a["cpu"]["speed"]) == set(a["cpu"]["util"]) == {"server", "loadgen"}
        assert all(0 < v <= 1 for v in a["cpu"]["speed"].values()) and all(u >= 0 for u in a["cpu"]["util"].values())
    table = (out / "twin.md").read_text()
    assert "On the server CPU's speed" in table
    for i, pair in enumerate(result["pairs"]):
        speed = pair["on_speed"]
        mine = [a for a in result["attempts"] if (a["pair"], a["pattern"]) == (i // 2, pair["pattern"])]
        if speed["rule"] != "on the server CPU's speed":
            assert speed["rule"].startswith("as measured: not every side bound") and "median_ratio" not in speed
            continue
        ours, theirs = (
            [a["rps"] / a["cpu"]["speed"]["server"] for a in mine if a["side"] == s] for s in ("ours", "theirs")
        )
        assert speed["ratios"] == [round(o / t, 4) for o, t in zip(ours, theirs)] and speed["rounds"] == 2
        assert speed["again"]["rounds"] == 2


def assert_climbed_alike(result: dict, out: Path, connections: tuple[int, int], close_tool: str) -> None:
    """Every side climbed in the same turns, the first of each rotating, until each made its connections (ours',
    theirs'); each run's rate is the connection-per-request tool's own figure of the output the run kept."""
    ours_connections, theirs_connections = connections
    climb = result["climb"]["sides"]
    turns = len(climb["ours"]["rps"])
    assert turns >= 3 and all(len(c["rps"]) == turns for c in climb.values())  # the trend is judged on 3 or more
    assert climb["ours"]["connections"] >= ours_connections and climb["again"]["connections"] >= ours_connections
    assert climb["theirs"]["connections"] >= theirs_connections
    flat_at = [c["flat_at_turn"] for c in climb.values()]
    assert all(turn is None or 1 <= turn <= turns for turn in flat_at)
    # it ends when the last side has been flat (once flat, a side is warm), else after its 3 turns (warmup_max_s=1)
    assert turns == (max(flat_at) if None not in flat_at else 3)
    for label, c in climb.items():
        for turn, rps in enumerate(c["rps"]):
            scratch = out / "raw" / f"warm-{label}-climb-{turn + 1}"
            assert rps == round(TOOLS[close_tool].parse((scratch / "output.txt").read_text(), scratch).rps, 1)
    assert (
        f"Warm-up, connection per request in turns for {result['climb']['seconds']:g} s: ours "
        in (out / "twin.md").read_text()
    )


def assert_p99_from_the_tools_output(result: dict, out: Path, close_tool: str) -> None:
    """Each attempt's p99 is its tool's, read again by the tool's adapter from the output and files the run kept; each
    pair's p99 ratios are ours ÷ theirs of those recorded figures; twin.md shows them."""
    for a in result["attempts"]:
        scratch = out / "raw" / f"round{a['round']}-{a['side']}-{a['pair']}-{a['pattern']}"
        output = (scratch / "output.txt").read_text()
        tool = "wrk" if a["pattern"] == "keep-alive" else close_tool
        assert a["p99_ms"] > 0 and a["p99_ms"] == round(TOOLS[tool].parse(output, scratch).latency_ms["p99"], 3)
        if tool == "wrk":
            assert "Latency Distribution" in output  # run with --latency
    table = (out / "twin.md").read_text()
    assert "| p99 ratio | p99 interval | p99 rounds above 1 | ours p99 ms | theirs p99 ms |" in table
    for i, pair in enumerate(result["pairs"]):
        p99 = pair["p99"]
        mine = [a for a in result["attempts"] if (a["pair"], a["pattern"]) == (i // 2, pair["pattern"])]
        assert p99["ours_ms"] == [a["p99_ms"] for a in mine if a["side"] == "ours"]
        assert p99["theirs_ms"] == [a["p99_ms"] for a in mine if a["side"] == "theirs"]
        assert p99["ratios"] == [round(o / t, 4) for o, t in zip(p99["ours_ms"], p99["theirs_ms"])]
        assert p99["rounds"] == 2 and p99["above_1"] == sum(r > 1 for r in p99["ratios"])
        assert p99["median_ratio"] == round(sum(p99["ratios"]) / 2, 4) > 0
        assert (p99["interval"]["low"], p99["interval"]["high"]) == (min(p99["ratios"]), max(p99["ratios"]))
        assert p99["ours_median_ms"] == round(sum(p99["ours_ms"]) / 2, 3) > 0
        assert p99["theirs_median_ms"] == round(sum(p99["theirs_ms"]) / 2, 3) > 0
        assert (
            f"| {p99['median_ratio']:.3f} | {p99['interval']['low']:.3f}-{p99['interval']['high']:.3f} (50%) | "
            f"{p99['above_1']} of 2 | {ms_text(p99['ours_median_ms'])} | {ms_text(p99['theirs_median_ms'])} |"
        ) in table


def assert_costs_read_and_summarised(result: dict, out: Path) -> None:
    """Every attempt has what the measured server spent on it a request (the responder answers with CPU of its own);
    each pair's cost is the medians of its attempts'; twin.md shows them."""
    for a in result["attempts"]:
        assert set(a["cost"]) == {"user_us", "kernel_us", "switches"}
        assert a["cost"]["user_us"] + a["cost"]["kernel_us"] > 0 and a["cost"]["switches"] >= 0
    table = (out / "twin.md").read_text()
    for i, pair in enumerate(result["pairs"]):
        mine = [a for a in result["attempts"] if (a["pair"], a["pattern"]) == (i // 2, pair["pattern"])]
        for side in ("ours", "theirs", "again"):
            costs = [a["cost"] for a in mine if a["side"] == side]
            assert pair["cost"][side] == {f: round(sum(c[f] for c in costs) / 2, 3) for f in costs[0]}
        assert cost_lines([pair])[2] in table


def test_a_requests_cost_is_each_sides_median_over_the_rounds_it_was_read_in():
    ours = [
        {"user_us": 100.0, "kernel_us": 50.0, "switches": 12.0},
        None,
        {"user_us": 80.0, "kernel_us": 70.0, "switches": 11.0},
    ]
    theirs: list[dict[str, float] | None] = [None, None, None]
    cost = cost_summary({"ours": ours, "theirs": theirs})
    assert cost == {"ours": {"user_us": 90.0, "kernel_us": 60.0, "switches": 11.5}, "theirs": None}
    row = {"ours_path": "/hello", "theirs_path": "/plaintext", "pattern": "keep-alive", "cost": cost}
    assert cost_lines([row])[2] == "| /hello ÷ /plaintext | keep-alive | 150 (90 + 60) | n/a | 11.50 | n/a |"
    assert cost_lines([{**row, "cost": None}])[2] == "| /hello ÷ /plaintext | keep-alive | n/a | n/a | n/a | n/a |"


@pytest.mark.parametrize("whose", ["the twin", "the A/A"])
def test_a_busy_twin_or_a_a_port_is_refused_before_anything_starts(tmp_path, whose):
    server, folder = loopback_pair(tmp_path)
    twin = load_twin(folder)
    port = twin.port if whose == "the twin" else manifest_twin(server, {server.port, twin.port}).port
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(TwinError, match=f"cannot start .*{whose}.*: port {port} is in use by pid"):
            twins.run_twin(server, twin, CpuPlan((0,), (1,), (1,)), TwinOptions(), root=tmp_path / "results")
    assert port_owner("127.0.0.1", server.port) is None  # ours was never started


def test_a_twin_that_dies_while_starting_is_reported_with_its_log_and_ours_is_stopped(tmp_path):
    server, folder = loopback_pair(tmp_path)
    (folder / "twin.toml").write_text(
        (folder / "twin.toml").read_text().replace(f'"{RESPONDER}"', '"-c", "print(\'no such server\'); exit(3)"')
    )
    with pytest.raises(TwinError, match="exited \\(3\\) while starting; its log:\n.*no such server"):
        twins.run_twin(server, load_twin(folder), CpuPlan((0,), (1,), (1,)), TwinOptions(), root=tmp_path / "results")
    assert port_owner("127.0.0.1", server.port) is None


def twin_md(pairs: list[dict]) -> str:
    probe = {"cv": {"server": 0.05, "loadgen": 0.02}, "cpus": {"server": 0, "loadgen": 1}, "seconds": 9, "window_s": 1}
    return markdown(
        {
            "ours": "node",
            "twin": "nodejs",
            "stamp": "x",
            "entry": "",
            "versions": "",
            "cpus": {"server": "0", "loadgen": "1"},
            "rounds": 1,
            "attempt_s": 3,
            "pairs": pairs,
            "steadiness": {"before": probe, "after": None},
        }
    )


def test_the_markdown_table_has_a_line_per_pair_with_rate_p99_and_the_probe_before_and_after():
    pair = {"ours_path": "/hello", "theirs_path": "/plaintext", "pattern": "keep-alive", **summary([9.0], [10.0])}
    text = twin_md([{**pair, "p99": p99_summary([12.5], [2.5])}])
    assert "Both servers on CPU 0, the load tools on CPU 1; 1 round, the sides' order rotated each round" in text
    assert (
        "| /hello ÷ /plaintext | keep-alive | 0.900 | 0.900-0.900 (0%) | 1 of 1 | 9 | 10 "
        "| 5.000 | 5.000-5.000 (0%) | 1 of 1 | 12.5 | 2.5 | 5.0 % → - |"
    ) in text


def test_a_missing_p99_reads_n_a_in_twin_md_never_0_and_an_older_twin_json_without_p99_still_reads():
    pair = {"ours_path": "/hello", "theirs_path": "/plaintext", "pattern": "keep-alive", **summary([9.0], [10.0])}
    rate = "| /hello ÷ /plaintext | keep-alive | 0.900 | 0.900-0.900 (0%) | 1 of 1 | 9 | 10 "
    missing = twin_md([{**pair, "p99": p99_summary([None], [2.5])}])  # ours' tool gave no p99
    assert rate + "| n/a | n/a | n/a | n/a | n/a | 5.0 % → - |" in missing
    older = twin_md([pair])  # a pair as twin.json held it before p99 was kept
    assert rate + "| n/a | n/a | n/a | n/a | n/a | 5.0 % → - |" in older
    assert [ms_text(None), ms_text(0.4123, " ms"), ms_text(73.97), ms_text(10234.0)] == [
        "n/a",
        "0.412 ms",
        "74",
        "10,234",
    ]


RUN_TWIN = """
import sys
from pathlib import Path
from harness.basics import interrupt
from harness.basics.cpus import CpuPlan
from harness.config.manifest import discover
from harness.versus import twins
from harness.versus.twin_warmup import TwinOptions, TwinSide, rotated
from harness.versus.twin_table import load_twin
interrupt.install()
servers, folder, results = (Path(a) for a in sys.argv[1:])
options = TwinOptions(rounds=20, attempt_s=1, warmup_s=1, concurrency=4, startup_timeout_s=30, warmup_max_s=1)
try:
    twins.run_twin(discover(servers)["probe"], load_twin(folder), CpuPlan((0,), (1,), (1,)), options, results)
except KeyboardInterrupt:
    sys.exit(130)
"""


def test_ctrl_c_in_the_rounds_stops_both_servers_and_their_tools(integration_lock, tmp_path):
    server, folder = loopback_pair(tmp_path)
    twin = load_twin(folder)
    argv = [sys.executable, "-c", RUN_TWIN, str(tmp_path / "servers"), str(folder), str(tmp_path / "results")]
    proc = subprocess.Popen(
        argv, cwd=Path(__file__).parents[1], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines = []
    for line in proc.stdout:  # until the rounds run
        lines.append(line)
        if "round 1/20" in line:
            break
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group, the load tool too
    assert proc.wait(60) == 130, "".join(lines) + proc.stdout.read()
    again = manifest_twin(server, {server.port, twin.port})  # ours a second time (the A/A), as run_twin starts it
    assert not [
        port_owner("127.0.0.1", port) for port in (server.port, twin.port, again.port) if port_owner("127.0.0.1", port)
    ]
    strays = [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    strays += [p for p in psutil.process_iter(["cmdline"]) if f"{RESPONDER}" in " ".join(p.info["cmdline"] or [])
               and {str(twin.port), str(again.port)} & set(p.info["cmdline"] or [])]  # fmt: skip
    assert not strays
