"""`make report` and `make compare` on any results.json (issue 43): a damaged, hand-edited or hostile file ends in one
line naming it and exit status 2, never a traceback, and writes nothing outside its run's folder. A fuzz over mutated
copies of recorded runs, and the cases the issue names one by one (the latter through the real command line)."""

import base64
import copy
import json
import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from harness.basics.distribution import problem
from harness.basics.paths import REPO
from harness.export import charts, command
from harness.history import compare
from harness.results import readable
from harness.results.records import ResultsError

LOADGEN = Path(__file__).resolve().parents[1]
RECORDED = sorted((REPO.parent / "shared" / "runs").glob("*/results.json")) + sorted(
    (LOADGEN / "tests" / "fixtures").glob("bench_*/results.json")
)
ODD = [
    None,
    "",
    "../../x",
    "/tmp/x",
    "a/../../b",
    -1,
    0,
    3.5,
    1e308,
    2**70,
    True,
    [],
    {},
    [1],
    {"a": 1},
    "x" * 300,
    "HISTFAAAAA==",
    "ÿ\u202e",
    [[[[]]]],
]


def bomb_histogram() -> str:
    payload = zlib.compress(b"\0" * 20_000_000)
    return base64.b64encode(struct.pack(">II", 0x1C849314, len(payload)) + payload).decode()


def sliced(path: Path, records: int = 5) -> dict:
    data = json.loads(path.read_text())
    data["records"] = data["records"][:records]
    return data


def places(value, at=()):
    """Every (path) inside a JSON value, lists cut to their first 3 items (the fuzz's reach, not the whole file)."""
    yield at
    items = value.items() if isinstance(value, dict) else enumerate(value[:3]) if isinstance(value, list) else ()
    for k, v in items:
        yield from places(v, (*at, k))


def mutated(data: dict, rng: random.Random, where: list) -> dict:
    out = copy.deepcopy(data)
    for _ in range(rng.randint(1, 3)):
        at = rng.choice(where)
        parent = out
        try:
            for k in at[:-1]:
                parent = parent[k]
            if isinstance(parent, dict) and rng.random() < 0.2:
                del parent[at[-1]]
            else:
                parent[at[-1]] = rng.choice([*ODD, bomb_histogram()] if at[-1] == "latency_histogram" else ODD)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation of this copy took the place away
    return out


def fake_charts(model, folder: Path) -> dict[str, Path]:
    """charts.write's file names without matplotlib's drawing (seconds a case): each chart an empty file."""
    made = {}
    for key, _, args in charts._jobs(model, folder):
        args[-1].parent.mkdir(parents=True, exist_ok=True)
        args[-1].touch()
        made[key] = args[-1]
    return made


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.mark.skipif(not RECORDED, reason="no recorded run to mutate")
def test_a_few_hundred_mutated_results_files_report_or_refuse_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(charts, "write", fake_charts)
    rng = random.Random(43)
    sources = [sliced(p) for p in RECORDED]
    reach = [[p for p in places(d) if p] for d in sources]
    outcomes = {0: 0, 2: 0}
    for case in range(240):
        which = case % len(sources)
        run = tmp_path / "runs" / f"case{case}"
        run.mkdir(parents=True)
        (run / "results.json").write_text(json.dumps(mutated(sources[which], rng, reach[which])))
        status = command.cmd_report(str(run))
        assert status in (0, 2)
        outcomes[status] += 1
        compared = compare.cmd_compare(str(run), str(run))
        assert compared in (0, 2)
        said = capsys.readouterr()
        assert "Traceback" not in said.out + said.err
        if status == 2:
            assert said.out.count("error:") == 1 + (compared == 2) and str(run) in said.out  # one line each, naming it
    outside = {p for p in files_under(tmp_path) if not p.is_relative_to(tmp_path / "runs")}
    inside_a_run = {
        p for p in files_under(tmp_path / "runs") if p.relative_to(tmp_path / "runs").parts[0].startswith("case")
    }
    assert not outside and inside_a_run == files_under(tmp_path / "runs")
    assert outcomes[0] > 20 and outcomes[2] > 20, outcomes  # the fuzz reached both: reports written and files refused


def report_of(data: dict, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """`python -m harness report` (the real command, charts and all) on `data` in a run folder under tmp_path/a/b."""
    run = tmp_path / "a" / "b" / "run"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps(data) if isinstance(data, dict) else data)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "report", str(run)], cwd=LOADGEN, capture_output=True, text=True, timeout=300
    )
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc, run


@pytest.fixture(scope="module")
def small_run():
    if not RECORDED:
        pytest.skip("no recorded run")
    return sliced(RECORDED[-1], records=2)


