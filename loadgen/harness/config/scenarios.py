"""Scenarios are data (loadgen/scenarios.toml); this module reads and checks them."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.config.manifest import Server
from harness.config.mix_targets import MixError, MixTarget, is_mix, parse_mix, parse_targets, path_problem
from harness.tools import TOOLS, LoadSpec

# Looked up when load/settings run, not bound as their default, so a test can point the whole harness (its CLI too)
# at a scenario file of its own.
SCENARIO_FILE = Path(__file__).resolve().parents[2] / "scenarios.toml"
PROFILES = ("quick", "seed")
LOAD_FIELDS = {
    "concurrency": int,
    "requests": int,
    "duration_s": float,
    "threads": int,
    "keepalive": bool,
    "timeout_s": float,
    "continue_on_error": bool,
    "rate": float,
    "calls_per_connection": int,
    "users": int,
    "injection": str,
    "streams": int,
    "protocol": str,
    "processes": int,
}
PROTOCOLS = ("h1", "h2c")  # a load's `protocol` (h2load): HTTP/1.1, or cleartext HTTP/2 with prior knowledge
# a scenario's name and a run's label become file names (raw/<server>-<scenario>-<label>-<n>), run ids and make targets
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
LABEL = re.compile(r"[A-Za-z0-9%][A-Za-z0-9._%+-]{0,63}")  # "c256-t32", "keepalive", "10%"
SCENARIO_KEYS = ("description", "tool", "targets", "profile", "in_bench", "warmup", "protocol")
PROFILE_KEYS = ("runs", "path", "attempts")
# A run field that is not part of the load: `rate_share`, the run's rate as a share of the rate its warm-up reached
# (latency: 0.5 offers half of the server's closed-loop maximum on that path)


class ScenarioError(Exception):
    pass


@dataclass(frozen=True)
class WarmupRule:
    """Runs of the scenario's own load, each `duration_s` long, until their latest half (at least `window` runs,
    trend.judged_window) shows no trend beyond `tolerance` (trend.settled), at most `max_runs` runs or `max_s` s."""

    duration_s: float
    tolerance: float
    max_runs: int
    window: int = 3
    max_s: float = 60.0


@dataclass(frozen=True)
class Settings:
    repeat: int
    warmup: WarmupRule
    forced: bool = False  # REPEAT given: it wins over a scenario's own attempts
    steadiness: dict[str, float] | None = (
        None  # {"seconds", "window_s"}: the machine's CPU-speed probe before and after the run
    )
    remeasure_s: float = 0.0  # time a campaign may spend warming further and measuring again what was still warming
    budget_s: float | None = None  # the campaign's time budget: nothing is measured again once it would go past it


@dataclass(frozen=True)
class LoadRun:
    label: str
    load: dict[str, Any]  # LoadSpec fields except the URL
    rate_share: float | None = None  # the rate, as a share of the warm-up's (see LOAD_FIELDS)

    def spec(self, url: str) -> LoadSpec:
        return LoadSpec(url=url, **self.load)


@dataclass(frozen=True)
class WarmupLoad:
    """A scenario's own warm-up load where it differs from its runs: another tool, another load (latency: a closed-loop
    wrk run, whose rate is the server's maximum the steps are shares of; gatling-backend: ab, since each Gatling run
    starts a JVM)."""

    tool: str
    run: LoadRun
    min_runs: int = 2  # at least this many runs, steady or not (a JIT that still climbs slowly can look steady)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    tool: str
    targets: tuple[tuple[str, str], ...]  # (route, path) in order of preference
    runs: tuple[LoadRun, ...]
    attempts: int | None  # the profile's own count of attempts per run (None: the settings' repeat)
    in_bench: bool = True  # false: measured only when named (`make test-<name>`, `make docker-overhead`)
    warmup: WarmupLoad | None = None  # None: warmed with its own tool and load
    # "h2c": measured on the servers whose manifest gives an h2c_port only, its runs over h2c unless a run says
    # protocol = "h1" (its HTTP/1.1 baseline, on the same servers); None: HTTP/1.1
    protocol: str | None = None
    mix: tuple[MixTarget, ...] | None = None  # a request mix (docs/mixes.md): every target in one load, by weight

    @property
    def warmup_tool(self) -> str:
        return self.warmup.tool if self.warmup else self.tool

    def repeat(self, settings: Settings) -> int:
        """Attempts per run: REPEAT when given, else the scenario's own `attempts`, else the profile's `repeat`."""
        if settings.forced or self.attempts is None:
            return settings.repeat
        return self.attempts

    def path_for(self, server: Server) -> str | None:
        """The path this scenario measures on `server`, or None when the server serves none of its routes (or does not
        speak the scenario's protocol)."""
        if self.protocol == "h2c" and not server.h2c_port:
            return None
        if self.mix:  # a server takes part in a mix only when it serves (and so is verified on) every route of it
            return self.targets[0][1] if all(server.serves(t.route) for t in self.mix) else None
        return next((path for route, path in self.targets if server.serves(route)), None)

    def protocol_of(self, run: LoadRun) -> str | None:
        """The protocol `run` speaks: its own, else the scenario's (None: HTTP/1.1)."""
        return run.load.get("protocol") or self.protocol


def _run(raw: dict[str, Any], where: str, index: int) -> LoadRun:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where} run {index + 1}: {raw!r} is not a load: give {{ concurrency = ..., ... }}")
    label = raw.get("label", f"c{raw.get('concurrency', '?')}")
    if not isinstance(label, str) or not LABEL.fullmatch(label):
        raise ScenarioError(
            f"{where} run {index + 1}: label = {label!r} must be a name of letters, digits and . _ % + - "
            '(it names files), e.g. label = "c256"'
        )
    load, share = {}, raw.get("rate_share")
    if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float)) or share <= 0):
        raise ScenarioError(
            f"{where} run {index + 1}: rate_share = {share!r} must be a positive number (0.5: half the warm-up's rate)"
        )
    for key, value in raw.items():
        if key in ("label", "rate_share"):
            continue
        if key not in LOAD_FIELDS:
            raise ScenarioError(
                f"{where} run {index + 1}: unknown field {key!r}; known: "
                f"{', '.join([*LOAD_FIELDS, 'rate_share', 'label'])}"
            )
        kind = LOAD_FIELDS[key]
        if key == "protocol" and value not in PROTOCOLS:
            raise ScenarioError(f"{where} run {index + 1}: protocol = {value!r} must be one of {', '.join(PROTOCOLS)}")
        if kind is str:
            if not isinstance(value, str) or not value:
                raise ScenarioError(f"{where} run {index + 1}: {key} = {value!r} must be a text")
            load[key] = value
            continue
        if (
            kind is bool
            and not isinstance(value, bool)
            or kind is not bool
            and (isinstance(value, bool) or not isinstance(value, (int, float)))
        ):
            raise ScenarioError(f"{where} run {index + 1}: {key} = {value!r} must be a {kind.__name__}")
        if kind is not bool and value <= 0:
            raise ScenarioError(f"{where} run {index + 1}: {key} = {value!r} must be positive")
        load[key] = kind(value)
    if "concurrency" not in load and "injection" not in load:
        raise ScenarioError(f"{where} run {index + 1}: concurrency is required")
    return LoadRun(label=label, load=load, rate_share=float(share) if share is not None else None)


