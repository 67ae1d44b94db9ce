"""A results.json read for any command that takes a file it did not write (`make report`, `make compare`, `make
history`): a copied, hand-edited or hostile one ends in one ResultsError naming the file and what is wrong, never a
traceback, and nothing in it reaches a command line, a path or a chart unchecked.

The API, stable for every reader: `load(path, attempts=True) -> Run` (a ResultsError in one line otherwise),
`loads(raw)` (its parse, for files of the harness's own such as make history's cache);
`MAX_BYTES`, `MAX_DEPTH`, `MAX_INT_DIGITS` and `GIT_COMMIT` say the bounds. What `load` checks, in order:
- size: at most MAX_BYTES, read through one open file (`MAX_BYTES + 1` bytes at most: a file that grows meanwhile is
  refused all the same, and no size checked first is trusted later);
- with attempts=False (`make history`, which reads each record's summary only), every record's attempts and
  histogram are dropped here, unread: the checks below hold for what is kept, which is all the caller sees;
- integers of at most MAX_INT_DIGITS digits (Python refuses to parse past 4,300, and a long one overflows a chart) and
  JSON nested no deeper than MAX_DEPTH, in one walk without recursion;
- the types of records.py, then the published JSON Schema (loadgen/results.schema.json) and the sections the report
  reads (REPORTED_SECTIONS), every latency histogram decodable within its bound (harness.basics.distribution.problem);
- values that reach a command line: `conditions.git_commit` is a commit (GIT_COMMIT: 7 to 40 hex digits, `-dirty`
  after it where the tree had changes) or null, never an option git would read (`make history` runs `git log` on it).
A record's names (server, scenario, run) may still hold anything: the charts' file names are slugs of them
(harness.report.model.slug).

The schemas are compiled once into Python by fastjsonschema (drafts 4 to 7): the published schema uses only keywords
those drafts share with its 2020-12 (tests/test_results_schema.py holds that), and jsonschema's interpreter took about
a second per bench's file, fastjsonschema a twentieth of that, and its quick check without paths a third of that
again. The file is parsed by orjson, and by the json module where orjson refuses it (for the json module's words)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import fastjsonschema  # type: ignore[import-untyped]
import orjson

from harness.basics import distribution
from harness.basics.paths import REPO
from harness.results.records import ResultsError, Run

SCHEMA_FILE = REPO / "loadgen" / "results.schema.json"
# a whole bench's results.json is about 1.2 MB (a seed-profile bench with its nine weather levels a few MB): 64 MB is
# room for fifty times that, and bounds what reading one takes (JSON's objects take about 10 times the file's size)
MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 24  # the harness writes at most about 10 levels (a versus result's intervals)
MAX_INT_DIGITS = 19  # the largest figure the harness writes (bytes, ns) is below 2**63, 19 digits
_INT_BOUND = 10**MAX_INT_DIGITS
GIT_COMMIT = re.compile(r"[0-9a-f]{7,40}(-dirty)?")  # what measuring/conditions.py writes: `git rev-parse --short`
_validators: list[tuple[Any, Any]] = []  # compiled on first use: the published schema, REPORTED_SECTIONS

# what the report reads of the free-form sections (harness/report/run_conditions.py, html.py, cells.py), as a schema of
# its own: the published one leaves `conditions` and `servers` open to what each harness records
_NUMBER, _TEXT, _INT = {"type": ["number", "null"]}, {"type": ["string", "null"]}, {"type": ["integer", "null"]}
_IDS = {"type": "array", "items": {"type": "integer"}}
_OBJECT = {"type": ["object", "null"]}
_CPUS = {"type": ["array", "object", "null"], "items": {"type": "integer"}, "additionalProperties": _IDS}
_PLACEMENT = {
    "type": ["object", "null"],
    "properties": {
        "ulimits": {"type": ["array", "null"], "items": {"type": "object"}},
        "cpus": _NUMBER,
        "memory_bytes": _NUMBER,
        "allowed_cpus": _CPUS,
        "image_bytes": _NUMBER,
    },
}
REPORTED_SECTIONS = {
    "type": "object",
    "properties": {
        "conditions": {
            "type": "object",
            "properties": {
                **dict.fromkeys(
                    ("started_at", "finished_at", "ended", "profile", "runtime", "git_commit", "command"), _TEXT
                ),
                "repeat": _INT,
                "disk_bytes": _INT,
                "machine": {
                    "type": ["object", "null"],
                    "properties": {
                        "logical_cpus": _INT,
                        "memory_gib": _NUMBER,
                        **dict.fromkeys(("cpu_model", "kernel", "hostname"), _TEXT),
                        **dict.fromkeys(("nofile_hard_limit", "somaxconn"), {"type": ["string", "integer", "null"]}),
                    },
                },
                "steadiness": {
                    "type": ["object", "null"],
                    "additionalProperties": {
                        "type": "object",
                        "required": ["cv", "cpus", "seconds", "window_s"],
                        "properties": {
                            "cv": {"type": ["object", "null"], "additionalProperties": _NUMBER},
                            "cpus": _OBJECT,
                            "seconds": _NUMBER,
                            "window_s": _NUMBER,
                            "correlation": _NUMBER,
                        },
                    },
                },
                "warmup": {
                    "type": ["object", "null"],
                    "properties": {
                        "tolerance": _NUMBER,
                        "max_s": _NUMBER,
                        "duration_s": _NUMBER,
                        "window": _INT,
                        "max_runs": _INT,
                    },
                },
                "cpus": _CPUS,
                "tools": _OBJECT,
                "limit_notes": {"type": ["array", "null"]},
                "not_measured": _OBJECT,
                "versus": _OBJECT,
                "runtime_details": {
                    "type": ["object", "null"],
                    "properties": {
                        "loadgen": _PLACEMENT,
                        "hosts": {"type": ["object", "null"], "additionalProperties": {"type": "object"}},
                        "path_loadgen_to_server": _OBJECT,
                    },
                },
            },
        },
        "servers": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "roles": {"type": "array", "items": {"type": "string"}},
                    "twin_of": _TEXT,
                    "cpus": _CPUS,
                    "stack": {"type": "string"},
                    "version": _TEXT,
                    "error": _TEXT,
                    "started": {"type": "boolean"},
                    "placement": _PLACEMENT,
                    "startup_s": _NUMBER,
                    "rss_idle_mb": _NUMBER,
                    "rss_after_run_mb": _NUMBER,
                    "artifact_bytes": _NUMBER,
                    "loc": {
                        "type": ["object", "null"],
                        "properties": {
                            **dict.fromkeys(("code", "program", "config", "comments", "files"), _INT),
                            "languages": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
                        },
                    },
                },
            },
        },
    },
}


def load(path: Path, attempts: bool = True) -> Run:
    """The run in `path`, or a ResultsError saying in one line what keeps it from being read. attempts=False: every
    record without its attempts and histogram (dropped unread: what `make history` keeps of a run)."""
    path = Path(path)
    data = _parsed(path, _bounded_bytes(path))
    if not attempts:
        _drop_attempts(data)
    wrong = _shape_problem(data)
    if wrong:
        raise ResultsError(f"{path}: {wrong}")
    try:  # before the schema, for its own words on a file of an older or newer harness
        run = Run.from_dict(data, str(path))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ResultsError(f"{path} cannot be read ({type(exc).__name__}: {exc})") from None
    wrong = _schema_problem(data) or _histogram_problem(data) or _commit_problem(data)
    if wrong:
        raise ResultsError(f"{path}: {wrong}")
    return run


def loads(raw: bytes) -> Any:
    """The JSON in `raw`: orjson's parse (half the time of the json module's, a tenth on make history's cache), and
    where orjson refuses it the json module's, for its words (where the text is wrong) or its value (a NaN, or an
    integer past 64 bits, which the shape check names); the json module's ValueError or RecursionError otherwise."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def _parsed(path: Path, raw: bytes) -> Any:
    try:
        return loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, undecodable bytes, past 4,300 digits: ValueErrors
        raise ResultsError(f"{path} is not valid JSON: {str(exc)[:200] or 'nested too deep'}") from None


