"""Roles on Docker hosts (issue 13): HOSTS="server=ssh://bench@10.1.0.2 loadgen=ssh://bench@10.1.0.3 upstream=..."
maps each role to a Docker endpoint. Each entry is `role=endpoint[,address=IP][,cpus=LIST]`:

- endpoint: ssh://[user@]host[:port] (preferred), tcp://host:port (TLS only: DOCKER_TLS_VERIFY and DOCKER_CERT_PATH,
  or HOSTS_INSECURE_TCP=1 to accept plain TCP with a warning), unix:///path, or the name of a Docker context;
- address: where the other roles reach this host's services (default: the endpoint's host when it is an IP
  address; required for unix:// endpoints and context names);
- cpus: the CPUs of that host to use for the role (default: the host's own CPU plan).

server and loadgen are required; upstream defaults to the server's host when left out. Parsing only: nothing here
connects anywhere."""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from harness.basics.cpus import CpuPlan, CpuPlanError, parse_cpus
from harness.basics.messages import warn

HOSTS_ENV = "HOSTS"
INSECURE_ENV = "HOSTS_INSECURE_TCP"
ROLES = ("server", "loadgen", "upstream")
REQUIRED = ("server", "loadgen")
CONTEXT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")  # the Docker CLI's rule for context names


class HostsError(Exception):
    pass


@dataclass(frozen=True)
class Host:
    role: str
    endpoint: str  # what `docker --host` takes, or a context name (`kind` says which)
    kind: str  # ssh, tcp, unix or context
    address: str  # where the other roles reach this host
    cpus: tuple[int, ...] | None = None


def parse(raw: str, environ: Mapping[str, str] = os.environ) -> dict[str, Host]:
    """The roles of a HOSTS value; HostsError names the bad entry and what to write instead."""
    entries: dict[str, Host] = {}
    for item in raw.split():
        role, sep, rest = item.partition("=")
        if not sep or not rest:
            raise HostsError(f"HOSTS entry {item!r}: write role=endpoint, e.g. server=ssh://bench@10.1.0.2")
        if role not in ROLES:
            raise HostsError(f"HOSTS entry {item!r}: unknown role {role!r}; the roles are {', '.join(ROLES)}")
        if role in entries:
            raise HostsError(f"HOSTS names the {role} role twice: give each role one endpoint")
        entries[role] = host(role, rest, environ)
    missing = [r for r in REQUIRED if r not in entries]
    if missing:
        raise HostsError(
            f"HOSTS has no {' and no '.join(missing)} endpoint: "
            'e.g. HOSTS="server=ssh://bench@10.1.0.2 loadgen=ssh://bench@10.1.0.3"'
        )
    if "upstream" not in entries:
        entries["upstream"] = Host(
            "upstream",
            entries["server"].endpoint,
            entries["server"].kind,
            entries["server"].address,
            entries["server"].cpus,
        )
    return entries


def host(role: str, spec: str, environ: Mapping[str, str] = os.environ) -> Host:
    endpoint, *options = spec.split(",")
    fields: dict[str, str] = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in ("address", "cpus") or not value:
            raise HostsError(f"HOSTS {role}: bad option {option!r}; the options are address=IP and cpus=LIST")
        fields[key] = value
    kind, default_address = endpoint_kind(role, endpoint, environ)
    address = fields.get("address") or default_address
    if not address:
        raise HostsError(f"HOSTS {role}={endpoint}: say where the other roles reach it: {role}={endpoint},address=IP")
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise HostsError(f"HOSTS {role}: address {address!r} is not an IP address") from None
    return Host(role, endpoint, kind, address, cpu_list(role, fields["cpus"]) if "cpus" in fields else None)


