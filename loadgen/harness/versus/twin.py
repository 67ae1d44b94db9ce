"""`make twin SERVER=finagle TWIN=<folder>`: one of our servers beside another implementation of its framework (its
TechEmpower entry, built outside this repository in a folder whose twin.toml says how to run it: twin_spec.py), then
beside itself (the A/A), each in a sitting of the paired engine make versus and make duel use (paired_sitting.py).

The third way of naming the two sides: the entry is A (`<folder>-theirs`, started from its folder, ready once its
first path answers 200 with a body, never held to our contract), ours is B, checked against the contract as in any
sitting. Each route pair of twin.toml is measured on both connection patterns, each a scenario of its own whose two
sides take their own paths: keep-alive with wrk and connection per request with ab (or wrk sending `Connection:
close`, CLOSE_TOOL=wrk), both at the profile's /hello load (connections, attempt length). The answer is ours against
theirs ("finagle faster than finagle-theirs by 6.1 % (4.2–8.0 %)"); the A/A sitting (ours against a second process
of it, as `make duel A=ours B=ours` runs it; AA=0 leaves it out) says how far apart this machine reads identical
servers on the same loads. Both are runs of their own, with the report's page of a sitting."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from harness.basics.messages import say
from harness.basics.paths import REPO
from harness.config import scenarios as scenario_data
from harness.config.manifest import Server
from harness.config.manifest import twin as second_process
from harness.config.scenarios import LoadRun, Scenario
from harness.servers.session import Session
from harness.versus import checkout
from harness.versus import paired_sitting as engine
from harness.versus.sitting import Side
from harness.versus.twin_spec import Twin, TwinError

PATTERNS = ("keep-alive", "connection-per-request")  # the two connection patterns of every route pair
LOAD_OF = "hello"  # the profile's scenario whose load (connections, attempt length) every pair and pattern takes


@dataclass(frozen=True)
class TwinOptions:
    budget_s: float | None = None  # both sittings' measuring time together (None: the engine's default per run)
    seed: int | None = None  # which side leads the first start (None: drawn, and recorded)
    again: bool = True  # the A/A sitting after the twin's
    close_tool: str = "ab"  # connection per request's tool: "ab", or "wrk" sending `Connection: close`


@dataclass(frozen=True)
class PairScenario(Scenario):
    """A route pair on one connection pattern: a scenario whose sides each take a path of their own (by name)."""

    paths: tuple[tuple[str, str], ...] = ()  # (server name, its path)

    def path_for(self, server: Server) -> str | None:
        return dict(self.paths).get(server.name)


def theirs(twin: Twin, ours: Server) -> Server:
    """The entry as a server of the sitting: its argv in its folder, pinned like ours, on its own port, up once its
    first path answers 200 with a body; never anyone's upstream or ceiling, never held to our contract."""
    return Server(
        name=f"{twin.name}-theirs",
        folder=twin.folder,
        port=twin.port,
        routes=(),
        run=twin.run,
        stack=" ".join(part for part in (twin.entry, twin.versions) if part) or "an outside implementation",
        startup_timeout_s=max(60.0, ours.startup_timeout_s),
        env=dict(twin.env),
        warmup_connections=twin.warmup_connections,
        ready_path=twin.routes[0][0],
    )


def pair_scenarios(twin: Twin, base: Server, head: Server, profile: str, close_tool: str) -> list[Scenario]:
    """Each route pair on both patterns, in twin.toml's order: `base` on the twin's path where it is the entry (ours
    otherwise: the A/A), `head` on ours; each at the profile's /hello load."""
    reference = scenario_data.load(profile)[LOAD_OF]
    load = {k: v for k, v in reference.runs[0].load.items() if k in ("concurrency", "duration_s", "timeout_s")}
    out: list[Scenario] = []
    for theirs_path, ours_path in twin.routes:
        base_path = theirs_path if base.ready_path else ours_path
        for pattern in PATTERNS:
            keep = pattern == "keep-alive"
            tool = "wrk" if keep else close_tool
            out.append(
                PairScenario(
                    name=f"{_slug(ours_path)}-vs-{_slug(theirs_path)}-{'keep-alive' if keep else 'close'}",
                    description=f"ours {ours_path} beside the entry's {theirs_path}, {pattern} ({tool})",
                    tool=tool,
                    targets=((ours_path, ours_path),),
                    runs=(
                        LoadRun(
                            f"c{load.get('concurrency')}", {**load, "connection_close": not keep and tool == "wrk"}
                        ),
                    ),
                    attempts=None,
                    paths=((base.name, base_path), (head.name, ours_path)),
                )
            )
    return out


