"""results/<run-id>/results.json as types: a `Run` holding one `Record` per measurement, each with its `Attempt`s,
read (`load`, `Run.from_dict`) and written (`Run.to_dict`) here and nowhere else; the file's shape is published as a
JSON Schema, loadgen/results.schema.json. Older files read as what they are; each schema adds optional fields:
- 2: no `schema` key; records' runtime and round unknown. A file whose records have no attempts is refused.
- 3: `schema`; per record `runtime` and `round`; per server `roles` (`Run.with_role`) and `deaths`; `stopped` attempts.
- 4: per attempt `processes` (the load plan's tool processes, harness/tools/load_plan.py: `cores`, `threads`,
  `capacity`, `cpu_s`) and `loadgen_note`; samples `harness` and `beside_loadgen:<server>` on the load generator's
  cores. A schema 3 attempt is judged from its tool and `tool_processes` (harness.judging.flags.usable_cores).
- 5: `latency_histogram` per attempt whose tool gives per-request data (ab, wrk, h2load) and per record (every
  measured attempt's requests), an HdrHistogram of µs latencies in its base64 V2 log form
  (harness/basics/distribution.py); p99.9 where the data has it; a record's rps and latency_ms the medians of its
  measured attempts (the mean of the middle two of an even count). Optional, added within 5: `endpoints` on a request
  mix's record (harness/results/mix.py), which a reader without it ignores.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from harness.results.attempt_records import Attempt as Attempt  # re-exported: read and written with the records
from harness.results.attempt_records import Warmup as Warmup
from harness.results.attempt_records import WarmupRun as WarmupRun
from harness.results.sample_records import FlatFields, with_present
from harness.results.sample_records import Sample as Sample  # re-exported: read with the records
from harness.results.sample_records import SampleSummary as SampleSummary
from harness.tools.output import Errors

SCHEMA = 5
UNVERSIONED_SCHEMA = 2  # what a file without a `schema` key is


class ResultsError(Exception):
    """A results.json that cannot be read: missing, not JSON, or written by a harness too old or too new."""


@dataclass
class Summary:
    """harness.results.summary.summarize: harness.stats.intervals.describe of the measured attempts' req/s, p99 and server
    CPU µs per request (and per connection where the load fixes requests per connection): median, min, max, cv, n and
    ci (the interval)."""

    rps: dict[str, Any] | None = None
    p99: dict[str, Any] | None = None
    cost_us: dict[str, Any] | None = None
    cost_us_per_connection: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Summary:
        return cls(d.get("rps"), d.get("p99"), d.get("cost_us"), d.get("cost_us_per_connection"))

    def to_dict(self) -> dict[str, Any]:
        """rps and p99 always; the costs only where there are (files of older harnesses are written back as read)."""
        out = {"rps": self.rps, "p99": self.p99}
        for key in ("cost_us", "cost_us_per_connection"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass
class Flag:
    """Why a record's number cannot be read as a clean measurement; the rules and what each flag means: harness.judging.flags."""

    name: str
    reason: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Flag:
        return cls(d["flag"], d["reason"])

    def to_dict(self) -> dict[str, Any]:
        return {"flag": self.name, "reason": self.reason}


@dataclass
class Marks:
    """What the rounds say of a record beyond its attempts: measured again back to back (`remeasured`, what it keeps of
    the first attempts), taken in part (`incomplete`: the run ended before the rest), or without an attempt
    (`failed`: the server died first)."""

    remeasured: dict[str, Any] | None = None
    incomplete: str | None = None
    failed: str | None = None

    def put_on(self, record: Record) -> Record:
        record.remeasured = self.remeasured
        record.incomplete = self.incomplete or record.incomplete
        record.failed = self.failed or record.failed
        return record


