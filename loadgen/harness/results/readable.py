"""A results.json read for `make report` and `make compare`, which take any file they are given: a copied, hand-edited or
hostile one ends in one ResultsError naming the file and what is wrong, never a traceback. In order: its size, JSON
nested no deeper than the harness writes, the published JSON Schema (loadgen/results.schema.json), every latency
histogram decodable within its bound (harness.basics.distribution.problem), then the types of records.py.
A record's names (server, scenario, run) may still hold anything: the charts' file names are slugs of them
(harness.report.model.slug)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from harness.basics import distribution
from harness.basics.paths import REPO
from harness.results.records import ResultsError, Run

SCHEMA_FILE = REPO / "loadgen" / "results.schema.json"
MAX_BYTES = 512 * 1024 * 1024  # a whole bench's results.json is about 1.2 MB
MAX_DEPTH = 24  # the harness writes at most about 10 levels (a versus result's intervals)
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
        if path.stat().st_size > MAX_BYTES:
            raise ResultsError(f"{path} is larger than {MAX_BYTES // 2**20} MB; no results.json is")
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ResultsError(f"{path} does not exist") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and undecodable bytes are ValueErrors
        raise ResultsError(f"{path} is not valid JSON: {str(exc)[:200] or 'nested too deep'}") from None
    wrong = _too_deep(data)
    if wrong:
        raise ResultsError(f"{path}: {wrong}")
    try:  # before the schema, for its own words on a file of an older or newer harness
        run = Run.from_dict(data, str(path))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ResultsError(f"{path} cannot be read ({type(exc).__name__}: {exc})") from None
    wrong = _schema_problem(data) or _histogram_problem(data)
    if wrong:
        raise ResultsError(f"{path}: {wrong}")
    return run


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
