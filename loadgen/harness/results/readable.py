"""A results.json read for any command that takes a file it did not write (`make report`, `make compare`, `make
history`): a copied, hand-edited or hostile one ends in one ResultsError naming the file and what is wrong, never a
traceback, and nothing in it reaches a command line, a path or a chart unchecked.

The API, stable for every reader: `load(path) -> Run` (a ResultsError in one line otherwise); `MAX_BYTES`,
`MAX_DEPTH`, `MAX_INT_DIGITS` and `GIT_COMMIT` say the bounds. What `load` checks, in order:
- size: at most MAX_BYTES, read through one open file (`MAX_BYTES + 1` bytes at most: a file that grows meanwhile is
  refused all the same, and no size checked first is trusted later);
- integers of at most MAX_INT_DIGITS digits (Python refuses to parse past 4,300, and a long one overflows a chart);
- JSON nested no deeper than MAX_DEPTH (checked without recursion);
- the types of records.py, then the published JSON Schema (loadgen/results.schema.json) and the sections the report
  reads (REPORTED_SECTIONS), every latency histogram decodable within its bound (harness.basics.distribution.problem);
- values that reach a command line: `conditions.git_commit` is a commit (GIT_COMMIT: 7 to 40 hex digits, `-dirty`
  after it where the tree had changes) or null, never an option git would read (`make history` runs `git log` on it).
A record's names (server, scenario, run) may still hold anything: the charts' file names are slugs of them
(harness.report.model.slug)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from harness.basics import distribution
from harness.basics.paths import REPO
from harness.results.records import ResultsError, Run

SCHEMA_FILE = REPO / "loadgen" / "results.schema.json"
# a whole bench's results.json is about 1.2 MB (a seed-profile bench with its nine weather levels a few MB): 64 MB is
# room for fifty times that, and bounds what reading one takes (JSON's objects take about 10 times the file's size)
MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 24  # the harness writes at most about 10 levels (a versus result's intervals)
MAX_INT_DIGITS = 19  # the largest figure the harness writes (bytes, ns) is below 2**63, 19 digits
GIT_COMMIT = re.compile(r"[0-9a-f]{7,40}(-dirty)?")  # what measuring/conditions.py writes: `git rev-parse --short`
_validator: Draft202012Validator | None = None

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


def load(path: Path) -> Run:
    """The run in `path`, or a ResultsError saying in one line what keeps it from being read."""
    path = Path(path)
    try:
        data = json.loads(_bounded_bytes(path), parse_int=_bounded_int)
    except _LongInteger as exc:
        raise ResultsError(
            f"{path} holds an integer of {exc.args[0]} digits; the harness writes none of more than {MAX_INT_DIGITS}"
        ) from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and undecodable bytes are ValueErrors
        raise ResultsError(f"{path} is not valid JSON: {str(exc)[:200] or 'nested too deep'}") from None
    wrong = _too_deep(data)
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


class _LongInteger(ValueError):
    """An integer literal past MAX_INT_DIGITS (its digit count in args[0])."""


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _LongInteger(digits)
    return int(text)


def _commit_problem(data: dict[str, Any]) -> str | None:
    """`conditions.git_commit` not a commit: `make history` passes it to git, where `--output=<file>` is an option."""
    commit = (data.get("conditions") or {}).get("git_commit")
    if commit is None or GIT_COMMIT.fullmatch(commit):
        return None
    return f"conditions.git_commit {commit[:80]!r} is not a git commit (7 to 40 hex digits, then -dirty or nothing)"


def _too_deep(data: Any) -> str | None:
    """Nesting past MAX_DEPTH (checked without recursion: a deep file must not exhaust the stack here either)."""
    pending = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels; the harness writes at most about 10"
        if isinstance(value, dict):
            pending += [(v, depth + 1) for v in value.values()]
        elif isinstance(value, list):
            pending += [(v, depth + 1) for v in value]
    return None


def _schema_problem(data: Any) -> str | None:
    global _validator
    if _validator is None:
        _validator = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    error = next(iter(_validator.iter_errors(data)), None) or next(
        iter(Draft202012Validator(REPORTED_SECTIONS).iter_errors(data)), None
    )
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the top level"
    return f"does not match the results schema at {where}: {error.message[:200]}"


def _histogram_problem(data: dict[str, Any]) -> str | None:
    for i, record in enumerate(data.get("records") or [], 1):
        for where, holder in [("", record), *((f" attempt {j}", a) for j, a in enumerate(record["attempts"], 1))]:
            wrong = holder.get("latency_histogram") and distribution.problem(holder["latency_histogram"])
            if wrong:
                return f"record {i}{where}: latency histogram {wrong}"
    return None
