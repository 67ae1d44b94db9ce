"""`make versus SERVER=node BASE=<rev>`: did a change make one server faster? Two builds of it, measured in one sitting.

Everything that can be checked is checked before anything is built (a JVM's or a fresh cargo build takes minutes):
the revisions, what a killed command left (its servers and its worktrees), both sides' manifests, the scenarios
(both builds must take each, on the same path and protocol), the ports (PORTS of every server respected) and the load
tools (oha and Gatling built first where missing). Then both are built (checkout.py), run as two servers,
`node@<base>` and `node@<head>` (the A/A twin's mechanism: one server under another name and port), on the same CPUs,
one at a time (the other asleep), and compared in starts of rounds by the paired engine (paired_sitting.py), which
`make duel` shares (duel.py). The answer is printed last, each verdict with what it rests on (evidence.py); the
records are kept like any run's, the comparison in the run's conditions (`versus`), and the report gives it a page of
its own (export/versus_page.py)."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

from harness.basics.machine import port_owner
from harness.config.manifest import Server, servers_dir
from harness.config.scenarios import Scenario
from harness.servers.session import Session
from harness.versus import checkout
from harness.versus import paired_sitting as engine
from harness.versus.checkout import RevisionError, Worktree
from harness.versus.paired_sitting import Where as Where  # the command line's
from harness.versus.sitting import Side

DEFAULT_RESOLUTION = 0.03


@dataclass(frozen=True)
class VersusOptions:
    server: str
    base: str
    head: str = ""  # "": the working tree
    scenarios: tuple[str, ...] = ()  # (): every scenario both builds take part in
    resolution: float = DEFAULT_RESOLUTION  # the half-width the answer is measured against (never a stopping rule)
    budget_s: float | None = None  # measuring time (warm-ups and rounds) for all the scenarios together
    seed: int | None = None  # which build leads the first start (None: drawn)


def checked_out(options: VersusOptions, servers: dict[str, Server], stack: ExitStack) -> tuple[Side, Side]:
    """Both sides' revisions resolved, checked out (worktrees entered on `stack`, so they are removed however the
    command ends) and their servers read from their own manifests, named `<server>@<label>`: nothing built yet."""
    if options.server not in servers:
        raise RevisionError(f"SERVER={options.server!r}: no such server (known: {', '.join(servers)})")
    here = servers[options.server]
    repo = checkout.repository_of(here.folder)
    revisions = {
        "base": checkout.resolve(repo, options.base, "BASE"),
        "head": checkout.resolve(repo, options.head, "HEAD"),
    }
    checkout.clear_leftovers(repo)
    relative = servers_dir().resolve().relative_to(repo.resolve())
    sides = []
    for role, revision in revisions.items():
        server = here
        if revision.sha is not None:
            tree = stack.enter_context(Worktree(repo, revision, f"{options.server}-{role}"))
            server = checkout.server_at(tree.path / relative, options.server, revision, role.upper())
        sides.append(Side(role, revision, server))
    labels = [f"{options.server}@{s.revision.label}" for s in sides]
    if labels[0] == labels[1]:
        labels = [f"{labels[0]}-base", f"{labels[1]}-head"]
    for side, label in zip(sides, labels):  # neither upstream nor ceiling
        side.server = replace(side.server, name=label, twin_of=options.server, roles=())
    return sides[0], sides[1]


def place(base: Side, head: Side, ports: dict[str, int], servers: dict[str, Server]) -> None:
    """The head on the server's port (or PORTS's), the base on the next port free of every server's (as PORTS
    places them) and of any listener, their h2c ports moved with them."""
    name = head.server.twin_of or ""
    port = ports.get(name, servers[name].port)
    taken = {p for s in servers.values() if s.name != name for p in _ports(_moved(s, ports.get(s.name, s.port)))}
    head.server = _moved(head.server, port)
    shift = 1
    while True:
        moved = _moved(base.server, port + shift)
        if not set(_ports(moved)) & (taken | set(_ports(head.server))) and not any(
            port_owner("127.0.0.1", p) for p in _ports(moved)
        ):
            base.server = moved
            return
        shift += 1


def _ports(server: Server) -> list[int]:
    return [p for p in (server.port, server.h2c_port) if p]


def _moved(server: Server, port: int) -> Server:
    h2c = server.h2c_port + port - server.port if server.h2c_port else None
    return replace(server, port=port, h2c_port=h2c)


def build_both(base: Side, head: Side) -> None:
    log = checkout.build_log(str(head.server.twin_of))
    for side in (base, head):
        checkout.build(side.server, side.server.name, log)


def start_note(
    options: VersusOptions, base: Side, head: Side, scenarios: list[Scenario], budget: float
) -> dict[str, Any]:
    """The run's `versus` conditions before any round: what is compared, and how."""
    return {
        **engine.sitting_note(base, head, scenarios, budget, options.seed),
        "server": options.server,
        "resolution": options.resolution,
        "same_build": base.revision.same_as(head.revision),
        "method": (
            "paired rounds in starts: for each start both builds started afresh and warmed for the run's "
            "load, then rounds of one attempt of each build in ABBA order, the leader alternating from "
            "start to start; the number of starts set by the budget and the measured cost of a start (the "
            "clock, never the figures); head ÷ base per round, each start's geometric mean, and the "
            "Student t interval of those on the log scale (over the rounds while there is one start)"
        ),
    }


def run(options: VersusOptions, servers: dict[str, Server], where: Where) -> int:
    """The whole command: checked, both builds made, measured and compared (paired_sitting.py), the report written; the
    worktrees and servers gone however it ends. Exit status as paired_sitting.sit's."""
    seed = engine.drawn_seed(options.seed)
    options = replace(options, seed=seed)
    # unwound in reverse: the servers stopped (by paired_sitting.sit), then the worktrees removed
    with ExitStack() as stack:
        # a killed command's servers stopped first: they may run from the worktrees that checked_out removes
        Session(where.runtime, where.plan, dict(servers), where.ports).clear_leftovers()
        base, head = checked_out(options, servers, stack)
        picked = engine.both_take(
            base, head, where.profile, options.scenarios, "both builds must measure the same endpoint"
        )
        place(base, head, where.ports, servers)
        others = {name: s for name, s in servers.items() if name != options.server}  # its folder is the head's
        budget = engine.budget_of(options.budget_s, picked)
        sides = engine.Sides(
            base, head, None, f"versus-{options.server}", start_note(options, base, head, picked, budget)
        )
        return engine.sit(
            sides, picked, others, where, engine.SittingPlan(budget, seed, lambda: build_both(base, head))
        )
