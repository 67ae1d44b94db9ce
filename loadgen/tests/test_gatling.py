"""The Gatling adapter: its parser on real reports (fixtures/gatling/<case>: the console output and the report's
js/stats.json of runs against loopback servers; constant_warmup also its simulation.log), its command lines, and one
real run of a tiny profile against a server on loopback (skipped when loadgen/gatling/build.sh has not built the
launcher). That last test holds the integration lock, /tmp/harness-integration.lock, while it runs."""

from __future__ import annotations

import fcntl
import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import psutil
import pytest

from harness.tools import TOOLS, LoadSpec, ToolFailed
from harness.tools.gatling import SIMULATION, TOOL

FIXTURES = Path(__file__).parent / "fixtures" / "gatling"
INTEGRATION_LOCK = Path("/tmp/harness-integration.lock")
URL = "http://127.0.0.1:8080/backend"
WARMUP = {"warmup_s": "3"}  # every load's tool warm-up: WARMUP_S at the load's arrival rate


def parse(case: str):
    folder = FIXTURES / case
    return TOOL.parse((folder / "output.txt").read_text(), folder)


# ---------------------------------------------------------------------------------------------------------- parsing
# case: requests, OK, KO, req/s (Gatling's mean), (p50, p75, p95, p99, max, mean) ms, std dev, min, distribution
EXPECTED = {
    # ramp 200 users over 2 s, http.server on loopback
    "ramp_ok": (200, 200, 0, 100.0, (213, 388, 509, 577, 680, 233), 176, 2, (200, 0, 0, 0)),
    # 100 users at once, the same server
    "at_once_ok": (100, 100, 0, 100.0, (412, 443, 489, 520, 526, 421), 36, 351, (100, 0, 0, 0)),
    # ramp 40 users over 1 s to a port nothing listens on: every request refused
    "refused": (40, 0, 40, 40.0, (5, 16, 216, 220, 222, 31), 64, 1, (0, 0, 0, 40)),
    # 10 users/s for 2 s, request timeout 1 s, a server that answers every other request after 2 s
    "timeout": (20, 10, 10, 20 / 3, (642, 1001, 1001, 1002, 1002, 532), 475, 8, (10, 0, 0, 10)),
}


@pytest.mark.parametrize("case", EXPECTED)
def test_parse_reads_the_reports_figures(case):
    requests, ok, ko, rps, (p50, p75, p95, p99, top, mean), std_dev, low, buckets = EXPECTED[case]
    m = parse(case)
    assert m.requests == requests and m.errors.other == ko and m.errors.total == ko
    assert m.rps == pytest.approx(rps) and m.duration_s == pytest.approx(requests / rps)
    assert m.latency_ms == {"p50": p50, "p75": p75, "p95": p95, "p99": p99, "p90": None, "max": top, "mean": mean}
    assert m.details == {
        "gatling": {
            "ok": ok,
            "ko": ko,
            "mean_rps": pytest.approx(rps),
            "std_dev_ms": std_dev,
            "min_ms": low,
            "distribution": dict(zip(("t < 800 ms", "800 ms <= t < 1200 ms", "t >= 1200 ms", "failed"), buckets)),
        }
    }
    assert m.good_requests == ok


def test_the_console_summary_agrees_with_stats_json():
    """The same run's console text says what stats.json says (the parser reads only the latter)."""
    output = (FIXTURES / "timeout" / "output.txt").read_text()
    assert "request count                                         20 (OK=10     KO=10    )" in output
    assert "response time 99th percentile                       1002" in output
    assert "Request timeout to 127.0.0.1/127.0.0.1:18766 after 1000 ms" in output


