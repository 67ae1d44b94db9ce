"""The h2load adapter: its command lines, and its parse of real h2load 1.52 outputs and per-request logs (saved under
fixtures/h2load/, the commands in its README.md); one short live run against the h2c responder when h2load is here."""

import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from ports import free_port

from harness.tools import TOOLS, LoadSpec, ToolFailed
from harness.tools.h2load import LOG, H2load
from harness.tools.output import Errors, merge

FIXTURES = Path(__file__).parent / "fixtures" / "h2load"
RESPONDER = Path(__file__).parent / "responders" / "h2c.py"
H2LOAD = H2load()


@dataclass(frozen=True)
class Spec(LoadSpec):
    """LoadSpec with the fields h2load reads (`streams`, `protocol`), whether or not LoadSpec has them yet."""

    streams: int | None = None
    protocol: str | None = None


def parse(name):
    folder = FIXTURES / name
    return H2LOAD.parse((folder / "output.txt").read_text(), folder)


def test_h2load_is_registered():
    assert TOOLS["h2load"].name == "h2load" and TOOLS["h2load"].version_args == ("--version",)


def logged_us(name):
    """Every answered request's µs in a fixture's --log-file, read here without the adapter."""
    rows = (line.split("\t") for line in (FIXTURES / name / LOG).read_text().splitlines())
    return sorted(int(f[2]) for f in rows if len(f) >= 3 and f[1] != "-1")


def nearest_rank_ms(values_us, pct):
    """The value at rank int(p/100 · n + 0.5), at least 1 (HdrHistogram's rule), in ms."""
    return values_us[max(int(pct / 100 * len(values_us) + 0.5), 1) - 1] / 1000


def test_timed_h2c_run_with_exact_percentiles_from_the_log():
    m = parse("ok")
    assert m.requests == 604 and m.errors == Errors()
    assert m.duration_s == 1.5 and m.rps == 402.67
    # p99.9: rank int(0.999 · 604 + 0.5) = 603, the second slowest request (the slowest is the max)
    assert m.latency_ms == {"p50": 0.103, "p90": 0.16, "p99": 0.244, "p99.9": 3.311, "max": 3.321, "mean": 0.124}
    assert m.distribution.count == 604 and m.quantiles == []
    assert [m.distribution.percentile_ms(p) for p in (1, 50, 99.9)] == [
        nearest_rank_ms(logged_us("ok"), p) for p in (1, 50, 99.9)
    ]
    h2 = m.details["h2load"]
    assert h2["protocol"] == "h2c" and h2["clients"] == 4 and h2["unanswered"] == 0 and h2["latency_sd_ms"] == 0.226


def test_counted_run():
    m = parse("ok_counted")
    assert m.requests == 300 and m.errors.total == 0
    assert m.duration_s == pytest.approx(0.02642) and m.rps == 11355.46
    assert (m.latency_ms["p50"], m.latency_ms["p90"], m.latency_ms["p99"]) == (0.325, 4.017, 7.934)
    assert m.latency_ms["max"] == 7.939 and m.latency_ms["mean"] == 1.8


def test_summary_alone_gives_mean_and_max_but_no_percentiles(tmp_path):
    m = H2LOAD.parse((FIXTURES / "ok" / "output.txt").read_text(), tmp_path)  # no log in tmp_path
    assert m.latency_ms["max"] == 3.32 and m.latency_ms["mean"] == 0.124
    assert m.latency_ms["p50"] is None and m.quantiles == []


def test_non_2xx_answers_are_errors_and_still_count_in_the_rate():
    m = parse("non2xx")
    assert m.requests == 40 and m.errors == Errors(non_2xx=40) and m.good_requests == 0
    assert m.rps == 29197.08 and m.duration_s == pytest.approx(0.00137)
    assert m.latency_ms["p50"] == 0.055 and m.latency_ms["max"] == 0.193
    assert m.details["h2load"]["status"] == {"2xx": 0, "3xx": 0, "4xx": 40, "5xx": 0}


