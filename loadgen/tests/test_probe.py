"""The compliance probe (harness/probe/) tested against a reference (tests/responders/strict_http11.py): right, it
passes every case, so each case's expected outcome is one a correct server gives; with chosen faults, the probe
reports failing exactly the cases those faults break, across categories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.basics.paths import RESULTS
from harness.probe import suite, verdicts
from harness.probe.h2c import cases as h2spec_cases
from harness.probe.wire import Reply, Timing, parse_responses
from harness.report.compliance import score_text

sys.path.insert(0, str(Path(__file__).parent / "responders"))
import strict_http11  # noqa: E402

LOADGEN = Path(__file__).resolve().parents[1]
FAST = Timing(answer_s=1.0, settle_s=0.3)
# each fault of the reference, and the cases it must make fail (no other case may)
FAILS = {
    "host-optional": {"HO-01"},
    "cl-wins-over-te": {"SM-01", "SM-02", "TE-21"},
    "lenient-chunk-size": {"TE-07", "TE-08"},
    "plus-content-length": {"CL-05"},
    "ignores-connection-close": {"CN-01", "CN-05"},
    "empty-field-name": {"HD-05"},
    "http2-as-http11": {"RL-08"},
}


def probed(faults: frozenset[str]) -> list[dict]:
    server = strict_http11.serve(faults)
    try:
        return suite.run("127.0.0.1", server.server_address[1], timing=FAST)
    finally:
        server.shutdown()
        server.server_close()


def test_the_suite_has_at_least_80_cases_each_with_its_rfc_section_and_level():
    assert len(suite.CASES) >= 80
    assert len({c.id for c in suite.CASES}) == len(suite.CASES)
    for case in suite.CASES:
        assert case.rfc.startswith("RFC ") and "§" in case.rfc, case.id
        assert case.level in ("MUST", "SHOULD", "MAY") and case.passes, case.id


def test_a_correct_server_passes_every_case():
    results = probed(frozenset())
    assert [(c["id"], c["got"]) for c in results if c["verdict"] != "pass"] == []


def test_a_server_with_chosen_faults_fails_exactly_those_cases():
    results = probed(frozenset(FAILS))
    failed = {c["id"] for c in results if c["verdict"] == "fail"}
    assert failed == set().union(*FAILS.values())
    assert len({c["category"] for c in results if c["verdict"] == "fail"}) >= 6


@pytest.mark.parametrize("fault", sorted(FAILS))
def test_each_fault_alone_fails_its_own_cases(fault):
    failed = {c["id"] for c in probed(frozenset({fault})) if c["verdict"] == "fail"}
    assert failed == FAILS[fault]


@pytest.mark.parametrize(
    "pattern, got, expected",
    [
        ("400", "400+close", True),
        ("400+close", "400+open", False),
        ("handled", "405+open", True),
        ("handled", "400+open", False),
        ("4xx", "431+close", True),
        ("refused", "505+close", True),
        ("refused", "405+open", False),
        ("200 200+close", "200 200+close", True),
        ("200", "200 404+open", False),
        ("close", "close", True),
        ("none", "close", False),
        ("400", "none", False),
    ],
)
def test_patterns(pattern, got, expected):
    assert verdicts.matches(pattern, got) is expected


def test_responses_are_read_by_their_framing():
    two = (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\n"
    )
    assert parse_responses(two) == ([200, 404], True, False)
    assert parse_responses(b"\x00\x00\x00\x00\x00\x04") == ([], True, True)
    assert Reply((400,), True).describe() == "400+close" and Reply((), False).describe() == "none"


def test_counts_and_score():
    cases = [
        {"category": "a", "verdict": "pass", "level": "MUST"},
        {"category": "a", "verdict": "fail", "level": "MUST"},
        {"category": "b", "verdict": "warn", "level": "MAY"},
    ]
    counted = verdicts.counts(cases)
    assert counted["a"] == {"pass": 1, "warn": 0, "fail": 1, "cases": 2}
    assert counted["all"]["cases"] == 3
    assert verdicts.score({"counts": counted}) == pytest.approx(2 / 3)


def test_h2spec_reports_become_cases():
    junit = """<testsuites><testsuite name="6.5. SETTINGS" package="http2/6.5" id="http2/6.5" tests="2" skipped="0"
    failures="1" errors="0"><testcase package="http2/6.5" classname="Sends a SETTINGS frame with ACK" time="0.1">
    <failure>Expected: GOAWAY Frame Actual: PING Frame (opaque_data:h2spec\x00\x00)</failure></testcase><testcase package="http2/6.5"
    classname="Sends a SETTINGS frame" time="0.1"></testcase></testsuite></testsuites>"""
    found = h2spec_cases(junit)
    assert [(c["id"], c["rfc"], c["verdict"]) for c in found] == [
        ("http2/6.5/1", "RFC 7540 §6.5", "fail"),
        ("http2/6.5/2", "RFC 7540 §6.5", "pass"),
    ]
    assert "GOAWAY" in found[0]["got"]


def test_make_probe_writes_a_run_folder_and_its_report(tmp_path):
    """`make probe` end to end on the reference, started by the harness like any server, with one fault."""
    folder = tmp_path / "servers" / "strict"
    folder.mkdir(parents=True)
    responder = Path(__file__).parent / "responders" / "strict_http11.py"
    (folder / "manifest.toml").write_text(
        f'[[server]]\nname = "strict"\nport = 18399\nroutes = ["id", "hello"]\nbuild = "true"\n'
        f'run = ["{sys.executable}", "{responder}", "{{port}}", "host-optional"]\n'
    )
    run_id = f"test-probe-{os.getpid()}"
    env = {**os.environ, "BENCH_SERVERS_DIR": str(tmp_path / "servers"), "TWIN": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "--runtime", "local", "--servers", "strict", "--run-id", run_id, "probe"],
        cwd=LOADGEN,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if "another harness command is running" in proc.stdout + proc.stderr:
        pytest.skip("another harness command holds the lock")
    folder = RESULTS / run_id
    try:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        entry = json.loads((folder / "results.json").read_text())["compliance"]["strict"]
        assert [c["id"] for c in entry["cases"] if c["verdict"] != "pass"] == ["HO-01", "HO-10"]
        assert entry["counts"]["host"] == {"pass": 10, "warn": 1, "fail": 1, "cases": 12}
        assert "HTTP compliance" in (folder / "report.html").read_text()
        assert "fails MUST HO-01" in proc.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_ranking_column_names_http1_failures_apart_from_h2c():
    counts = {
        "smuggling": {"pass": 8, "warn": 0, "fail": 5, "cases": 13},
        "host": {"pass": 11, "warn": 0, "fail": 1, "cases": 12},
        "h2c-http2": {"pass": 90, "warn": 0, "fail": 4, "cases": 94},
        "all": {"pass": 109, "warn": 0, "fail": 10, "cases": 119},
    }
    assert score_text({"counts": counts, "cases": []}) == "92 % · 6 fail (5 smuggling) · h2c 4 fail"
    assert score_text(None) == "-"


def test_make_bench_probes_each_server_once_and_not_its_twin(tmp_path):
    from types import SimpleNamespace

    from harness.measuring.probing import wanted_in_bench
    from harness.results.records import Run
    from harness.results.store import RunStore

    store = RunStore(Run("r", {}, {}, {}, [], compliance={}), root=tmp_path)
    rust, twin = SimpleNamespace(name="rust", twin_of=None), SimpleNamespace(name="rust-twin", twin_of="rust")
    assert wanted_in_bench(store, rust) and not wanted_in_bench(store, twin)
    store.set_compliance("rust", {"cases": [], "counts": {}})
    assert not wanted_in_bench(store, rust)
    assert json.loads(store.path.read_text())["compliance"] == {"rust": {"cases": [], "counts": {}}}
    assert not wanted_in_bench(RunStore(Run("s", {}, {}, {}, []), root=tmp_path), rust)  # make run: no probe