def test_gatling_reads_the_report_its_own_run_wrote_not_the_newest_in_the_folder(tmp_path):
    """Two runs' reports in one folder (a load measured again into the same scratch, or a report left there): the
    parser took the newest js/stats.json by time; it takes the one the run's own output names."""
    own = next((FIXTURES / "ramp_ok" / "gatling").iterdir())  # 200 requests, the run of ramp_ok/output.txt
    other = next((FIXTURES / "refused" / "gatling").iterdir())  # 40 requests, refused
    shutil.copytree(own, tmp_path / "gatling" / own.name)
    shutil.copytree(other, tmp_path / "gatling" / other.name)
    os.utime(tmp_path / "gatling" / own.name / "js" / "stats.json", (1_000_000, 1_000_000))  # the other is newer
    output = (FIXTURES / "ramp_ok" / "output.txt").read_text()
    m = TOOL.parse(output, tmp_path)
    assert (m.requests, m.errors.total) == (200, 0)
    refused = TOOL.parse((FIXTURES / "refused" / "output.txt").read_text(), tmp_path)
    assert (refused.requests, refused.errors.total) == (40, 40)


def test_gatling_without_its_own_report_fails_the_attempt_even_beside_another_run_s(tmp_path):
    other = next((FIXTURES / "refused" / "gatling").iterdir())
    shutil.copytree(other, tmp_path / "gatling" / other.name)
    output = (FIXTURES / "ramp_ok" / "output.txt").read_text()  # names a report that is not there
    with pytest.raises(
        ToolFailed,
        match=r"^Gatling's report openmodelsimulation-20261123104730468 \(named in its "
        r"output\) has no js/stats\.json under ",
    ):
        TOOL.parse(output, tmp_path)
    with pytest.raises(ToolFailed, match=r"^Gatling wrote no report \(its output names none, .*\): Simulation bench"):
        TOOL.parse("Simulation bench.OpenModelSimulation started...\n", tmp_path)


def test_a_crash_without_report_fails_with_its_exception():
    with pytest.raises(ToolFailed, match=r"no js/stats\.json .*bench\.injection bogus is not one of ramp"):
        parse("crash")


def test_no_output_at_all_fails_clearly(tmp_path):
    with pytest.raises(ToolFailed, match="Gatling wrote no report .*: no output"):
        TOOL.parse("", tmp_path)


# ------------------------------------------------------------------------------------------- the tool's warm-up
WARMED = FIXTURES / "constant_warmup"  # 100 users/s for 5 s after 3 s of warm-up at 100/s, by the adapter's command
# against the calibrated server (S 10 ms, 1 in 20 held 30 ms more, 1 in 10 answered 503); its simulation.log without
# its USER lines (the parser reads only the REQUEST lines)


def logged_requests(name: str) -> list[tuple[int, int, str]]:
    """(start ms, end ms, OK|KO) of each REQUEST line of `name` in the fixture's simulation.log, counted here apart
    from the parser."""
    log = next(WARMED.glob("gatling/*/simulation.log")).read_text()
    rows = [line.split("\t") for line in log.splitlines()]
    return [(int(r[3]), int(r[4]), r[5]) for r in rows if r[0] == "REQUEST" and r[2] == name]


def test_the_warm_up_s_requests_are_left_out_of_the_figures():
    measured, warm = logged_requests("request"), logged_requests("warm-up")
    assert (len(measured), len(warm)) == (500, 300)
    assert max(end for _, end, _ in warm) <= min(start for start, _, _ in measured)  # andThen: one after the other
    m = parse("constant_warmup")
    ko = sum(status == "KO" for *_, status in measured)
    assert m.requests == len(measured) == 500 and m.errors.total == m.errors.other == ko == 50  # 1 in 10: 503
    assert m.good_requests == 450 and m.details["gatling"]["ok"] == 450
    assert m.details["gatling"]["warm_up"] == {"requests": 300, "ko": sum(s == "KO" for *_, s in warm)}
    assert m.details["gatling"]["distribution"] == {
        "t < 800 ms": 450,
        "800 ms <= t < 1200 ms": 0,
        "t >= 1200 ms": 0,
        "failed": 50,
    }
    # the fresh JVM's slow first answers are the warm-up's: up to 167 ms there, 44 ms at most in the measured load
    assert m.latency_ms["max"] == max(end - start for start, end, _ in measured) == 44
    assert max(end - start for start, end, _ in warm) == 167
    assert m.latency_ms == {"p50": 11, "p75": 12, "p95": 17, "p99": 42, "p90": None, "max": 44, "mean": 13}
    assert m.details["gatling"]["std_dev_ms"] == 7 and m.details["gatling"]["min_ms"] == 10


