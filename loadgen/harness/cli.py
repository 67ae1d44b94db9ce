"""Command line of the harness; the Makefile's targets call it (see README.md)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from contextlib import nullcontext
from dataclasses import replace

from harness.basics import interrupt
from harness.basics.cpus import CpuPlan, CpuPlanError, assumed_siblings
from harness.basics.cpus import plan as cpu_plan
from harness.basics.machine import allow_open_files
from harness.basics.messages import fail, say, warn
from harness.calibrate import calibration
from harness.config import environment
from harness.config import scenarios as scenario_data
from harness.config.environment import Configuration, ConfigurationError
from harness.config.host_roles import HostsError
from harness.config.manifest import (
    SERVERS_DIR_VAR,
    ManifestError,
    Server,
    at_port,
    build_steps,
    by_default,
    discover,
    select,
    twin,
    with_role,
)
from harness.history import history_command
from harness.measuring import overhead, planning, probing, steadiness
from harness.measuring.campaign import OrderError, run_campaign, verify
from harness.measuring.lifecycle import RunOptions, finish_run, open_run
from harness.measuring.lock import HarnessBusy, one_command_at_a_time
from harness.measuring.preflight import announce_limits, check_hosts_settings, tools_needed
from harness.measuring.session import Session
from harness.report import command, compare
from harness.results import capacity
from harness.results.store import DiskFull, RunIdError, check_run_id, claim_run_id, is_out_of_space, new_run_id
from harness.runtime import Runtime, RuntimeFailure, get_runtime
from harness.runtime.docker.several_hosts import HostsRuntime
from harness.runtime.state import StateFull
from harness.tools.availability import PreflightError
from harness.versus import flow as versus
from harness.versus.checkout import BuildFailed, RevisionError


def names(text: str | None) -> list[str]:
    return [n for n in (text or "").replace(",", " ").split() if n]


def cmd_build(args, config: Configuration, servers: list[Server], runtime=None) -> int:
    for step in build_steps(servers):
        say(f"building {', '.join(step.servers)}: {step.command}  (in {step.cwd})")
        if subprocess.run(step.command, shell=True, cwd=step.cwd).returncode != 0:
            fail(
                f"building {', '.join(step.servers)} failed (command above, run in {step.cwd}); fix it and run "
                f"`make build` again"
            )
            return 1
    # docker: each server's image from the artifacts just built (local: nothing to build); HOSTS: sent to the hosts
    (runtime or hosts_runtime(args, config) or get_runtime(config.runtime, plan=None)).build_images(servers)
    return 0


def hosts_runtime(args, config: Configuration) -> HostsRuntime | None:
    """With HOSTS set, the runtime on those hosts (every engine asked first; settings that would mean something else
    refused); None without it."""
    if not config.hosts:
        return None
    given_cpus = {f"CPUS_{role.upper()}": cpus for role, cpus in config.cpus.items()}
    check_hosts_settings(config.hosts, config.runtime, args.command, given_cpus)
    return HostsRuntime(config.hosts, config.memory_limits)


def targets(session: Session, requested: list[str], servers: dict[str, Server]) -> list[Server]:
    """Named servers; else the ones that are up; else all of them (the calibrated one only when named)."""
    if requested:
        return select(servers, requested)
    up = session.running()
    return [s for s in by_default(servers) if s.name in up] or by_default(servers)


def with_twin(
    servers: dict[str, Server], chosen: list[Server], name: str, ports: dict[str, int], announce: bool = True
) -> list[Server]:
    """`chosen` with `name`'s A/A twin right after it (and in `servers`, for the session): measured like any server,
    so the report can say whether the method ordered two identical servers. Where PORTS moves `name`, its twin
    moves with it, clear of every port the run uses."""
    placed = {n: at_port(s, ports.get(n, s.port)) for n, s in servers.items()}
    taken = {p for s in (*servers.values(), *placed.values()) for p in (s.port, s.h2c_port) if p}
    double = twin(placed[name], taken)
    servers[double.name] = double
    if announce:
        say(
            f"A/A control: {name} is measured twice, as {name} and {double.name} (port {double.port}); the report says "
            "whether the two were ordered (TWIN= turns it off)"
        )
    at = next(i for i, s in enumerate(chosen) if s.name == name)
    return chosen[: at + 1] + [double] + chosen[at + 1 :]


def cpu_plan_of(config: Configuration, available: tuple[int, ...] | None = None) -> CpuPlan:
    """This machine's CPU plan (or that of `available` CPUs, of ASSUME_SMT threads per core where `make plan` assumes
    them), with CPUS_* and LOADGEN_PROCESSES applied."""
    siblings = assumed_siblings(len(available), config.assume_smt or 1) if config.assume_cpus and available else None
    return replace(
        cpu_plan(available, overrides=config.cpus, siblings=siblings), loadgen_processes=config.loadgen_processes
    )


def cmd_plan(args, config: Configuration, servers: dict[str, Server]) -> int:
    """What `make bench` (or the named scenarios) would run, on this machine's CPU plan or ASSUME_CPUS's; nothing is
    started."""
    runtime = None if config.assume_cpus else hosts_runtime(args, config)
    if runtime:
        plan = replace(runtime.plan, loadgen_processes=config.loadgen_processes)
        everything = tuple(sorted({*plan.server, *plan.loadgen, *plan.upstream}))
        machine = planning.Machine(plan, everything, False, runtime.address("server"))
    else:
        available = tuple(range(config.assume_cpus)) if config.assume_cpus else tuple(sorted(os.sched_getaffinity(0)))
        machine = planning.Machine(cpu_plan_of(config, available), available, bool(config.assume_cpus))
    picked = scenario_data.select(scenario_data.load(config.profile), names(args.scenarios))
    settings = scenario_data.settings(config.profile, config.repeat)
    chosen = select(servers, list(config.servers)) if config.servers else by_default(servers)
    twin_name = config.twin if not args.scenarios else ""
    if twin_name and any(s.name == twin_name for s in chosen):
        chosen = with_twin(servers, chosen, twin_name, config.ports, announce=False)
    plan_data = planning.run_plan(machine, chosen, picked, settings, config.ports)
    print(planning.as_json(plan_data) if config.format == "json" else planning.as_text(plan_data))
    return 0


def cmd_up(args, config: Configuration, session: Session, chosen: list[Server]) -> int:
    for server in chosen:
        session.ensure(server)
    for name, running in session.running().items():
        say(f"up: {name} at {running.base_url} on CPU {','.join(map(str, running.cpus))}, log {running.log}")
    return 0


def cmd_down(args, config: Configuration, session: Session, chosen: list[Server]) -> int:
    found = session.clear_leftovers()  # whatever a killed command left, whichever servers were asked for
    up = session.running()
    for name in (n for n in list(up) if not config.servers or n in config.servers):
        session.stop(name)
    if not up and not found:
        say("no server is up")
    return 0


def cmd_ping(args, config: Configuration, session: Session, chosen: list[Server]) -> int:
    ok = True
    for server in chosen:
        running = session.ensure(server)
        ok &= verify(running, server, session).ok
        session.release(server.name)
    return 0 if ok else 1


def cmd_measure(args, config: Configuration, session: Session, chosen: list[Server]) -> int:
    loaded = scenario_data.load(config.profile)
    picked = scenario_data.select(loaded, names(getattr(args, "scenarios", None)))
    settings = scenario_data.settings(config.profile, config.repeat)
    stepped = any(r.rate_share for s in picked for r in s.runs)
    slo = config.slo_p99_ms if stepped else None
    session.runtime.check_tools(tools_needed(picked))
    notes = announce_limits(picked)
    kind = "bench" if args.command == "bench" else "-".join(names(args.scenarios))
    run_id = claim_run_id(args.run_id) if args.run_id else new_run_id(kind)  # its folder, no other run's
    options = RunOptions(config.profile, settings, " ".join(sys.argv[1:]), probe=args.command == "bench")
    store = open_run(
        run_id, session.runtime, session.plan, options, {"limit_notes": notes, **({"slo_p99_ms": slo} if slo else {})}
    )
    try:
        steadiness.probe_and_record(store, session.plan, settings, "before")
        ok = run_campaign(session, store, chosen, picked, settings, config.order)
        steadiness.probe_and_record(store, session.plan, settings, "after")
    except OSError as exc:  # a raw output or its folder on a full disk: the same message as results.json's own
        if is_out_of_space(exc):
            raise store.out_of_space() from None
        raise
    finally:  # the runtime's conditions are read back while the run's servers (containers) are still up
        finish_run(store, session.runtime)
    return 0 if ok else 1


def cmd_calibrate(args, config: Configuration, session: Session, servers: dict[str, Server]) -> int:
    """`make calibrate`: the calibration plan's loads on the calibrated server, judged against their known answers."""
    found = with_role(servers, "calibrated")
    if not found:
        raise ManifestError(
            "no server has the role 'calibrated' (calibrated/manifest.toml): restore it with `git checkout calibrated`"
        )
    plan = calibration.read_plan(attempts=config.repeat)
    wanted = names(args.tools)
    unknown = sorted(set(wanted) - {load.tool for load in plan.loads})
    if unknown:
        raise scenario_data.ScenarioError(
            f"no calibration load for {', '.join(unknown)}; the plan has "
            f"{', '.join(dict.fromkeys(load.tool for load in plan.loads))}"
        )
    plan = replace(plan, loads=tuple(load for load in plan.loads if not wanted or load.tool in wanted))
    picked = calibration.scenarios(plan)
    session.runtime.check_tools(tools_needed(picked))
    server = found[0]
    session.check_ports([server])
    options = RunOptions(config.profile, plan.settings, " ".join(sys.argv[1:]))
    store = open_run(
        args.run_id and claim_run_id(args.run_id) or new_run_id("calibrate"),
        session.runtime,
        session.plan,
        options,
        {"calibrated_server": server.name},
    )
    ok = False
    try:
        ok = run_campaign(session, store, [server], picked, plan.settings)
    finally:  # what was measured is judged and kept, also on Ctrl-C
        store.set_calibration(calibration.judge_run(store.run, plan, server.name))
        finish_run(store, session.runtime)
    _, missed = calibration.print_verdicts(store.run.calibration or [])
    return 0 if ok and not missed else 1