def endpoint_kind(role: str, endpoint: str, environ: Mapping[str, str] = os.environ) -> tuple[str, str | None]:
    """The endpoint's kind and the address it implies (its host when that is an IP address)."""
    if "://" not in endpoint:
        if not CONTEXT_NAME.match(endpoint):
            raise HostsError(f"HOSTS {role}={endpoint}: not an endpoint (ssh://, tcp://, unix://) or a context name")
        return "context", None
    url = urlsplit(endpoint)
    if url.scheme == "unix":
        if not url.path:
            raise HostsError(f"HOSTS {role}={endpoint}: give the socket's path, e.g. unix:///var/run/docker.sock")
        return "unix", None
    if url.scheme not in ("ssh", "tcp") or not url.hostname:
        raise HostsError(
            f"HOSTS {role}={endpoint}: use ssh://user@host (preferred), tcp://host:port with TLS, "
            "unix:///path or a Docker context name"
        )
    if url.scheme == "tcp":
        if not url.port:
            raise HostsError(f"HOSTS {role}={endpoint}: a tcp:// endpoint needs its port (2376 with TLS)")
        tls = environ.get("DOCKER_TLS_VERIFY") and environ.get("DOCKER_CERT_PATH")
        if not tls:
            if environ.get(INSECURE_ENV) != "1":
                raise HostsError(
                    f"HOSTS {role}={endpoint}: a Docker engine on plain TCP lets anyone on the network "
                    "run containers as root there; use ssh://, or TLS (DOCKER_TLS_VERIFY=1 "
                    f"DOCKER_CERT_PATH=...), or say {INSECURE_ENV}=1 to accept it"
                )
            warn(f"{role}: plain TCP to {endpoint} without TLS ({INSECURE_ENV}=1)")
    try:
        ipaddress.ip_address(url.hostname)
        return url.scheme, url.hostname
    except ValueError:
        return url.scheme, None  # a name: the address must be given (the harness does not resolve names for you)


def check_docker_host(environ: Mapping[str, str] = os.environ) -> None:
    """The local engine as the Docker CLI reaches it (one-host Docker, and the engine that builds HOSTS' images):
    a tcp:// DOCKER_HOST without TLS verification (DOCKER_TLS_VERIFY) is refused, as HOSTS refuses such endpoints,
    unless HOSTS_INSECURE_TCP=1 accepts it (with a warning). Asks nothing of the engine."""
    endpoint = environ.get("DOCKER_HOST", "").strip()
    if urlsplit(endpoint).scheme.lower() != "tcp" or environ.get("DOCKER_TLS_VERIFY"):
        return
    endpoint = "tcp" + endpoint[3:]
    if environ.get(INSECURE_ENV) != "1":
        raise HostsError(
            f"DOCKER_HOST={endpoint} is plain TCP: anyone on the network could run containers as root "
            f"there; use unix://, ssh:// or TLS (DOCKER_TLS_VERIFY=1), or {INSECURE_ENV}=1 to accept it"
        )
    warn(f"DOCKER_HOST={endpoint}: plain TCP without TLS ({INSECURE_ENV}=1)")


def cpu_list(role: str, raw: str) -> tuple[int, ...]:
    """HOSTS' cpus=: "0-3.6" is 0,1,2,3,6 (a comma already separates the options), read as the CPU plan reads lists."""
    try:
        cpus = parse_cpus(raw.replace(".", ","))
    except CpuPlanError:
        cpus = ()
    if not cpus or any(not part for part in raw.split(".")):
        raise HostsError(f"HOSTS {role}: cpus={raw!r}; write a list like cpus=0-3 or cpus=0.2")
    return tuple(sorted(set(cpus)))


def from_env(environ: Mapping[str, str] = os.environ) -> dict[str, Host] | None:
    """The roles HOSTS gives, or None when it is unset (everything on the local engine, as before)."""
    raw = environ.get(HOSTS_ENV, "").strip()
    return parse(raw, environ) if raw else None


@dataclass(frozen=True)
class Engine:
    """What a host's Docker engine says of itself."""

    version: str
    cpus: int
    kernel: str
    name: str


PROBE_TIMEOUT_S = 30  # an ssh:// endpoint opens an ssh connection first


def docker_args(h: Host) -> list[str]:
    """The Docker CLI's global options that address this host's engine."""
    return ["--context", h.endpoint] if h.kind == "context" else ["--host", h.endpoint]