def parse_run(raw: dict[str, Any], where: str, index: int) -> LoadRun:
    """One load as scenarios.toml writes it (its load fields, a label), checked; for other plans of loads
    (calibrate.toml)."""
    return _run(raw, where, index)


def _warmup_load(raw: Any, where: str) -> WarmupLoad | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("tool") not in TOOLS:
        raise ScenarioError(f"{where} warmup: give {{ tool = ..., <load> }} with a tool among {', '.join(TOOLS)}")
    fields = {k: v for k, v in raw.items() if k not in ("tool", "min_runs")}
    min_runs = raw.get("min_runs", 2)
    if isinstance(min_runs, bool) or not isinstance(min_runs, int) or min_runs < 2:
        raise ScenarioError(f"{where} warmup: min_runs = {min_runs!r} must be an integer of at least 2")
    return WarmupLoad(
        tool=raw["tool"], run=_run({"label": "warm-up", **fields}, f"{where} warmup", 0), min_runs=min_runs
    )


def settings(profile: str, repeat: int | None = None, path: Path | None = None) -> Settings:
    """The profile's repeat count (REPEAT overrides it) and warm-up rule, from `path` (default: SCENARIO_FILE)."""
    path = path or SCENARIO_FILE
    table = read(path).get("settings", {}).get(profile)
    if not isinstance(table, dict):
        raise ScenarioError(f"{path.name} has no [settings.{profile}] table: add one (see the file's [settings.quick])")
    if repeat is None and "repeat" not in table:
        raise ScenarioError(f"{path.name} [settings.{profile}] gives no `repeat` (the attempts per record): add one")
    if not isinstance(table.get("warmup"), dict):
        raise ScenarioError(f"{path.name} [settings.{profile}] gives no `warmup = {{ ... }}` rule: add one")
    count = table["repeat"] if repeat is None else repeat
    if not isinstance(count, int) or count < 1:
        raise ScenarioError(f"REPEAT={count!r}: must be a positive integer")
    steadiness = table.get("steadiness")
    if steadiness is not None and (
        set(steadiness) != {"seconds", "window_s"}
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in steadiness.values())
    ):
        raise ScenarioError(
            f"{path.name} [settings.{profile}] steadiness = {steadiness!r}: give positive seconds and "
            "window_s, e.g. {{ seconds = 20, window_s = 2 }}"
        )
    try:
        times = {key: table.get(key) for key in ("remeasure_s", "budget_s")}
        for key, value in times.items():
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0):
                raise ScenarioError(f"{path.name} [settings.{profile}] {key} = {value!r}: give seconds (0 or more)")
        for key, value in table["warmup"].items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ScenarioError(
                    f"{path.name} [settings.{profile}] warmup {key} = {value!r}: must be a positive number"
                )
        return Settings(
            repeat=count,
            warmup=WarmupRule(**table["warmup"]),
            forced=repeat is not None,
            steadiness=steadiness,
            remeasure_s=float(times["remeasure_s"] or 0.0),
            budget_s=None if times["budget_s"] is None else float(times["budget_s"]),
        )
    except TypeError as exc:
        raise ScenarioError(f"{path.name} [settings.{profile}] warmup: {exc}") from None


