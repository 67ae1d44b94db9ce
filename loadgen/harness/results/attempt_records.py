"""A measurement's attempts and warm-up as types, as results.json holds them (its reader and writer: records.py, which
re-exports them): each `Attempt` with what its tool counted, the commands and raw outputs behind it and what was
sampled; the `Warmup` before a record's attempts and its runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harness.results.sample_records import Sample, with_present
from harness.tools.output import Errors


@dataclass
class Attempt:
    """One measured attempt: what the tool counted, the commands and raw outputs behind it, what was sampled."""

    attempt: int
    started_at: str | None
    tool_processes: int
    commands: list[str]
    raw: list[str]  # relative to the run's folder
    failed: str | None
    samples: dict[str, Sample]
    requests: int
    good_requests: int
    errors: Errors
    duration_s: float | None
    rps: float | None
    latency_ms: dict[str, float | None]
    sized_from_rps: float | None = None  # the warm-up's rate that sized this attempt (written only then)
    round_position: tuple[int, int] | None = None  # (position, servers) in an interleaved round (written only there)
    stopped: str | None = None  # why the harness stopped the tool before it ended by itself (written only then)
    # what only some tools measure (written only then): oha's offered rate and corrected percentiles, Gatling's
    # response-time distribution (harness.tools.output.Measurement.details)
    details: dict[str, Any] = field(default_factory=dict)
    # each tool process (tools/load_plan.py): {"cores", "threads", "capacity", "cpu_s"} (schema 4; older: absent)
    processes: list[dict[str, Any]] = field(default_factory=list)
    loadgen_note: str | None = None  # why the load was not given all of the load generator's cores (written only then)
    # every request's latency (harness.basics.distribution: µs, base64 HdrHistogram); written only where the tool has it
    latency_histogram: str | None = None

    @property
    def measured(self) -> bool:
        """Whether it produced a measurement (a failed attempt has no rate)."""
        return not self.failed and self.rps is not None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Attempt:
        position = d.get("round_position")
        return cls(
            attempt=d.get("attempt", 0),
            started_at=d.get("started_at"),
            tool_processes=d.get("tool_processes", 1),
            commands=d.get("commands") or [],
            raw=d.get("raw") or [],
            failed=d.get("failed"),
            samples={role: Sample.from_dict(s) for role, s in (d.get("samples") or {}).items()},
            requests=d.get("requests") or 0,
            good_requests=d.get("good_requests") or 0,
            errors=Errors.from_dict(d.get("errors") or {}),
            duration_s=d.get("duration_s"),
            rps=d.get("rps"),
            latency_ms=d.get("latency_ms") or {},
            sized_from_rps=d.get("sized_from_rps"),
            round_position=(position["position"], position["of"]) if position else None,
            stopped=d.get("stopped"),
            details=d.get("details") or {},
            processes=d.get("processes") or [],
            loadgen_note=d.get("loadgen_note"),
            latency_histogram=d.get("latency_histogram"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "attempt": self.attempt,
            "started_at": self.started_at,
            "tool_processes": self.tool_processes,
            "commands": self.commands,
            "raw": self.raw,
            "failed": self.failed,
            "samples": {role: s.to_dict() for role, s in self.samples.items()},
            "requests": self.requests,
            "good_requests": self.good_requests,
            "errors": self.errors.to_dict(),
            "duration_s": self.duration_s,
            "rps": self.rps,
            "latency_ms": self.latency_ms,
        }
        position = self.round_position
        return with_present(
            out,
            sized_from_rps=self.sized_from_rps,
            round_position={"position": position[0], "of": position[1]} if position else None,
            stopped=self.stopped,
            details=self.details,
            processes=self.processes,
            loadgen_note=self.loadgen_note,
            latency_histogram=self.latency_histogram,
        )


@dataclass
class WarmupRun:
    rps: float | None  # None: the run failed
    duration_s: float | None
    errors: int | None
    jit_share: float | None = None  # the JIT compilers' share of the server's CPU in the run (a JVM; since 2026-12-02)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WarmupRun:
        return cls(d.get("rps"), d.get("duration_s"), d.get("errors"), d.get("jit_share"))


@dataclass
class Warmup:
    """The warm-up before a record's attempts: its runs, whether it settled (harness.stats.trend.settled), the rate that
    sized the attempts."""

    tool: str | None  # None in schema 2 files
    runs: list[WarmupRun]
    steady: bool
    tolerance: float | None
    max_runs: int | None
    rate: float | None = None
    after: str | None = None  # no run: the server had just been measured with this same load (e.g. "low-compute c1000")
    window: int | None = None  # the latest runs whose trend decides whether it settled (None in older files: 3)
    reprime: WarmupRun | None = None  # files of 2026-11-25 only: one more run right before the first attempt

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Warmup:
        return cls(
            tool=d.get("tool"),
            runs=[WarmupRun.from_dict(r) for r in d.get("runs") or []],
            steady=bool(d.get("steady")),
            tolerance=d.get("tolerance"),
            max_runs=d.get("max_runs"),
            rate=d.get("rate"),
            after=d.get("after"),
            window=d.get("window"),
            reprime=WarmupRun.from_dict(d["reprime"]) if d.get("reprime") else None,
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for optional in (
            "after",
            "window",
            "reprime",
        ):  # absent unless set: older files read and written back unchanged
            if out[optional] is None:
                del out[optional]
        for run in out["runs"] + ([out["reprime"]] if out.get("reprime") else []):
            if run["jit_share"] is None:
                del run["jit_share"]
        return out
