"""results.json against its published JSON Schema (loadgen/results.schema.json): every recorded run under fixtures/,
and the results.json a real run writes (nginx on loopback, measured by ab and wrk through the harness's command line),
whose attempts and records carry their whole latency distributions. The run starts nginx on port 9210."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from harness.basics.distribution import Distribution
from harness.basics.paths import RESULTS

LOADGEN = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((LOADGEN / "results.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)
RECORDED = sorted((LOADGEN / "tests" / "fixtures").glob("*/results.json"))


def problems(data: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in VALIDATOR.iter_errors(data)]


def test_the_schema_is_a_valid_json_schema():
    Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.parent.name)
def test_recorded_runs_validate(path):
    assert not problems(json.loads(path.read_text()))


def test_the_schema_refuses_what_the_harness_never_writes():
    data = json.loads(RECORDED[0].read_text())
    record = data["records"][0]
    record["rps"] = "fast"
    record["attempts"][0]["latency_histogram"] = "not a histogram"
    record["unknown_field"] = 1
    found = problems(data)
    assert len(found) == 3 and any("fast" in p for p in found) and any("HISTF" in p for p in found)


# what readable.py's compiled validator (fastjsonschema, draft 7) reads as 2020-12 does
SHARED_KEYWORDS = {"$schema", "$ref", "$defs", "title", "description", "type", "properties", "required", "items"}
SHARED_KEYWORDS |= {"additionalProperties", "propertyNames", "minimum", "exclusiveMinimum", "maximum", "enum"}
SHARED_KEYWORDS |= {"oneOf", "pattern"}
VALUES = {"enum", "required", "title", "description", "pattern", "$ref", "$schema", "type"}  # no schema inside


def _keywords(schema: object) -> set[str]:
    """Every keyword used anywhere in `schema` (a property's name is not one)."""
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        inside = value.values() if key in {"properties", "$defs"} else [] if key in VALUES else [value]
        found |= set().union(set(), *(_keywords(v) for v in inside))
    return found


def test_the_schema_uses_only_keywords_its_fast_validator_reads_as_2020_12_does():
    assert _keywords(SCHEMA) <= SHARED_KEYWORDS, _keywords(SCHEMA) - SHARED_KEYWORDS


def test_the_harness_reader_refuses_what_the_reference_validator_refuses(tmp_path):
    from harness.results import readable
    from harness.results.records import ResultsError

    data = json.loads(RECORDED[0].read_text())
    data["records"][0]["rps"] = "fast"
    assert problems(data)
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError, match="results schema at records/0/rps"):
        readable.load(tmp_path / "results.json")
    assert readable.load(RECORDED[0]).records  # and reads what it accepts


@pytest.mark.integration
def test_a_run_writes_results_that_validate_with_whole_distributions():
    run_id = f"test-schema-{os.getpid()}"
    argv = [
        sys.executable,
        "-m",
        "harness",
        "--ports",
        "nginx=9210",
        "--servers",
        "nginx",
        "--run-id",
        run_id,
        "run",
        "backend hello",
    ]
    env = {**os.environ, "RUNTIME": "local", "REPEAT": "2"}
    proc = subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((RESULTS / run_id / "results.json").read_text())
    assert data["schema"] == 5 and not problems(data)
    tools = {r["tool"] for r in data["records"]}
    assert tools == {"ab", "wrk"}
    for record in data["records"]:
        measured = [a for a in record["attempts"] if not a["failed"]]
        assert len(measured) == 2
        parts = [Distribution.decode(a["latency_histogram"]) for a in measured]
        whole = Distribution.decode(record["latency_histogram"])
        assert whole.count == sum(p.count for p in parts)  # the record's: every attempt's requests together
        for attempt, part in zip(measured, parts):
            assert attempt["latency_ms"]["p99"] == part.percentile_ms(99)
            # wrk's spectrum reaches p99.9; ab's top 1 % slice comes request by request from its -g file
            assert attempt["latency_ms"]["p99.9"] == part.percentile_ms(99.9)
        assert record["latency_ms"]["p99.9"] is not None