def cmd_overhead(config: Configuration, servers: dict[str, Server]) -> int:
    scenario = scenario_data.load(config.profile)[overhead.SCENARIO]
    settings = scenario_data.settings(config.profile, config.repeat)
    chosen = select(servers, list(config.servers) or list(overhead.DEFAULT_SERVERS))
    return overhead.run(
        servers,
        chosen,
        scenario,
        cpu_plan_of(config),
        config.ports,
        config.rounds,
        RunOptions(config.profile, settings, " ".join(sys.argv[1:])),
    )


def cmd_versus(args, config: Configuration, servers: dict[str, Server]) -> int:
    """`make versus`: under the local runtime (two builds of one server are two processes of this machine)."""
    if config.hosts or config.runtime == "docker":
        raise ConfigurationError(
            "make versus runs both builds as processes of this machine: use RUNTIME=local (or auto), without HOSTS"
        )
    options = versus.VersusOptions(
        args.server,
        args.base,
        args.head,
        tuple(names(args.scenarios)),
        resolution=environment.number("RESOLUTION", args.resolution, versus.DEFAULT_RESOLUTION * 100, 0.01, 99) / 100,
        budget_s=environment.number("BUDGET_S", args.budget_s, 0, 1, 86400) or None,
        seed=int(environment.number("SEED", args.seed, -1, 0, 2**32 - 1)) if args.seed else None,
    )
    plan = cpu_plan_of(config)
    where = versus.Where(
        get_runtime("local", plan),
        plan,
        config.profile,
        scenario_data.settings(config.profile, config.repeat),
        config.ports,
        " ".join(sys.argv[1:]),
    )
    return versus.run(options, servers, where)


