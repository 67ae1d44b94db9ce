"""results.json as types (harness.results.records): real files of both schemas read and written back, the one refusal of
records without attempts, the store writing the typed run, the end of a run's life, and overhead's ratios and report
from records that carry their runtime and round."""

import copy
import json
import shutil
from pathlib import Path

import pytest

from harness.calibrate import overhead
from harness.export import command
from harness.export.files import write_report
from harness.history import compare
from harness.judging import flags
from harness.measuring import lifecycle
from harness.report import model, run_conditions
from harness.results import records as results
from harness.results.records import SCHEMA, Record, ResultsError, Run
from harness.results.store import RunStore

FIXTURES = Path(__file__).parent / "fixtures"
V2 = FIXTURES / "results_v2" / "results.json"  # written before `schema` existed
V3 = FIXTURES / "results_v3" / "results.json"
OLDER = "was written by an older harness (records without their attempts); measure again"


def kept(original, written, where="") -> None:
    """Every field of `original` is in `written`, with the same value (new fields may be added)."""
    if isinstance(original, dict):
        assert isinstance(written, dict), where
        for key, value in original.items():
            assert key in written, f"{where}.{key} lost"
            kept(value, written[key], f"{where}.{key}")
    elif isinstance(original, list):
        assert isinstance(written, list) and len(written) == len(original), where
        for i, (a, b) in enumerate(zip(original, written)):
            kept(a, b, f"{where}[{i}]")
    else:
        assert written == original, f"{where}: {original!r} became {written!r}"


def test_a_schema_3_file_is_written_back_as_it_was_read():
    data = json.loads(V3.read_text())
    run = Run.from_dict(data)
    assert run.schema == 3 and SCHEMA == 5  # read as written: a schema 3 file stays one
    assert {(r.runtime, r.round) for r in run.records} == {("local", None)}
    assert any(a.round_position for r in run.records for a in r.attempts)
    assert any(a.sized_from_rps for r in run.records for a in r.attempts)
    assert run.to_dict() == data


def test_a_schema_2_file_reads_and_keeps_every_field():
    data = json.loads(V2.read_text())
    assert "schema" not in data
    run = Run.from_dict(data)
    assert run.schema == 2 and {(r.runtime, r.round) for r in run.records} == {(None, None)}
    written = run.to_dict()
    kept(data, written)
    assert set(written["records"][0]) - set(data["records"][0]) == {"runtime", "round"}
    assert Run.from_dict(written) == run  # and what is written reads back the same


def test_a_typed_record_has_todays_fields():
    (record,) = Run.from_dict(json.loads(V3.read_text())).records[:1]
    assert list(record.to_dict()) == [
        "server",
        "scenario",
        "run",
        "runtime",
        "round",
        "tool",
        "path",
        "concurrency",
        "threads",
        "load",
        "requests",
        "good_requests",
        "errors",
        "duration_s",
        "rps",
        "latency_ms",
        "failed",
        "attempts",
        "warmup",
        "summary",
        "samples",
        "flags",
        "ranked",
    ]
    assert list(record.attempts[0].to_dict())[:14] == [
        "attempt",
        "started_at",
        "tool_processes",
        "commands",
        "raw",
        "failed",
        "samples",
        "requests",
        "good_requests",
        "errors",
        "duration_s",
        "rps",
        "latency_ms",
        "round_position",
    ]


def test_records_without_attempts_are_refused_with_one_message(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"run_id": "old", "records": [{"server": "a", "scenario": "hello", "rps": 1.0}]}))
    with pytest.raises(ResultsError) as loading:
        results.load(path)
    assert str(loading.value) == f"{path} {OLDER}"
    for reader in (write_report, compare.load):  # the report and compare read through the same loader
        with pytest.raises(ResultsError, match="older harness"):
            reader(tmp_path)
    assert command.cmd_report(str(tmp_path)) == 2


