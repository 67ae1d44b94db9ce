"""Server discovery: every `<folder>/manifest.toml` at the repository's top level describes one or more servers."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONTRACT_ROUTES = {"id", "hello", "backend", "tweets", "factorial", "fibonacci", "weather", "weather.json"}


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
    return servers


def select(servers: dict[str, Server], names: list[str] | None) -> list[Server]:
    """The named servers in the given order (all of them when no names are given); unknown names are an error."""
    if not names:
        return list(servers.values())
    unknown = [n for n in names if n not in servers]
    if unknown:
        raise ManifestError(f"unknown server(s) {', '.join(unknown)}; known: {', '.join(servers)}")
    return [servers[n] for n in names]
