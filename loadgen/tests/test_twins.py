"""`make twin` (issues 48, 74): a twin's twin.toml read and refused line by line; its route pairs as scenarios whose
sides take their own paths; and real sittings on loopback through the paired engine make versus and make duel use
(the tests' contract responder as ours, `probe`, and as the entry): the twin's sitting, then the A/A's, each side
started afresh for each start, the entry never held to the contract, a bad entry or a busy port said, Ctrl-C and
failures leaving nothing running. Durations are kept short: mechanics are asserted, never speed."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from ports import free_port

from harness.basics.machine import port_owner
from harness.cli.subcommands import twin_inputs
from harness.config import scenarios
from harness.config.manifest import ManifestError, discover
from harness.tools.availability import PreflightError
from harness.versus import twin
from harness.versus.twin_spec import TwinError, load_twin

RESPONDER = Path(__file__).parent / "responders" / "contract_server.py"
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
    args = argparse.Namespace(server="nope", twin=str(twin_folder(tmp_path, GOOD)), close_tool="ab")
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
    with pytest.raises(TwinError, match="is the twin of 'node', not of 'express'"):  # twin.run itself checks too
        spec = load_twin(twin_folder(tmp_path, GOOD))
        twin.run(servers["express"], spec, servers, None, twin.TwinOptions())  # type: ignore[arg-type]


def test_each_route_pair_is_a_scenario_per_pattern_each_side_on_its_own_path(tmp_path):
    spec = load_twin(twin_folder(tmp_path, GOOD))
    ours = discover()["node"]
    entry = twin.theirs(spec, ours)
    assert (entry.name, entry.port, entry.ready_path, entry.routes) == ("nodejs-theirs", 9505, "/plaintext", ())
    for close_tool in ("ab", "wrk"):
        pairs = twin.pair_scenarios(spec, entry, ours, "quick", close_tool)
        assert [(s.name, s.tool, s.path_for(entry), s.path_for(ours)) for s in pairs] == [
            ("hello-vs-plaintext-keep-alive", "wrk", "/plaintext", "/hello"),
            ("hello-vs-plaintext-close", close_tool, "/plaintext", "/hello"),
            ("v1_tweets-vs-json-keep-alive", "wrk", "/json", "/v1/tweets"),
            ("v1_tweets-vs-json-close", close_tool, "/json", "/v1/tweets"),
        ]
        hello = scenarios.load("quick")["hello"].runs[0].load
        for s in pairs:  # the profile's /hello load; wrk closes each connection only where it is the close tool
            (run,) = s.runs
            assert run.load["concurrency"] == hello["concurrency"] and run.load["duration_s"] == hello["duration_s"]
            assert run.load["connection_close"] is (s.name.endswith("close") and close_tool == "wrk")
            assert not run.load.get("keepalive")  # ab makes a connection a request
    again = twin.pair_scenarios(spec, ours, entry, "quick", "ab")  # the A/A: ours on its own paths on both sides
    assert again[0].path_for(ours) == "/hello"


def loopback(tmp_path: Path, twin_text: str = "") -> tuple[dict[str, str], Path, int, int]:
    """The contract responder as our server `probe` (its manifest in a servers folder of the test's own) and, on
    another port, as the entry (its folder's twin.toml): the environment that finds them, the folder, both ports."""
    ours_port, twin_port = free_port(), free_port()
    servers = tmp_path / "servers" / "probe"
    servers.mkdir(parents=True)
    (servers / "manifest.toml").write_text(
        f'[[server]]\nname = "probe"\nport = {ours_port}\nroutes = {ROUTES}\nstartup_timeout_s = 30\n'
        f'run = ["{sys.executable}", "{RESPONDER}", "{{port}}", "probe"]\n'
    )
    folder = twin_folder(
        tmp_path,
        twin_text
        or f'ours = "probe"\nrun = ["{sys.executable}", "{RESPONDER}", "{twin_port}", "te"]\nport = {twin_port}\n'
        f'warmup_connections = 50\n[routes]\n"/hello" = "/hello"\n',
    )
    env = {**os.environ, "RUNTIME": "local", "BENCH_SERVERS_DIR": str(tmp_path / "servers"), "TWIN": ""}
    return env, folder, ours_port, twin_port


def nothing_left(tmp_path: Path, *ports: int) -> None:
    assert not [p for p in ports if port_owner("127.0.0.1", p)]
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]


@pytest.mark.integration
def test_a_twin_sitting_then_its_a_a_through_the_paired_engine(short_bench, tmp_path):
    env, folder, ours_port, twin_port = loopback(tmp_path)
    results = Path(os.environ["BENCH_RESULTS"])
    before = set(results.glob("*-twin-probe*"))
    argv = short_bench("twin", "--server", "probe", "--twin", str(folder), "--budget-s", "100", "--seed", "5")
    done = subprocess.run(argv, cwd=Path(__file__).parents[1], env=env, capture_output=True, text=True, timeout=400)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and done.returncode in (0, 1), said[-3000:]
    runs = {p.name.split("-twin-")[1]: p for p in set(results.glob("*-twin-probe*")) - before}
    assert sorted(runs) == ["probe", "probe-aa"], said[-3000:]
    for suffix, (base, kind) in {"probe": ("nodejs-theirs", "twin"), "probe-aa": ("probe-twin", "twin-aa")}.items():
        run = json.loads((runs[suffix] / "results.json").read_text())
        versus = run["conditions"]["versus"]
        assert (versus["kind"], versus["seed"], versus["twin"]["close_tool"]) == (kind, 5, "ab")
        assert (versus["builds"]["base"]["name"], versus["builds"]["head"]["name"]) == (base, "probe")
        assert [(r["scenario"], r["run"]) for r in versus["results"]] == [
            ("hello-vs-hello-keep-alive", "c4"), ("hello-vs-hello-close", "c4")
        ]  # fmt: skip
        for result in versus["results"]:
            starts = result["starts"]
            assert starts and [n for s in starts for n in s] == list(range(1, result["rounds"] + 1))
            assert result["answer"]["verdict"], result
        records = {(r["server"], r["scenario"], r["tool"]) for r in run["records"]}
        assert records == {
            (side, f"hello-vs-hello-{p}", tool)
            for side in (base, "probe")
            for p, tool in (("keep-alive", "wrk"), ("close", "ab"))
        }
        servers = run["servers"]
        assert servers["probe"]["started"] and run["verification"]["probe"]["ok"]  # ours held to the contract
        if kind == "twin":  # the entry never is: it answered on its paths
            assert servers[base]["outside"] and "not checked" in servers[base]["contract"]
            assert base not in run.get("verification", {})
        page = (runs[suffix] / "versus.md").read_text()  # a sitting's page, with no goal: make versus's alone
        assert page.startswith(f"# probe: probe against {base}") and "against a goal" not in page
        assert ("A/A: `make twin` measures ours against a second process" in page) == (kind == "twin")
    assert "out: outside" in said and "contract-failed" not in said  # the entry is named for what it is
    nothing_left(tmp_path, ours_port, twin_port)


@pytest.mark.integration
def test_an_entry_that_dies_while_starting_is_said_with_its_log_and_ours_is_stopped(short_bench, tmp_path):
    port = free_port()
    env, folder, ours_port, _ = loopback(
        tmp_path,
        f'ours = "probe"\nrun = ["{sys.executable}", "-c", "print(\'no such server\'); exit(3)"]\nport = {port}\n'
        '[routes]\n"/hello" = "/hello"\n',
    )
    argv = short_bench("twin", "--server", "probe", "--twin", str(folder), "--budget-s", "20", "--no-again")
    done = subprocess.run(argv, cwd=Path(__file__).parents[1], env=env, capture_output=True, text=True, timeout=200)
    said = done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in said, said[-3000:]
    assert "nodejs-theirs exited" in said and "no such server" in said, said[-3000:]
    nothing_left(tmp_path, ours_port, port)


@pytest.mark.integration
def test_a_busy_entry_port_is_refused_before_anything_starts(short_bench, tmp_path):
    env, folder, ours_port, twin_port = loopback(tmp_path)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", twin_port))
        holder.listen()
        argv = short_bench("twin", "--server", "probe", "--twin", str(folder), "--budget-s", "20")
        done = subprocess.run(argv, cwd=Path(__file__).parents[1], env=env, capture_output=True, text=True, timeout=200)
    said = done.stdout + done.stderr
    assert done.returncode == 2 and f"nodejs-theirs's port {twin_port} is in use by" in said, said[-3000:]
    assert "starting" not in done.stdout
    nothing_left(tmp_path, ours_port)


@pytest.mark.integration
def test_ctrl_c_in_the_rounds_stops_both_servers_and_their_tools(short_bench, tmp_path):
    env, folder, ours_port, twin_port = loopback(tmp_path)
    argv = short_bench("twin", "--server", "probe", "--twin", str(folder), "--budget-s", "600")
    proc = subprocess.Popen(
        argv, cwd=Path(__file__).parents[1], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines = []
    for line in proc.stdout:  # until the rounds run
        lines.append(line)
        if "start 1 round 1:" in line:
            break
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group, the load tool too
    assert proc.wait(60) == 130, "".join(lines) + proc.stdout.read()
    nothing_left(tmp_path, ours_port, twin_port)
