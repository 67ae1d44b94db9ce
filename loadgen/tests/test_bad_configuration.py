"""Bad configuration ends before anything starts (issue 14): exit status 2, one line naming the bad value and what to
do, no traceback, no server started, nothing written. Every case the issue lists is a row of one table, driven through
the command line (cli.main in this process, so a scenario file of the test's own can stand in for scenarios.toml;
manifests of the test's own are found through BENCH_SERVERS_DIR, as `python -m harness --help` says).

Nothing here should start a server, but a regression would start one on the ports below: run this file under the
integration lock, like tests/test_cli_integration.py."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import psutil
import pytest

from harness import cli
from harness.basics import messages as console
from harness.basics.machine import port_owner
from harness.config import scenarios
from harness.config.manifest import SERVERS_DIR_VAR, ManifestError, discover
from harness.results.store import RESULTS
from harness.runtime import State

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

PORTS = "rust=26086 nginx=26000"  # below the ephemeral ports; no other test uses them
RUN_ID = f"test-bad-configuration-{os.getpid()}"
# the harness's variables, cleared so that the developer's own (SERVERS, PORTS, ...) do not change the cases
VARIABLES = (
    "RUNTIME",
    "SERVERS",
    "PROFILE",
    "PORTS",
    "REPEAT",
    "ORDER",
    "ROUNDS",
    "CPUS_SERVER",
    "CPUS_LOADGEN",
    "CPUS_UPSTREAM",
    "HOSTS",
    SERVERS_DIR_VAR,
)

SERVER = '[[server]]\nname = "{name}"\nport = {port}\nroutes = ["id", "hello"]\nrun = ["./{name}"]\n'
SCENARIO = (
    "[settings.quick]\nrepeat = 1\nwarmup = {{ duration_s = 1, tolerance = 0.1, max_runs = 2 }}\n\n"
    '[hello]\ntool = "{tool}"\ntargets = [{{ route = "hello", path = "/hello" }}]\n'
    "profile.quick = {{ runs = [{{ concurrency = 10, requests = {requests} }}] }}\n"
)
NO_ENGINES = "server=unix:///nonexistent/s.sock,address=127.0.0.2 loadgen=unix:///nonexistent/l.sock,address=127.0.0.3"
UNAVAILABLE_CPU = max(os.sched_getaffinity(0)) + 1  # "CPUS_SERVER=7 on a 2-CPU machine", wherever this runs


@dataclass
class Case:
    argv: list[str]
    message: str  # a regular expression the one line of the error must match
    env: dict[str, str] = field(default_factory=dict)
    manifests: dict[str, str] = field(default_factory=dict)  # folder: manifest.toml; none: the repository's servers
    scenarios: str | None = None  # a scenarios.toml of the case's own


RUN = ["--ports", PORTS, "--servers", "rust", "--run-id", RUN_ID, "run", "hello"]
CASES = {
    "REPEAT=0": Case(RUN, r"REPEAT='0': must be a positive integer", env={"REPEAT": "0"}),
    "SLO_P99_MS=fast": Case(
        RUN[:-1] + ["latency"],
        r"SLO_P99_MS='fast': give the p99 latency target in milliseconds",
        env={"SLO_P99_MS": "fast"},
    ),
    "CPUS_SERVER beyond the machine": Case(
        RUN,
        rf"CPUS_SERVER={UNAVAILABLE_CPU}: CPU {UNAVAILABLE_CPU} not available here",
        env={"CPUS_SERVER": str(UNAVAILABLE_CPU)},
    ),
    # engines on sockets that do not exist: refused before anything starts, and nothing leaves this machine
    "HOSTS with RUNTIME=local": Case(
        RUN,
        r"HOSTS \(server on unix:///nonexistent/s.sock, loadgen on unix:///nonexistent/l.sock, upstream on "
        r"unix:///nonexistent/s.sock\) runs every role in a container on its host: RUNTIME=local cannot",
        env={"HOSTS": NO_ENGINES, "RUNTIME": "local"},
    ),
    "HOSTS with CPUS_SERVER": Case(
        RUN,
        r"CPUS_SERVER name this machine's CPUs; with HOSTS give each host's as "
        r"role=endpoint,cpus=0-3",
        env={"HOSTS": NO_ENGINES, "CPUS_SERVER": "0", "RUNTIME": "auto"},
    ),
    "HOSTS whose engine does not answer": Case(
        RUN,
        r"server: the Docker engine at unix:///nonexistent/s.sock does not answer \(.*\); check that the engine "
        r"runs and that you may use it",
        env={"HOSTS": NO_ENGINES, "RUNTIME": "auto"},
    ),
    "HOSTS without a load generator": Case(
        RUN, r"HOSTS has no loadgen endpoint", env={"HOSTS": "server=ssh://root@10.213.77.2"}
    ),
    "PORTS=garbage": Case(
        RUN[2:], r"bad port override 'garbage': use PORTS=\"node=9090 rust=9091\"", env={"PORTS": "garbage"}
    ),
    "make report RUN=<unknown>": Case(
        ["report", "no-such-run"],
        r"no run 'no-such-run' \(no results.json there\); "
        r"runs under \S+: ",  # the results folder (BENCH_RESULTS: a temporary one under the tests)
    ),
    "make compare with runs that do not exist": Case(
        ["compare", "no-such-run-a", "no-such-run-b"], r"no run 'no-such-run-a' \(no results.json there\)"
    ),
    "a manifest missing routes": Case(
        RUN[4:],
        r"x/manifest.toml \(\[\[server\]\] 'x'\): missing required key 'routes'",
        manifests={"x": '[[server]]\nname = "x"\nport = 26101\nrun = ["./x"]\n'},
    ),
    "two manifests with the same name": Case(
        RUN[4:],
        r"b/manifest.toml: server name 'twin' is also used in .*/a$",
        manifests={"a": SERVER.format(name="twin", port=26101), "b": SERVER.format(name="twin", port=26102)},
    ),
    "a scenario with an unknown tool": Case(
        RUN,
        r"scenarios.toml \[hello\] profile quick: tool 'siege' is not one of ab, gatling, h2load, httperf, oha, oha-mix, wrk",
        scenarios=SCENARIO.format(tool="siege", requests=100),
    ),
    "a scenario with a negative request count": Case(
        RUN,
        r"scenarios.toml \[hello\] profile quick run 1: requests = -5 must be positive",
        scenarios=SCENARIO.format(tool="ab", requests=-5),
    ),
    "a scenario file that is not TOML": Case(
        RUN,
        r"scenarios.toml is not valid TOML: .* \(at line 5, column 7\); fix it \(git diff scenarios.toml shows what "
        r"changed\)",
        scenarios=SCENARIO.format(tool="ab", requests=100).replace("[hello]", "[hello"),
    ),
    "a scenario without targets": Case(
        RUN,
        r"scenarios.toml \[hello\]: `targets` must list the routes it measures, e.g. targets = \[\{ route = "
        r"\"hello\", path = \"/hello\" \}\]",
        scenarios=re.sub(r"targets = .*\n", "", SCENARIO.format(tool="ab", requests=100)),
    ),
    "a scenario whose run is not a table": Case(
        RUN,
        r"scenarios.toml \[hello\] profile quick run 1: 5 is not a load",
        scenarios=SCENARIO.format(tool="ab", requests=100).replace(
            "runs = [{ concurrency = 10, requests = 100 }]", "runs = [5]"
        ),
    ),
    "settings without a warm-up rule": Case(
        RUN,
        r"scenarios.toml \[settings.quick\] gives no `warmup = \{ ... \}` rule: add one",
        scenarios=re.sub(r"warmup = .*\n", "", SCENARIO.format(tool="ab", requests=100)),
    ),
    "a warm-up tolerance that is not a number": Case(
        RUN,
        r"scenarios.toml \[settings.quick\] warmup tolerance = 'low': must be a positive number",
        scenarios=SCENARIO.format(tool="ab", requests=100).replace("tolerance = 0.1", 'tolerance = "low"'),
    ),
    'port = "notanint"': Case(
        RUN[4:],
        r"x/manifest.toml \(\[\[server\]\] 'x'\): 'port' must be an integer from 1 to 65535, not 'notanint'",
        manifests={"x": SERVER.format(name="x", port='"notanint"')},
    ),
    "two manifests with the same port": Case(
        RUN[4:],
        r"b/manifest.toml \(\[\[server\]\] 'b'\): 'port' 26101 is also the port of 'a' \(.*/a/manifest.toml\);"
        r" give each server a port of its own",
        manifests={"a": SERVER.format(name="a", port=26101), "b": SERVER.format(name="b", port=26101)},
    ),
}


def listeners() -> set[int]:
    """The test's ports that something listens on."""
    ports = [int(p.split("=")[1]) for p in PORTS.split()] + [26101, 26102]
    return {port for port in ports if port_owner("127.0.0.1", port)}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_configuration_stops_before_anything_starts(case, tmp_path, monkeypatch, capsys):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUNTIME", "local")
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    if case.manifests:
        for folder, text in case.manifests.items():
            (tmp_path / folder).mkdir()
            (tmp_path / folder / "manifest.toml").write_text(text)
        monkeypatch.setenv(SERVERS_DIR_VAR, str(tmp_path))
    if case.scenarios:
        (tmp_path / "scenarios.toml").write_text(case.scenarios)
        monkeypatch.setattr(scenarios, "SCENARIO_FILE", tmp_path / "scenarios.toml")
    monkeypatch.setattr(console.console, "width", 10_000)  # one line as written, not wrapped at a log's 200 columns
    state_before, children_before = State().load(), psutil.Process().children(recursive=True)
    assert not listeners(), "a port of this test is taken before it starts"

    try:
        status = cli.main(case.argv)
    except Exception as exc:  # what the user would see as a traceback
        pytest.fail(f"a traceback instead of an error message: {exc!r}")

    out = capsys.readouterr()
    lines = (out.out + out.err).strip().splitlines()
    assert status == 2, lines
    assert len(lines) == 1 and lines[0].startswith("error: "), lines  # said nothing else: started nothing
    assert re.search(case.message, lines[0]), lines[0]
    assert "Traceback" not in out.out + out.err
    assert State().load() == state_before and psutil.Process().children(recursive=True) == children_before
    assert not listeners() and not (RESULTS / RUN_ID).exists()