@dataclass
class Record:
    """One server under one run of a scenario: its attempts and what they add up to (sums of counts, the medians of their
    rates and latencies), the warm-up before them, and, once harness.judging.flags has evaluated it, its flags."""

    server: str
    scenario: str
    run: str  # the scenario's run label (c100, keepalive, ...)
    runtime: str | None  # local or docker; None in schema 2 files
    round: int | None  # the round of a run in rounds (overhead); None elsewhere
    tool: str | None
    path: str | None
    concurrency: int | None
    threads: int | None
    load: dict[str, Any]
    requests: int
    good_requests: int
    errors: Errors
    duration_s: float | None
    rps: float | None  # the median of the measured attempts' (schema 4 and older: the lower middle attempt's)
    latency_ms: dict[str, float | None]  # each figure the median of the measured attempts' (schema 4: as rps)
    failed: str | None  # the first failed attempt's failure
    attempts: list[Attempt]
    warmup: Warmup | None
    summary: Summary | None
    samples: dict[str, SampleSummary]
    flags: list[Flag] = field(default_factory=list)
    ranked: bool = True
    details: dict[str, Any] = field(
        default_factory=dict
    )  # the middle attempt's (Attempt.details); written only when present
    # measured again after its first attempts climbed or fell (scheduler.remeasure): {"why", "first_attempts" (their
    # req/s), "first_raw" (their outputs, kept apart), "warmup" (the further warm-up)}; written only when present
    remeasured: dict[str, Any] | None = None
    # fewer attempts than planned because the run ended first (Ctrl-C, a fault of the harness): a record is written from
    # its first attempt on and carries this until its last is done; written only when present
    incomplete: str | None = None
    # every request of the measured attempts together (their histograms added); written only when each has one
    latency_histogram: str | None = None
    # a request mix's record: per path its weight, requests, errors, share, p50-p99.9 and histogram (results/mix.py)
    endpoints: dict[str, Any] | None = None

    @property
    def key(self) -> tuple[str, str, str, str | None, int | None]:
        """What tells one record of a run from another."""
        return self.server, self.scenario, self.run, self.runtime, self.round

    @property
    def label(self) -> str:
        """The run label as people read it: with the runtime and round where the record has a round (overhead's
        records differ only by those), for grouping and showing; never parsed back."""
        return self.run if self.round is None else f"{self.run} {self.runtime}-{self.round}"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Record:
        return cls(
            server=d["server"],
            scenario=d["scenario"],
            run=d.get("run", ""),
            runtime=d.get("runtime"),
            round=d.get("round"),
            tool=d.get("tool"),
            path=d.get("path"),
            concurrency=d.get("concurrency"),
            threads=d.get("threads"),
            load=d.get("load") or {},
            requests=d.get("requests") or 0,
            good_requests=d.get("good_requests") or 0,
            errors=Errors.from_dict(d.get("errors") or {}),
            duration_s=d.get("duration_s"),
            rps=d.get("rps"),
            latency_ms=d.get("latency_ms") or {},
            failed=d.get("failed"),
            attempts=[Attempt.from_dict(a) for a in d["attempts"]],
            warmup=Warmup.from_dict(d["warmup"]) if d.get("warmup") else None,
            summary=Summary.from_dict(d["summary"]) if d.get("summary") else None,
            samples={role: SampleSummary.from_dict(s) for role, s in (d.get("samples") or {}).items()},
            flags=[Flag.from_dict(f) for f in d.get("flags") or []],
            ranked=d.get("ranked", True),
            details=d.get("details") or {},
            remeasured=d.get("remeasured"),
            incomplete=d.get("incomplete"),
            latency_histogram=d.get("latency_histogram"),
            endpoints=d.get("endpoints"),
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "server": self.server,
            "scenario": self.scenario,
            "run": self.run,
            "runtime": self.runtime,
            "round": self.round,
            "tool": self.tool,
            "path": self.path,
            "concurrency": self.concurrency,
            "threads": self.threads,
            "load": self.load,
            "requests": self.requests,
            "good_requests": self.good_requests,
            "errors": self.errors.to_dict(),
            "duration_s": self.duration_s,
            "rps": self.rps,
            "latency_ms": self.latency_ms,
            "failed": self.failed,
            "attempts": [a.to_dict() for a in self.attempts],
            "warmup": self.warmup.to_dict() if self.warmup else None,
            "summary": self.summary.to_dict() if self.summary else None,
            "samples": {role: asdict(s) for role, s in self.samples.items()},
            "flags": [f.to_dict() for f in self.flags],
            "ranked": self.ranked,
        }
        return with_present(
            out,
            details=self.details,
            remeasured=self.remeasured,
            incomplete=self.incomplete,
            latency_histogram=self.latency_histogram,
            endpoints=self.endpoints,
        )


@dataclass
class Verification(FlatFields):
    """A server's contract verification in this run (harness.conformance.verification)."""

    ok: bool
    checks: int | None = None
    failures: list[str] = field(default_factory=list)


