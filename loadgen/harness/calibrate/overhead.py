"""What the Docker runtime costs: the `runtime-overhead` scenario (nginx /weather.json, rust and node /hello, wrk)
measured under the docker and the local runtime alternately, ROUNDS times, in one run; docker/local req/s per server and round.

Alternating, rather than all docker then all local, spreads whatever else the machine does over both sides. Each
round starts the servers afresh under its runtime (same CPU plan, ports, artifacts, warm-up and attempts) and stops
them before the other runtime's turn. `make docker-overhead` runs it; results/<run-id>/results.json keeps every record
(each with its `runtime` and `round`) and the ratios under "overhead"."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from harness.basics.cpus import CpuPlan
from harness.basics.messages import console, say, warn
from harness.config.manifest import Server
from harness.config.scenarios import Scenario
from harness.measuring.campaign import run_campaign
from harness.measuring.lifecycle import RunOptions, closing, open_run, record_runtime_details
from harness.results.records import Record
from harness.results.store import new_run_id
from harness.servers.preflight import tools_needed
from harness.servers.runtime_choice import get_runtime
from harness.servers.session import Session
from harness.stats import intervals as stats

RUNTIMES = ("docker", "local")
SCENARIO = "runtime-overhead"
DEFAULT_SERVERS = ("nginx", "rust", "node")  # the ceiling, a native server and a runtime of its own (Node.js)
TARGET = 0.95  # issue 4: docker/local at least this, on this machine


def ratios(records: list[Record], rounds: int) -> dict[str, dict[str, Any]]:
    """Per server: docker/local of the median req/s in each round, their median, and the ratio of the medians over
    all rounds. A round where a side has no clean figure gives no ratio."""
    rps: dict[str, dict[str | None, dict[int, float]]] = {}  # server -> runtime -> round -> req/s
    for r in records:
        if r.round is not None and r.rps and not r.failed and not r.errors.total:
            rps.setdefault(r.server, {}).setdefault(r.runtime, {})[r.round] = r.rps
    out = {}
    for server, sides in rps.items():
        docker, local = sides.get("docker", {}), sides.get("local", {})
        per_round = {n: round(docker[n] / local[n], 3) for n in range(1, rounds + 1) if n in docker and n in local}
        out[server] = {
            "path": next(r.path for r in records if r.server == server),
            "docker_rps": [docker.get(n) for n in range(1, rounds + 1)],
            "local_rps": [local.get(n) for n in range(1, rounds + 1)],
            "ratio_per_round": per_round,
            "ratio_median": round(stats.median(list(per_round.values())), 3) if per_round else None,
            "ratio_of_medians": (
                round(stats.median(list(docker.values())) / stats.median(list(local.values())), 3)
                if docker and local
                else None
            ),
        }
    return out


def run(
    servers: dict[str, Server],
    chosen: list[Server],
    scenario: Scenario,
    plan: CpuPlan,
    ports: dict[str, int],
    rounds: int,
    options: RunOptions,
) -> int:
    runtimes = {name: get_runtime(name, plan) for name in RUNTIMES}  # both must work before anything starts
    for runtime in runtimes.values():
        runtime.check_tools(tools_needed([scenario]))
    settings = options.settings
    store = open_run(
        new_run_id(SCENARIO),
        runtimes["docker"],
        plan,
        options,
        {
            "runtime": "docker and local, alternating",
            "rounds": rounds,
            "local_tools": runtimes["local"].tool_versions(),
        },
        how=f"{rounds} rounds of docker then local",
    )
    ok = True
    try:
        with closing(store):
            for n in range(1, rounds + 1):
                for name, runtime in runtimes.items():
                    say(f"round {n} of {rounds}: {name} runtime")
                    with Session(runtime, plan, servers, ports) as session:
                        session.check_ports(chosen)
                        ok &= run_campaign(session, store, chosen, [scenario], settings, round_no=n)
                        if name == "docker":
                            record_runtime_details(store, runtime)
                    store.set_overhead(ratios(store.run.records, rounds))
    finally:
        print_ratios(store.run.overhead or {}, rounds)
    return 0 if ok else 1


def _figures(rates: list[float | None]) -> str:
    return ", ".join(f"{x:,.0f}" if x else "-" for x in rates)


def print_ratios(overhead: dict[str, dict[str, Any]], rounds: int) -> None:
    table = Table(title=f"docker / local req/s ({rounds} alternating rounds; target ≥ {TARGET})")
    for column in ("server", "path", "docker req/s", "local req/s", "ratio per round", "median ratio"):
        table.add_column(column, justify="left" if column in ("server", "path") else "right")
    for server, o in overhead.items():
        median = o["ratio_median"]
        table.add_row(
            server,
            o["path"],
            _figures(o["docker_rps"]),
            _figures(o["local_rps"]),
            ", ".join(f"{r:.3f}" for r in o["ratio_per_round"].values()) or "-",
            "-" if median is None else f"[{'green' if median >= TARGET else 'red'}]{median:.3f}[/]",
        )
    console.print(table)
    low = [s for s, o in overhead.items() if o["ratio_median"] is not None and o["ratio_median"] < TARGET]
    if low:
        warn(
            f"docker/local is below {TARGET} for {', '.join(low)}: see the records' flags and spread before "
            f"blaming the runtime"
        )
