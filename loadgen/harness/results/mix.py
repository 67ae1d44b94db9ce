"""A request mix's record, per endpoint (docs/mixes.md): each path's requests, errors and whole latency distribution
pooled over the measured attempts (their HdrHistograms added), its percentiles read from that pool, never averaged
from other percentiles; and the share of the requests each path got, checked against its weight.

Why a tolerance of 4 standard errors: the tool draws each request's path at random (oha, uniformly over lines), so a
path of weight w among n requests gets a binomial share, of standard error sqrt(w(1 − w)/n). A fair draw strays
beyond 4 of them about 6 times in 100,000; a share further off says the tool did not send what the mix asks (a path
answered so slowly that it held its connections while the others were drawn on is not such a case: each connection
draws its next path only once an answer is in, whatever the path, so the shares stay those of the draw)."""

from __future__ import annotations

import math
from typing import Any

from harness.basics.distribution import PERCENTILES, Distribution, key
from harness.results import flag_kinds as kinds
from harness.results.records import Attempt, Flag

SHARE_SIGMAS = 4.0  # flag_kinds.MIX_SHARES quotes it


def tolerance_pct(weight_pct: float, requests: int) -> float:
    """How far (percentage points) a share may stray from its weight among `requests` drawn requests."""
    w = weight_pct / 100
    return 100 * SHARE_SIGMAS * math.sqrt(w * (1 - w) / requests) if requests else math.inf


def endpoints(attempts: list[Attempt], weights: list[tuple[str, float]]) -> dict[str, dict[str, Any]] | None:
    """Per path of the mix, over the measured attempts: weight, requests, errors, share (percent of the answered
    requests) and its tolerance, p50/p90/p99/p99.9 of its pooled distribution and that distribution. None when no
    attempt measured the mix per endpoint."""
    measured = [a.details["endpoints"] for a in attempts if a.measured and "endpoints" in a.details]
    if not measured:
        return None
    answered = sum(e["requests"] for parts in measured for e in parts.values())
    out: dict[str, dict[str, Any]] = {}
    for path, weight in weights:
        parts = [p[path] for p in measured if path in p]
        pooled = Distribution.merged(Distribution.decode(p["latency_histogram"]) for p in parts)
        requests = sum(int(p["requests"]) for p in parts)
        share = 100 * requests / answered if answered else 0.0
        tolerance = tolerance_pct(weight, answered)
        figures = pooled.latency_ms()
        out[path] = {
            "weight": weight,
            "requests": requests,
            "errors": sum(int(p["errors"]) for p in parts),
            "share_pct": round(share, 3),
            "share_tolerance_pct": round(tolerance, 3),
            "share_within_tolerance": abs(share - weight) <= tolerance,
            "latency_ms": {key(p): figures[key(p)] for p in PERCENTILES},
            "latency_histogram": pooled.encode() if pooled.count else None,
        }
    return out


def shares_flag(endpoints_of_record: dict[str, dict[str, Any]] | None) -> Flag | None:
    """`mix-shares` when a path's share of the requests strayed beyond its tolerance from its weight."""
    off = [
        f"{path} {e['share_pct']:.2f} % for a weight of {e['weight']:g} % (± {e['share_tolerance_pct']:.2f})"
        for path, e in (endpoints_of_record or {}).items()
        if not e["share_within_tolerance"]
    ]
    return Flag(kinds.MIX_SHARES.name, "; ".join(off)) if off else None
