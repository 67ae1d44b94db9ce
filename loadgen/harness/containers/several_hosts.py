"""Several hosts (HOSTS="server=ssh://... loadgen=ssh://... upstream=..."): the server, the load generator and the
upstream each in a container on its own Docker host, driven from here through the Docker CLI (`docker --host X` or
`--context X`; see harness/config/host_roles.py for the HOSTS syntax). No agent of our own runs on the hosts.

How it differs from one machine (one_host.py; what both share is engine_runtime.py's):
- `docker run` with the options of the Service that docker-compose.yml describes (service.py), not Compose: Debian's
  Compose v1 reaches ssh:// engines only through paramiko, while the Docker CLI itself reaches every kind of endpoint
  (ssh://, tcp:// with TLS, unix://, contexts).
- images are built here by the local engine and sent to each host whose copy differs (`docker save | docker load`,
  transfer.py: no registry); a server image carries its base image's layers with it.
- every service binds to its host's address (HOSTS' address=, default the endpoint's IP), never 0.0.0.0; the
  contract check and the tools use those addresses.
- nothing of the harness's machine is the hosts': no bind mount (nginx's static files go into a volume on its host,
  wrk's script is copied into the loadgen container's volume, the tools' side files are read back from its /tmp), no
  /proc, no psutil. CPU and memory come from each engine's cgroup counters (engine_api.py); the CPU sets are read
  back from the engine and from the container's own /proc/1/status.
- every container and volume carries the label bench.owner=<the id of this machine and checkout> (ownership.py), and
  bench.checkout=<its path>: `make down` and a later command remove what a killed one left, on every host, and only
  that (another harness machine's, from a checkout at the same path, is neither removed nor used).
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.basics.cpus import CpuPlan, format_cpus
from harness.basics.machine import nofile_limit
from harness.basics.messages import say, warn
from harness.basics.paths import REPO
from harness.config import host_roles as hosts_config
from harness.config.host_roles import Host, docker_args
from harness.config.manifest import Server
from harness.containers import ownership
from harness.containers.engine import engine_answers, inspect
from harness.containers.engine_api import EngineStatsSampler
from harness.containers.engine_runtime import EngineRuntime
from harness.containers.images import (
    LOADGEN,
    app_dir,
    build_images,
    ensure_runtime_images,
    runtime_image,
    server_image,
    static_mounts,
)
from harness.containers.network_path import measure_path
from harness.containers.process import RemoteTool, readable
from harness.containers.service import (
    CONTAINER_REPO,
    IMAGE_USER,
    SERVER_MEMORY,
    STOP_GRACE_S,
    Mount,
    Place,
    container_name,
    loadgen_service,
    role_of,
    server_service,
)
from harness.containers.transfer import send_image
from harness.runtime.protocol import RunningServer, RuntimeFailure
from harness.runtime.state import State

CHECKOUT_LABEL = ownership.CHECKOUT_LABEL
REMOTE_TOOLS = ("ab", "wrk", "httperf", "h2load")  # in the loadgen image; oha and Gatling are built on this machine


class HostsRuntime(EngineRuntime):
    name = "hosts"
    remote = True  # this machine's CPUs, processes and ports are not the roles'
    checkout_label = CHECKOUT_LABEL
    loadgen_tools = REMOTE_TOOLS

    def __init__(self, roles: dict[str, Host] | None = None, memory_limits: dict[str, str] | None = None):
        """Parses HOSTS and asks every engine (HostsError for one that does not answer, before anything starts);
        the CPU plan is each host's own (`cpu_plan`). `memory_limits`: a server's limit other than SERVER_MEMORY
        (BENCH_MEM_LIMIT_<SERVER>, as under one host)."""
        self.memory_limits = memory_limits or {}
        found = roles or hosts_config.from_env()
        if not found:
            raise RuntimeFailure("the hosts runtime needs HOSTS (see docs/runtimes.md)")
        self.roles: dict[str, Host] = found
        self.engines = hosts_config.probe(self.roles)
        ok, why = engine_answers()
        if not ok:
            raise RuntimeFailure(
                f"HOSTS: the images are built here by the local Docker engine and sent to the hosts, "
                f"but {why}. Start one: make setup-docker"
            )
        super().__init__()
        self.plan: CpuPlan = hosts_config.cpu_plan(self.roles, self.engines)
        self._copied: set[str] = set()
        self._path: dict[str, Any] | None = None
        self._loadgen_cpus: list[int] | None = None
        for role, h in self.roles.items():
            engine = self.engines[h.endpoint]
            say(
                f"{role}: {h.endpoint} (engine {engine.version} on {engine.name}, {engine.cpus} CPUs, kernel "
                f"{engine.kernel}), at {h.address}, CPU {format_cpus(getattr(self.plan, role))}"
            )

    # where each role runs ------------------------------------------------------------------------------------------
    def place(self, role: str) -> Place:
        h = self.roles[role]
        return Place(tuple(docker_args(h)), h.role, h.endpoint, h.address)

    def place_of(self, running: RunningServer) -> Place:
        for role, h in self.roles.items():
            if h.endpoint == running.engine:
                return self.place(role)
        raise RuntimeFailure(
            f"{running.name} runs on {running.engine}, which HOSTS no longer names: unset HOSTS "
            f"changes, or remove it there: docker --host {running.engine} rm -f {running.container}"
        )

    @staticmethod
    def _labels(role: str) -> dict[str, str]:
        return {**ownership.owner_labels(), "bench.role": role}

    def _owner(self) -> tuple[str, str]:
        return ownership.OWNER_LABEL, ownership.owner_id()

    # images --------------------------------------------------------------------------------------------------------
    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """Built here, then sent to the host that runs each (the loadgen image to the load generator's)."""
        say(f"building the images of {', '.join(s.name for s in servers)} here, for the hosts")
        build_images(servers, force)
        for server in servers:
            self._send(server_image(server), role_of(server))
        self._send(runtime_image(LOADGEN), "loadgen")

    def _send(self, image: str, role: str) -> None:
        started, h = time.monotonic(), self.roles[role]
        if send_image(image, h):
            say(f"  {image} sent to {h.role} ({h.endpoint}) in {time.monotonic() - started:.1f} s")

    # how a container is started and stopped there: `docker run` ---------------------------------------------------
    def _ready(self, server: Server, place: Place, port: int) -> None:
        self._send(server_image(server), place.role)

    def _start_server(self, server: Server, place: Place, cpus: list[int], port: int, env: dict[str, str]) -> int:
        values = {
            "host": place.address,
            "port": str(port),
            "cores": str(len(cpus)),
            "upstream_url": env.get("UPSTREAM_URL", ""),
            "h2c_port": env.get("H2C_PORT", ""),
        }
        memory = self.memory_limits.get(server.twin_of or server.name, SERVER_MEMORY)  # an A/A twin: its server's
        service = server_service(
            server,
            values,
            cpuset=format_cpus(cpus),
            cpus=str(len(cpus)),
            memory=memory,
            user=IMAGE_USER,
            mounts=self._static_volumes(server, place),
            labels=self._labels(place.role),
        )
        self.docker(
            place, "run", "-d", *service.run_options(str(nofile_limit())), timeout=server.startup_timeout_s + 120
        )
        return 0  # its processes are another machine's

    def _static_volumes(self, server: Server, place: Place) -> list[Mount]:
        """Folders one machine bind-mounts (nginx's static files) cannot be mounted from here: each is copied into a
        volume on the host (a volume is the host's own filesystem, as fast as a bind mount), mounted read-only."""
        mounts = []
        for folder in static_mounts(server):
            volume = f"bench-{server.name}-{folder.replace('/', '-')}"
            self.docker(place, "volume", "rm", "-f", volume, check=False)
            labels = (o for k, v in ownership.owner_labels().items() for o in ("--label", f"{k}={v}"))
            self.docker(place, "volume", "create", *labels, volume)
            archive = io.BytesIO()
            with tarfile.open(fileobj=archive, mode="w") as tar:
                tar.add(server.folder / folder, arcname=".")
            self.docker(
                place,
                "run",
                "--rm",
                "-i",
                "--network",
                "none",
                "--user",
                "0",
                "-v",
                f"{volume}:/fill",
                "--entrypoint",
                "tar",
                server_image(server),
                "-x",
                "-C",
                "/fill",
                "--no-same-owner",
                input=archive.getvalue(),
                timeout=300,
            )
            mounts.append(Mount(volume, f"{app_dir(server)}/{folder}", read_only=True))
        return mounts

    def _remove_server(self, running: RunningServer, place: Place) -> None:
        container = running.in_container()
        info = inspect(container, place.args)
        if info and not self._is_ours(info):  # ours went, and another harness's came by its name: not ours to stop
            warn(f"{container}{place.on} is another checkout's or harness machine's now: left alone")
            return
        self.docker(place, "unpause", container, check=False)
        self.docker(place, "stop", "-t", str(STOP_GRACE_S), container, check=False, timeout=STOP_GRACE_S + 60)
        self.docker(place, "rm", "-f", "-v", container, check=False)
        volumes = (
            self.docker(
                place,
                "volume",
                "ls",
                "-q",
                *ownership.owner_filter(),
                "--filter",
                f"name=bench-{running.name}-",
                check=False,
            )
            .stdout.decode()
            .split()
        )
        if volumes:
            self.docker(place, "volume", "rm", "-f", *volumes, check=False)

    def _servers_left(self, running: RunningServer) -> bool:
        return any(e.runtime == self.name and e.name != running.name for e in State().load().values())

    # the load generator --------------------------------------------------------------------------------------------
    def _ensure_loadgen(self, cpus: list[int]) -> dict[str, Any]:
        if self._loadgen_cpus != sorted(cpus):  # started by this command on these CPUs (a dead one fails the tool)
            super()._ensure_loadgen(cpus)
            self._loadgen_cpus = sorted(cpus)
        return {}

    def _start_loadgen(self, place: Place, cpus: list[int]) -> None:
        self._send(runtime_image(LOADGEN), "loadgen")
        # as docker-compose.yml's loadgen service, except the mounts: instead of the repository, an anonymous volume
        # that the repository files a tool reads are copied into (docker cp writes neither into a read-only root nor
        # into a tmpfs; the volume goes with the container, `docker rm -v`); the tools' side files stay on the /tmp
        # tmpfs and are read back through `docker exec`
        service = loadgen_service(
            format_cpus(cpus), IMAGE_USER, [Mount("", CONTAINER_REPO)], labels=self._labels("loadgen")
        )
        self.docker(place, "run", "-d", *service.run_options(str(nofile_limit())))
        self._copied.clear()

    def _stop_loadgen(self, only_if_idle: bool = False) -> None:
        self._loadgen_cpus = None
        super()._stop_loadgen(only_if_idle)

    def _container_arg(self, arg: str, scratch: Path, token: str) -> str:
        """A path of this machine as the loadgen container sees it: the tool's scratch folder (its side files) is
        /tmp/out-<token>, a repository file is copied to /bench/<its path>."""
        if arg == str(scratch) or arg.startswith(f"{scratch}/"):
            return f"/tmp/out-{token}" + arg[len(str(scratch)) :]
        if arg.startswith(f"{REPO}/") and Path(arg).is_file():
            relative = arg[len(str(REPO)) + 1 :]
            if relative not in self._copied:
                # a tar of the file at its path: the engine makes the folders on the way (no root in the container
                # needed for a mkdir); owned by the container's root, read-only for the tools
                archive = io.BytesIO()
                with tarfile.open(fileobj=archive, mode="w") as tar:
                    tar.add(arg, arcname=relative, filter=readable)
                self.docker(
                    self.place("loadgen"),
                    "cp",
                    "-",
                    f"{container_name(LOADGEN)}:{CONTAINER_REPO}",
                    input=archive.getvalue(),
                )
                self._copied.add(relative)
            return f"{CONTAINER_REPO}/{relative}"
        return arg

    def tool_process(self, argv: list[str], cpus: list[int], output: Path) -> RemoteTool:
        self.prepare()
        self._ensure_loadgen(cpus)
        token = uuid.uuid4().hex[:16]
        scratch = output.parent
        inside = [self._container_arg(a, scratch, token) for a in argv]
        # a shell records the tool's pid (for signals), makes its side-file folder, then becomes the tool
        script = f'mkdir -p /tmp/out-{token} && echo $$ > /tmp/pid-{token} && exec "$@"'
        command = [
            "docker",
            *self.place("loadgen").args,
            "exec",
            container_name(LOADGEN),
            "sh",
            "-c",
            script,
            "sh",
            *inside,
        ]
        with output.open("wb") as out:
            client = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return RemoteTool(client, self, token, scratch)

    def check_tools(self, tools: set[str]) -> None:
        other = sorted(set(tools) - set(REMOTE_TOOLS))
        if other:
            raise RuntimeFailure(
                f"HOSTS: {', '.join(other)} cannot run on the load generator's host yet (the loadgen "
                f"image has {', '.join(REMOTE_TOOLS)}); measure those scenarios without HOSTS"
            )
        ensure_runtime_images({LOADGEN})
        self._send(runtime_image(LOADGEN), "loadgen")

    # sampling and freezing, through each host's engine -------------------------------------------------------------
    def pids(self, running: RunningServer) -> list[int]:
        return []  # its processes are another machine's

    def sampler(self, running: RunningServer, cores: int) -> EngineStatsSampler:
        place = self.place_of(running)
        return EngineStatsSampler(list(place.args), f"{place.role} {place.endpoint}", running.in_container(), cores)

    def tool_sampler(self, tree: Callable[[], list[int]], cpus: list[int]) -> EngineStatsSampler:
        """The loadgen container's CPU, from its host's engine: the tools run in it, and nothing else does but its
        init and a sleep (loadgen saturation is judged from this)."""
        self.prepare()
        self._ensure_loadgen(cpus)  # the sampler starts before the first tool does
        place = self.place("loadgen")
        return EngineStatsSampler(list(place.args), f"loadgen {place.endpoint}", container_name(LOADGEN), len(cpus))

    # what the records show -----------------------------------------------------------------------------------------
    def conditions(self) -> dict[str, Any]:
        """Each role's host (endpoint, address, engine, CPUs, kernel, CPU plan), and the path from the load generator
        to the server as measured from the load generator's host (round-trip time, path MTU)."""
        roles: dict[str, dict[str, Any]] = {}
        for role, h in self.roles.items():
            e = self.engines[h.endpoint]
            roles[role] = {
                "endpoint": h.endpoint,
                "address": h.address,
                "engine": e.version,
                "host_name": e.name,
                "host_cpus": e.cpus,
                "kernel": e.kernel,
                "cpus": list(getattr(self.plan, role)),
            }
        if self._path is None:
            self._path = measure_path(self)
        return {"hosts": roles, "path_loadgen_to_server": self._path}