@pytest.mark.integration
def test_a_scenario_named_to_leave_the_folder_writes_nothing_outside_it(small_run, tmp_path):
    data = copy.deepcopy(small_run)
    for record in data["records"]:
        record["scenario"] = "../../x"
    proc, run = report_of(data, tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert files_under(tmp_path) - files_under(run) == set()
    assert any(p.suffix == ".png" for p in (run / "charts").iterdir())


@pytest.mark.integration
@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda d: d.update(calibration=[{}]), "calibration/0"),
        (lambda d: d["records"][0].update(latency_histogram="HISTF" + "A" * 40), "latency histogram"),
        (lambda d: d["records"][0].update(latency_histogram=bomb_histogram()), "decompresses past"),
        (lambda d: d["conditions"].update(deep=json.loads("[" * 3000 + "]" * 3000)), "not valid JSON"),
        (lambda d: d["conditions"].update(deep=json.loads("[" * 40 + "]" * 40)), "nested deeper than"),
        (lambda d: d["servers"]["rust"].update(stack=["a list"]), "servers/rust/stack"),
    ],
)
def test_each_damage_the_issue_names_is_one_line_and_status_2(small_run, tmp_path, damage, said):
    data = copy.deepcopy(small_run)
    data["servers"].setdefault("rust", {"stack": "x"})
    text = None
    try:
        damage(data)
    except RecursionError:  # json.loads of 3000 levels here: write the text itself
        text = json.dumps(data)[:-1] + ', "deep": ' + "[" * 3000 + "]" * 3000 + "}"
    proc, _ = report_of(text or data, tmp_path)
    assert proc.returncode == 2 and said in proc.stdout and proc.stdout.count("\n") == 1, proc.stdout


@pytest.mark.integration
def test_a_partial_versus_section_skips_its_page_and_the_report_stands(small_run, tmp_path):
    data = copy.deepcopy(small_run)
    data["conditions"]["versus"] = {"results": [{"scenario": "hello", "run": "c64"}]}  # no builds, no resolution
    proc, run = report_of(data, tmp_path)
    assert proc.returncode == 0 and "no versus page" in proc.stdout, proc.stdout
    assert (run / "report.html").is_file() and not (run / "versus.html").exists()
    data["conditions"]["versus"]["results"][0]["scenario"] = "../../../../x"
    proc, run = report_of(data, tmp_path / "again")
    assert proc.returncode == 0 and "not a plain name" in proc.stdout
    assert files_under(tmp_path / "again") - files_under(run) == set()


def test_a_histogram_is_checked_before_it_is_decompressed():
    assert problem(bomb_histogram()).startswith("decompresses past")
    assert problem("HISTF!!!") == "is not base64"
    for recorded in RECORDED[-1:]:
        histograms = [r["latency_histogram"] for r in sliced(recorded)["records"] if r.get("latency_histogram")]
        assert all(problem(h) is None for h in histograms)


def test_every_recorded_run_reads(tmp_path):
    for path in RECORDED:
        assert readable.load(path).records
    (tmp_path / "results.json").write_text("{")
    with pytest.raises(ResultsError, match="not valid JSON"):
        readable.load(tmp_path / "results.json")


def test_compare_across_the_schema_that_changed_abs_percentiles_calls_them_not_comparable(tmp_path):
    """ab's p99 was whole ms before schema 4: the same measurement written by a schema 5 harness with its p99 1.38×
    (1 ms read 1.38 ms) is not a significant change, and the notes say why; wrk's p99 still compares."""
    source = json.loads((LOADGEN / "tests" / "fixtures" / "bench_20261123" / "results.json").read_text())
    newer = copy.deepcopy(source)
    newer["schema"] = 5
    for p99 in (r["summary"]["p99"] for r in newer["records"] if r["summary"] and r["summary"]["p99"]):
        p99.update({k: p99[k] * 1.38 for k in ("median", "min", "max")})
        if p99["ci"]:
            p99["ci"].update(low=p99["ci"]["low"] * 1.38, high=p99["ci"]["high"] * 1.38)
    for name, data in (("a", source), ("b", newer)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(data))
    _, notes = compare.compare(tmp_path / "a", tmp_path / "b")
    rows = compare.rows(readable.load(tmp_path / "a" / "results.json"), readable.load(tmp_path / "b" / "results.json"))
    ab = [r for r in rows if r.a and r.a.tool == "ab" and r.p99 and r.p99.delta]
    wrk = [r for r in rows if r.a and r.a.tool == "wrk" and r.p99 and r.p99.significant]
    assert ab and all(not r.p99.comparable and r.p99.significant is None for r in ab)
    assert wrk  # the same 1.38× on wrk's µs percentiles is a change
    assert any("schema 3, B schema 5: ab's percentiles were whole ms before schema 4" in n for n in notes)