def test_the_rate_is_the_measured_requests_over_their_own_span():
    """Gatling's per-request mean divides by the whole run's span in whole seconds, the warm-up's included (500 over
    9 s); the rate is the measured requests over theirs, from the first one's start to the last one's end."""
    measured = logged_requests("request")
    span_s = (max(end for _, end, _ in measured) - min(start for start, _, _ in measured)) / 1000
    m = parse("constant_warmup")
    assert span_s == pytest.approx(5.034) and m.duration_s == pytest.approx(span_s)
    assert m.rps == pytest.approx(500 / 5.034)
    assert m.details["gatling"]["mean_rps"] == pytest.approx(500 / 9)  # Gatling's own, as it says it


def test_a_warmed_report_without_its_log_or_its_measured_request_fails_clearly(tmp_path):
    report = next((WARMED / "gatling").iterdir())
    shutil.copytree(report / "js", tmp_path / "gatling" / report.name / "js")
    output = (WARMED / "output.txt").read_text()
    with pytest.raises(ToolFailed, match=r"has a 'warm-up' request and no simulation\.log beside it"):
        TOOL.parse(output, tmp_path)
    stats = tmp_path / "gatling" / report.name / "js" / "stats.json"
    entries = json.loads(stats.read_text())
    entries["contents"] = {k: v for k, v in entries["contents"].items() if v["name"] == "warm-up"}
    stats.write_text(json.dumps(entries))
    with pytest.raises(ToolFailed, match=r"has a 'warm-up' request and no 'request' one"):
        TOOL.parse(output, tmp_path)


# ---------------------------------------------------------------------------------------------------- command lines
def props(argv: list[str]) -> dict[str, str]:
    return dict(a[len("-Dbench.") :].split("=", 1) for a in argv if a.startswith("-Dbench."))


def test_the_adapter_is_registered_and_built_by_the_repository():
    assert TOOLS["gatling"] is TOOL
    assert TOOL.binary == str(Path(__file__).resolve().parents[1] / "gatling" / "target" / "gatling")
    assert TOOL.provision == ("bash", "loadgen/gatling/build.sh") and TOOL.version_args == ("--version",)
    spec = LoadSpec(url=URL, injection="ramp", users=10, duration_s=1)
    assert TOOL.sized(spec, 30, 1000.0) is spec and TOOL.completed(b"anything") is None
    assert TOOL.max_connections_per_process(20000) == 20000 - 64


def test_ramp_command(tmp_path):
    argv = TOOL.command(LoadSpec(url=URL, injection="ramp", users=52000, duration_s=60.0), tmp_path / "s")
    assert argv[0] == TOOL.binary
    assert props(argv) == {
        "url": URL,
        "injection": "ramp",
        "users": "52000",
        "duration_s": "60",
        **WARMUP,
        "warmup_rate": "866.6666666666666",  # the ramp's users over its duration
    }
    assert argv[-6:-2] == ["-s", SIMULATION, "-rf", str(tmp_path / "s" / "gatling")]
    assert argv[-2] == "-rd" and (tmp_path / "s").is_dir()


def test_at_once_command_takes_users_or_else_concurrency(tmp_path):
    assert props(TOOL.command(LoadSpec(url=URL, injection="at-once", users=3000), tmp_path)) == {
        "url": URL,
        "injection": "at-once",
        "users": "3000",
        **WARMUP,
        "warmup_rate": "200",  # no arrival rate of its own: at most AT_ONCE_WARMUP_RATE
    }
    few = props(TOOL.command(LoadSpec(url=URL, injection="at-once", concurrency=50), tmp_path))
    assert few["users"] == "50" and few["warmup_rate"] == "50"  # fewer users than that: its users a second


