"""`make twin`: our server measured beside its TechEmpower twin (issue 48), and beside itself (the A/A), all up at once
on the server's CPUs of the CPU plan, the load tools on the load generator's.

All are started here and always stopped here, Ctrl-C and failures included (each in a process group of its own,
killed whole: runtime/local.py's stop). Ours is checked against the contract on a start of its own, stopped before
ours is started again for the rounds; our second process (the A/A: the bench's `<ours>-twin`) is started the same way.
Each answers a 200 with a body on each of its routes, is warmed alike in turns (twin_warmup.py: until flat by the
bench's trend rule), then measured in rounds: in round k, for each route pair and pattern, every side back to back in
their order rotated by k, wrk for keep-alive and ab (or wrk sending `Connection: close`) for connection per request;
each attempt keeps its req/s and its p99 latency as the tool's adapter read it (wrk --latency, ab's percentiles), and
what the measured server spent on it a request (CPU µs in user space and in the kernel, context switches:
sampling.process_cost read before and after; a count of switches moves far less with the machine's noise than a rate),
and with CPU_METER=1 each CPU's speed and each role's share of its CPUs (twin_speeds.py: the ratios on the server
CPU's speed beside). The machine's steadiness probe (steadiness.py, as `make bench` takes it) is read before and
after. What the rounds come to (twin_table.py: ours ÷ theirs, and ours ÷ ours again, which is how far apart this
sitting reads identical servers) is written to results/<stamp>-twin-<ours>/twin.json and twin.md."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.basics import httpclient, interrupt
from harness.basics.cpus import CpuPlan, format_cpus
from harness.basics.machine import kernel_start, port_owner, process_create_time, wait_until
from harness.basics.messages import say
from harness.basics.paths import RESULTS
from harness.basics.sampling import ProcessCost, process_cost
from harness.config.manifest import Server
from harness.config.manifest import twin as manifest_twin
from harness.measuring import steadiness
from harness.measuring.verification import verify
from harness.report.run_conditions import steadiness_text
from harness.results.store import new_run_id
from harness.runtime import RunningServer
from harness.runtime.local import LocalRuntime, log_tail, spawn_server
from harness.tools.output import Measurement
from harness.versus.twin_speeds import AttemptWatch, on_speed
from harness.versus.twin_table import (
    PATTERNS,
    Twin,
    TwinError,
    again_summary,
    cost_summary,
    markdown,
    ms_text,
    p99_summary,
    summary,
    tool_of,
)
from harness.versus.twin_warmup import HOST, TwinOptions, TwinSide, load, rotated, warm

NO_UPSTREAM = {"weather"}  # routes whose check needs the upstream nginx, which a twin run does not start


def run_twin(server: Server, twin: Twin, plan: CpuPlan, options: TwinOptions, root: Path = RESULTS) -> Path:
    """The whole twin run; the folder its twin.json and twin.md were written to."""
    if twin.ours != server.name:
        raise TwinError(f"{twin.folder}/twin.toml is the twin of {twin.ours!r}, not of {server.name!r}")
    folder = root / new_run_id(f"twin-{server.name}", root)
    say(f"twin: {server.name} beside {twin.name} ({twin.folder}); results in {folder}")
    probes: dict[str, Any] = {"before": _probe(plan, options, "before")}
    with servers_up(server, twin, plan, folder, options) as up:
        ours_paths = tuple(m for _, m in twin.routes)
        sides = [
            TwinSide("ours", up.ours.port, up.ours.pid, ours_paths, server.warmup_connections),
            TwinSide(
                "theirs", up.theirs.port, up.theirs.pid, tuple(t for t, _ in twin.routes), twin.warmup_connections
            ),
        ]
        if up.again:
            sides.append(TwinSide("again", up.again.port, up.again.pid, ours_paths, server.warmup_connections))
        climbed = warm(sides, plan, options, folder / "raw")
        attempts = measure_rounds(sides, plan, options, folder / "raw")
    probes["after"] = _probe(plan, options, "after")
    result = _result(server, twin, plan, options, attempts)
    pids = {"checked": up.checked_pid, "measured": up.ours.pid, **({"again": up.again.pid} if up.again else {})}
    result.update(stamp=folder.name, steadiness=probes, climb=climbed, ours_pids=pids)
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


@dataclass(frozen=True)
class Up:
    """The servers of a twin run, as servers_up started them."""

    ours: RunningServer
    theirs: RunningServer
    again: RunningServer | None  # ours a second time (the A/A), where asked for
    checked_pid: int  # the process ours was checked in, stopped before `ours` started


@contextmanager
def servers_up(server: Server, twin: Twin, plan: CpuPlan, folder: Path, options: TwinOptions) -> Iterator[Up]:
    """Ours, the twin and ours again (the A/A, `options.again`) up on the plan's server CPUs for the block, all stopped
    at its end whatever ends it. Ours is checked against the contract on a start of its own, stopped before ours is
    started again for the rounds, so that every measured process has served nothing but one GET on each of its paths
    and the warm-up: by hand, a play process checked first (every route, errors, HTTP/1.0, pipelining) read 0.70-0.92
    of an unchecked one for its first five rounds (play/PROFILE.md). Ours again is `<ours>-twin`, the bench's A/A
    twin: the same command and environment on a port of its own, started the same way as ours."""
    runtime, cpus = LocalRuntime(), list(plan.server)
    copy = manifest_twin(server, {server.port, twin.port} | ({server.h2c_port} if server.h2c_port else set()))
    needed = [(f"the twin {twin.name}", twin.port)]
    if options.again:
        needed.append((f"{server.name} again (the A/A)", copy.port))
    for what, port in needed:
        owner = port_owner(HOST, port)
        if owner:
            raise TwinError(f"cannot start {what}: port {port} is in use by {owner}")
    started: list[RunningServer] = []
    try:
        started.append(runtime.start(server, cpus, server.port, {}))
        check_ours(server, started[0])
        checked_pid = started[0].pid
        runtime.stop(started.pop())
        started.append(runtime.start(server, cpus, server.port, {}))
        say(f"  {server.name} up again at {HOST}:{server.port} on CPU {format_cpus(cpus)}, to be measured")
        started.append(start_twin(twin, cpus, folder / "twin.log", options.startup_timeout_s))
        say(f"  {twin.name} up at {HOST}:{twin.port} on CPU {format_cpus(cpus)}")
        if options.again:
            started.append(runtime.start(copy, cpus, copy.port, {}))
            say(f"  {server.name} again (the A/A) at {HOST}:{copy.port} on CPU {format_cpus(cpus)}")
        for theirs, mine in twin.routes:
            for name, port, path in ((server.name, server.port, mine), (twin.name, twin.port, theirs)):
                answers(name, port, path, raising=True)
            if options.again:
                answers(copy.name, copy.port, mine, raising=True)
        yield Up(started[0], started[1], started[2] if options.again else None, checked_pid)
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


def measure_rounds(sides: list[TwinSide], plan: CpuPlan, options: TwinOptions, raw: Path) -> list[dict[str, Any]]:
    """Every attempt of the rounds, in the order measured: round k measures each route pair and pattern on every side
    back to back, the sides in their order rotated by k (two sides: ours first when k is even)."""
    attempts: list[dict[str, Any]] = []
    for k in range(options.rounds):
        for n in range(len(sides[0].paths)):
            for pattern in PATTERNS:
                for side in rotated(sides, k):
                    interrupt.check()
                    url = f"http://{HOST}:{side.port}{side.paths[n]}"
                    scratch = raw / f"round{k}-{side.label}-{n}-{pattern}"
                    before = process_cost(side.pid)
                    with AttemptWatch(plan) as watch:
                        m = load(pattern, url, options, options.attempt_s, plan.loadgen, scratch)
                    after = process_cost(side.pid)
                    cost = per_request(before, after, m.requests)
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
                            "cpu": watch.reading(before, after),
                        }
                    )
                say(
                    f"  round {k + 1}/{options.rounds} {sides[1].paths[n]} {pattern}: "
                    + ", ".join(
                        f"{a['side']} {a['rps']:,.0f} req/s p99 {ms_text(a['p99_ms'], ' ms')}"
                        for a in attempts[-len(sides) :]
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
            labels = ("ours", "theirs", "again") if any(a["side"] == "again" for a in mine) else ("ours", "theirs")
            rps = {side: [a["rps"] for a in mine if a["side"] == side] for side in labels}
            p99 = {side: [a["p99_ms"] for a in mine if a["side"] == side] for side in labels}
            pairs.append(
                {
                    "theirs_path": theirs_path,
                    "ours_path": ours_path,
                    "pattern": pattern,
                    "tool": tool_of(pattern, options.close_tool),
                    **summary(rps["ours"], rps["theirs"]),
                    "ours_rps": rps["ours"],
                    "theirs_rps": rps["theirs"],
                    "p99": p99_summary(p99["ours"], p99["theirs"]),
                    "cost": cost_summary({side: [a["cost"] for a in mine if a["side"] == side] for side in labels}),
                    **({"again": again_summary(rps["ours"], rps["again"])} if "again" in rps else {}),
                    "on_speed": on_speed(mine, labels),
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
        "warmup": {
            "tolerance": options.warmup_tolerance,
            "window": options.warmup_window,
            "max_s": options.warmup_max_s,
        },
        "cpus": {"server": format_cpus(plan.server), "loadgen": format_cpus(plan.loadgen)},
        "server_cores": len(plan.server),
        "pairs": pairs,
        "attempts": attempts,
    }
