"""Server discovery: every `<folder>/manifest.toml` at the repository's top level (or in the folder BENCH_SERVERS_DIR
names) describes one or more servers. Every field is checked for its type, and names and default ports for being
unique, so that a bad manifest is one clear error before anything starts, never a traceback halfway."""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.basics.paths import REPO

CONTRACT_ROUTES = {"id", "hello", "backend", "tweets", "factorial", "fibonacci", "weather", "weather.json"}
# Names another folder whose `<folder>/manifest.toml` files are the servers (tests: manifests of their own); default: REPO
SERVERS_DIR_VAR = "BENCH_SERVERS_DIR"
UPSTREAM_PATH = "/weather.json"  # the route "weather.json": what /weather/{city} fetches from the upstream
# where the upstream says how many requests it has served (nginx's stub_status): the contract check counts its fetches
UPSTREAM_COUNT_PATH = "/requests-served"
# What a server may be besides a measured server (`roles = [...]` in its manifest); the harness asks for roles, never
# for a server's name.
ROLES = {
    "upstream": "serves the weather document (its `upstream_document`) that every /weather/{city} route fetches; "
    "it runs on the upstream CPUs and never sleeps while others are measured",
    "ceiling": "answers from static files with no framework: the ceiling the others are read against, never ranked "
    "among them",
    "calibrated": "answers known by construction (calibrated/): measured by `make calibrate` only, never chosen by "
    "default, never ranked",
}


class ManifestError(Exception):
    pass


@dataclass(frozen=True)
class Server:
    name: str
    folder: Path
    port: int
    routes: tuple[str, ...]
    run: tuple[str, ...]
    build: str | None = None
    version: str | None = None
    stack: str = ""
    artifacts: tuple[str, ...] = ()
    startup_timeout_s: float = 120.0
    env: dict[str, str] = field(default_factory=dict)
    roles: tuple[str, ...] = ()
    upstream_document: Path | None = None  # upstream role: the file it serves at UPSTREAM_PATH
    # its first warm-up on connection-per-request load runs until at least this many connections were made (its JIT's
    # work on the accept path, measured per family; 0: the trend test alone decides)
    warmup_connections: int = 0
    # cleartext HTTP/2 (prior knowledge): the port it listens on for h2c when started with H2C_PORT; None: it speaks
    # HTTP/1.1 only (CONTRACT.md, "HTTP/2")
    h2c_port: int | None = None
    twin_of: str | None = None  # the A/A control: this is `twin_of` under a second name (it answers /id as that one)
    # an outside server's (make twin's entry, never a manifest's): the path whose 200 with a body says it is up, where
    # ours answer GET /id with their name; such a server is never held to the contract
    ready_path: str | None = None

    @property
    def identity(self) -> str:
        """What GET /id answers: its name, or the name of the server it is a twin of."""
        return self.twin_of or self.name

    def has_role(self, role: str) -> bool:
        return role in self.roles

    def serves(self, route: str) -> bool:
        return route in self.routes

    @property
    def needs_upstream(self) -> bool:
        return "weather" in self.routes


def artifacts_stamp(server: Server) -> str:
    """What a server's artifacts are now, cheaply: each file's path, size and modification time, hashed (a `make build`
    that rewrites, adds or removes one changes it; a folder by its contents, a symlink as a link). A server left up is
    compared by it with what a run would start."""
    h = hashlib.sha256()
    for artifact in server.artifacts:
        for path in _tree(server.folder / artifact):
            try:
                st = path.lstat()
                seen = "folder" if path.is_dir() and not path.is_symlink() else f"{st.st_size} {st.st_mtime_ns}"
                h.update(f"{path.relative_to(server.folder)} {seen}\n".encode())
            except OSError:
                h.update(f"{path.relative_to(server.folder)} missing\n".encode())
    return h.hexdigest()[:16]


def _tree(top: Path) -> Iterator[Path]:
    """`top` and, for a folder, everything under it, in a fixed order (symlinks not followed)."""
    yield top
    for root, dirs, names in os.walk(top):  # nothing for a file
        dirs.sort()
        yield from (Path(root) / name for name in sorted(dirs + names))


SHARED_BUILD = "{folders}"  # in a `build` command: one build for several servers (see build_steps)


@dataclass(frozen=True)
class BuildStep:
    command: str
    cwd: Path
    servers: tuple[str, ...]


