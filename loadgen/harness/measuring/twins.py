"""`make twin`: our server measured beside its TechEmpower twin (issue 48), both up at once on the server's CPUs of the
CPU plan, the load tools on the load generator's.

Both are started here and always stopped here, Ctrl-C and failures included (each in a process group of its own,
killed whole: runtime/local.py's stop). Ours is checked against the contract on a start of its own, stopped before
ours is started again for the rounds; then each answers a 200 with a body on each of its routes, is warmed alike (its
`warmup_connections` of connection-per-request load, then each route pair on both patterns), then measured in
alternating rounds: in round k, for each route pair and pattern, ours first when k is even and theirs first when it
is odd, wrk for keep-alive and ab for connection per request; each attempt keeps its req/s and its p99 latency as the
tool's adapter read it (wrk --latency, ab's percentiles), and what the measured server spent on it a request (CPU µs
in user space and in the kernel, context switches: sampling.process_cost read before and after; a count of switches
moves far less with the machine's noise than a rate). The machine's steadiness probe (steadiness.py, as `make bench`
takes it) is read before and after. What the rounds come to (twin_table.py) is written to
results/<stamp>-twin-<ours>/twin.json and twin.md."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.basics import httpclient, interrupt
from harness.basics.cpus import CpuPlan, format_cpus
from harness.basics.machine import kernel_start, pinned, port_owner, process_create_time, wait_until
from harness.basics.messages import say
from harness.basics.paths import RESULTS
from harness.basics.sampling import ProcessCost, process_cost
from harness.config.manifest import Server
from harness.measuring import steadiness
from harness.measuring.twin_table import (
    PATTERNS,
    TOOL_OF,
    Twin,
    TwinError,
    cost_summary,
    first_of_round,
    markdown,
    ms_text,
    p99_summary,
    summary,
)
from harness.measuring.verification import verify
from harness.report.run_conditions import steadiness_text
from harness.results.store import new_run_id
from harness.runtime import RunningServer
from harness.runtime.local import LocalRuntime, log_tail, spawn_server
from harness.tools import TOOLS, LoadSpec, ToolFailed
from harness.tools.adapter import ParseError
from harness.tools.output import Measurement

HOST = "127.0.0.1"
TOOL_TIMEOUT_S = 10  # a request's timeout (wrk --timeout, ab -s)
NO_UPSTREAM = {"weather"}  # routes whose check needs the upstream nginx, which a twin run does not start


@dataclass(frozen=True)
class TwinOptions:
    rounds: int = 7
    attempt_s: int = 3  # whole seconds (wrk's -d): each measured attempt, wrk's or ab's (-t)
    warmup_s: int = 3  # each route pair and pattern, on each side, before the rounds
    concurrency: int = 100  # wrk's and ab's connections, as the bench's hello scenario (loadgen/scenarios.toml)
    steadiness: dict[str, float] | None = None  # {"seconds", "window_s"} of the probe before and after; None: none
    startup_timeout_s: float = 60.0  # the twin's (ours: its manifest's)


@dataclass(frozen=True)
class TwinSide:
    """One of the two servers as the rounds see it."""

    label: str  # "ours" or "theirs"
    port: int
    pid: int  # its process (a wrapper's children counted in): what its attempts cost is read from it
    paths: tuple[str, ...]  # its path of each route pair, in twin.toml's order
    warmup_connections: int


def run_twin(server: Server, twin: Twin, plan: CpuPlan, options: TwinOptions, root: Path = RESULTS) -> Path:
    """The whole twin run; the folder its twin.json and twin.md were written to."""
    if twin.ours != server.name:
        raise TwinError(f"{twin.folder}/twin.toml is the twin of {twin.ours!r}, not of {server.name!r}")
    folder = root / new_run_id(f"twin-{server.name}", root)
    say(f"twin: {server.name} beside {twin.name} ({twin.folder}); results in {folder}")
    probes: dict[str, Any] = {"before": _probe(plan, options, "before")}
    with servers_up(server, twin, plan, folder, options.startup_timeout_s) as (mine, its, checked_pid):
        ours = TwinSide("ours", mine.port, mine.pid, tuple(m for _, m in twin.routes), server.warmup_connections)
        theirs = TwinSide("theirs", its.port, its.pid, tuple(t for t, _ in twin.routes), twin.warmup_connections)
        for side in (ours, theirs):
            warm(side, plan, options, folder / "raw")
        attempts = measure_rounds(ours, theirs, plan, options, folder / "raw")
    probes["after"] = _probe(plan, options, "after")
    result = _result(server, twin, plan, options, attempts)
    result.update(stamp=folder.name, steadiness=probes, ours_pids={"checked": checked_pid, "measured": ours.pid})
    (folder / "twin.json").write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result)
    (folder / "twin.md").write_text(table)
    say(table)
    return folder


def _probe(plan: CpuPlan, options: TwinOptions, when: str) -> dict[str, Any] | None:
    if not options.steadiness:
        return None
    say(f"machine steadiness probe ({when} the rounds, {options.steadiness['seconds']:g} s on both sides' CPUs)")
    reading = steadiness.probe({"server": plan.server[0], "loadgen": plan.loadgen[0]}, **options.steadiness)
    say(f"  {steadiness_text(reading)}")
    return reading


@contextmanager
def servers_up(
    server: Server, twin: Twin, plan: CpuPlan, folder: Path, timeout_s: float
) -> Iterator[tuple[RunningServer, RunningServer, int]]:
    """Ours and the twin up on the plan's server CPUs for the block, both stopped at its end whatever ends it; yields
    both, ours first, and the pid ours was checked in. Ours is checked against the contract on a start of its own,
    stopped before ours is started again for the rounds, so that both measured processes have served nothing but one
    GET on each of their paths and the warm-up: by hand, a play process checked first (every route, errors, HTTP/1.0,
    pipelining) read 0.70-0.92 of an unchecked one for its first five rounds (play/PROFILE.md)."""
    runtime, cpus = LocalRuntime(), list(plan.server)
    owner = port_owner(HOST, twin.port)
    if owner:
        raise TwinError(f"cannot start the twin {twin.name}: port {twin.port} is in use by {owner}")
    started: list[RunningServer] = []
    try:
        started.append(runtime.start(server, cpus, server.port, {}))
        check_ours(server, started[0])
        checked_pid = started[0].pid
        runtime.stop(started.pop())
        started.append(runtime.start(server, cpus, server.port, {}))
        say(f"  {server.name} up again at {HOST}:{server.port} on CPU {format_cpus(cpus)}, to be measured")
        started.append(start_twin(twin, cpus, folder / "twin.log", timeout_s))
        say(f"  {twin.name} up at {HOST}:{twin.port} on CPU {format_cpus(cpus)}")
        for theirs, mine in twin.routes:
            answers(server.name, server.port, mine, raising=True)
            answers(twin.name, twin.port, theirs, raising=True)
        yield started[0], started[1], checked_pid
    finally:
        for running in reversed(started):
            runtime.stop(running)


def start_twin(twin: Twin, cpus: list[int], log: Path, timeout_s: float) -> RunningServer:
    """The twin's `run` in its folder, pinned to `cpus` in a process group of its own, once its first route answers
    200; TwinError (the twin stopped) when its program is missing, it dies or it does not answer in time."""
    program = twin.run[0] if "/" not in twin.run[0] else str(twin.folder / twin.run[0])
    if not shutil.which(program):
        raise TwinError(f"cannot start the twin {twin.name}: {twin.run[0]} is not there (in {twin.folder})")
    env = {**os.environ, **twin.env, "SERVER_CORES": str(len(cpus)), "PORT": str(twin.port)}
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out, interrupt.deferred():  # a Ctrl-C during the Popen raises once `proc` is kept
        proc = spawn_server(list(twin.run), cpus, twin.folder, env, out)
        running = RunningServer(
            name=twin.name,
            host=HOST,
            port=twin.port,
            cpus=cpus,
            pid=proc.pid,
            log=str(log),
            started_at=0.0,
            startup_s=0.0,
            runtime="local",
            pid_created=process_create_time(proc.pid),
            pid_start=kernel_start(proc.pid),
        )
    try:
        first = twin.routes[0][0]
        up = wait_until(lambda: proc.poll() is not None or answers(twin.name, twin.port, first), timeout_s, 0.05, True)
        if proc.poll() is not None or not up:
            why = f"exited ({proc.returncode})" if proc.poll() is not None else f"did not answer in {timeout_s:g} s"
            raise TwinError(f"the twin {twin.name} {why} while starting; its log:\n{log_tail(log)}")
    except BaseException:
        LocalRuntime().stop(running)
        raise
    return running


def answers(name: str, port: int, path: str, raising: bool = False) -> bool:
    """Whether GET `path` answers 200 with a body (TwinError saying what came instead, when `raising`)."""
    try:
        response = httpclient.get(HOST, port, path, timeout=2)
        ok, what = response.status == 200 and bool(response.body), f"{response.status}, {len(response.body)} bytes"
    except (OSError, httpclient.HttpError) as exc:
        ok, what = False, str(exc)
    if raising and not ok:
        raise TwinError(f"{name}: GET {path} answered {what}, not 200 with a body")
    return ok


def check_ours(server: Server, running: RunningServer) -> None:
    """Our server against the contract (its routes but those needing the upstream)."""
    report = verify(
        server.identity, running.host, running.port, tuple(r for r in server.routes if r not in NO_UPSTREAM)
    )
    if not report.ok:
        raise TwinError(f"{server.name} fails the contract: {'; '.join(report.failures[:3])}")
    say(
        f"  {server.name}: contract OK ({report.checks} checks) on a start of its own (pid {running.pid}), then stopped"
    )


def load(
    pattern: str, url: str, concurrency: int, seconds: int, cpus: tuple[int, ...], scratch: Path, requests: int = 0
) -> Measurement:
    """One run of the pattern's tool against `url`, pinned to `cpus`: `seconds` long, or `requests` in all (ab)."""
    spec = LoadSpec(
        url=url,
        concurrency=concurrency,
        requests=requests or None,
        duration_s=None if requests else seconds,
        threads=len(cpus),
        timeout_s=TOOL_TIMEOUT_S,
    )
    return _run_tool(TOOL_OF[pattern], spec, cpus, scratch)


