"""Command line of the harness; the Makefile's targets call it (see README.md). Its options and subcommands are
declared in arguments.py, the subcommands that build, start and measure are subcommands.py's, and where they run
(HOSTS' runtime, the servers chosen, the CPU plan) is placing.py's."""

from __future__ import annotations

import argparse
import os
from contextlib import nullcontext
from dataclasses import replace

from harness.basics import cpu_speed, idle_states, interrupt
from harness.basics.cpus import CpuPlanError
from harness.basics.machine import allow_open_files
from harness.basics.messages import fail, say, warn
from harness.cli.arguments import parser
from harness.cli.placing import cpu_plan_of, hosts_runtime, names, targets, with_twin
from harness.cli.subcommands import (
    COMMANDS,
    cmd_build,
    cmd_calibrate,
    cmd_duel,
    cmd_overhead,
    cmd_plan,
    cmd_twin,
    cmd_versus,
    twin_inputs,
)
from harness.config import environment
from harness.config import scenarios as scenario_data
from harness.config.environment import Configuration, ConfigurationError
from harness.config.host_roles import HostsError
from harness.config.manifest import ManifestError, Server, by_default, discover, select
from harness.containers.several_hosts import HostsRuntime
from harness.export import command
from harness.history import compare, history_command
from harness.judging import capacity
from harness.measuring.campaign import OrderError
from harness.results.store import DiskFull, RunIdError, check_run_id
from harness.runtime import Runtime, RuntimeFailure
from harness.runtime.state import StateFull
from harness.servers.lock import HarnessBusy, one_command_at_a_time
from harness.servers.runtime_choice import get_runtime
from harness.servers.session import Session
from harness.tools import oha_mix
from harness.tools.availability import PreflightError
from harness.versus.checkout import BuildFailed, GitFailed, RevisionError
from harness.versus.twin_spec import TwinError

__all__ = ["main", "with_twin"]

# the commands that start servers, measure or build: one at a time per checkout (harness/servers/lock.py); a build beside a run would take its CPUs and rewrite the jars its JVMs have open
EXCLUSIVE = {"build", "up", "down", "ping", "run", "bench", "overhead", "versus", "duel", "calibrate", "probe", "twin"}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Ctrl-C, SIGTERM (CI, a supervisor) and SIGHUP (a dropped ssh session) unwind the command: every server and tool
    # it started is stopped
    interrupt.install()
    allow_open_files()
    try:
        servers = discover()
        config = environment.read(os.environ, servers, options(args))  # every variable checked, once, first
        idle_states.choose(config.cpu_idle)  # held by every Session while it is open
        cpu_speed.choose(config.cpu_meter)
        oha_mix.keep(config.keep_request_db)
        if args.run_id:
            check_run_id(args.run_id)  # before anything starts; claimed when the run opens
        if args.command == "twin":
            twin_inputs(args, servers)  # a bad input said at once, not after waiting for the lock
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
        TwinError,
    ) as exc:
        fail(str(exc))
        return 2
    except (DiskFull, StateFull, BuildFailed, GitFailed) as exc:
        fail(str(exc))
        return 1
    except KeyboardInterrupt:
        try:
            warn("interrupted: stopped what this command started; results so far are kept")
        except OSError:  # SIGHUP: the terminal is gone, and with it the place to say so
            pass
        return 130


def options(args: argparse.Namespace) -> dict[str, str | None]:
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


def run_command(args: argparse.Namespace, config: Configuration, servers: dict[str, Server]) -> int:
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
    if args.command == "duel":
        return cmd_duel(args, config, servers)
    if args.command == "twin":
        return cmd_twin(args, config, servers)
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