def load(profile: str, path: Path | None = None) -> dict[str, Scenario]:
    """The profile's scenarios from `path` (default: SCENARIO_FILE), each checked, its tool among the registered."""
    path = path or SCENARIO_FILE
    if profile not in PROFILES:
        raise ScenarioError(f"unknown profile {profile!r}: use one of {', '.join(PROFILES)}")
    data = read(path)
    data.pop("settings", None)
    scenarios = {}
    for name, table in data.items():
        where = f"{path.name} [{name}] profile {profile}"
        chosen = _table(name, table, profile, path.name)
        raw_targets = table.get("targets")
        targets = _targets(raw_targets, f"{path.name} [{name}]")
        mix = _mix(raw_targets, f"{path.name} [{name}]")
        if "path" in chosen:  # a profile may change the path of the first target (e.g. a smaller fibonacci)
            wrong = path_problem(chosen["path"])
            if wrong:
                raise ScenarioError(f"{where}: {wrong}")
            targets = ((targets[0][0], chosen["path"]),) + targets[1:]
        attempts = chosen.get("attempts")
        if attempts is not None and (not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1):
            raise ScenarioError(f"{where}: attempts must be a positive integer")
        runs = tuple(_run(raw, where, i) for i, raw in enumerate(chosen["runs"]))
        labels = [r.label for r in runs]
        if len(set(labels)) != len(labels):
            raise ScenarioError(f"{where}: two runs are labelled alike ({', '.join(labels)}): give each its own label")
        if mix:  # the weighted paths travel with each load to the tool (LoadSpec.mix), and into the record's `load`
            runs = tuple(replace(r, load={**r.load, "mix": tuple((t.path, t.weight) for t in mix)}) for r in runs)
        in_bench = table.get("in_bench", True)
        if not isinstance(in_bench, bool):
            raise ScenarioError(f"{path.name} [{name}]: in_bench must be true or false")
        if any(r.rate_share for r in runs) and "warmup" not in table:
            raise ScenarioError(f"{where}: runs with rate_share need a `warmup` load whose rate they are shares of")
        protocol = table.get("protocol")
        if protocol is not None and protocol not in PROTOCOLS:
            raise ScenarioError(f"{path.name} [{name}]: protocol = {protocol!r} must be one of {', '.join(PROTOCOLS)}")
        scenarios[name] = Scenario(
            name,
            table.get("description", ""),
            table["tool"],
            targets,
            runs,
            attempts,
            in_bench,
            _warmup_load(table.get("warmup"), where),
            protocol,
            mix,
        )
    return scenarios


