"""The harness's settings: every variable the Makefile exports (and the command line's options that stand for them),
read and checked once, before anything starts, into one `Configuration`. A bad value is one `ConfigurationError` naming the
variable, the value and what to do; the command line says it and exits with status 2.

An empty value is an unset one (its default): `make bench TWIN=` is how the Makefile unsets a variable. A blank one
(spaces only) is refused: it is a value nobody meant. Names are checked against the servers' manifests (SERVERS,
PORTS, TWIN, BENCH_MEM_LIMIT_<SERVER>); CPU lists against each other here, against this machine in the CPU plan
(harness.basics.cpus.plan)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.basics import idle_states
from harness.basics.cpus import CpuPlanError, format_cpus, parse_cpus
from harness.config import host_roles
from harness.config.host_roles import Host, HostsError
from harness.config.manifest import Server
from harness.config.scenarios import PROFILES

RUNTIMES = ("auto", "docker", "local")
ORDERS = ("auto", "interleaved", "sequential")
FORMATS = ("text", "json")
DEFAULT_ROUNDS = 3
MAX_PROCESSES = 1024  # LOADGEN_PROCESSES: the processes of ab or httperf one load is split into
MAX_CPUS = 4096  # ASSUME_CPUS: the CPUs of the machine `make plan` imagines
MAX_SMT = 8  # ASSUME_SMT: its threads per physical core
DEFAULT_SLO_P99_MS = 10.0
MIN_BUDGET_MIN, MAX_BUDGET_MIN = 5, 24 * 60  # BUDGET_MIN: a bench of at least five minutes, at most a day
DEFAULT_TWIN = "node"  # the A/A control of `make bench`: a cheap warm-up, server-bound on some rows
CPU_ROLES = ("server", "loadgen", "upstream")
MEMORY_PREFIX = "BENCH_MEM_LIMIT_"
MEMORY = re.compile(r"([0-9]+)([bkmg]?)", re.IGNORECASE)  # what `docker run --memory` takes
MEMORY_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
MEMORY_MIN = 6 << 20  # Docker refuses a container less than 6 MiB
WHOLE = re.compile(r"[0-9]{1,9}")
# the variables read here, each with a value that works: the "what to do" of a message
EXAMPLES = {
    "RUNTIME": "auto, docker or local",
    "SERVERS": '"node rust"',
    "PROFILE": "quick or seed",
    "PORTS": '"node=9090 rust=9091"',
    "REPEAT": "3",
    "ORDER": ", ".join(ORDERS),
    "ROUNDS": "3",
    "CPUS_SERVER": "0-3",
    "CPUS_LOADGEN": "4-7",
    "CPUS_UPSTREAM": "8",
    "SLO_P99_MS": "10",
    "HOSTS": '"server=ssh://bench@10.1.0.2 loadgen=ssh://bench@10.1.0.3"',
    "HOSTS_INSECURE_TCP": "1",
    "TWIN": "node (TWIN= turns the A/A control off)",
    "LOADGEN_PROCESSES": "2",
    "ASSUME_CPUS": "8",
    "ASSUME_SMT": "2",
    "FORMAT": "text or json",
    "CPU_IDLE": "poll (the default) or machine",
    "CPU_METER": "1 (each CPU's speed read beside every attempt) or 0 (the default)",
    "KEEP_REQUEST_DB": "1 (a mix's per-request database kept in raw/) or 0 (the default: deleted once read)",
    "BUDGET_MIN": "40 (the minutes make bench may take: more attempts a record where they fit; default the profile's)",
}


class ConfigurationError(Exception):
    """One bad value: the variable, the value, and what to do."""


@dataclass(frozen=True)
class Configuration:
    runtime: str = "auto"
    servers: tuple[str, ...] = ()  # none: the servers that are up, else all
    profile: str = "quick"
    ports: dict[str, int] = field(default_factory=dict)  # server: the port it is moved to
    repeat: int | None = None  # None: the profile's
    order: str = "auto"
    rounds: int = DEFAULT_ROUNDS
    cpus: dict[str, str] = field(default_factory=dict)  # role: its CPU list as given (CPUS_SERVER...), checked
    slo_p99_ms: float = DEFAULT_SLO_P99_MS
    hosts: dict[str, Host] | None = None  # HOSTS' roles (parsed only: no engine asked yet); None: this machine
    twin: str = DEFAULT_TWIN  # "": no A/A control
    memory_limits: dict[str, str] = field(default_factory=dict)  # server: its BENCH_MEM_LIMIT_<SERVER>
    loadgen_processes: int | None = None
    assume_cpus: int | None = None
    assume_smt: int | None = None
    format: str = "text"
    cpu_idle: str = "poll"  # idle CPUs poll while measuring (harness.basics.idle_states), or "machine"
    cpu_meter: bool = False  # each CPU's speed read beside every attempt (harness.basics.cpu_speed)
    keep_request_db: bool = False  # oha's per-request databases kept once read (harness.tools.oha_mix)
    budget_min: int | None = None  # BUDGET_MIN: make bench's minutes (None: the profile's budget and attempts)


def read(
    environ: Mapping[str, str], servers: dict[str, Server], given: dict[str, str | None] | None = None
) -> Configuration:
    """The settings from `environ`, where the command line's options (`given`, by variable name; None: not given)
    take precedence; ConfigurationError for the first bad value."""
    raw = {name: environ.get(name) for name in EXAMPLES}
    raw.update({name: value for name, value in (given or {}).items() if value is not None})
    value = {name: text(name, raw[name]) for name in raw}
    return Configuration(
        runtime=one_of("RUNTIME", value["RUNTIME"], RUNTIMES, "auto"),
        servers=server_names(value["SERVERS"], servers),
        profile=one_of("PROFILE", value["PROFILE"], PROFILES, "quick"),
        ports=ports(value["PORTS"], servers),
        repeat=whole("REPEAT", value["REPEAT"], 1),
        order=one_of("ORDER", value["ORDER"], ORDERS, "auto"),
        rounds=whole("ROUNDS", value["ROUNDS"], 1) or DEFAULT_ROUNDS,
        cpus=cpu_lists({role: value[f"CPUS_{role.upper()}"] for role in CPU_ROLES}),
        slo_p99_ms=milliseconds("SLO_P99_MS", value["SLO_P99_MS"]),
        hosts=hosts(value["HOSTS"], value["HOSTS_INSECURE_TCP"], environ),
        twin=twin(raw["TWIN"], value["TWIN"], servers),
        memory_limits=memory_limits(environ, servers),
        loadgen_processes=whole("LOADGEN_PROCESSES", value["LOADGEN_PROCESSES"], 1, MAX_PROCESSES),
        assume_cpus=whole("ASSUME_CPUS", value["ASSUME_CPUS"], 2, MAX_CPUS),
        assume_smt=whole("ASSUME_SMT", value["ASSUME_SMT"], 1, MAX_SMT),
        format=one_of("FORMAT", value["FORMAT"], FORMATS, "text"),
        cpu_idle=one_of("CPU_IDLE", value["CPU_IDLE"], idle_states.MODES, "poll"),
        cpu_meter=one_of("CPU_METER", value["CPU_METER"], ("0", "1"), "0") == "1",
        keep_request_db=one_of("KEEP_REQUEST_DB", value["KEEP_REQUEST_DB"], ("0", "1"), "0") == "1",
        budget_min=whole("BUDGET_MIN", value["BUDGET_MIN"], MIN_BUDGET_MIN, MAX_BUDGET_MIN),
    )


def text(name: str, raw: str | None) -> str | None:
    """The value, stripped; None where unset or empty; ConfigurationError where blank."""
    if raw is None or raw == "":
        return None
    if not raw.strip():
        raise ConfigurationError(
            f"{name}={raw!r} is blank: give a value (e.g. {name}={EXAMPLES[name]}) or leave it unset"
        )
    return raw.strip()


def one_of(name: str, value: str | None, choices: tuple[str, ...], default: str) -> str:
    if value is None:
        return default
    if value.lower() not in choices:
        raise ConfigurationError(f"{name}={value!r}: use one of {', '.join(choices)} (default {default})")
    return value.lower()


def whole(name: str, value: str | None, least: int, most: int | None = None) -> int | None:
    """A whole number of at least `least` (and at most `most`); None where unset."""
    if value is None:
        return None
    if not WHOLE.fullmatch(value) or int(value) < least or most is not None and int(value) > most:
        word = "positive integer" if least == 1 else f"whole number of at least {least}"
        word += f" (at most {most})" if most is not None else ""
        raise ConfigurationError(f"{name}={value!r}: must be a {word}, e.g. {name}={EXAMPLES[name]}")
    return int(value)


def milliseconds(name: str, value: str | None) -> float:
    try:
        ms = float(value) if value is not None else DEFAULT_SLO_P99_MS
    except ValueError:
        ms = -1.0
    if not (ms > 0 and math.isfinite(ms)):
        raise ConfigurationError(f"{name}={value!r}: give the p99 latency target in milliseconds, e.g. {name}=10")
    return ms


def number(name: str, text: str, default: float, low: float, high: float) -> float:
    """`text` as a number from `low` to `high` (`default` when empty); ConfigurationError naming `name` otherwise."""
    if not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise ConfigurationError(f"{name}={text!r}: give a number from {low:g} to {high:g}")
    return value


def server_names(value: str | None, servers: dict[str, Server]) -> tuple[str, ...]:
    chosen = tuple(n for n in (value or "").replace(",", " ").split() if n)
    unknown = [n for n in chosen if n not in servers]
    if unknown:
        raise ConfigurationError(
            f"SERVERS={value!r}: unknown server(s) {', '.join(unknown)}; known: {', '.join(servers)}"
        )
    return chosen


def ports(value: str | None, servers: dict[str, Server]) -> dict[str, int]:
    """PORTS="node=9090 rust=9091": each entry a known server once, its port (and h2c port, as far above it as in
    its manifest) from 1 to 65535."""
    out: dict[str, int] = {}
    for item in (value or "").replace(",", " ").split():
        name, _, port = item.partition("=")
        if not WHOLE.fullmatch(port) or not 0 < int(port) < 65536:
            raise ConfigurationError(
                f'PORTS={value!r}: bad port override {item!r}: use PORTS="node=9090 rust=9091" (ports from 1 to 65535)'
            )
        if name not in servers:
            raise ConfigurationError(f"PORTS={value!r}: {item!r} names no server; known: {', '.join(servers)}")
        if name in out:
            raise ConfigurationError(f"PORTS={value!r}: {name} is given two ports: give each server one")
        h2c = servers[name].h2c_port
        if h2c and not 0 < h2c + int(port) - servers[name].port < 65536:
            raise ConfigurationError(
                f"PORTS={value!r}: {name}'s h2c port is {h2c - servers[name].port:+d} from its port, "
                f"{h2c + int(port) - servers[name].port} here, past 65535: give {name} a port up to "
                f"{65535 - h2c + servers[name].port}"
            )
        out[name] = int(port)
    return out


def cpu_lists(given: dict[str, str | None]) -> dict[str, str]:
    """CPUS_SERVER, CPUS_LOADGEN, CPUS_UPSTREAM: each a CPU list naming at least one CPU; the server's shared with
    neither of the others where both are given (the plan checks them against this machine and its defaults)."""
    cpus = {}
    for role, value in given.items():
        if value is None:
            continue
        name = f"CPUS_{role.upper()}"
        try:
            cpus[role] = parse_cpus(value)
        except CpuPlanError:
            cpus[role] = ()
        if not cpus[role] or min(cpus[role]) < 0:
            raise ConfigurationError(
                f"{name}={value!r}: not a CPU list; write one like {name}={EXAMPLES[name]} "
                "(0-3,6 for CPUs 0, 1, 2, 3 and 6)"
            )
    for other in ("loadgen", "upstream"):
        shared = set(cpus.get("server", ())) & set(cpus.get(other, ()))
        if shared:
            raise ConfigurationError(
                f"CPUS_SERVER={given['server']!r} and CPUS_{other.upper()}={given[other]!r} share CPU "
                f"{format_cpus(sorted(shared))}: the server's CPUs must be its own; give them "
                "CPUs apart"
            )
    return {role: given[role] or "" for role in cpus}  # each role in `cpus` was given a value


def hosts(value: str | None, insecure: str | None, environ: Mapping[str, str]) -> dict[str, Host] | None:
    if insecure not in (None, "0", "1"):
        raise ConfigurationError(
            f"HOSTS_INSECURE_TCP={insecure!r}: say 1 to accept a Docker engine on plain TCP (no TLS), or leave it unset"
        )
    if not value:
        return None
    try:
        return host_roles.parse(value, {**environ, host_roles.INSECURE_ENV: insecure or ""})
    except HostsError as exc:
        raise ConfigurationError(f"HOSTS={value!r}: {exc}") from None


def twin(raw: str | None, value: str | None, servers: dict[str, Server]) -> str:
    """TWIN unset: the default; TWIN= : no A/A control; else a known server."""
    if raw is None:
        return DEFAULT_TWIN if DEFAULT_TWIN in servers else ""
    if value is not None and value not in servers:
        raise ConfigurationError(
            f"TWIN={value!r}: no such server (known: {', '.join(servers)}); TWIN= turns the A/A control off"
        )
    return value or ""


def memory_limits(environ: Mapping[str, str], servers: dict[str, Server]) -> dict[str, str]:
    """BENCH_MEM_LIMIT_<SERVER>=512m: each names a server (its name upper-cased, '-' as '_') and a limit Docker takes."""
    by_variable = {MEMORY_PREFIX + "".join(c if c.isalnum() else "_" for c in n.upper()): n for n in servers}
    limits = {}
    for name in sorted(v for v in environ if v.startswith(MEMORY_PREFIX)):
        value = _memory_text(name, environ[name])
        if value is None:
            continue
        if name not in by_variable:
            raise ConfigurationError(f"{name}={value!r} names no server: use one of {', '.join(sorted(by_variable))}")
        found = MEMORY.fullmatch(value)
        if not found or int(found[1]) * MEMORY_UNITS[found[2].lower()] < MEMORY_MIN:
            raise ConfigurationError(
                f"{name}={value!r}: give a memory limit of at least 6m, e.g. {name}=512m (b, k, m, g)"
            )
        limits[by_variable[name]] = value
    return limits


def _memory_text(name: str, raw: str) -> str | None:
    if raw and not raw.strip():
        raise ConfigurationError(f"{name}={raw!r} is blank: give a limit (e.g. {name}=512m) or leave it unset")
    return raw.strip() or None