def build_steps(servers: list[Server]) -> list[BuildStep]:
    """The build commands to run for `servers`, in order. A command is run once per folder. A command with
    `{folders}` is shared: it runs once, from the servers' common parent folder, for every server with the same
    command, `{folders}` replaced by their folder names, comma-separated (one Maven reactor builds every JVM server:
    its start-up and the shared modules are paid once, not once per server)."""
    steps: list[BuildStep] = []
    shared: dict[tuple[str, Path], list[Server]] = {}
    done: set[tuple[Path, str]] = set()
    for server in servers:
        if not server.build:
            continue
        if SHARED_BUILD in server.build:
            group = shared.setdefault((server.build, server.folder.parent), [])
            if not group:
                steps.append(BuildStep(server.build, server.folder.parent, ()))  # filled in below, keeps the order
            group.append(server)
        elif (server.folder, server.build) not in done:
            done.add((server.folder, server.build))
            steps.append(BuildStep(server.build, server.folder, (server.name,)))
    out = []
    for step in steps:
        members = shared.get((step.command, step.cwd)) if not step.servers else None
        if members:
            folders = ",".join(dict.fromkeys(s.folder.name for s in members))
            step = BuildStep(step.command.replace(SHARED_BUILD, folders), step.cwd, tuple(s.name for s in members))
        out.append(step)
    return out


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # TOML's true is no port


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# Every key a [[server]] table may have: what its value must be (said in the error), and the check.
FIELDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "name": (
        "a non-empty name of lowercase letters, digits and '-'",
        lambda v: isinstance(v, str) and re.fullmatch(r"[a-z0-9-]+", v) is not None,
    ),
    "port": ("an integer from 1 to 65535", lambda v: _is_int(v) and 1 <= v <= 65535),
    "routes": ("a list of route names (strings)", _strings),
    "run": ("a non-empty list of strings (the command and its arguments)", lambda v: _strings(v) and len(v) > 0),
    "build": ("a string (a shell command)", lambda v: isinstance(v, str)),
    "version": ("a string (a shell command)", lambda v: isinstance(v, str)),
    "stack": ("a string", lambda v: isinstance(v, str)),
    "artifacts": ("a list of strings (paths in the server's folder)", _strings),
    "startup_timeout_s": (
        "a positive number of seconds",
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0,
    ),
    "env": (
        'a table of strings (NAME = "value")',
        lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    ),
    "roles": (f"a list of {sorted(ROLES)}", lambda v: _strings(v) and set(v) <= set(ROLES)),
    "upstream_document": ("a string (a file in the server's folder)", lambda v: isinstance(v, str)),
    "warmup_connections": ("a non-negative integer (connections)", lambda v: _is_int(v) and v >= 0),
    "h2c_port": ("an integer from 1 to 65535", lambda v: _is_int(v) and 1 <= v <= 65535),
}
REQUIRED = ("name", "port", "routes", "run")


def _check_fields(table: dict[str, Any], where: str) -> None:
    """Every key known and of its type, before any value is used: a wrong one is named with what it must be."""
    unknown = sorted(set(table) - set(FIELDS))
    if unknown:
        raise ManifestError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; a [[server]] has "
            f'{", ".join(FIELDS)} (docs/extending.md, "Adding a server")'
        )
    for key in REQUIRED:
        if key not in table:
            raise ManifestError(f"{where}: missing required key {key!r}")
    for key, value in table.items():
        expected, valid = FIELDS[key]
        if not valid(value):
            raise ManifestError(f"{where}: {key!r} must be {expected}, not {value!r}")


def _server(table: dict[str, Any], folder: Path, source: Path) -> Server:
    where = f"{source} ([[server]] {table.get('name', '?')!r})"
    _check_fields(table, where)
    unknown = set(table["routes"]) - CONTRACT_ROUTES
    if unknown:
        raise ManifestError(f"{where}: unknown routes {sorted(unknown)}; the contract has {sorted(CONTRACT_ROUTES)}")
    roles = table.get("roles", [])
    document = table.get("upstream_document")
    if ("upstream" in roles) != (document is not None):
        raise ManifestError(f"{where}: a server with the role 'upstream' names its `upstream_document` (and only it)")
    if "upstream" in roles and "weather.json" not in table["routes"]:
        raise ManifestError(f"{where}: the upstream must serve the route 'weather.json'")
    return Server(
        name=table["name"],
        folder=folder,
        port=table["port"],
        routes=tuple(table["routes"]),
        run=tuple(table["run"]),
        build=table.get("build"),
        version=table.get("version"),
        stack=table.get("stack", ""),
        artifacts=tuple(table.get("artifacts", ())),
        startup_timeout_s=float(table.get("startup_timeout_s", 120)),
        env=dict(table.get("env", {})),
        roles=tuple(roles),
        upstream_document=folder / document if document else None,
        warmup_connections=table.get("warmup_connections", 0),
        h2c_port=table.get("h2c_port"),
    )