def _run_tool(name: str, spec: LoadSpec, cpus: tuple[int, ...], scratch: Path) -> Measurement:
    tool = TOOLS[name]
    scratch.mkdir(parents=True, exist_ok=True)
    argv = tool.command(spec, scratch)
    proc = subprocess.run(pinned(argv, cpus), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    (scratch / "output.txt").write_text(proc.stdout + proc.stderr)
    try:
        return tool.parse(proc.stdout + proc.stderr, scratch)
    except (ToolFailed, ParseError) as exc:
        raise TwinError(f"{name} against {spec.url} measured nothing: {exc} (output in {scratch})") from None


def warm(side: TwinSide, plan: CpuPlan, options: TwinOptions, raw: Path) -> None:
    """Its JIT's per-connection climb first (`warmup_connections` of connection-per-request load on its first route),
    then each route on both patterns for `warmup_s`: the same for ours and the twin."""
    say(
        f"  warming {side.label}: {side.warmup_connections} new connections, then {options.warmup_s} s per route and pattern"
    )
    url = f"http://{HOST}:{side.port}"
    if side.warmup_connections:
        conc = options.concurrency
        load(
            "connection-per-request",
            url + side.paths[0],
            conc,
            0,
            plan.loadgen,
            raw / f"warm-{side.label}-connections",
            side.warmup_connections,
        )
    for n, path in enumerate(side.paths):
        for pattern in PATTERNS:
            load(
                pattern,
                url + path,
                options.concurrency,
                options.warmup_s,
                plan.loadgen,
                raw / f"warm-{side.label}-{n}-{pattern}",
            )


def measure_rounds(
    ours: TwinSide, theirs: TwinSide, plan: CpuPlan, options: TwinOptions, raw: Path
) -> list[dict[str, Any]]:
    """Every attempt of the rounds, in the order measured: round k measures each route pair and pattern on both sides
    back to back, ours first when k is even."""
    attempts: list[dict[str, Any]] = []
    for k in range(options.rounds):
        order = (ours, theirs) if first_of_round(k) == "ours" else (theirs, ours)
        for n in range(len(ours.paths)):
            for pattern in PATTERNS:
                for side in order:
                    interrupt.check()
                    url = f"http://{HOST}:{side.port}{side.paths[n]}"
                    scratch = raw / f"round{k}-{side.label}-{n}-{pattern}"
                    before = process_cost(side.pid)
                    m = load(pattern, url, options.concurrency, options.attempt_s, plan.loadgen, scratch)
                    cost = per_request(before, process_cost(side.pid), m.requests)
                    attempts.append(
                        {
                            "round": k,
                            "side": side.label,
                            "pair": n,
                            "pattern": pattern,
                            "path": side.paths[n],
                            "rps": round(m.rps, 1),
                            "requests": m.requests,
                            "errors": m.errors.total,
                            "length_errors": m.errors.length,
                            "p99_ms": _p99(m),
                            "cost": cost,
                        }
                    )
                say(
                    f"  round {k + 1}/{options.rounds} {theirs.paths[n]} {pattern}: "
                    + ", ".join(
                        f"{a['side']} {a['rps']:,.0f} req/s p99 {ms_text(a['p99_ms'], ' ms')}" for a in attempts[-2:]
                    )
                )
    return attempts


def per_request(before: ProcessCost | None, after: ProcessCost | None, requests: int) -> dict[str, float] | None:
    """What a server spent on each of an attempt's `requests`: CPU µs in user space and in the kernel, and context
    switches; None when it could not be read at either end or no request was answered."""
    if before is None or after is None or requests <= 0:
        return None
    return {
        "user_us": round((after.user_s - before.user_s) * 1e6 / requests, 1),
        "kernel_us": round((after.system_s - before.system_s) * 1e6 / requests, 1),
        "switches": round((after.switches - before.switches) / requests, 3),
    }


def _p99(m: Measurement) -> float | None:
    """The attempt's p99 in ms to the µs (wrk's and ab's own resolution), None where the tool gave none."""
    p99 = m.latency_ms.get("p99")
    return None if p99 is None else round(p99, 3)


def _result(
    server: Server, twin: Twin, plan: CpuPlan, options: TwinOptions, attempts: list[dict[str, Any]]
) -> dict[str, Any]:
    """twin.json's content but the stamp and the probe: the conditions, each route pair and pattern's summary (on
    rate, on p99 under "p99", on what a request cost each side under "cost"), and every attempt."""
    pairs = []
    for n, (theirs_path, ours_path) in enumerate(twin.routes):
        for pattern in PATTERNS:
            mine = [a for a in attempts if a["pair"] == n and a["pattern"] == pattern]
            rps = {side: [a["rps"] for a in mine if a["side"] == side] for side in ("ours", "theirs")}
            p99 = {side: [a["p99_ms"] for a in mine if a["side"] == side] for side in ("ours", "theirs")}
            pairs.append(
                {
                    "theirs_path": theirs_path,
                    "ours_path": ours_path,
                    "pattern": pattern,
                    "tool": TOOL_OF[pattern],
                    **summary(rps["ours"], rps["theirs"]),
                    "ours_rps": rps["ours"],
                    "theirs_rps": rps["theirs"],
                    "p99": p99_summary(p99["ours"], p99["theirs"]),
                    "cost": cost_summary(
                        [a["cost"] for a in mine if a["side"] == "ours"],
                        [a["cost"] for a in mine if a["side"] == "theirs"],
                    ),
                }
            )
    return {
        "ours": server.name,
        "twin": twin.name,
        "twin_folder": str(twin.folder),
        "entry": twin.entry,
        "versions": twin.versions,
        "rounds": options.rounds,
        "attempt_s": options.attempt_s,
        "warmup_s": options.warmup_s,
        "concurrency": options.concurrency,
        "cpus": {"server": format_cpus(plan.server), "loadgen": format_cpus(plan.loadgen)},
        "server_cores": len(plan.server),
        "pairs": pairs,
        "attempts": attempts,
    }