def test_a_newer_schema_and_a_broken_file_are_refused(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": SCHEMA + 1, "records": []}))
    with pytest.raises(ResultsError, match=f"newer harness \\(schema {SCHEMA + 1}"):
        results.load(path)
    path.write_text("{")
    with pytest.raises(ResultsError, match="not valid JSON"):
        results.load(path)
    with pytest.raises(ResultsError, match="does not exist"):
        results.load(tmp_path / "nothing.json")


def test_the_v2_file_still_reports_and_compares(tmp_path):
    shutil.copy(V2, tmp_path / "results.json")
    assert {p.name for p in write_report(tmp_path)} >= {"report.html", "summary.md", "summary.csv"}
    table, _ = compare.compare(tmp_path, tmp_path)
    assert table.row_count == len(json.loads(V2.read_text())["records"])


def test_the_store_writes_the_typed_run_after_every_record(tmp_path):
    run = Run.from_dict(json.loads(V3.read_text()))
    records, run.records = run.records, []
    store = RunStore(run, root=tmp_path)
    assert (tmp_path / "latest").resolve() == store.dir.resolve()
    for n, record in enumerate(records, 1):
        store.put_record(record)
        assert len(json.loads(store.path.read_text())["records"]) == n
    store.update_conditions(finished_at="now")
    assert results.load(store.path) == run
    assert not list(store.dir.glob("*.tmp"))  # written to a temporary file, then renamed


def test_a_save_after_one_record_writes_the_same_text_as_the_whole_run_serialized_anew(tmp_path):
    """put_record serializes only the record put (the others' text kept from earlier saves): the file is still, byte
    for byte, the whole run's compact JSON, as records are replaced by ones with more attempts and compliance comes."""
    run = Run.from_dict(json.loads(V3.read_text()))
    records, run.records = run.records, []
    store = RunStore(run, root=tmp_path)

    def whole() -> str:
        return json.dumps(run.to_dict(), ensure_ascii=False, separators=(",", ":"))

    for record in records:
        partial = copy.deepcopy(record)
        partial.attempts = partial.attempts[:1]
        store.put_record(partial)
        assert store.path.read_text() == whole()
    store.set_compliance("rust", {"cases": 3, "passed": 3})
    for record in records:  # each replaced by its complete self: another object under the same key
        store.put_record(record)
        assert store.path.read_text() == whole()
    flags.evaluate(run)  # in place, on every record: a whole save writes it
    store.save()
    assert store.path.read_text() == whole() and results.load(store.path) == run


def finished_store(tmp_path, monkeypatch, report=None) -> RunStore:
    run = Run.from_dict(json.loads(V3.read_text()))
    for r in run.records:
        r.flags, r.ranked, r.summary = [], True, None
    store = RunStore(run, root=tmp_path)
    if report:
        monkeypatch.setattr(command, "cmd_report", report)
    lifecycle.finish_run(store)
    return store


def test_finish_run_closes_evaluates_saves_prints_and_reports(tmp_path, monkeypatch, capsys):
    store = finished_store(tmp_path, monkeypatch)
    written = results.load(store.path)
    assert written.conditions["finished_at"] and all(r.summary for r in written.records)
    assert written.conditions["ended"] == "complete"
    assert any(r.flags for r in written.records) and (store.dir / "report.html").exists()
    out = capsys.readouterr().out
    assert f"run {store.run.run_id} (quick profile, local runtime)" in out and f"results: {store.path}" in out


def test_a_run_closed_by_an_exception_says_how_it_ended_and_lets_it_through(tmp_path, monkeypatch, capsys):
    run = Run.from_dict(json.loads(V3.read_text()))
    store = RunStore(run, root=tmp_path)
    monkeypatch.setattr(command, "cmd_report", lambda run_dir: None)
    with pytest.raises(KeyboardInterrupt), lifecycle.closing(store):
        raise KeyboardInterrupt("SIGINT")
    assert results.load(store.path).conditions["ended"] == "interrupted (SIGINT)"
    with pytest.raises(RuntimeError), lifecycle.closing(store):
        raise RuntimeError("the upstream went away\nand more")
    assert results.load(store.path).conditions["ended"] == "failed: RuntimeError: the upstream went away"
    assert "this run ended early, failed: RuntimeError: the upstream went away" in capsys.readouterr().out
    assert (
        "(failed: RuntimeError: the upstream went away)"
        in dict(run_conditions.items(results.load(store.path)))["finished"]
    )
    del run.conditions["finished_at"]  # a run still going, or one whose harness was killed: nothing closed it
    assert dict(run_conditions.items(run))["finished"] == "- (not closed: still running, or its harness was killed)"


def test_a_report_that_fails_does_not_lose_the_results(tmp_path, monkeypatch, capsys):
    def broken(run_dir):
        raise ValueError("no font")

    store = finished_store(tmp_path, monkeypatch, report=broken)
    assert "the report could not be written (no font); results.json is complete" in capsys.readouterr().out
    assert results.load(store.path).conditions["finished_at"]


# -- overhead: records carry runtime and round ------------------------------------------------------------------------


def overhead_record(template: Record, runtime: str, round_no: int, rps: float, errors: int = 0) -> Record:
    r = copy.deepcopy(template)
    r.runtime, r.round, r.rps, r.summary = runtime, round_no, rps, None
    r.errors.other = errors
    for a in r.attempts:
        a.rps = rps
    return r


def overhead_run() -> Run:
    run = Run.from_dict(json.loads(V3.read_text()))
    rust = next(r for r in run.records if (r.server, r.scenario) == ("rust", "hello"))
    figures = [
        ("docker", 1, 95.0, 0),
        ("local", 1, 100.0, 0),
        ("docker", 2, 90.0, 0),
        ("local", 2, 100.0, 0),
        ("docker", 3, 99.0, 3),
        ("local", 3, 100.0, 0),
    ]  # round 3: errors on docker, no ratio
    run.records = [overhead_record(rust, *f) for f in figures]
    return run


def test_overhead_ratios_pair_each_docker_round_with_its_local_round():
    rust = overhead.ratios(overhead_run().records, 3)["rust"]
    assert rust["ratio_per_round"] == {1: 0.95, 2: 0.9}
    assert rust["ratio_median"] == 0.925
    assert rust["docker_rps"] == [95.0, 90.0, None] and rust["local_rps"] == [100.0, 100.0, 100.0]
    assert rust["ratio_of_medians"] == 0.925
    assert rust["path"] == "/hello"


def test_overhead_records_keep_their_run_label_and_are_grouped_by_runtime_and_round(tmp_path):
    run = overhead_run()
    assert {r.run for r in run.records} == {"c100"}
    (tmp_path / "results.json").write_text(json.dumps(run.to_dict()))
    write_report(tmp_path)
    flags.evaluate(run)
    groups = [g.run for s in model.build(run).scenarios for g in s.groups]
    assert groups == ["c100 docker-1", "c100 local-1", "c100 docker-2", "c100 local-2", "c100 docker-3", "c100 local-3"]
    assert "### hello · c100 docker-2" in (tmp_path / "summary.md").read_text()
    compared = compare.rows(run, run)
    assert len(compared) == 6 and all(row.a is row.b for row in compared)