def probe(
    roles: dict[str, Host], run: Callable[..., subprocess.CompletedProcess[str]] | None = None
) -> dict[str, Engine]:
    """Each distinct endpoint's engine, asked once (`docker info`); HostsError for the first that does not answer,
    before anything starts anywhere."""
    run = run or subprocess.run
    engines: dict[str, Engine] = {}
    for h in roles.values():
        if h.endpoint in engines:
            continue
        command = [
            "docker",
            *docker_args(h),
            "info",
            "--format",
            "{{.ServerVersion}}|{{.NCPU}}|{{.KernelVersion}}|{{.Name}}",
        ]
        try:
            done = run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        except FileNotFoundError:
            raise HostsError("HOSTS needs the Docker CLI here (`docker`): apt-get install docker.io") from None
        except subprocess.TimeoutExpired:
            raise HostsError(
                f"{h.role}: {h.endpoint} did not answer `docker info` within {PROBE_TIMEOUT_S} s; "
                "check that the host is up and its engine running"
            ) from None
        fields = done.stdout.strip().split("|")
        if done.returncode != 0 or len(fields) != 4 or not fields[1].isdigit():
            why = (done.stderr.strip().splitlines() or ["no answer"])[-1]
            hint = (
                f"check key access: ssh {h.endpoint.removeprefix('ssh://')} docker info"
                if h.kind == "ssh"
                else "check that the engine runs and that you may use it"
            )
            raise HostsError(f"{h.role}: the Docker engine at {h.endpoint} does not answer ({why}); {hint}")
        engines[h.endpoint] = Engine(fields[0], int(fields[1]), fields[2], fields[3])
    return engines


def cpu_plan(roles: dict[str, Host], engines: dict[str, Engine]) -> CpuPlan:
    """Each role's CPUs on its own host (its `cpus=`, else from the host's CPU count): the server 4 cores where its
    host has them, else 2, else 1, the rest of its host idle; the load generator every core of its host; the upstream
    every core of its own host, or, sharing the server's host, the core after the server's (the server then keeps 2
    of 4 cores, so that neither steals the other's). The server and the load generator never share an engine: one
    machine is what HOSTS unset is for."""
    server, loadgen, upstream = roles["server"], roles["loadgen"], roles["upstream"]
    if server.endpoint == loadgen.endpoint:
        raise HostsError(
            f"HOSTS puts the server and the load generator on the same engine ({server.endpoint}): to "
            "measure on one machine leave HOSTS unset"
        )
    count = {endpoint: e.cpus for endpoint, e in engines.items()}
    for h in roles.values():
        outside = [c for c in h.cpus or () if c >= count[h.endpoint]]
        if outside:
            raise HostsError(
                f"HOSTS {h.role}: cpus= names CPU {','.join(map(str, outside))}, but {h.endpoint} has "
                f"{count[h.endpoint]} CPUs (0-{count[h.endpoint] - 1})"
            )
    upstream_with_server = upstream.endpoint == server.endpoint
    n = count[server.endpoint]
    if server.cpus:
        server_cpus = server.cpus
    else:
        k = (4 if n >= 5 else 2 if n >= 3 else 1) if upstream_with_server else (4 if n >= 4 else 2 if n >= 2 else 1)
        server_cpus = tuple(range(k))
    loadgen_cpus = loadgen.cpus or tuple(range(count[loadgen.endpoint]))
    if upstream.cpus:
        upstream_cpus = upstream.cpus
    elif upstream_with_server:
        free = [c for c in range(n) if c not in server_cpus]
        upstream_cpus = tuple(free[:1]) or server_cpus
    elif upstream.endpoint == loadgen.endpoint:
        upstream_cpus = loadgen_cpus[-1:]
        loadgen_cpus = loadgen_cpus[:-1] or loadgen_cpus
    else:
        upstream_cpus = tuple(range(count[upstream.endpoint]))
    if upstream_with_server and set(upstream_cpus) & set(server_cpus):
        warn(
            f"the upstream shares the server's CPU {','.join(map(str, server_cpus))} on {server.endpoint}: "
            "it has no other"
        )
    return CpuPlan(
        server=tuple(server_cpus),
        loadgen=tuple(loadgen_cpus),
        upstream=tuple(upstream_cpus),
        hosts={role: h.address for role, h in roles.items()},
    )