@pytest.mark.parametrize(
    "line, message",
    [
        (
            'name = "My Server"',
            r"'name' must be a non-empty name of lowercase letters, digits and '-', not 'My Server'",
        ),
        ("port = 0", r"'port' must be an integer from 1 to 65535, not 0"),
        ("port = true", r"'port' must be an integer from 1 to 65535, not True"),
        ('routes = "hello"', r"'routes' must be a list of route names \(strings\), not 'hello'"),
        ('routes = ["hello", "graphql"]', r"unknown routes \['graphql'\]; the contract has"),
        ("run = []", r"'run' must be a non-empty list of strings \(the command and its arguments\), not \[\]"),
        ('run = ["java", 1]', r"'run' must be a non-empty list of strings"),
        ("build = 1", r"'build' must be a string \(a shell command\), not 1"),
        ("version = []", r"'version' must be a string \(a shell command\), not \[\]"),
        ("stack = 2", r"'stack' must be a string, not 2"),
        (
            'artifacts = "target"',
            r"'artifacts' must be a list of strings \(paths in the server's folder\), not 'target'",
        ),
        ("startup_timeout_s = -1", r"'startup_timeout_s' must be a positive number of seconds, not -1"),
        ("env = { JAVA_OPTS = 1 }", r"'env' must be a table of strings \(NAME = \"value\"\), not \{'JAVA_OPTS': 1\}"),
        ('roles = "ceiling"', r"'roles' must be a list of \['calibrated', 'ceiling', 'upstream'\], not 'ceiling'"),
        ("prot = 8080", r"unknown key\(s\) 'prot'; a \[\[server\]\] has name, port, routes, run"),
    ],
)
def test_every_manifest_field_is_checked_for_its_type(line, message, tmp_path):
    """A manifest with one wrong field: the error names the file, the server, the field, what it must be and what
    it is."""
    key = line.split(" = ")[0]
    body = "\n".join(
        f"{k} = {v}"
        for k, v in (("name", '"x"'), ("port", "26101"), ("routes", '["id"]'), ("run", '["./x"]'))
        if k != key
    )
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "manifest.toml").write_text(f"[[server]]\n{body}\n{line}\n")
    with pytest.raises(ManifestError, match=rf"x/manifest.toml \(\[\[server\]\] '.*'\): {message}"):
        discover(tmp_path)


