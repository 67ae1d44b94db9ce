"""A container as both Docker paths make it: `Service`, the one description from which compose.py writes each service
of docker-compose.yml (one machine) and the several-hosts runtime its `docker run` options; `limits`, what every
container gets, each limit in its Compose and its `docker run` form side by side; the two kinds of container,
`server_service` and `loadgen_service`; where a role's containers run (`Place`), and a host path as the loadgen
container sees it (`container_path`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.basics.paths import REPO, RESULTS
from harness.config.manifest import Server
from harness.containers.images import LOADGEN, app_dir, runtime_image, server_image

CONTAINER_REPO = "/bench"  # the loadgen container's working folder: where it sees the repository files a tool reads
# The results folder's own mount point, outside the read-only repository mount: under it, the engine would have to make
# the mount point inside a read-only bind whenever BENCH_RESULTS is not the checkout's results/ (CI's failure: a fresh
# clone has no results/ and the tests write to a temporary folder).
CONTAINER_RESULTS = "/results"
IMAGE_USER = "10001:10001"  # `bench`, the unprivileged user of every image (docker/*.Dockerfile)
SERVER_MEMORY = "3g"  # JVMs: 1 GiB fixed heap + metaspace, code cache, threads; node: a process per core
LOADGEN_MEMORY = "2g"
RUN_DIR = "/tmp/run"  # a server's RUN_DIR: on the tmpfs
# Least privilege: what may be written on a read-only root (RUN_DIR; the JVMs' perf data and netty's native library go
# to /tmp: exec, or netty would silently fall back to NIO), and a ceiling on processes + threads (JVMs run a few
# hundred threads at most) that stops a runaway fork before it hurts the host.
WRITABLE_TMPFS = "/tmp:rw,exec,nosuid,nodev,size=64m,mode=1777"
PIDS_LIMIT = 4096
STOP_GRACE_S = 15


@dataclass(frozen=True)
class Place:
    """Where a role's containers run: the engine of its host, and the address the other roles reach them at. The
    default is one machine's: the local engine, loopback."""

    args: tuple[str, ...] = ()  # the Docker CLI's options that address the engine (--host X, --context X)
    role: str = ""  # the role its host was named for ("" on one machine: there is one host)
    endpoint: str | None = None  # what RunningServer.engine records (None: the local engine)
    address: str = "127.0.0.1"

    @property
    def on(self) -> str:
        """Where, for a message: " on server (ssh://...)"; nothing on one machine."""
        return f" on {self.role} ({self.endpoint})" if self.endpoint else ""

    def facts(self) -> dict[str, str | None]:
        return {"host": self.role, "endpoint": self.endpoint, "address": self.address} if self.endpoint else {}


def container_path(arg: str) -> str:
    """A host path under the repository or the results folder, as a container that mounts them sees it (one
    machine's loadgen container); anything else as it is."""
    for host, inside in ((RESULTS, CONTAINER_RESULTS), (REPO, CONTAINER_REPO)):
        prefix = str(host)
        if arg == prefix or arg.startswith(prefix + "/"):
            return inside + arg[len(prefix) :]
    return arg


def container_name(service: str) -> str:
    return f"bench-{service}"


def role_of(server: Server) -> str:
    """The role whose CPUs (and, on several hosts, whose host) a server gets: the upstream its own, every other
    server the server's."""
    return "upstream" if server.has_role("upstream") else "server"


def quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


# No capability (nginx binds an unprivileged port), none to gain (the engine's default seccomp profile), a read-only
# root but for a tmpfs at /tmp, a process limit: every container's, a throwaway one's too (`privilege_options`).
PRIVILEGES = [
    ("cap_drop: [ALL]", ["--cap-drop", "ALL"]),
    ('security_opt: ["no-new-privileges:true"]', ["--security-opt", "no-new-privileges:true"]),
    ("read_only: true", ["--read-only"]),
    (f"tmpfs: [{quoted(WRITABLE_TMPFS)}]", ["--tmpfs", WRITABLE_TMPFS]),
    (f"pids_limit: {PIDS_LIMIT}", ["--pids-limit", str(PIDS_LIMIT)]),
]


