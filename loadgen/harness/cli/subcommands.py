"""The commands that build, plan, start, verify and measure: each `cmd_*` is one of the command line's subcommands
(the ones run in a session are in COMMANDS)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.basics.messages import fail, say
from harness.basics.paths import RESULTS
from harness.calibrate import calibration, overhead, server_seen, verdict_table
from harness.cli import planning
from harness.cli.placing import cpu_plan_of, hosts_runtime, names, with_twin
from harness.config import environment
from harness.config import scenarios as scenario_data
from harness.config.environment import Configuration, ConfigurationError
from harness.config.manifest import ManifestError, Server, build_steps, by_default, select, with_role
from harness.config.scenarios import Scenario, Settings
from harness.measuring import forecast, steadiness
from harness.measuring.campaign import run_campaign
from harness.measuring.clock import campaign_budget_s, minutes, probed_unsteadiness, within_budget
from harness.measuring.lifecycle import RunOptions, closing, open_run
from harness.report.run_conditions import steadiness_text
from harness.results.store import RunStore, claim_run_id, is_out_of_space, new_run_id
from harness.runtime import Runtime
from harness.servers import probing
from harness.servers.preflight import announce_limits, tools_needed
from harness.servers.readiness import check_contract
from harness.servers.runtime_choice import get_runtime
from harness.servers.session import Session
from harness.tools.availability import check_tools
from harness.versus import duel, twin
from harness.versus import flow as versus
from harness.versus.twin_spec import CLOSE_TOOLS, Twin, TwinError, load_twin


def cmd_build(
    args: argparse.Namespace, config: Configuration, servers: list[Server], runtime: Runtime | None = None
) -> int:
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


def cmd_plan(args: argparse.Namespace, config: Configuration, servers: dict[str, Server]) -> int:
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
    if config.format != "json":
        said = forecast.from_last_bench(RESULTS, settings, config.profile)
        print(said or "forecast: none yet (make bench measures this machine's noise before it starts, and says it)")
    return 0


def cmd_up(args: argparse.Namespace, config: Configuration, session: Session, chosen: list[Server]) -> int:
    for server in chosen:
        session.ensure(server)
    for name, running in session.running().items():
        say(f"up: {name} at {running.base_url} on CPU {','.join(map(str, running.cpus))}, log {running.log}")
    return 0


def cmd_down(args: argparse.Namespace, config: Configuration, session: Session, chosen: list[Server]) -> int:
    found = session.clear_leftovers()  # whatever a killed command left, whichever servers were asked for
    up = session.running()
    for name in (n for n in list(up) if not config.servers or n in config.servers):
        session.stop(name)
    if not up and not found:
        say("no server is up")
    return 0


def cmd_ping(args: argparse.Namespace, config: Configuration, session: Session, chosen: list[Server]) -> int:
    ok = True
    for server in chosen:
        running = session.ensure(server)
        ok &= check_contract(session, server, running).ok
        session.release(server.name)
    return 0 if ok else 1


def cmd_measure(args: argparse.Namespace, config: Configuration, session: Session, chosen: list[Server]) -> int:
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
    # closing: the runtime's conditions are read back while the run's servers (containers) are still up
    with closing(store, session.runtime):
        try:
            steadiness.probe_and_record(store, session.plan, settings, "before")
            if args.command == "bench":  # what this run can tell apart, said before it starts (measuring/forecast.py)
                settings = bench_budget(session, store, config, chosen, picked, settings)
                forecast.measure(session, store, session.servers, settings, config.profile)
            ok = run_campaign(session, store, chosen, picked, settings, config.order)
            steadiness.probe_and_record(store, session.plan, settings, "after")
        except OSError as exc:  # a raw output or its folder on a full disk: the same message as results.json's own
            if is_out_of_space(exc):
                raise store.out_of_space() from None
            raise
    return 0 if ok else 1


def bench_budget(
    session: Session,
    store: RunStore,
    config: Configuration,
    chosen: list[Server],
    picked: list[Scenario],
    settings: Settings,
) -> Settings:
    """make bench's attempts a record fitted to its minutes (BUDGET_MIN, else the profile's `budget_s`) on the machine
    the probe before the run just read: more where they fit, fewer where the profile's would overrun the budget; a
    REPEAT given without BUDGET_MIN is kept as asked."""
    if (config.repeat and not config.budget_min) or not (config.budget_min or settings.budget_s):
        return settings
    budget = campaign_budget_s(config.budget_min, settings) if config.budget_min else float(settings.budget_s or 0)
    probes = probing.builds_to_probe(session, store, chosen)
    fitted = within_budget(chosen, picked, settings, budget, probed_unsteadiness(store), probes)
    asked = (
        f"BUDGET_MIN={config.budget_min}" if config.budget_min else f"the profile's budget ({settings.budget_s:g} s)"
    )
    change = ""
    if fitted.repeat != settings.repeat:
        why = "more fit" if fitted.repeat > settings.repeat else "they would overrun it"
        change = f" (the profile has {settings.repeat}; {why})"
    say(f"{asked}: {fitted.repeat} attempts a record{change}, {minutes(budget)} of measuring")
    store.update_conditions(repeat=fitted.repeat, budget_s=round(budget))
    return fitted


def cmd_calibrate(args: argparse.Namespace, config: Configuration, session: Session, servers: dict[str, Server]) -> int:
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
    # the profile's steadiness probe before and after, so the table's misses stand beside the machine's own noise
    probe_settings = scenario_data.settings(config.profile, config.repeat)
    accounts = server_seen.Accounts()
    ok = False
    with closing(store, session.runtime):
        try:
            steadiness.probe_and_record(store, session.plan, probe_settings, "before")
            session.around_load = accounts.around  # the server's own account of each load, for the judgement
            ok = run_campaign(session, store, [server], picked, plan.settings)
            steadiness.probe_and_record(store, session.plan, probe_settings, "after")
        finally:  # what was measured is judged and kept, also on Ctrl-C
            store.set_calibration(calibration.judge_run(store.run, plan, server.name, accounts))
    _, missed = verdict_table.print_verdicts(store.run.calibration or [])
    for when, reading in (store.run.conditions.get("steadiness") or {}).items():
        say(f"machine steadiness {when} the calibration: {steadiness_text(reading)}")
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


def cmd_versus(args: argparse.Namespace, config: Configuration, servers: dict[str, Server]) -> int:
    """`make versus`: under the local runtime (two builds of one server are two processes of this machine)."""
    where = sitting_place(config, "make versus runs both builds")
    budget_s, seed = budget_and_seed(args)
    options = versus.VersusOptions(
        args.server,
        args.base,
        args.head,
        tuple(names(args.scenarios)),
        resolution=environment.number("RESOLUTION", args.resolution, versus.DEFAULT_RESOLUTION * 100, 0.01, 99) / 100,
        budget_s=budget_s,
        seed=seed,
    )
    return versus.run(options, servers, where)


def budget_and_seed(args: argparse.Namespace) -> tuple[float | None, int | None]:
    """A paired sitting's BUDGET_S (None: the default) and SEED (None: drawn)."""
    budget = environment.number("BUDGET_S", args.budget_s, 0, 1, 86400) or None
    return budget, int(environment.number("SEED", args.seed, -1, 0, 2**32 - 1)) if args.seed else None


