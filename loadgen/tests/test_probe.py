"""The compliance probe (harness/conformance/) tested against two references: tests/responders/strict_http11.py, which takes
the strict side of every choice the RFC leaves open and passes every case, and tests/responders/lenient_http11.py,
which takes the other side of each and must fail none (a case that fails it fails an answer the RFC permits). With
chosen faults, the strict one fails exactly the cases those faults break, across categories; faults the RFC permits
(an invalid field name skipped, HTTP/2.0 read as HTTP/1.1) warn and fail nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.basics.http1 import Response
from harness.basics.paths import RESULTS
from harness.conformance import suite, verdicts
from harness.conformance.h2c import cases as h2spec_cases
from harness.conformance.h2c import reproduced
from harness.conformance.requirements import REQUIREMENTS
from harness.conformance.wire import Reply, Timing
from harness.report.compliance import score_text

sys.path.insert(0, str(Path(__file__).parent / "responders"))
import lenient_http11  # noqa: E402
import strict_http11  # noqa: E402

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = Path(__file__).resolve().parents[1]
FAST = Timing(answer_s=1.0, settle_s=0.3)
# each fault of the reference, and the cases it must make fail (no other case may)
FAILS = {
    "host-optional": {"HO-01", "HO-10"},
    "cl-wins-over-te": {"SM-01", "SM-02", "TE-21", "DS-01", "DS-02"},
    "lenient-chunk-size": {"TE-07", "TE-08"},
    "plus-content-length": {"CL-05", "DS-12"},
    "ignores-connection-close": {"CN-01", "CN-05"},
    "no-date": {"RC-03", "RC-04"},
    "head-with-body": {"RC-01"},
    "get-body-ignored": {"SM-09", "DS-08"},
}
# faults the RFC permits: they warn on these cases (lenient) and fail none
PERMITTED = {"empty-field-name": {"HD-05"}, "http2-as-http11": {"RL-08"}}


def probed(faults: frozenset[str]) -> list[dict]:
    server = strict_http11.serve(faults)
    try:
        return suite.run("127.0.0.1", server.server_address[1], timing=FAST)
    finally:
        server.shutdown()
        server.server_close()


def test_every_case_cites_its_sentence_and_takes_its_level_from_it():
    assert len(suite.CASES) >= 150
    assert len({c.id for c in suite.CASES}) == len(suite.CASES)
    for case in suite.CASES:
        first = REQUIREMENTS[case.cites[0]]
        assert case.rfc == first.section and case.level == first.level, case.id
        assert case.rfc.startswith("RFC ") and "§" in case.rfc and case.passes, case.id
        # the keyword that sets the level is in the quoted sentence itself, or the requirement says where it comes from
        assert case.level in first.quote or first.why, case.id
    assert sum(1 for c in suite.CASES if c.then) >= 10 and sum(1 for c in suite.CASES if c.check) >= 8


def test_a_correct_server_passes_every_case():
    results = probed(frozenset())
    assert [(c["id"], c["got"]) for c in results if c["verdict"] != "pass"] == []
    assert all(c["requirement"][0]["quote"] for c in results)


def test_a_lenient_but_conforming_server_fails_no_case():
    server = lenient_http11.serve()
    try:
        results = suite.run("127.0.0.1", server.server_address[1], timing=FAST)
    finally:
        server.shutdown()
        server.server_close()
    assert [(c["id"], c["got"]) for c in results if c["verdict"] == "fail"] == []
    verdicts_seen = {c["verdict"] for c in results}
    assert {"warn-lenient", "warn-strict"} <= verdicts_seen  # it took the other side, and it was seen


@pytest.mark.parametrize("fault", sorted(PERMITTED))
def test_a_fault_the_rfc_permits_warns_and_fails_nothing(fault):
    results = probed(frozenset({fault}))
    assert {c["id"] for c in results if c["verdict"] == "fail"} == set()
    assert {c["id"] for c in results if c["verdict"] == "warn-lenient"} == PERMITTED[fault]


def test_a_server_with_chosen_faults_fails_exactly_those_cases():
    results = probed(frozenset(FAILS))
    failed = {c["id"] for c in results if c["verdict"] == "fail"}
    assert failed == set().union(*FAILS.values())
    assert all("[smuggled]" in c["got"] for c in results if c["id"] == "DS-02")
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


def test_replies_are_described_in_the_patterns_words():
    assert Reply((Response(400),), True).describe() == "400+close" and Reply((), False).describe() == "none"
    assert Reply((Response(200),), False, "bad-framing").describe() == "bad-framing"


@pytest.mark.parametrize(
    "level, got, expected",
    [
        ("MUST", "400+close", "pass"),
        ("MUST", "200+open", "warn-lenient"),
        ("MUST", "close", "warn-strict"),
        ("MUST", "500+close", "fail"),
        ("SHOULD", "500+close", "warn-strict"),  # a SHOULD is never failed: refused, it warns strict
        ("SHOULD", "404+open", "warn-lenient"),
        ("SHOULD", "bad-framing", "fail"),  # an unreadable response fails any case
        ("MAY", "200 200[smuggled]+open", "fail"),  # so does a smuggled request answered
    ],
)
def test_verdict_kinds(level, got, expected):
    assert verdicts.verdict(level, (("400+close",), ("200",), ("close",)), got) == expected


def test_counts_and_score():
    cases = [
        {"category": "a", "verdict": "pass", "level": "MUST"},
        {"category": "a", "verdict": "fail", "level": "MUST"},
        {"category": "b", "verdict": "warn-lenient", "level": "MAY"},
        {"category": "h2c-http2", "verdict": "fail", "level": "MUST"},
    ]
    counted = verdicts.counts(cases)
    assert counted["a"] | {} == {
        "pass": 1, "warn-lenient": 0, "warn-strict": 0, "fail": 1, "skip": 0, "warn": 0, "must_fail": 1, "cases": 2
    }  # fmt: skip
    assert counted["all"]["cases"] == 3 and counted["h2c"]["cases"] == 1 and counted["all"]["must_fail"] == 1
    assert verdicts.score({"counts": counted}) == pytest.approx(1 / 3)


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


def test_an_h2spec_failure_that_passes_when_run_again_alone_is_a_skip_that_says_so():
    """Matched by section and case, not by number: a case run alone is number 1 of its section in the second report."""
    suite = """<testsuites><testsuite package="http2/6.9.1"><testcase package="http2/6.9.1" classname="Sends one">
    </testcase><testcase package="http2/6.9.1" classname="Sends two"><failure>Timeout</failure></testcase>
    <testcase package="http2/6.9.1" classname="Sends three"><failure>RST_STREAM Frame</failure></testcase>
    </testsuite></testsuites>"""
    alone = """<testsuites><testsuite package="http2/6.9.1"><testcase package="http2/6.9.1" classname="Sends three">
    </testcase><testcase package="http2/6.9.1" classname="Sends two"><failure>Timeout</failure></testcase>
    </testsuite></testsuites>"""
    found = reproduced(h2spec_cases(suite), alone)
    assert [(c["id"], c["verdict"]) for c in found] == [
        ("http2/6.9.1/1", "pass"),
        ("http2/6.9.1/2", "fail"),
        ("http2/6.9.1/3", "skip"),
    ]
    assert found[2]["got"].startswith("not reproduced: failed within the whole suite (RST_STREAM Frame)")
    assert reproduced(h2spec_cases(suite), None) == h2spec_cases(suite)  # no second report: as found


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
        assert entry["counts"]["host"]["fail"] == 2 and entry["counts"]["host"]["must_fail"] == 2
        assert entry["version"] == "unknown"  # its manifest gives no `version` command
        assert "HTTP compliance" in (folder / "report.html").read_text()
        assert "fails MUST HO-01" in proc.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_ranking_column_names_must_failures_first_and_h2c_apart():
    cases = (
        [{"category": "host", "verdict": "fail", "level": "MUST"}] * 2
        + [{"category": "smuggling", "verdict": "pass", "level": "MUST"}] * 6
        + [{"category": "headers", "verdict": "warn-lenient", "level": "SHOULD"}] * 2
        + [{"category": "h2c-http2", "verdict": "pass", "level": "MUST"}] * 9
        + [{"category": "h2c-http2", "verdict": "fail", "level": "MUST"}]
    )
    entry = {"counts": verdicts.counts(cases), "cases": cases}
    assert score_text(entry) == "2 MUST fail (host) · 60 % passed · h2c 90 %"
    no_must = {"counts": verdicts.counts(cases[2:8]), "cases": cases[2:8]}
    assert score_text(no_must) == "no MUST fail · 100 % passed"
    assert score_text(None) == "-"


def test_make_bench_probes_each_server_once_and_not_its_twin(tmp_path):
    from types import SimpleNamespace

    from harness.results.records import Run
    from harness.results.store import RunStore
    from harness.servers.probing import wanted_in_bench

    store = RunStore(Run("r", {}, {}, {}, [], compliance={}), root=tmp_path)
    rust, twin = SimpleNamespace(name="rust", twin_of=None), SimpleNamespace(name="rust-twin", twin_of="rust")
    assert wanted_in_bench(store, rust) and not wanted_in_bench(store, twin)
    store.set_compliance("rust", {"cases": [], "counts": {}})
    assert not wanted_in_bench(store, rust)
    assert json.loads(store.path.read_text())["compliance"] == {"rust": {"cases": [], "counts": {}}}
    assert not wanted_in_bench(RunStore(Run("s", {}, {}, {}, []), root=tmp_path), rust)  # make run: no probe
