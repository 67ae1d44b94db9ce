"""A twin folder's twin.toml as `make twin` reads it (its format: docs/twin.md): another implementation of one of our
servers' framework, usually its TechEmpower entry, built outside this repository; each bad field refused in a line."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TWIN_FILE = "twin.toml"
# connection per request's tool: ab (as issue 48 measured it), or wrk sending `Connection: close` (CLOSE_TOOL=wrk):
# ab's one thread makes each connection with more CPU than wrk's, so against a server that takes new connections fast
# ab's CPU, not the server's, can set the pace (finagle/PROFILE.md)
CLOSE_TOOLS = ("ab", "wrk")


class TwinError(Exception):
    """A twin folder, its twin.toml or its server that cannot be used: the message says which and why, in a line."""


@dataclass(frozen=True)
class Twin:
    folder: Path
    ours: str  # our server's manifest name
    run: tuple[str, ...]  # argv, run in `folder`
    port: int
    routes: tuple[tuple[str, str], ...]  # (the twin's path, ours), in twin.toml's order
    entry: str = ""
    versions: str = ""
    env: dict[str, str] = field(default_factory=dict)
    warmup_connections: int = 0

    @property
    def name(self) -> str:
        return self.folder.name


def load_twin(path: Path) -> Twin:
    """The twin of a folder holding twin.toml (or of twin.toml itself): TwinError for a missing file, bad TOML or a
    field missing or of the wrong kind."""
    file = path / TWIN_FILE if path.is_dir() or not path.suffix else path
    if not file.is_file():
        raise TwinError(f"no {TWIN_FILE} in {file.parent}: a twin folder holds one (its format: docs/twin.md)")
    try:
        data = tomllib.loads(file.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TwinError(f"{file}: not valid TOML ({exc})") from None
    return _twin(data, file)


def _twin(data: dict[str, Any], file: Path) -> Twin:
    def bad(key: str, what: str) -> TwinError:
        return TwinError(f"{file}: `{key}` must be {what}")

    ours, run, port = data.get("ours"), data.get("run"), data.get("port")
    if not isinstance(ours, str) or not ours:
        raise bad("ours", 'our server\'s name, e.g. ours = "node"')
    if not isinstance(run, list) or not run or not all(isinstance(a, str) and a for a in run):
        raise bad("run", 'a non-empty list of strings (the argv), e.g. run = ["node", "app.js"]')
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise bad("port", "a port number (1-65535)")
    env, warm = data.get("env", {}), data.get("warmup_connections", 0)
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise bad("env", 'a table of strings, e.g. env = { NODE_ENV = "production" }')
    if not isinstance(warm, int) or isinstance(warm, bool) or warm < 0:
        raise bad("warmup_connections", "a whole number of at least 0")
    routes = data.get("routes")
    if not isinstance(routes, dict) or not routes:
        raise bad("[routes]", 'a table of at least one route, the twin\'s path = ours, e.g. "/plaintext" = "/hello"')
    for theirs, mine in routes.items():
        if not theirs.startswith("/") or not isinstance(mine, str) or not mine.startswith("/"):
            raise bad(f"[routes] {theirs!r}", 'a path = a path, both starting with "/"')
    return Twin(
        folder=file.parent.resolve(),
        ours=ours,
        run=tuple(run),
        port=port,
        routes=tuple(routes.items()),
        entry=str(data.get("entry", "")),
        versions=str(data.get("versions", "")),
        env=dict(env),
        warmup_connections=warm,
    )