# the commands that start servers, measure or build: one at a time per checkout (harness/measuring/lock.py); a build beside a run would take its CPUs and rewrite the jars its JVMs have open
EXCLUSIVE = {"build", "up", "down", "ping", "run", "bench", "overhead", "versus", "calibrate", "probe"}
# the commands that run in a session (build returns before one is opened)
COMMANDS = {
    "up": cmd_up,
    "down": cmd_down,
    "ping": cmd_ping,
    "run": cmd_measure,
    "bench": cmd_measure,
    "probe": probing.cmd_probe,
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="harness",
        description="Build, start, verify and benchmark the servers of this repository.",
        epilog=f"{SERVERS_DIR_VAR}=<folder>: read the servers' manifests from <folder>/*/manifest.toml "
        "instead of the repository's (the tests' own manifests)",
    )
    # each option stands for its variable (RUNTIME...) and takes precedence over it; both checked in config/environment
    p.add_argument("--runtime", help="auto (docker when an engine answers), docker or local (RUNTIME)")
    p.add_argument("--servers", help='e.g. "node rust" (default: the servers that are up, else all) (SERVERS)')
    p.add_argument("--profile", help="quick (default) or seed (PROFILE)")
    p.add_argument("--ports", help='port overrides, e.g. "node=9090" (PORTS)')
    p.add_argument("--repeat", help="measured attempts per scenario (default: the profile's) (REPEAT)")
    p.add_argument(
        "--order", help="auto (interleaved rounds where the servers fit up at once), interleaved or sequential (ORDER)"
    )
    p.add_argument("--run-id", default=None)
    p.add_argument(
        "--build",
        action="store_true",
        help="build the selected servers first, under the same lock (make "
        "bench; up, ping, run, bench): a second bench is refused "
        "before it builds anything",
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build every selected server (its manifest's build command)")
    sub.add_parser("up", help="start servers and leave them running")
    sub.add_parser("down", help="stop the servers that are up")
    sub.add_parser("ping", help="verify the contract on every selected server")
    sub.add_parser(
        "probe", help="each selected server's HTTP/1.1 and h2c compliance, pass, warn or fail per case (docs/probe.md)"
    )
    run = sub.add_parser("run", help="measure some scenarios")
    run.add_argument("scenarios", help='scenario names, e.g. "low-compute"')
    sub.add_parser("bench", help="every scenario on every selected server")
    sub.add_parser("report", help="write the HTML report, charts, summary.md and summary.csv of a run").add_argument(
        "run", nargs="?", default="latest"
    )
    comparison = sub.add_parser("compare", help="change in req/s and p99 between two runs, against their spread")
    comparison.add_argument("a")
    comparison.add_argument("b")
    history = sub.add_parser(
        "history",
        help="every run on one timeline, its changes found (E-divisive means) and "
        "explained: results/history/index.html (reads results only)",
    )
    history.add_argument(
        "--runs",
        default="",
        help=f'run folders, glob patterns from the repository root (default "{history_command.DEFAULT_RUNS}")',
    )
    history.add_argument("--scenarios", default="", help='e.g. "hello backend" (default: every one)')
    history.add_argument("--since", default="", help="the first date or run id, e.g. 2026-11-24")
    history.add_argument("--only", default="", help="servers to show, any name a run recorded (make history's SERVERS)")
    sub.add_parser(
        "calibrate",
        help="every load tool against the calibrated server: known against measured (loadgen/calibrate.toml)",
    ).add_argument(
        "tools", nargs="?", default="", help='only these tools, e.g. "ab wrk" (default: every tool of the plan)'
    )
    sub.add_parser("list", help="servers and scenarios")
    sub.add_parser(
        "plan",
        help="the CPU plan, every load's tool processes and commands, and the estimated time, "
        "without starting anything (ASSUME_CPUS=N: a machine of N CPUs; FORMAT=json)",
    ).add_argument("scenarios", nargs="?", default="", help="default: make bench's")
    overhead_cmd = sub.add_parser(
        "overhead",
        help="docker/local req/s: the runtime-overhead scenario under both runtimes, "
        "alternately (default servers: nginx rust node)",
    )
    overhead_cmd.add_argument("--rounds", help="docker/local rounds (ROUNDS, default 3)")
    versus_cmd = sub.add_parser(
        "versus",
        help="two builds of one server (BASE against HEAD or the working tree) "
        "in one sitting: head ÷ base with its interval",
    )
    versus_cmd.add_argument("--server", required=True)
    versus_cmd.add_argument("--base", required=True, help="a git revision")
    versus_cmd.add_argument("--head", default="", help="a git revision (default: the working tree)")
    versus_cmd.add_argument("--scenarios", default="", help="default: every scenario the server takes part in")
    versus_cmd.add_argument("--resolution", default="", help="the interval's half-width to reach, in %% (default 3)")
    versus_cmd.add_argument(
        "--budget-s", default="", help="measuring time for all scenarios (default 120 per scenario run)"
    )
    versus_cmd.add_argument("--seed", default="", help="of the rounds' random order (default: drawn, and recorded)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Ctrl-C, SIGTERM (CI, a supervisor) and SIGHUP (a dropped ssh session) unwind the command: every server and tool
    # it started is stopped
    interrupt.install()
    allow_open_files()
    try:
        servers = discover()
        config = environment.read(os.environ, servers, options(args))  # every variable checked, once, first
        if args.run_id:
            check_run_id(args.run_id)  # before anything starts; claimed when the run opens
        with one_command_at_a_time() if args.command in EXCLUSIVE else nullcontext():
            return run_command(args, config, servers)
    except (
        ManifestError,
        scenario_data.ScenarioError,
        CpuPlanError,
        PreflightError,
        RuntimeFailure,
        OrderError,
        HarnessBusy,
        capacity.CapacityError,
        HostsError,
        RunIdError,
        ConfigurationError,
        RevisionError,
    ) as exc:
        fail(str(exc))
        return 2
    except (DiskFull, StateFull, BuildFailed) as exc:
        fail(str(exc))
        return 1
    except KeyboardInterrupt:
        try:
            warn("interrupted: stopped what this command started; results so far are kept")
        except OSError:  # SIGHUP: the terminal is gone, and with it the place to say so
            pass
        return 130


def options(args) -> dict[str, str | None]:
    """The command line's options by the variable each stands for (None: not given)."""
    return {
        "RUNTIME": args.runtime,
        "SERVERS": args.servers,
        "PROFILE": args.profile,
        "PORTS": args.ports,
        "REPEAT": args.repeat,
        "ORDER": args.order,
        "ROUNDS": getattr(args, "rounds", None),
    }


def run_command(args, config: Configuration, servers: dict[str, Server]) -> int:
    """The command `args` names; main() holds the lock around it where the command needs one."""
    if args.command == "list":
        for s in servers.values():
            say(f"{s.name:10} port {s.port:<5} {s.stack}")
        for scenario in scenario_data.load(config.profile).values():
            say(f"{scenario.name:14} {scenario.tool:8} {scenario.description}")
        return 0
    if args.command == "report":
        return command.cmd_report(args.run)
    if args.command == "compare":
        return compare.cmd_compare(args.a, args.b)
    if args.command == "history":  # reads results only: no lock, nothing started
        return history_command.cmd_history(
            args.runs, args.scenarios, args.since, names(args.only), config.format, servers
        )
    if args.command == "plan":
        return cmd_plan(args, config, servers)
    if args.command == "build":  # what a killed command left is stopped first: a leftover JVM has the jars open
        builder = hosts_runtime(args, config) or get_runtime(config.runtime, plan=None)  # images need no CPU plan
        Session(builder, None, servers, {}).clear_leftovers()  # type: ignore[arg-type]  # leftovers need no CPU plan
        return cmd_build(args, config, select(servers, list(config.servers)), builder)
    if args.command == "versus":
        return cmd_versus(args, config, servers)
    hosts = hosts_runtime(args, config)  # every command from here on starts servers or sends load: where?
    runtime: Runtime | HostsRuntime
    if hosts:  # each role on its own Docker host, each host's CPUs its own plan (the load generator's host's)
        runtime, plan = hosts, replace(hosts.plan, loadgen_processes=config.loadgen_processes)
    else:
        if args.command == "overhead":
            return cmd_overhead(config, servers)
        plan = cpu_plan_of(config)
        runtime = get_runtime(config.runtime, plan)
    twin_name = config.twin if args.command == "bench" else ""
    session = Session(runtime, plan, servers, config.ports, keep=args.command == "up")
    with session:
        if args.build:  # what a killed command left is stopped first: a leftover JVM has the jars open
            session.clear_leftovers()
            built = cmd_build(args, config, select(servers, list(config.servers)), runtime)
            if built:
                return built
        requested = list(config.servers)
        if args.command == "calibrate":
            return cmd_calibrate(args, config, session, servers)
        chosen = (
            (select(servers, requested) if requested else by_default(servers))
            if args.command == "up"
            else targets(session, requested, servers)
        )
        if twin_name and any(s.name == twin_name for s in chosen):
            chosen = with_twin(servers, chosen, twin_name, config.ports)
        if args.command in ("up", "ping", "run", "bench", "probe"):
            session.check_ports(chosen)
        return COMMANDS[args.command](args, config, session, chosen)