def _table(name: str, table: Any, profile: str, file: str) -> dict[str, Any]:
    """The scenario `name`'s table checked (its name, its keys, their types, its tool), and its profile's part of it."""
    where = f"{file} [{name}] profile {profile}"
    if not NAME.fullmatch(name):
        raise ScenarioError(
            f"{file}: [{name}] is not a scenario name: letters, digits and . _ - (it names files, run ids and make "
            "targets), starting with a letter or digit"
        )
    if not isinstance(table, dict):
        raise ScenarioError(f"{file}: {name} = {table!r} is not a scenario: give it a [{name}] table")
    unknown = sorted(set(table) - set(SCENARIO_KEYS))
    if unknown:
        raise ScenarioError(f"{file} [{name}]: unknown key {unknown[0]!r}; a scenario has {', '.join(SCENARIO_KEYS)}")
    if not isinstance(table.get("description", ""), str):
        raise ScenarioError(f"{file} [{name}]: description = {table['description']!r} must be a text")
    if table.get("tool") not in TOOLS:
        raise ScenarioError(f"{where}: tool {table.get('tool')!r} is not one of {', '.join(TOOLS)}")
    chosen = (table.get("profile") or {}).get(profile) if isinstance(table.get("profile"), dict) else None
    if not isinstance(chosen, dict) or not isinstance(chosen.get("runs"), list) or not chosen["runs"]:
        raise ScenarioError(f"{where}: no runs defined (profile.{profile} = {{ runs = [{{ ... }}] }})")
    unknown = sorted(set(chosen) - set(PROFILE_KEYS))
    if unknown:
        raise ScenarioError(f"{where}: unknown key {unknown[0]!r}; a profile has {', '.join(PROFILE_KEYS)}")
    return chosen


def _targets(raw_targets: Any, where: str) -> tuple[tuple[str, str], ...]:
    try:
        return parse_targets(raw_targets, where)
    except MixError as exc:
        raise ScenarioError(str(exc)) from None


def _mix(raw_targets: list[dict[str, Any]], where: str) -> tuple[MixTarget, ...] | None:
    """The scenario's mix when its targets carry weights (checked: one line naming the scenario and key), else None."""
    if not is_mix(raw_targets):
        return None
    try:
        return parse_mix(raw_targets, where)
    except MixError as exc:
        raise ScenarioError(str(exc)) from None


def read(path: Path) -> dict[str, Any]:
    """The scenario file as TOML; a missing or malformed one is one line saying where and what to do."""
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ScenarioError(f"{path} does not exist (git checkout {path.name} restores the project's)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ScenarioError(
            f"{path} is not valid TOML: {exc}; fix it (git diff {path.name} shows what changed)"
        ) from None


def select(scenarios: dict[str, Scenario], names: list[str] | None) -> list[Scenario]:
    if not names:
        return [s for s in scenarios.values() if s.in_bench]
    unknown = [n for n in names if n not in scenarios]
    if unknown:
        raise ScenarioError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(scenarios)}")
    return [scenarios[n] for n in names]
