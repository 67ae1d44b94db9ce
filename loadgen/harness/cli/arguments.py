"""The command line's options and subcommands (argparse), one function per subcommand that takes arguments of its own.
Each option stands for its variable (RUNTIME...) and takes precedence over it; both are checked in
config/environment.py."""

from __future__ import annotations

import argparse

from harness.config.manifest import SERVERS_DIR_VAR
from harness.history import history_command

Subparsers = argparse._SubParsersAction  # argparse names no public type for what add_subparsers returns


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="harness",
        description="Build, start, verify and benchmark the servers of this repository.",
        epilog=f"{SERVERS_DIR_VAR}=<folder>: read the servers' manifests from <folder>/*/manifest.toml "
        "instead of the repository's (the tests' own manifests)",
    )
    _options(p)
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
    _reading(sub)
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
    _versus(sub)
    _duel(sub)
    _twin(sub)
    return p


def _options(p: argparse.ArgumentParser) -> None:
    """The options every subcommand takes, before its name."""
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


def _reading(sub: Subparsers[argparse.ArgumentParser]) -> None:
    """The subcommands that read runs already made: report, compare, history."""
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


def _versus(sub: Subparsers[argparse.ArgumentParser]) -> None:
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


def _duel(sub: Subparsers[argparse.ArgumentParser]) -> None:
    duel_cmd = sub.add_parser(
        "duel",
        help="two servers (or two processes of one: A=node B=node) in one sitting, on the paired engine of versus: "
        "B ÷ A with its interval (docs/versus.md)",
    )
    duel_cmd.add_argument("--a", required=True, help="the server compared against")
    duel_cmd.add_argument("--b", required=True, help="the server the answer is about (B faster than A by …)")
    duel_cmd.add_argument("--scenarios", default="", help="default: every scenario both take on one path")
    duel_cmd.add_argument(
        "--budget-s", default="", help="measuring time for all scenarios (default 120 per scenario run)"
    )
    duel_cmd.add_argument("--seed", default="", help="of which side leads the first start (default: drawn, recorded)")


def _twin(sub: Subparsers[argparse.ArgumentParser]) -> None:
    twin_cmd = sub.add_parser(
        "twin",
        help="a server beside its TechEmpower twin (a folder with twin.toml), then beside itself (the A/A), each a "
        "sitting of the paired engine of versus and duel: ours ÷ theirs with its interval (docs/versus.md)",
    )
    twin_cmd.add_argument("--server", required=True)
    twin_cmd.add_argument("--twin", required=True, help="the twin's folder (or its twin.toml)")
    twin_cmd.add_argument(
        "--budget-s", default="", help="measuring time of both sittings (default 120 per scenario run and sitting)"
    )
    twin_cmd.add_argument("--seed", default="", help="of which side leads the first start (default: drawn, recorded)")
    twin_cmd.add_argument(
        "--no-again", action="store_true", help="no A/A: ours is not measured a second time beside itself (AA=0)"
    )
    twin_cmd.add_argument(
        "--close-tool",
        default="ab",
        help="connection per request's tool: ab (the default) or wrk sending `Connection: close` (CLOSE_TOOL)",
    )