TWIN_SUFFIX = "-twin"


def at_port(server: Server, port: int) -> Server:
    """`server` moved to `port` (PORTS), its h2c port as far from it as in its manifest."""
    shift = port - server.port
    return replace(server, port=port, h2c_port=server.h2c_port + shift if server.h2c_port else None)


def twin(server: Server, taken_ports: set[int]) -> Server:
    """The A/A control: `server` again under a second name (`<name>-twin`) on a port no other server uses, the same
    folder, command and artifacts; it answers /id as `server` does (`identity`). Its h2c port, where it has one, moves
    with its port (the same distance from it) and is free too."""
    shift = 100
    while ({server.port + shift} | ({server.h2c_port + shift} if server.h2c_port else set())) & taken_ports:
        shift += 1
    return replace(
        server,
        name=server.name + TWIN_SUFFIX,
        port=server.port + shift,
        twin_of=server.name,
        h2c_port=server.h2c_port + shift if server.h2c_port else None,
    )


def servers_dir() -> Path:
    """Where the server folders are: the repository, or the folder SERVERS_DIR_VAR names (tests' own manifests)."""
    return Path(os.environ.get(SERVERS_DIR_VAR) or REPO)


def discover(repo: Path | None = None) -> dict[str, Server]:
    """All servers of the repository (default: servers_dir()), by name; names and default ports are unique."""
    servers: dict[str, Server] = {}
    for path in sorted((repo or servers_dir()).glob("*/manifest.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ManifestError(f"{path}: {exc}") from exc
        tables = data.get("server", [])
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise ManifestError(f'{path}: each server is a [[server]] table (docs/extending.md, "Adding a server")')
        for table in tables:
            server = _server(table, path.parent, path)
            if server.name in servers:
                raise ManifestError(
                    f"{path}: server name {server.name!r} is also used in {servers[server.name].folder}"
                )
            servers[server.name] = server
    upstreams = with_role(servers, "upstream")
    if len(upstreams) > 1:
        raise ManifestError(
            f"several servers have the role 'upstream' ({', '.join(s.name for s in upstreams)}); "
            "one serves the weather document to all"
        )
    _check_ports_unique(list(servers.values()))
    return servers


def _check_ports_unique(servers: list[Server]) -> None:
    """A default port is a server's own: `make up` starts them all at once, and Compose on the host network too."""
    for index, server in enumerate(servers):
        first = next((s for s in servers[:index] if s.port == server.port), None)
        if first:
            raise ManifestError(
                f"{server.folder / 'manifest.toml'} ([[server]] {server.name!r}): 'port' {server.port} "
                f"is also the port of {first.name!r} ({first.folder / 'manifest.toml'}); give each "
                "server a port of its own"
            )


def with_role(servers: dict[str, Server], role: str) -> list[Server]:
    return [s for s in servers.values() if s.has_role(role)]


def by_default(servers: dict[str, Server]) -> list[Server]:
    """The servers a command takes when none are named: all but the calibrated one (measured by `make calibrate`)."""
    return [s for s in servers.values() if not s.has_role("calibrated")]


def upstream_of(servers: dict[str, Server]) -> Server | None:
    """The server with the role 'upstream' (discover() allows one at most), or None."""
    found = with_role(servers, "upstream")
    return found[0] if found else None


def upstream_url(upstream: Server, port: int | None = None, host: str = "127.0.0.1") -> str:
    """Where the servers fetch the weather document: the upstream at `port` (default: its manifest's)."""
    return f"http://{host}:{port or upstream.port}{UPSTREAM_PATH}"


def upstream_count_url(upstream: Server, port: int | None = None, host: str = "127.0.0.1") -> str:
    """Where the upstream at `port` says how many requests it has served (nginx's stub_status)."""
    return f"http://{host}:{port or upstream.port}{UPSTREAM_COUNT_PATH}"


def select(servers: dict[str, Server], names: list[str] | None) -> list[Server]:
    """The named servers in the given order (all of them when no names are given); unknown names are an error."""
    if not names:
        return list(servers.values())
    unknown = [n for n in names if n not in servers]
    if unknown:
        raise ManifestError(f"unknown server(s) {', '.join(unknown)}; known: {', '.join(servers)}")
    return [servers[n] for n in names]
