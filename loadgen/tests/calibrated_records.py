"""A record of one measured attempt on the calibrated server, as the calibration tests judge it."""

from __future__ import annotations

from typing import Any

from harness.results.records import Record


def one_attempt(run: dict[str, Any], rps: float, requests: int, **attempt_fields: Any) -> Record:
    """`run`: the record's server, scenario, run label and tool; `attempt_fields` (latency_ms, raw, tool_processes,
    samples) override the attempt's defaults: one process, 0.2 s of server CPU, no latency."""
    attempt = {
        "attempt": 1,
        "requests": requests,
        "good_requests": requests,
        "rps": rps,
        "duration_s": requests / rps,
        "latency_ms": {},
        "tool_processes": 1,
        "samples": {"server": {"cores": 1, "cpu_s": 0.2}, "loadgen": {"cores": 1, "cpu_s": 0.1}},
        **attempt_fields,
    }
    fields = {"rps": rps, "latency_ms": attempt["latency_ms"], "requests": requests, "attempts": [attempt]}
    return Record.from_dict({**run, **fields})
