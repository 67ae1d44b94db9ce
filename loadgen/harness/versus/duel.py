"""`make duel A=akka B=pekko`: is one server faster than another? Both, as the working tree builds them, measured in
one sitting by the paired engine make versus uses (paired_sitting.py): the same CPUs, one at a time (the other asleep),
starts of ABBA rounds whose shape the clock sets, each start on fresh processes. `A=node B=node` is an A/A: node and
a second process of it (the bench's `node-twin`, on a port of its own), whose answer should be "no difference".

The answer is B against A ("pekko faster than akka by 6.1 % (4.2–8.0 %)", or "no difference beyond ±1.8 %"), by
the figure the load chooses before any ratio is read (evidence.headline); a side that answers with errors withholds
it, and saturation, one start, an unsteady machine or processes that settle on different levels are said in it.
Everything checkable (the names, the scenarios both take on one path, the ports, the tools) is checked before either
server is built."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from harness.config.manifest import Server, at_port, twin
from harness.config.scenarios import Scenario
from harness.servers.session import Session
from harness.versus import checkout
from harness.versus import paired_sitting as engine
from harness.versus.checkout import RevisionError
from harness.versus.sitting import Side


@dataclass(frozen=True)
class DuelOptions:
    a: str
    b: str
    scenarios: tuple[str, ...] = ()  # (): every scenario both take part in on one path
    budget_s: float | None = None  # measuring time for all the scenario runs together
    seed: int | None = None  # which side leads the first start (None: drawn, and recorded)


def sides_of(options: DuelOptions, servers: dict[str, Server], ports: dict[str, int]) -> tuple[Side, Side]:
    """A and B as servers on their ports (PORTS respected); B a second process of A, on a free port, where both name
    one server. Neither is anyone's upstream or ceiling here."""
    for what, name in (("A", options.a), ("B", options.b)):
        if name not in servers:
            raise RevisionError(f"{what}={name!r}: no such server (known: {', '.join(sorted(servers))})")
    placed = {n: at_port(s, ports.get(n, s.port)) for n, s in servers.items()}
    a = placed[options.a]
    if options.a == options.b:
        taken = {p for s in (*servers.values(), *placed.values()) for p in (s.port, s.h2c_port) if p}
        b = twin(a, taken)
    else:
        b = placed[options.b]
    tree = checkout.resolve(checkout.repository_of(a.folder), "", "the working tree")
    return Side("base", tree, replace(a, roles=())), Side("head", tree, replace(b, roles=()))


def note(options: DuelOptions, base: Side, head: Side, scenarios: list[Scenario], budget: float) -> dict[str, Any]:
    """The run's `versus` conditions before any round (the page and make history read duels as versus sittings)."""
    return {
        **engine.sitting_note(base, head, scenarios, budget, options.seed),
        "kind": "duel",
        "server": base.server.name if options.a == options.b else f"{options.a} vs {options.b}",
        "same_build": options.a == options.b,
        "method": (
            f"B ({head.server.name}) ÷ A ({base.server.name}): paired rounds in starts, for each start both started "
            "afresh and warmed for the run's load, then rounds of one attempt of each in ABBA order, the leader "
            "alternating from start to start; the number of starts set by the budget and the measured cost of a "
            "start (the clock, never the figures); B ÷ A per round, each start's geometric mean, and the Student t "
            "interval of those on the log scale"
        ),
    }


def build(base: Side, head: Side) -> None:
    """Each server built once (an A/A's two processes run one build)."""
    log = checkout.build_log(f"duel-{base.server.name}-{head.server.name}")
    for side in {s.server.twin_of or s.server.name: s for s in (base, head)}.values():
        checkout.build(side.server, side.server.name, log)


def run(options: DuelOptions, servers: dict[str, Server], where: engine.Where) -> int:
    """The whole command: checked, both built, measured and compared (paired_sitting.sit); their processes gone
    however it ends. Exit status as paired_sitting.sit's."""
    seed = engine.drawn_seed(options.seed)
    options = replace(options, seed=seed)
    Session(where.runtime, where.plan, dict(servers), where.ports).clear_leftovers()
    base, head = sides_of(options, servers, where.ports)
    picked = engine.both_take(base, head, where.profile, options.scenarios, "a duel measures both on the same endpoint")
    budget = engine.budget_of(options.budget_s, picked)
    named = f"{options.a}-{options.b}" if options.a != options.b else options.a
    sides = engine.Sides(
        base, head, (base.server.name, head.server.name), f"duel-{named}", note(options, base, head, picked, budget)
    )
    others = {name: s for name, s in servers.items() if name not in (options.a, options.b)}
    return engine.sit(sides, picked, others, where, engine.SittingPlan(budget, seed, lambda: build(base, head)))
