"""Server discovery: every `<folder>/manifest.toml` at the repository's top level describes one or more servers."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONTRACT_ROUTES = {"id", "hello", "backend", "tweets", "factorial", "fibonacci", "weather", "weather.json"}
UPSTREAM_PATH = "/weather.json"  # the route "weather.json": what /weather/{city} fetches from the upstream
# What a server may be besides a measured server (`roles = [...]` in its manifest); the harness asks for roles, never
# for a server's name.
ROLES = {
    "upstream": "serves the weather document (its `upstream_document`) that every /weather/{city} route fetches; "
                "it runs on the upstream CPUs and never sleeps while others are measured",
    "ceiling": "answers from static files with no framework: the ceiling the others are read against, never ranked "
               "among them",
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

    def has_role(self, role: str) -> bool:
        return role in self.roles

    def serves(self, route: str) -> bool:
        return route in self.routes

    @property
    def needs_upstream(self) -> bool:
        return "weather" in self.routes


def _server(table: dict, folder: Path, source: Path) -> Server:
    where = f"{source} ([[server]] {table.get('name', '?')!r})"
    for key in ("name", "port", "routes", "run"):
        if key not in table:
            raise ManifestError(f"{where}: missing required key {key!r}")
    unknown = set(table["routes"]) - CONTRACT_ROUTES
    if unknown:
        raise ManifestError(f"{where}: unknown routes {sorted(unknown)}; the contract has {sorted(CONTRACT_ROUTES)}")
    if not isinstance(table["run"], list) or not table["run"]:
        raise ManifestError(f"{where}: 'run' must be a non-empty list of arguments")
    roles = table.get("roles", [])
    unknown_roles = set(roles) - set(ROLES)
    if not isinstance(roles, list) or unknown_roles:
        raise ManifestError(f"{where}: 'roles' must be a list of {sorted(ROLES)}")
    document = table.get("upstream_document")
    if ("upstream" in roles) != (document is not None):
        raise ManifestError(f"{where}: a server with the role 'upstream' names its `upstream_document` (and only it)")
    if "upstream" in roles and "weather.json" not in table["routes"]:
        raise ManifestError(f"{where}: the upstream must serve the route 'weather.json'")
    return Server(
        name=table["name"],
        folder=folder,
        port=int(table["port"]),
        routes=tuple(table["routes"]),
        run=tuple(str(a) for a in table["run"]),
        build=table.get("build"),
        version=table.get("version"),
        stack=table.get("stack", ""),
        artifacts=tuple(table.get("artifacts", ())),
        startup_timeout_s=float(table.get("startup_timeout_s", 120)),
        env={k: str(v) for k, v in table.get("env", {}).items()},
        roles=tuple(roles),
        upstream_document=folder / document if document else None,
    )


def discover(repo: Path = REPO) -> dict[str, Server]:
    """All servers of the repository, by name."""
    servers: dict[str, Server] = {}
    for path in sorted(repo.glob("*/manifest.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ManifestError(f"{path}: {exc}") from exc
        for table in data.get("server", []):
            server = _server(table, path.parent, path)
            if server.name in servers:
                raise ManifestError(f"{path}: server name {server.name!r} is also used in {servers[server.name].folder}")
            servers[server.name] = server
    upstreams = with_role(servers, "upstream")
    if len(upstreams) > 1:
        raise ManifestError(f"several servers have the role 'upstream' ({', '.join(s.name for s in upstreams)}); "
                            "one serves the weather document to all")
    return servers


def with_role(servers: dict[str, Server], role: str) -> list[Server]:
    return [s for s in servers.values() if s.has_role(role)]


def upstream_of(servers: dict[str, Server]) -> Server | None:
    """The server with the role 'upstream' (discover() allows one at most), or None."""
    found = with_role(servers, "upstream")
    return found[0] if found else None


def upstream_url(upstream: Server, port: int | None = None, host: str = "127.0.0.1") -> str:
    """Where the servers fetch the weather document: the upstream at `port` (default: its manifest's)."""
    return f"http://{host}:{port or upstream.port}{UPSTREAM_PATH}"


def select(servers: dict[str, Server], names: list[str] | None) -> list[Server]:
    """The named servers in the given order (all of them when no names are given); unknown names are an error."""
    if not names:
        return list(servers.values())
    unknown = [n for n in names if n not in servers]
    if unknown:
        raise ManifestError(f"unknown server(s) {', '.join(unknown)}; known: {', '.join(servers)}")
    return [servers[n] for n in names]