def test_refused_connections_are_connect_errors():
    counted = parse("refused_counted")  # every request errored, none started
    assert counted.requests == 10 and counted.errors == Errors(connect=10) and counted.good_requests == 0
    assert counted.latency_ms["max"] is None and counted.rps == 0.0
    timed = parse("refused_timed")  # a summary of zeros: one connect error per client that never connected
    assert timed.requests == 0 and timed.errors == Errors(connect=2) and timed.duration_s == 1.0
    assert timed.details["h2load"]["protocol"] is None


def test_inactivity_timeouts_of_a_counted_run():
    m = parse("timeout_counted")
    assert m.requests == 4 and m.errors == Errors(timeout=4) and m.good_requests == 0


def test_silent_server_in_a_timed_run_counts_its_unanswered_requests_as_timeouts():
    """Fails on the harness before issue 32: the 4 requests nothing answered were read by nothing (no error)."""
    m = parse("silent_timed")
    assert m.requests == 0 and m.errors == Errors(timeout=4) and m.rps == 0.0
    assert m.details["h2load"]["unanswered"] == 4 and m.details["h2load"]["protocol"] == "h2c"


def test_a_server_that_stops_answering_has_its_unanswered_requests_counted_as_timeouts():
    """Fails on the harness before issue 32: the 4 requests the stalled responder never answered were no error."""
    m = parse("stalled_timed")
    assert m.requests == 834 and m.details["h2load"]["unanswered"] == 4
    assert m.errors == Errors(timeout=4) and m.good_requests == 830


def test_a_busy_run_ends_with_its_streams_in_flight_and_that_is_no_error():
    """Every connection has its -m streams in flight when the time is up: answered till the end, so not a stall."""
    m = parse("saturated_timed")
    assert m.details["h2load"]["unanswered"] == 40 == 4 * 10
    assert m.errors == Errors() and m.requests == 6889 == m.distribution.count


def test_timed_run_with_an_inactivity_timeout_aborts_h2load_1_52():
    with pytest.raises(ToolFailed, match=r"epoll_modify: Assertion .* failed"):
        parse("timeout_timed_abort")


def test_h1_run():
    m = parse("h1")
    assert m.requests == 100 and m.errors.total == 0 and m.rps == 100.0 and m.duration_s == 1.0
    assert m.latency_ms["p50"] == 0.134 and m.latency_ms["p99"] == 0.188 and m.latency_ms["max"] == 0.206
    assert m.details["h2load"]["protocol"] == "http/1.1"


def test_two_parts_merge_into_exactly_the_percentiles_of_their_requests_together():
    """Two parts' histograms added give exactly the percentiles of the union of their per-request latencies (every one
    of these is under 32 ms, where the histogram keeps each µs), p99.9 included, where pooling 1 % slices could not."""
    merged = merge([parse("ok"), parse("h1")])
    union = sorted(logged_us("ok") + logged_us("h1"))
    assert merged.requests == 704 and merged.distribution.count == len(union) == 704
    for pct in (1, 10, 50, 75, 90, 95, 99, 99.5, 99.9, 100):
        assert merged.distribution.percentile_ms(pct) == nearest_rank_ms(union, pct), pct
    assert merged.latency_ms == {
        "p50": nearest_rank_ms(union, 50),
        "p90": nearest_rank_ms(union, 90),
        "p99": nearest_rank_ms(union, 99),
        "p99.9": nearest_rank_ms(union, 99.9),
        "max": union[-1] / 1000,
        "mean": round(sum(union) / len(union) / 1000, 3),
    }


@pytest.mark.parametrize(
    "output", ["", "garbage\n", "-D: value error 1.5\n", "finished in 1.00s, 10.00 req/s, 1KB/s\n"]
)  # no requests line
def test_no_summary_is_a_tool_failure(output, tmp_path):
    with pytest.raises(ToolFailed, match="h2load printed no summary"):
        H2LOAD.parse(output, tmp_path)


def test_failure_names_the_last_line(tmp_path):
    with pytest.raises(ToolFailed, match="value error 1.5$"):
        H2LOAD.parse("starting benchmark...\n-D: value error 1.5\n\n", tmp_path)


