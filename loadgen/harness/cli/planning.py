"""`make plan`: what a run would do on this machine, or on one of ASSUME_CPUS CPUs, without starting anything: the CPU
plan, every scenario's and run's tool processes with their cores and exact command lines, and the estimated time.
A pure function of the CPU plan, the servers and the scenarios (the plan of a 64-core box can be read on a laptop)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.basics.cpus import CpuPlan, cpu_ranges
from harness.config.manifest import Server
from harness.config.scenarios import Scenario, Settings
from harness.measuring.clock import Clock, estimate, minutes
from harness.measuring.executor import attempt_spec
from harness.servers.preflight import fitted
from harness.tools import TOOLS
from harness.tools.availability import tool_processes
from harness.tools.load_plan import plan_load

RAW = Path("results/<run>/raw")  # where the side files of a tool go: shown, not made


@dataclass(frozen=True)
class Machine:
    """What the plan is of: the CPU plan, the CPUs it was made from, whether they were assumed (ASSUME_CPUS), and
    where the servers are reached."""

    cpus: CpuPlan
    available: tuple[int, ...]
    assumed: bool
    address: str = "127.0.0.1"


def run_plan(
    machine: Machine, servers: list[Server], scenarios: list[Scenario], settings: Settings, ports: dict[str, int]
) -> dict[str, Any]:
    """The plan as data (FORMAT=json prints it as it is), each load within this machine's open-file limits."""
    scenarios = fitted(scenarios)
    loads = []
    for scenario in scenarios:
        taking_part = [s for s in servers if scenario.path_for(s)]
        if taking_part:
            loads.extend(_loads(machine, scenario, taking_part, ports))
    clock = Clock()
    counts = estimate(clock, servers, scenarios, settings)
    probe_s = 2 * settings.steadiness["seconds"] if settings.steadiness else 0.0
    return {
        "machine": {
            "cpus": len(machine.available),
            "assumed": machine.assumed,
            "cpu_list": cpu_ranges(machine.available),
            "threads_per_core": machine.cpus.threads_per_core,
        },
        "cpu_plan": {
            **machine.cpus.to_dict(),
            "describe": machine.cpus.describe(),
            "loadgen_processes": machine.cpus.loadgen_processes,
        },
        "loads": loads,
        "estimate": {
            "seconds": round(clock.total + probe_s),
            "measuring_s": round(clock.total),
            "steadiness_probe_s": probe_s,
            **counts,
        },
    }


def _loads(machine: Machine, scenario: Scenario, servers: list[Server], ports: dict[str, int]) -> list[dict[str, Any]]:
    first = servers[0]
    out = []
    for run in scenario.runs:
        protocol = scenario.protocol_of(run)
        port = first.h2c_port if protocol == "h2c" and first.h2c_port else ports.get(first.name, first.port)
        url = f"http://{machine.address}:{port}{scenario.path_for(first)}"
        spec = attempt_spec(scenario, run, url, None)
        plan = plan_load(
            scenario.tool,
            spec,
            machine.cpus.loadgen,
            tool_processes(scenario.tool, spec.concurrency),
            spec.processes or machine.cpus.loadgen_processes,
        )
        stem = f"{first.name}-{scenario.name}-{run.label}-1"
        parts = len(plan.processes)
        processes = [
            {
                "cores": list(p.cores),
                "threads": p.threads,
                "argv": p.argv(TOOLS[scenario.tool], RAW / (stem if parts == 1 else f"{stem}.part{i + 1}")),
            }
            for i, p in enumerate(plan.processes)
        ]
        # a tool whose load, once a rate is known, is sized by count rather than by time (its adapter says so)
        counted = bool(run.load.get("duration_s")) and TOOLS[scenario.tool].sized(spec, 1.0, 1.0).duration_s is None
        out.append(
            {
                "scenario": scenario.name,
                "run": run.label,
                "tool": scenario.tool,
                "servers": [s.name for s in servers],
                "shown_for": first.name,
                "processes": processes,
                "all_cores": plan.all_cores,
                "note": plan.note,
                "sized_when_run": (
                    "the request count (ab -n) or calls per connection (httperf) is sized from the "
                    "warm-up's rate when the run starts; shown: the form used before a rate is "
                    "known"
                )
                if counted
                else None,
            }
        )
    return out


def as_text(plan: dict[str, Any]) -> str:
    machine, cpu = plan["machine"], plan["cpu_plan"]
    lines = [
        f"plan for {'an assumed machine of ' if machine['assumed'] else 'this machine, '}{machine['cpus']} CPUs "
        f"({machine['cpu_list']})" + (" (ASSUME_CPUS)" if machine["assumed"] else ""),
        f"  server on CPU {cpu_ranges(cpu['server'])}, load generator on CPU {cpu_ranges(cpu['loadgen'])}, "
        f"upstream nginx on CPU {cpu_ranges(cpu['upstream'])}",
    ]
    if machine["threads_per_core"] > 1:
        lines.append(
            f"  {machine['threads_per_core']} threads per physical core (SMT): each role takes whole cores, "
            "so no sibling of the server's CPUs runs the load generator"
        )
    if cpu["loadgen_processes"]:
        lines.append(f"  LOADGEN_PROCESSES={cpu['loadgen_processes']}: ab and httperf run as that many processes")
    for load in plan["loads"]:
        count = len(load["processes"])
        lines.append(
            f"{load['scenario']} {load['run']} ({load['tool']}, {count} process(es); servers: "
            f"{', '.join(load['servers'])}; shown for {load['shown_for']}, the others differ in port)"
        )
        for i, process in enumerate(load["processes"], 1):
            lines.append(
                f"  {i:>2}. CPU {cpu_ranges(process['cores'])}, {process['threads']} thread(s): "
                + " ".join(map(str, process["argv"]))
            )
        if load["note"]:
            lines.append(f"  NOT ALL CORES: {load['note']}")
        if load["sized_when_run"]:
            lines.append(f"  ({load['sized_when_run']})")
    est = plan["estimate"]
    lines.append(
        f"estimated time: about {minutes(est['seconds'])} ({est['servers']} servers, {est['records']} records "
        f"of {est['attempts']} attempts, {est['warmups']} warm-ups"
        + (f", steadiness probes {est['steadiness_probe_s']:g} s" if est["steadiness_probe_s"] else "")
        + "; builds not counted)"
    )
    return "\n".join(lines)


def as_json(plan: dict[str, Any]) -> str:
    return json.dumps(plan, indent=1, default=str)