def test_constant_command_with_a_timeout(tmp_path):
    spec = LoadSpec(url=URL, injection="constant", rate=850, duration_s=60, timeout_s=2.5)
    assert props(TOOL.command(spec, tmp_path)) == {
        "url": URL,
        "injection": "constant",
        "rate": "850",
        "duration_s": "60",
        "timeout_s": "2.5",
        **WARMUP,
        "warmup_rate": "850",  # its own rate
    }
    assert (
        props(TOOL.command(LoadSpec(url=URL, injection="constant", rate=12.5, duration_s=1), tmp_path))["rate"]
        == "12.5"
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        (LoadSpec(url=URL, users=10, duration_s=1), "needs an injection, one of ramp, at-once, constant; got None"),
        (LoadSpec(url=URL, injection="closed", users=10), "got 'closed'"),
        (LoadSpec(url=URL, injection="ramp", users=10), "ramp injection needs duration_s"),
        (LoadSpec(url=URL, injection="ramp", duration_s=1), "ramp injection needs users"),
        (LoadSpec(url=URL, injection="ramp", concurrency=10, duration_s=1), "ramp injection needs users"),
        (LoadSpec(url=URL, injection="at-once"), "at-once injection needs users"),
        (LoadSpec(url=URL, injection="constant", duration_s=1), "constant injection needs rate"),
        (LoadSpec(url=URL, injection="constant", rate=0, duration_s=1), "constant injection needs rate"),
        (LoadSpec(url=URL, injection="constant", rate=10), "constant injection needs duration_s"),
    ],
)
def test_bad_loads_are_refused(tmp_path, spec, message):
    with pytest.raises(ValueError, match=message):
        TOOL.command(spec, tmp_path)


# ----------------------------------------------------------------------------------------------- a real run (lock)
@pytest.fixture
def integration_lock():
    """Held while the test runs, as `flock /tmp/harness-integration.lock` would; when this test already runs under
    that command (its descriptor is inherited, or held by the flock parent), taking it again would wait forever."""
    here = psutil.Process()
    for proc in [here, *here.parents()]:
        try:
            if any(f.path == str(INTEGRATION_LOCK) for f in proc.open_files()):
                yield
                return
        except psutil.Error:  # another user's process: not our flock
            continue
    with INTEGRATION_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # waits for the integration test that holds it, like flock(1)
        yield


@pytest.fixture
def static_server(tmp_path):
    """http.server on a free loopback port serving GET /backend, with a backlog that takes a burst of connections
    (http.server's own, 5, makes the rest wait out SYN retransmits)."""
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "backend").write_text("hello\n")

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 1024

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = Server(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path / "www")))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/backend"
    server.shutdown()
    server.server_close()


@pytest.mark.integration
@pytest.mark.skipif(
    not Path(TOOL.binary).exists(),
    reason=f"Gatling is not built ({TOOL.binary} is missing): run bash loadgen/gatling/build.sh",
)
@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH: Gatling needs a JRE 17")
def test_a_tiny_ramp_really_runs(integration_lock, static_server, tmp_path):
    version = subprocess.run([TOOL.binary, *TOOL.version_args], capture_output=True, text=True, timeout=10)
    assert version.stdout.strip().startswith("Gatling 3.")
    spec = LoadSpec(url=static_server, injection="ramp", users=200, duration_s=2)
    argv = TOOL.command(spec, tmp_path / "scratch")
    proc = subprocess.run(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout
    m = TOOL.parse(proc.stdout, tmp_path / "scratch")
    assert m.requests == 200 and m.errors.total == 0, proc.stdout
    assert m.details["gatling"]["ok"] == 200 and sum(m.details["gatling"]["distribution"].values()) == 200
    assert m.details["gatling"]["warm_up"] == {"requests": 300, "ko": 0}  # 3 s at the ramp's 100 users/s, left out
    assert m.rps > 0 and 0 <= m.latency_ms["p50"] <= m.latency_ms["p99"] <= m.latency_ms["max"]