def test_command_timed_h2c(tmp_path):
    spec = Spec(url="http://127.0.0.1:8000/hello", concurrency=64, threads=2, streams=10, duration_s=30)
    assert H2LOAD.command(spec, tmp_path) == [
        "h2load",
        "-c",
        "64",
        "-t",
        "2",
        "-m",
        "10",
        "-D",
        "30s",
        "--log-file",
        str(tmp_path / LOG),
        "http://127.0.0.1:8000/hello",
    ]


def test_command_fractional_duration_in_milliseconds_and_rate_per_client(tmp_path):
    spec = Spec(url="http://h/x", concurrency=4, duration_s=1.5, rate=1000, timeout_s=2)
    argv = H2LOAD.command(spec, tmp_path)
    assert argv[argv.index("-D") + 1] == "1500ms"
    assert argv[argv.index("--rps") + 1] == "250"
    assert "-N" not in argv  # h2load 1.52 aborts a timed run when -N fires
    thirds = H2LOAD.command(Spec(url="http://h/x", concurrency=3, duration_s=0.0004, rate=1), tmp_path)
    assert thirds[thirds.index("-D") + 1] == "1ms" and thirds[thirds.index("--rps") + 1] == "0.333333"


def test_command_counted_caps_clients_and_threads_and_sets_the_timeout(tmp_path):
    spec = Spec(url="http://h/x", concurrency=50, threads=8, requests=4, timeout_s=0.25, streams=2)
    argv = H2LOAD.command(spec, tmp_path)
    assert argv[:9] == ["h2load", "-c", "4", "-t", "4", "-m", "2", "-n", "4"]
    assert argv[argv.index("-N") + 1] == "250ms"


def test_command_h1_and_defaults_without_the_new_fields(tmp_path):
    argv = H2LOAD.command(Spec(url="http://h/x", concurrency=2, duration_s=1, streams=4, protocol="h1"), tmp_path)
    assert argv[:10] == ["h2load", "-c", "2", "-t", "1", "-m", "4", "-D", "1s", "--h1"]
    plain = H2LOAD.command(LoadSpec(url="http://h/x", concurrency=2, duration_s=1), tmp_path)
    assert plain[5:7] == ["-m", "1"] and "--h1" not in plain
    assert "--h1" not in H2LOAD.command(Spec(url="http://h/x", concurrency=2, duration_s=1, protocol="h2c"), tmp_path)


@pytest.mark.parametrize(
    "spec, message",
    [
        (Spec(url="http://h/x", duration_s=1), "concurrency"),
        (Spec(url="http://h/x", concurrency=2), "duration or a request count"),
        (Spec(url="http://h/x", concurrency=2, duration_s=1, protocol="h3"), "h2c or h1"),
    ],
)
def test_bad_specs(spec, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        H2LOAD.command(spec, tmp_path)


def test_sizing_progress_and_connections():
    spec = Spec(url="http://h/x", concurrency=2, duration_s=5)
    assert H2LOAD.sized(spec, 12.5, 1000.0).duration_s == 12.5
    assert H2LOAD.completed(b"progress: 10% done\n") is None
    assert H2LOAD.max_connections_per_process(1024) == 960


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load not installed (apt-get install nghttp2-client)")
def test_live_counted_run_against_the_h2c_responder(tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(RESPONDER), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("the h2c responder did not start")
                time.sleep(0.05)
        spec = Spec(url=f"http://127.0.0.1:{port}/hello", concurrency=2, requests=60, streams=4, timeout_s=5)
        proc = subprocess.run(H2LOAD.command(spec, tmp_path), capture_output=True, text=True, timeout=30)
        m = H2LOAD.parse(proc.stdout + proc.stderr, tmp_path)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert m.requests == 60 and m.errors.total == 0 and m.details["h2load"]["protocol"] == "h2c"
    assert m.distribution.count == 60 and m.latency_ms["p50"] <= m.latency_ms["p99.9"] <= m.latency_ms["max"]