def sitting_place(config: Configuration, what: str) -> versus.Where:
    """Where a paired sitting runs: this machine's processes on its CPU plan, with the profile's settings (`what`:
    the command and its sides, for the error where another runtime is asked for)."""
    if config.hosts or config.runtime == "docker":
        raise ConfigurationError(f"{what} as processes of this machine: use RUNTIME=local (or auto), without HOSTS")
    plan = cpu_plan_of(config)
    return versus.Where(
        get_runtime("local", plan),
        plan,
        config.profile,
        scenario_data.settings(config.profile, config.repeat),
        config.ports,
        " ".join(sys.argv[1:]),
    )


def cmd_duel(args: argparse.Namespace, config: Configuration, servers: dict[str, Server]) -> int:
    """`make duel A=<server> B=<server>`: under the local runtime, as make versus (the paired engine's two sides are
    processes of this machine)."""
    where = sitting_place(config, "make duel runs both servers")
    budget_s, seed = budget_and_seed(args)
    return duel.run(duel.DuelOptions(args.a, args.b, tuple(names(args.scenarios)), budget_s, seed), servers, where)


def cmd_probe(args: argparse.Namespace, config: Configuration, session: Session, chosen: list[Server]) -> int:
    """`make probe`: every chosen server probed, in a run folder of its own (results.json, the report)."""
    options = RunOptions(
        config.profile, scenario_data.settings(config.profile, config.repeat), " ".join(sys.argv[1:]), probe=True
    )
    run_id = claim_run_id(args.run_id) if args.run_id else new_run_id("probe")
    store = open_run(run_id, session.runtime, session.plan, options, how="the HTTP compliance probe")
    with closing(store, session.runtime):
        ok = probing.probe_servers(session, store, chosen)
    return 0 if ok else 1


# the commands that run in a session (build returns before one is opened)
COMMANDS: dict[str, Callable[[argparse.Namespace, Configuration, Session, list[Server]], int]] = {
    "up": cmd_up,
    "down": cmd_down,
    "ping": cmd_ping,
    "run": cmd_measure,
    "bench": cmd_measure,
    "probe": cmd_probe,
}


def twin_inputs(args: argparse.Namespace, servers: dict[str, Server]) -> tuple[Server, Twin]:
    """`--server` and `--twin` checked, each bad one a one-line error, before the lock is waited for."""
    if args.server not in servers:
        raise ManifestError(f"unknown server {args.server!r}: one of {', '.join(sorted(servers))}")
    spec = load_twin(Path(args.twin).expanduser())
    if spec.ours != args.server:
        raise TwinError(f"{spec.folder}/twin.toml is the twin of {spec.ours!r}, not of {args.server!r}")
    if args.close_tool not in CLOSE_TOOLS:
        raise TwinError(
            f"CLOSE_TOOL is {' or '.join(CLOSE_TOOLS)} (connection per request's tool), not {args.close_tool!r}"
        )
    check_tools({"wrk", args.close_tool})  # keep-alive, connection per request
    return servers[args.server], spec


def cmd_twin(args: argparse.Namespace, config: Configuration, servers: dict[str, Server]) -> int:
    """`make twin`: `--server` beside its TechEmpower twin (`--twin`), then beside itself, under the local runtime (the
    entry is a process of this machine), on the paired engine (docs/versus.md)."""
    server, spec = twin_inputs(args, servers)
    where = sitting_place(config, "make twin runs ours and the entry")
    budget_s, seed = budget_and_seed(args)
    options = twin.TwinOptions(budget_s, seed, again=not args.no_again, close_tool=args.close_tool)
    return twin.run(server, spec, servers, where, options)