def _slug(path: str) -> str:
    return path.strip("/").replace("/", "_") or "root"


def note(
    twin: Twin, base: Side, head: Side, picked: list[Scenario], budget: float, options: TwinOptions
) -> dict[str, Any]:
    """The run's `versus` conditions before any round: the entry, the route pairs, the patterns' tools."""
    return {
        **engine.sitting_note(base, head, picked, budget, options.seed),
        "kind": "twin" if base.server.ready_path else "twin-aa",
        "server": twin.ours,
        "same_build": not base.server.ready_path,
        "twin": {
            "folder": str(twin.folder),
            "entry": twin.entry,
            "versions": twin.versions,
            "routes": [list(pair) for pair in twin.routes],
            "close_tool": options.close_tool,
        },
        "method": (
            f"B ({head.server.name}) ÷ A ({base.server.name}), each route pair on keep-alive (wrk) and connection per "
            f"request ({options.close_tool}) at the profile's /{LOAD_OF} load: paired rounds in starts, both started "
            "afresh and warmed for each start, ABBA order, the leader alternating; the number of starts set by the "
            "budget and the measured cost of a start; the Student t interval of the starts' geometric means"
        ),
    }


def run(ours: Server, twin: Twin, servers: dict[str, Server], where: engine.Where, options: TwinOptions) -> int:
    """The twin's sitting, then the A/A's (options.again): each built, measured and judged by the engine, every
    process stopped however it ends. 1 when either sitting reached no answer (paired_sitting.sit)."""
    if twin.ours != ours.name:
        raise TwinError(f"{twin.folder}/twin.toml is the twin of {twin.ours!r}, not of {ours.name!r}")
    seed = engine.drawn_seed(options.seed)
    options = replace(options, seed=seed)
    Session(where.runtime, where.plan, dict(servers), where.ports).clear_leftovers()
    tree = checkout.resolve(REPO, "", "the working tree")  # ours as this checkout builds it
    mine = replace(ours, port=where.ports.get(ours.name, ours.port), roles=())
    taken = {p for s in servers.values() for p in (s.port, s.h2c_port) if p} | {twin.port}
    pairs = [(theirs(twin, mine), mine)] + ([(second_process(mine, taken), mine)] if options.again else [])
    sittings = len(pairs)
    status = 0
    for k, (a, b) in enumerate(pairs):
        base, head = Side("base", tree, a), Side("head", tree, b)
        picked = pair_scenarios(twin, a, b, where.profile, options.close_tool)
        budget = engine.budget_of(options.budget_s / sittings if options.budget_s else None, picked)
        kind = "twin" if a.ready_path else "A/A"
        sides = engine.Sides(
            base,
            head,
            (a.name, b.name),
            f"twin-{ours.name}" + ("" if a.ready_path else "-aa"),
            note(twin, base, head, picked, budget, options),
        )
        others = {n: s for n, s in servers.items() if n != ours.name}
        build = (
            (lambda: checkout.build(mine, mine.name, checkout.build_log(f"twin-{mine.name}")))
            if k == 0
            else (lambda: None)
        )
        say(f"twin: sitting {k + 1} of {sittings}, {kind}: {b.name} against {a.name}")
        status |= engine.sit(sides, picked, others, where, engine.SittingPlan(budget, seed, build))
    return status