LEGACY_ROLES = {"upstream": ("nginx",), "ceiling": ("nginx",)}  # before servers recorded their manifest's roles


@dataclass
class Run:
    """A whole results.json: how the numbers were taken (`conditions`, free-form), each server's contract verification
    and start (`servers`: version, placement, size, lines of code...), the records, and an overhead run's ratios."""

    run_id: str
    conditions: dict[str, Any]
    verification: dict[str, Verification] | None  # None: the file has no verification section
    servers: dict[str, dict[str, Any]]
    records: list[Record]
    overhead: dict[str, Any] | None = None  # overhead runs: docker/local per server (harness.calibrate.overhead.ratios)
    calibration: list[dict[str, Any]] | None = (
        None  # make calibrate: known and measured (harness.calibrate.calibration)
    )
    # make probe, make bench: each server's HTTP compliance, {"cases": [...], "counts": {...}} (harness.conformance.suite)
    compliance: dict[str, dict[str, Any]] | None = None
    schema: int = SCHEMA  # the schema the file was written in

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "the results file") -> Run:
        schema = d.get("schema", UNVERSIONED_SCHEMA)
        if schema > SCHEMA:
            raise ResultsError(
                f"{source} was written by a newer harness (schema {schema}; this one reads up to {SCHEMA})"
            )
        if any(isinstance(r, dict) and not isinstance(r.get("attempts"), list) for r in d.get("records") or []):
            raise ResultsError(
                f"{source} was written by an older harness (records without their attempts); measure again"
            )
        verification = d.get("verification")
        return cls(
            run_id=d.get("run_id", "?"),
            conditions=d.get("conditions") or {},
            verification=None
            if verification is None
            else {
                name: _read(Verification.from_dict, v, f"verification {name!r}", source)
                for name, v in verification.items()
            },
            servers=d.get("servers") or {},
            records=[
                _read(Record.from_dict, r, f"record {i}", source) for i, r in enumerate(d.get("records") or [], 1)
            ],
            overhead=d.get("overhead"),
            calibration=d.get("calibration"),
            compliance=d.get("compliance"),
            schema=schema,
        )

    def with_role(self, role: str) -> set[str]:
        """The servers of this run with `role` (manifest.ROLES), as recorded when each was started; a run whose
        servers carry no roles (older harnesses) had nginx as its upstream and ceiling."""
        recorded = {name: s["roles"] for name, s in self.servers.items() if "roles" in s}
        if not recorded:
            return set(LEGACY_ROLES.get(role, ()))
        return {name for name, roles in recorded.items() if role in roles}

    def twin_of(self, server: str) -> str | None:
        """The server `server` is the A/A twin of (the same server under a second name), as recorded at its start."""
        return (self.servers.get(server) or {}).get("twin_of")

    def to_dict(self, records: bool = True) -> dict[str, Any]:
        """The run as results.json holds it; `records` False: all but the records (the store writes their text)."""
        out = {
            "schema": self.schema,
            "run_id": self.run_id,
            "conditions": self.conditions,
            "verification": None
            if self.verification is None
            else {name: asdict(v) for name, v in self.verification.items()},
            "servers": self.servers,
        }
        if records:
            out["records"] = [r.to_dict() for r in self.records]
        if self.overhead is not None:
            out["overhead"] = self.overhead
        if self.calibration is not None:
            out["calibration"] = self.calibration
        if self.compliance is not None:
            out["compliance"] = self.compliance
        return out


T = TypeVar("T")
DAMAGED = "the file was cut short or hand-edited: restore it from a copy, or measure again"


def _read(read: Callable[[Any], T], d: Any, what: str, source: str) -> T:
    """`read(d)`; a key `d` lacks or a value of the wrong type is a ResultsError naming `what` and `source`."""
    try:
        return read(d)
    except KeyError as exc:
        raise ResultsError(f"{source}: {what} has no key {exc.args[0]!r}; {DAMAGED}") from None
    except (TypeError, AttributeError, ValueError) as exc:
        raise ResultsError(f"{source}: {what} cannot be read ({exc}); {DAMAGED}") from None


def load(path: Path) -> Run:
    """The run a results.json holds; every reader of results files goes through here."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ResultsError(f"{path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not valid JSON: {exc}") from None
    return _read(lambda d: Run.from_dict(d, str(path)), data, "the run", str(path))
