"""Gatling: the seeds' open workload model. Virtual users arrive by an injection profile (ramp, at-once, constant
rate), each sends one GET and leaves. The project builds it (loadgen/gatling: a Java DSL simulation driven by -Dbench.*
properties, and a launcher); figures come from the js/stats.json of the HTML report the run's own output names, not
the console text (nor the newest report in the folder).

Every run is a fresh JVM: its class loading and JIT made the first second of a load slow (a make calibrate at 200
users/s, known p99 40 ms: 74 requests of the first second took 35 ms or more, up to 259 ms; without the first 2 s, p99
41 ms and max 46 ms). So the simulation first sends a tool warm-up of its own (WARMUP_S at the load's arrival rate,
request name "warm-up") and then the measured users (request name "request"); the figures are the measured request's
alone, its rate over its own span from the report's simulation.log (Gatling's per-request mean divides by the whole
run's span, warm-up included, in whole seconds)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from harness.tools.adapter import LoadSpec, ToolFailed
from harness.tools.output import Errors, Measurement

GATLING_DIR = Path(__file__).resolve().parents[2] / "gatling"
SIMULATION = "bench.OpenModelSimulation"
STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ )")
REPORT_LINE = re.compile(r"please open the following file: \S*?([^\s/]+)/index\.html")  # the run's own report folder
FD_MARGIN = 64  # descriptors the JVM holds besides its sockets (jars, epoll, report files)
# Gatling's default percentiles (gatling.charting.indicators.percentile1..4), as the seeds' reports show them
PERCENTILES = {"p50": "percentiles1", "p75": "percentiles2", "p95": "percentiles3", "p99": "percentiles4"}
WARMUP_S = 3.0  # long enough for class loading and the first JIT tiers; short beside a 30 s load
AT_ONCE_WARMUP_RATE = 200.0  # users/s at most before an at-once load, which has no arrival rate of its own
MEASURED, WARM_UP = "request", "warm-up"  # the simulation's request names
INJECTIONS = {  # what each profile needs from the LoadSpec, and what it means
    "ramp": ("users", "duration_s"),  # rampUsers(users).during(duration_s)
    "at-once": ("users",),  # atOnceUsers(users); users defaults to concurrency
    "constant": ("rate", "duration_s"),  # constantUsersPerSec(rate).during(duration_s)
}


class WarmUp(TypedDict):
    """The tool warm-up's requests, left out of the figures."""

    requests: int
    ko: int


class GatlingDetails(TypedDict, total=False):
    """What Gatling's stats.json says beside the figures (a Measurement's details["gatling"]), of the measured request:
    its OK and KO counts, its mean rate as Gatling says it, the standard deviation and minimum (ms), and its requests by
    response-time group's name; and the warm-up's requests (a report without one has no warm_up)."""

    ok: int
    ko: int
    mean_rps: float
    std_dev_ms: float
    min_ms: float
    distribution: dict[str, int]
    warm_up: WarmUp


class Gatling:
    name = "gatling"
    binary = str(GATLING_DIR / "target" / "gatling")
    install_hint = "make setup builds it: bash loadgen/gatling/build.sh (Maven, JDK 17)"
    version_args = ("--version",)
    threading = "own"  # a JVM with threads of its own: one process on every load-generator core
    provision = ("bash", "loadgen/gatling/build.sh")
    provision_note = (
        "builds Gatling 3.11.5 with Maven: the first build downloads about 70 MB from Maven Central (about 35 s)"
    )

    def completed(self, output_tail: bytes) -> int | None:
        return None  # a profile is timed, not counted

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return nofile_limit - FD_MARGIN  # one connection per user in flight

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        return spec  # a profile's duration is part of what it measures (users per second): never resized

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        injection = spec.injection
        if injection is None or injection not in INJECTIONS:
            raise ValueError(f"gatling needs an injection, one of {', '.join(INJECTIONS)}; got {injection!r}")
        values: dict[str, float | None] = {
            "users": spec.users or (spec.concurrency if injection == "at-once" else None),
            "rate": spec.rate,
            "duration_s": spec.duration_s,
        }
        given = {f: values[f] for f in INJECTIONS[injection]}
        missing = [f for f, value in given.items() if not value or value <= 0]
        if missing:
            raise ValueError(f"gatling's {injection} injection needs {' and '.join(missing)} (a positive number)")
        props = {"url": spec.url, "injection": injection}
        props.update({f: _number(value) for f, value in given.items() if value})
        if spec.timeout_s:
            props["timeout_s"] = _number(spec.timeout_s)
        props.update(warmup_s=_number(WARMUP_S), warmup_rate=_number(warmup_rate(injection, given)))
        scratch.mkdir(parents=True, exist_ok=True)
        description = " ".join(f"{k}={v}" for k, v in props.items() if k != "url")
        return [
            self.binary,
            *(f"-Dbench.{k}={v}" for k, v in props.items()),
            "-s",
            SIMULATION,
            "-rf",
            str(scratch / "gatling"),
            "-rd",
            description,
        ]

    def parse(self, output: str, scratch: Path) -> Measurement:
        report = own_report(output, scratch)
        entries = json.loads(report.read_text())
        warm = request_stats(entries, WARM_UP)
        # a report without a warm-up (from before it): "All Requests", every request a measured one
        stats = entries["stats"] if warm is None else request_stats(entries, MEASURED)
        if stats is None:
            raise ToolFailed(f"Gatling's report {report} has a {WARM_UP!r} request and no {MEASURED!r} one")

        def total(key: str) -> Any:
            return stats[key]["total"]

        requests, ko = total("numberOfRequests"), stats["numberOfRequests"]["ko"]
        mean_rps = float(total("meanNumberOfRequestsPerSecond"))
        # Gatling's mean divides by the whole run's span, the warm-up's included: the measured requests' own instead
        duration_s = requests / mean_rps if mean_rps else 0.0
        if warm is not None:
            duration_s = measured_span_s(report.parent.parent / "simulation.log")
        latency: dict[str, float | None] = {key: float(total(field)) for key, field in PERCENTILES.items()}
        latency.update(p90=None, max=float(total("maxResponseTime")), mean=float(total("meanResponseTime")))
        groups = [stats[f"group{i}"] for i in range(1, 5)]  # t < lower, lower <= t < higher, t >= higher, failed
        own: GatlingDetails = {
            "ok": stats["numberOfRequests"]["ok"],
            "ko": ko,
            "mean_rps": mean_rps,
            "std_dev_ms": total("standardDeviation"),
            "min_ms": total("minResponseTime"),
            "distribution": {g["name"]: g["count"] for g in groups},
        }
        if warm is not None:
            own["warm_up"] = {"requests": warm["numberOfRequests"]["total"], "ko": warm["numberOfRequests"]["ko"]}
        return Measurement(
            requests=requests,
            errors=Errors(other=ko),  # Gatling's KO: refused, timed out or not 2xx
            duration_s=duration_s,
            rps=requests / duration_s if duration_s else 0.0,
            latency_ms=latency,
            details={"gatling": own},
        )