def limits(nofile: str) -> list[tuple[str, list[str]]]:
    """What every container of both paths gets (docker-compose.yml's x-limits), each limit as its Compose line(s) and
    its `docker run` options: the host's network (no bridge: load never goes to a bridge address), the open-file
    limit `nofile` (a value, or in the file a variable), the stop grace period, no restart, and PRIVILEGES."""
    return [
        ("network_mode: host", ["--network", "host"]),
        (
            "ulimits:\n"
            "  # the harness's hard open-file limit (20000 on the reference machine); above the engine's own a container "
            "fails to start\n"
            f"  nofile: {{soft: {quoted(nofile)}, hard: {quoted(nofile)}}}",
            ["--ulimit", f"nofile={nofile}:{nofile}"],
        ),
        (f"stop_grace_period: {STOP_GRACE_S}s", ["--stop-timeout", str(STOP_GRACE_S)]),
        ('restart: "no"', ["--restart", "no"]),
        *PRIVILEGES,
    ]


def privilege_options() -> list[str]:
    """PRIVILEGES as `docker run` options, for a throwaway container (a tool's version, a ping)."""
    return [option for _, options in PRIVILEGES for option in options]


@dataclass(frozen=True)
class Mount:
    source: str  # a path of this machine (relative: to docker-compose.yml's folder), a volume, or "" (an anonymous one)
    target: str
    read_only: bool = False
    note: str = ""  # written next to it in docker-compose.yml

    @property
    def spec(self) -> str:
        return ":".join(part for part in (self.source, self.target, "ro" if self.read_only else "") if part)


@dataclass
class Service:
    """One container, besides the `limits` every container gets. Each value is a string as the engine takes it: in
    docker-compose.yml a Compose variable where the harness sets the value at each call (`${BENCH_...}`), on several
    hosts the value itself. "" (or empty): not set, the image's or the engine's default."""

    name: str  # the container's
    image: str
    command: list[str]
    working_dir: str
    cpuset: str = ""
    cpus: str = ""  # a CPU quota; "" none (the load generator has its own CPUs and no quota)
    memory: str = ""
    user: str = ""
    init: bool = False
    env: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)  # a key's comment in docker-compose.yml

    def run_options(self, nofile: str) -> list[str]:
        """`docker run` options, the image and the command: the container as `docker run -d` starts it."""
        options = [
            "--name",
            self.name,
            *(o for k, v in self.labels.items() for o in ("--label", f"{k}={v}")),
            *(o for _, run in limits(nofile) for o in run),
        ]
        for flag, value in (
            ("--cpuset-cpus", self.cpuset),
            ("--cpus", self.cpus),
            ("--memory", self.memory),
            ("--user", self.user),
            ("--workdir", self.working_dir),
        ):
            options += [flag, value] if value else []
        options += ["--init"] if self.init else []
        options += [o for k, v in self.env.items() for o in ("--env", f"{k}={v}")]
        options += [o for m in self.mounts for o in ("--volume", m.spec)]
        return [*options, self.image, *self.command]


def _filled(arg: str, values: dict[str, str]) -> str:
    try:
        return arg.format(**values)
    except (KeyError, IndexError, ValueError):
        return arg  # braces that are no placeholder of ours


def server_service(
    server: Server,
    values: dict[str, str],
    *,
    args: dict[str, str] | None = None,
    literal: Callable[[str], str] = lambda text: text,
    **fields: Any,
) -> Service:
    """A server's container: its image, its folder there as working directory, its manifest's `run` with the
    placeholders filled in from `args` (default: `values`), and the environment CONTRACT.md gives a server from
    `values` (host, port, cores, upstream_url, h2c_port: "" none); `literal` escapes the manifest's own text (Compose:
    $ as $$); `fields`, the Service's others (CPUs, memory...)."""
    env = {"HOST": values["host"], "PORT": values["port"], "SERVER_CORES": values["cores"], "RUN_DIR": RUN_DIR}
    if server.needs_upstream:
        env["UPSTREAM_URL"] = values["upstream_url"]
    if values.get("h2c_port"):  # cleartext HTTP/2 on a port of its own (CONTRACT.md)
        env["H2C_PORT"] = values["h2c_port"]
    env.update({k: literal(v) for k, v in server.env.items()})
    placeholders = {**(args or values), "run_dir": RUN_DIR}
    return Service(
        container_name(server.name),
        server_image(server),
        [_filled(literal(a), placeholders) for a in server.run],
        app_dir(server),
        env=env,
        **fields,
    )


def loadgen_service(cpuset: str, user: str, mounts: list[Mount], **fields: Any) -> Service:
    """The load generator's container: the tools run in it with `docker exec`; an init as PID 1 stops it at once."""
    return Service(
        container_name(LOADGEN),
        runtime_image(LOADGEN),
        ["sleep", "infinity"],
        CONTAINER_REPO,
        cpuset=cpuset,
        memory=LOADGEN_MEMORY,
        user=user,
        init=True,
        mounts=mounts,
        **fields,
    )
