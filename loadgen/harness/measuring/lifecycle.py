"""A measuring run's life, written once for `bench`/`run` (cli.cmd_measure) and `overhead`: `open_run` (the store opened
with the run's conditions, the run announced), the campaigns in between (the caller's), then `finish_run` (conditions
closed, flags evaluated, results.json saved, the console table printed, the report written, and what failed listed
last, so that a long run's faults are not lost in its scroll-back). `closing` wraps the campaigns: the run is finished
whatever happens, and results.json says how it ended (complete, interrupted by which signal, or failed by what)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from harness.basics import interrupt
from harness.basics.cpus import CpuPlan
from harness.basics.machine import timestamp
from harness.basics.messages import console, fail, say, warn
from harness.config.scenarios import Settings
from harness.export import command
from harness.judging import flags
from harness.measuring.conditions import collect
from harness.report import model
from harness.report import terminal as console_table
from harness.results.records import Run
from harness.results.store import RunStore
from harness.runtime import Runtime, RuntimeFailure


@dataclass(frozen=True)
class RunOptions:
    """What a measuring run was asked for: its profile, the settings read from it, and the command line."""

    profile: str
    settings: Settings
    command: str
    probe: bool = False  # each server's HTTP compliance probed once, at its start (make bench; servers/probing.py)


def open_run(
    run_id: str,
    runtime: Runtime,
    plan: CpuPlan,
    options: RunOptions,
    extra_conditions: dict[str, Any] | None = None,
    how: str = "",
) -> RunStore:
    """The run's store, its conditions collected (`runtime`'s tool versions; `extra_conditions` added or overriding),
    and the run announced (`how` it goes, where there is more to say than its CPU plan and profile)."""
    settings = options.settings
    conditions = collect(runtime, options.profile, plan, options.command)
    conditions.update(repeat=settings.repeat, warmup=vars(settings.warmup), **(extra_conditions or {}))
    store = RunStore(
        Run(run_id, conditions, verification={}, servers={}, records=[], compliance={} if options.probe else None)
    )
    say(f"run {run_id}: {plan.describe()}; " + (f"{how}; " if how else "") + f"profile {options.profile}")
    return store


def record_runtime_details(store: RunStore, runtime: Runtime) -> None:
    """The runtime's conditions as applied (the load generator's container...), read while the run's servers are up."""
    try:
        store.update_conditions(runtime_details=runtime.conditions())
    except RuntimeFailure as exc:
        warn(f"could not read the runtime's conditions back: {exc}")


COMPLETE = "complete"


def how_it_ended(exc: BaseException | None) -> str:
    """`conditions.ended`: complete, interrupted (and by which signal), or failed (and by what)."""
    if exc is None:
        return COMPLETE
    if isinstance(exc, KeyboardInterrupt):
        return f"interrupted ({interrupt.received() or 'SIGINT'})"
    lines = str(exc).splitlines()
    return f"failed: {type(exc).__name__}: {lines[0] if lines else 'no message'}"


@contextmanager
def closing(store: RunStore, runtime: Runtime | None = None) -> Iterator[RunStore]:
    """The block's campaigns, then `finish_run` whatever happens, told how the block ended."""
    try:
        yield store
    except BaseException as exc:
        finish_run(store, runtime, how_it_ended(exc))
        raise
    finish_run(store, runtime)


def finish_run(store: RunStore, runtime: Runtime | None = None, ended: str = COMPLETE) -> None:
    """Whatever happened (also on failure or Ctrl-C): `runtime`'s conditions read back where given (while its servers
    are still up), the run closed with how it `ended`, flags evaluated, the console table printed, the report written,
    and what failed summed up."""
    if runtime:
        record_runtime_details(store, runtime)
    # the folder's disk use, before its report: what the run's tools and results.json took (KEEP_REQUEST_DB=1 more)
    store.update_conditions(finished_at=timestamp(), ended=ended, disk_bytes=store.disk_bytes())
    flags.evaluate_and_save(store)
    print_summary(store)
    if ended != COMPLETE:
        warn(f"this run ended early, {ended}: results.json keeps what was measured before it")
    try:  # a chart that cannot be drawn must not lose the run: results.json is already written
        command.cmd_report(str(store.dir))
    except Exception as exc:  # noqa: BLE001
        warn(f"the report could not be written ({exc}); results.json is complete: retry with `make report`")
    problems = failures(store.run)
    if problems:
        fail("what failed in this run:\n" + "\n".join(f"  - {p}" for p in problems))


def failures(run: Run) -> list[str]:
    """One sentence per server that did not start, failed the contract or died during the run."""
    out = []
    for name, entry in run.servers.items():
        if not entry.get("started", True):
            out.append(f"{name} did not start: {entry.get('error', 'no reason recorded').splitlines()[0]}")
        elif name in (verified := run.verification or {}) and not verified[name].ok:
            out.append(f"{name} failed the contract: it was not measured")
        for death in entry.get("deaths", []):
            out.append(f"{name} died {death['when']} ({death['reason']}); {death['then']}")
    return out


def print_summary(store: RunStore) -> None:
    run = store.run
    built = model.build(run)
    if built.scenarios:  # none in a calibration run: its own table follows (harness/calibrate/calibration.py)
        title = f"run {run.run_id} ({run.conditions['profile']} profile, {run.conditions['runtime']} runtime)"
        console.print(console_table.table(built, title))
    say(f"results: {store.path}")