def warmup_rate(injection: str, given: dict[str, float | None]) -> float:
    """The warm-up's users/s: the load's own arrival rate, so that the JVM warms at the pace it then measures at (a
    ramp's users over its duration); an at-once load has none: its users at most AT_ONCE_WARMUP_RATE a second."""
    users, duration = given.get("users") or 0.0, given.get("duration_s") or 0.0
    if injection == "constant":
        return given["rate"] or 0.0
    if injection == "ramp":
        return users / duration
    return min(users, AT_ONCE_WARMUP_RATE)


def request_stats(entries: dict[str, Any], name: str) -> dict[str, Any] | None:
    """stats.json's figures of the request named `name` (its `contents`, one entry per request name), None if none."""
    found = [e["stats"] for e in entries.get("contents", {}).values() if e.get("name") == name]
    return found[0] if found else None


def measured_span_s(log: Path) -> float:
    """The measured requests' own span in seconds: the first one's start to the last one's end, from the REQUEST
    lines of the report's simulation.log (REQUEST, group, name, start ms, end ms, OK|KO, message; Gatling 3.11's text
    log). 0 where none is there."""
    if not log.is_file():
        raise ToolFailed(f"Gatling's report has a {WARM_UP!r} request and no {log.name} beside it: {log}")
    first = last = None
    with log.open() as lines:
        for line in lines:
            fields = line.split("\t")
            if fields[0] == "REQUEST" and len(fields) > 4 and fields[2] == MEASURED:
                start, end = int(fields[3]), int(fields[4])
                first = start if first is None else min(first, start)
                last = end if last is None else max(last, end)
    return (last - first) / 1000 if first is not None and last is not None else 0.0


def own_report(output: str, scratch: Path) -> Path:
    """The js/stats.json of the report this run wrote: the folder its output names ("please open the following file:
    .../openmodelsimulation-<time>/index.html"), found under `scratch` by name (the path printed is the container's
    under Docker), never the newest report there, which can be another run's."""
    named = REPORT_LINE.findall(output)
    if not named:
        # a crash ends in a stack trace: its frames say less than the exception lines above them
        said = [line.strip() for line in output.splitlines() if line.strip() and not STACK_FRAME.match(line)]
        raise ToolFailed(
            f"Gatling wrote no report (its output names none, no js/stats.json under {scratch}): "
            + " | ".join(said[-3:] or ["no output"])
        )
    folder = named[-1]
    found = sorted(scratch.rglob(f"{folder}/js/stats.json"))
    if len(found) != 1:
        raise ToolFailed(
            f"Gatling's report {folder} (named in its output) has no js/stats.json under {scratch}"
            if not found
            else f"Gatling's report {folder} is found twice under {scratch}: {found}"
        )
    return found[0]


def _number(value: float) -> str:
    """As Java's parsers read it: 52000, not 5.2e+04 (Integer.parseInt reads users)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


TOOL = Gatling()  # what the registry (tools/__init__.py) finds