@pytest.mark.parametrize(
    "content",
    [
        '{"servers": {"rust": ',
        '["not", "an", "object"]',
        '{"servers": {"rust": {"name": "rust", "port": "x", "extra": 1}}}',
    ],
)
@pytest.mark.parametrize("argv", [["down"], RUN, ["--servers", "rust", "ping"]], ids=["down", "run", "ping"])
def test_a_corrupt_state_file_is_one_line_at_every_command(content, argv, monkeypatch, capsys):
    """.run/state.json (what the harness has running) cut short or hand-edited: every command says which file, what is
    wrong and what to do, and starts nothing."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUNTIME", "local")
    monkeypatch.setattr(console.console, "width", 10_000)
    state = State().path
    saved = state.read_bytes() if state.exists() else None
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(content)
    try:
        status = cli.main(argv)
    finally:
        if saved is None:
            state.unlink()
        else:
            state.write_bytes(saved)
    out = capsys.readouterr()
    lines = (out.out + out.err).strip().splitlines()
    assert status == 2 and len(lines) == 1, lines
    assert re.fullmatch(
        rf"error: {re.escape(str(state))} (is not valid JSON \(.*\)|does not hold a JSON object|has a "
        r"server entry this harness cannot read \(.*\)): it lists the servers and tools the harness "
        r"started. Stop any still running \(`ss -ltnp` shows who holds the servers' ports\), then "
        rf"delete it: rm {re.escape(str(state))}",
        lines[0],
    ), lines[0]
    assert not listeners() and not (RESULTS / RUN_ID).exists()
