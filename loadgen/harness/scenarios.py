"""Scenarios are data (loadgen/scenarios.toml); this module reads and checks them."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.manifest import Server
from harness.tools import TOOLS, LoadSpec

# Looked up when load/settings run, not bound as their default, so a test can point the whole harness (its CLI too)
# at a scenario file of its own.
SCENARIO_FILE = Path(__file__).resolve().parents[1] / "scenarios.toml"
PROFILES = ("quick", "seed")
LOAD_FIELDS = {
    "concurrency": int, "requests": int, "duration_s": float, "threads": int, "keepalive": bool,
    "timeout_s": float, "continue_on_error": bool, "rate": float, "calls_per_connection": int,
}


class ScenarioError(Exception):
    pass


@dataclass(frozen=True)
class Warmup:
    """Runs of the scenario's own load, each `duration_s` long, until two in a row agree within `tolerance`."""

    duration_s: float
    tolerance: float
    max_runs: int
    first_min_runs: int = 2  # a server's first warm-up of the campaign: at least this many runs (the JIT compiles)


@dataclass(frozen=True)
class Settings:
    repeat: int
    warmup: Warmup
    forced: bool = False  # REPEAT given: it wins over a scenario's own attempts
    steadiness: dict | None = None  # {"seconds", "window_s"}: the machine's CPU-speed probe before and after the run


@dataclass(frozen=True)
class Run:
    label: str
    load: dict  # LoadSpec fields except the URL

    def spec(self, url: str) -> LoadSpec:
        return LoadSpec(url=url, **self.load)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    tool: str
    targets: tuple[tuple[str, str], ...]  # (route, path) in order of preference
    runs: tuple[Run, ...]
    attempts: int
    in_bench: bool = True  # false: measured only when named (`make test-<name>`, `make docker-overhead`)

    def path_for(self, server: Server) -> str | None:
        """The path this scenario measures on `server`, or None when the server serves none of its routes."""
        return next((path for route, path in self.targets if server.serves(route)), None)


def _run(raw: dict, where: str, index: int) -> Run:
    label = str(raw.get("label", f"c{raw.get('concurrency', '?')}"))
    load = {}
    for key, value in raw.items():
        if key == "label":
            continue
        if key not in LOAD_FIELDS:
            raise ScenarioError(f"{where} run {index + 1}: unknown field {key!r}; known: {', '.join(LOAD_FIELDS)}")
        kind = LOAD_FIELDS[key]
        if kind is bool and not isinstance(value, bool) or kind is not bool and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ScenarioError(f"{where} run {index + 1}: {key} = {value!r} must be a {kind.__name__}")
        if kind is not bool and value <= 0:
            raise ScenarioError(f"{where} run {index + 1}: {key} = {value!r} must be positive")
        load[key] = kind(value)
    if "concurrency" not in load:
        raise ScenarioError(f"{where} run {index + 1}: concurrency is required")
    return Run(label=label, load=load)


def settings(profile: str, repeat: int | None = None, path: Path | None = None) -> Settings:
    """The profile's repeat count (REPEAT overrides it) and warm-up rule, from `path` (default: SCENARIO_FILE)."""
    path = path or SCENARIO_FILE
    table = tomllib.loads(path.read_text())["settings"][profile]
    count = table["repeat"] if repeat is None else repeat
    if not isinstance(count, int) or count < 1:
        raise ScenarioError(f"REPEAT={count!r}: must be a positive integer")
    steadiness = table.get("steadiness")
    if steadiness is not None and (set(steadiness) != {"seconds", "window_s"} or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in steadiness.values())):
        raise ScenarioError(f"{path.name} [settings.{profile}] steadiness = {steadiness!r}: give positive seconds and "
                            "window_s, e.g. {{ seconds = 20, window_s = 2 }}")
    try:
        return Settings(repeat=count, warmup=Warmup(**table["warmup"]), forced=repeat is not None, steadiness=steadiness)
    except TypeError as exc:
        raise ScenarioError(f"{path.name} [settings.{profile}] warmup: {exc}") from None


def load(profile: str, path: Path | None = None) -> dict[str, Scenario]:
    """The profile's scenarios from `path` (default: SCENARIO_FILE), each checked, its tool among the registered."""
    path = path or SCENARIO_FILE
    if profile not in PROFILES:
        raise ScenarioError(f"unknown profile {profile!r}: use one of {', '.join(PROFILES)}")
    data = tomllib.loads(path.read_text())
    data.pop("settings", None)
    scenarios = {}
    for name, table in data.items():
        where = f"{path.name} [{name}] profile {profile}"
        if table.get("tool") not in TOOLS:
            raise ScenarioError(f"{where}: tool {table.get('tool')!r} is not one of {', '.join(TOOLS)}")
        chosen = table.get("profile", {}).get(profile)
        if not chosen or not chosen.get("runs"):
            raise ScenarioError(f"{where}: no runs defined")
        targets = tuple((t["route"], t["path"]) for t in table["targets"])
        if "path" in chosen:  # a profile may change the path of the first target (e.g. a smaller fibonacci)
            targets = ((targets[0][0], chosen["path"]),) + targets[1:]
        attempts = chosen.get("attempts", 1)
        if not isinstance(attempts, int) or attempts < 1:
            raise ScenarioError(f"{where}: attempts must be a positive integer")
        runs = tuple(_run(raw, where, i) for i, raw in enumerate(chosen["runs"]))
        in_bench = table.get("in_bench", True)
        if not isinstance(in_bench, bool):
            raise ScenarioError(f"{path.name} [{name}]: in_bench must be true or false")
        scenarios[name] = Scenario(name, table.get("description", ""), table["tool"], targets, runs, attempts, in_bench)
    return scenarios


def select(scenarios: dict[str, Scenario], names: list[str] | None) -> list[Scenario]:
    if not names:
        return [s for s in scenarios.values() if s.in_bench]
    unknown = [n for n in names if n not in scenarios]
    if unknown:
        raise ScenarioError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(scenarios)}")
    return [scenarios[n] for n in names]
