"""oha for a request mix (docs/mixes.md): one load whose requests are drawn from several paths by weight, each
request's latency kept with its path, so every endpoint gets its own exact distribution inside the mix.

Why oha: `--urls-from-file` draws each request's URL uniformly from the file's lines, so a path repeated in proportion
to its weight is sent in that proportion (a random draw per request: the shares sent are checked against the weights,
harness/results/mix.py), and `--db-url` writes every answered request to SQLite with its path, status and latency
(`duration`: from its planned start under -q --latency-correction, the open model). wrk's Lua `request()` can pick
by weight but stock wrk 4.1 keeps no per-request latency; h2load goes round-robin and logs no URI; Gatling's
randomSwitch gives per-request statistics only in whole milliseconds and starts a JVM per run.

Its database holds a row per answered request (a seed-profile mix's attempt, hundreds of MB): deleted once its
figures are read, unless KEEP_REQUEST_DB=1 (harness/config/environment.py; `keep`) asks to keep it in the attempt's
raw/ folder.

What oha's database lacks: requests that got no answer (refused, timed out, reset) carry no path. They are counted
in the mix's whole (its JSON summary) and not given to an endpoint (`details.unattributed_errors`).
Keep-alive unless the run says otherwise: `keepalive = false` is a connection per request (--disable-keepalive).
"""

from __future__ import annotations

import math
import re
import sqlite3
from functools import reduce
from pathlib import Path
from typing import TypedDict
from urllib.parse import urlsplit

from harness.basics.distribution import Distribution
from harness.tools.adapter import LoadSpec, ToolFailed
from harness.tools.oha import Oha
from harness.tools.output import Measurement

URLS_FILE = "mix-urls.txt"
DATABASE = "mix-requests.db"
STORING = re.compile(r"Storing results to [^\n]*")  # oha's line after its JSON, naming the database
STEP = 0.1  # a weight's resolution in percent (harness/config/mix_targets.py checks it)
_keep = False  # KEEP_REQUEST_DB=1: each attempt's database stays in its raw/ folder once read


def keep(on: bool) -> None:
    """KEEP_REQUEST_DB, checked by the configuration."""
    global _keep
    _keep = on


def repetitions(weights: tuple[tuple[str, float], ...]) -> list[tuple[str, int]]:
    """(path, lines) in the shortest list whose lines are in the weights' proportions: 70/20/8/2 → 35/10/4/1."""
    steps = [round(weight / STEP) for _, weight in weights]
    common = reduce(math.gcd, steps)
    return [(path, count // common) for (path, _), count in zip(weights, steps)]


class PathAnswers(TypedDict):
    """One path's answered requests in oha's database: how many, how many outside 2xx, and {µs: requests}."""

    requests: int
    errors: int
    counts_us: dict[int, int]


class Endpoint(TypedDict):
    """One path of the mix as a Measurement's details["endpoints"] keep it: its histogram as Distribution.encode's."""

    requests: int
    errors: int
    latency_histogram: str


def per_path(database: Path) -> dict[str, PathAnswers]:
    """Every answered request of oha's SQLite output, by path: requests, errors (answers outside 2xx) and their
    latencies in µs ({µs: requests}), exact to oha's nanoseconds rounded to the µs."""
    try:
        # as a URI, its path percent-encoded: a # or ? in the checkout's path would end the path there, and SQLite
        # would open (and make) another file, writable, outside the run's folder
        with sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True) as db:
            rows = db.execute(
                "SELECT url, CAST(ROUND(duration * 1000000) AS INTEGER), status >= 200 AND status < 300, "
                "COUNT(*) FROM oha GROUP BY 1, 2, 3"
            ).fetchall()
    except sqlite3.Error as exc:
        raise ToolFailed(f"oha's per-request database {database.name} cannot be read: {exc}") from None
    out: dict[str, PathAnswers] = {}
    for url, us, ok, count in rows:
        entry = out.setdefault(
            urlsplit(url).path + (f"?{urlsplit(url).query}" if urlsplit(url).query else ""),
            {"requests": 0, "errors": 0, "counts_us": {}},
        )
        entry["requests"] += count
        entry["errors"] += 0 if ok else count
        entry["counts_us"][us] = entry["counts_us"].get(us, 0) + count
    return out


class OhaMix(Oha):
    name = "oha-mix"

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        if not spec.mix:
            raise ValueError("oha-mix needs a mix (a scenario whose targets carry weights)")
        origin = urlsplit(spec.url)
        lines = [
            f"{origin.scheme}://{origin.netloc}{path}" for path, count in repetitions(spec.mix) for _ in range(count)
        ]
        if scratch.is_dir():  # the runner's fresh folder; `make plan` only prints the command, naming a folder to be
            (scratch / URLS_FILE).write_text("\n".join(lines) + "\n")
            (scratch / DATABASE).unlink(missing_ok=True)
        argv = super().command(spec, scratch)[:-1]  # oha's own options, without its one URL
        argv += ["--urls-from-file", "--db-url", str(scratch / DATABASE)]
        if not spec.keepalive:
            argv.append("--disable-keepalive")
        return [*argv, str(scratch / URLS_FILE)]

    def parse(self, output: str, scratch: Path) -> Measurement:
        # oha says where it stores the requests ("Storing results to ...") after its JSON, on the same output
        whole = super().parse(STORING.sub("", output), scratch)
        paths = per_path(scratch / DATABASE)
        if not _keep:  # its figures are read (the endpoints' histograms keep them): the rows are not needed again
            (scratch / DATABASE).unlink(missing_ok=True)
        answered = sum(e["requests"] for e in paths.values())
        if answered != whole.requests - whole.errors.total + whole.errors.non_2xx:
            raise ToolFailed(
                f"oha's database holds {answered} answers, its summary "
                f"{whole.requests - whole.errors.total + whole.errors.non_2xx}"
                + ("" if _keep else " (KEEP_REQUEST_DB=1 keeps the database to look into)")
            )
        endpoints: dict[str, Endpoint] = {}
        for path, entry in paths.items():
            distribution = Distribution.from_counts(entry["counts_us"])
            endpoints[path] = {
                "requests": entry["requests"],
                "errors": entry["errors"],
                "latency_histogram": distribution.encode(),
            }
        exact = Distribution.merged(Distribution.from_counts(e["counts_us"]) for e in paths.values())
        whole.distribution = exact if exact.count else whole.distribution
        if exact.count:  # the whole's figures from every answer's own latency, not oha's 9 quantile levels
            whole.latency_ms = exact.latency_ms()
        whole.details = {
            **whole.details,
            "endpoints": endpoints,
            "unattributed_errors": whole.errors.total - whole.errors.non_2xx,
        }
        return whole


TOOL = OhaMix()  # what the registry (tools/__init__.py) finds