def _drop_attempts(data: Any) -> None:
    records = data.get("records") if isinstance(data, dict) else None
    for record in records if isinstance(records, list) else []:
        if isinstance(record, dict):
            record["attempts"] = []
            record.pop("latency_histogram", None)


def _bounded_bytes(path: Path) -> bytes:
    """The file's bytes, read through one open file and at most MAX_BYTES of them: a larger file is a ResultsError,
    however its size changed since anyone looked."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ResultsError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise ResultsError(f"{path} is a folder, not a results.json") from None
    except OSError as exc:
        raise ResultsError(f"{path} cannot be read ({exc.strerror or exc}): check its permissions") from None
    if len(data) > MAX_BYTES:
        raise ResultsError(
            f"{path} is larger than {MAX_BYTES // 2**20} MB; no results.json is (a bench writes about 1 MB)"
        )
    return data


def _commit_problem(data: dict[str, Any]) -> str | None:
    """`conditions.git_commit` not a commit: `make history` passes it to git, where `--output=<file>` is an option."""
    commit = (data.get("conditions") or {}).get("git_commit")
    if commit is None or GIT_COMMIT.fullmatch(commit):
        return None
    return f"conditions.git_commit {commit[:80]!r} is not a git commit (7 to 40 hex digits, then -dirty or nothing)"


def _shape_problem(data: Any) -> str | None:
    """An integer past MAX_INT_DIGITS or nesting past MAX_DEPTH, in one walk a level at a time, without recursion (a
    deep file must not exhaust the stack here either)."""
    level, depth = [data], 1
    while level:
        below = []
        for container in level:
            if type(container) is dict:
                container = container.values()
            elif type(container) is not list:
                continue
            if depth >= MAX_DEPTH and container:
                return f"nested deeper than {MAX_DEPTH} levels; the harness writes at most about 10"
            for value in container:
                kind = type(value)
                if kind is dict or kind is list:
                    below.append(value)
                elif kind is int and not -_INT_BOUND < value < _INT_BOUND:
                    digits = len(str(abs(value)))
                    return f"an integer of {digits} digits; the harness writes none of more than {MAX_INT_DIGITS}"
        level, depth = below, depth + 1
    return None


def _schema_problem(data: Any) -> str | None:
    if not _validators:
        published = json.loads(SCHEMA_FILE.read_text())
        published["$schema"] = "http://json-schema.org/draft-07/schema#"  # the same keywords, in a draft it compiles
        for schema in (published, REPORTED_SECTIONS):  # a quick check, and one that says where
            _validators.append((_quick_validator(schema), fastjsonschema.compile(schema, use_default=False)))
    for quick, detailed in _validators:
        try:
            quick(data)
        except fastjsonschema.JsonSchemaValueException:
            try:
                detailed(data)
            except fastjsonschema.JsonSchemaValueException as error:
                where = "/".join(str(p) for p in (error.path or [])[1:]) or "the top level"
                return f"does not match the results schema at {where}: {error.message[:200]}"
    return None


def _quick_validator(schema: dict[str, Any]) -> Any:
    """fastjsonschema's validator of `schema` without the names of where it is: its code formats a value's path
    (`"...".format(**locals())`) at every step, two thirds of a bench file's check, and only for a message the
    detailed validator gives. A fastjsonschema whose code differs loses the speed, never the check."""
    code = fastjsonschema.compile_to_code(schema, use_default=False, detailed_exceptions=False)
    scope: dict[str, Any] = {}
    exec(code.replace(".format(**locals())", ""), scope)  # noqa: S102 - fastjsonschema.compile execs the same code
    return scope["validate"]


def _histogram_problem(data: dict[str, Any]) -> str | None:
    for i, record in enumerate(data.get("records") or [], 1):
        for where, holder in [("", record), *((f" attempt {j}", a) for j, a in enumerate(record["attempts"], 1))]:
            wrong = holder.get("latency_histogram") and distribution.problem(holder["latency_histogram"])
            if wrong:
                return f"record {i}{where}: latency histogram {wrong}"
    return None
