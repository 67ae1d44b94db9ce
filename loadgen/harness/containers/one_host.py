"""One machine (RUNTIME=docker), the case of one host: DockerRuntime starts the server containers through Compose on
the local engine, with the CPU sets of the session's plan, and runs the load tools in the loadgen container; the rest
is engine_runtime.py's. The containers' processes are this machine's: psutil sees, samples and freezes them.

Constructing one only checks that an engine answers; `prepare()`, on the first start, stop or tool run, brings
docker-compose.yml up to date and removes containers a killed run left behind. Building images or reading versions
changes nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from harness.basics.cpus import CpuPlan, format_cpus
from harness.basics.machine import pinned, port_owner, still_runs
from harness.basics.messages import say
from harness.basics.paths import REPO, RESULTS
from harness.basics.sampling import ProcessSampler, cgroup_cpu_s
from harness.config.manifest import Server, discover
from harness.containers.compose import (
    COMPOSE_FILE,
    PROJECT,
    compose_env,
    cpu_vars,
    ensure_compose_file,
    h2c_port_var,
    port_var,
    service_of,
)
from harness.containers.engine import (
    allowed_cpus,
    compose_command,
    compose_version,
    engine_answers,
    image_labels,
    inspect,
    run_cli,
)
from harness.containers.engine_runtime import EngineRuntime
from harness.containers.images import LOADGEN, build_images, ensure_runtime_images
from harness.containers.process import ContainerProcess
from harness.containers.service import (
    CONTAINER_REPO,
    STOP_GRACE_S,
    Mount,
    Place,
    container_name,
    container_path,
    role_of,
)
from harness.runtime.protocol import OnThisMachine, RunningServer, RuntimeFailure
from harness.tools.availability import provision


class DockerRuntime(EngineRuntime, OnThisMachine):
    name = "docker"
    checkout_label = "com.docker.compose.project.working_dir"  # Compose's: the folder of docker-compose.yml
    # the tools the project builds itself (oha, Gatling) run from the repository, which the loadgen container mounts
    tool_mounts = ("--volume", Mount(str(REPO), CONTAINER_REPO, read_only=True).spec)

    def __init__(self, plan: CpuPlan | None):
        """`plan`: the session's CPU plan, the one every container gets. Only asks; changes nothing."""
        ok, why = engine_answers()
        if not ok:
            raise RuntimeFailure(
                f"RUNTIME=docker: {why}. Start one (make setup-docker RUNTIME=docker installs "
                f"docker.io and starts dockerd) or use RUNTIME=local"
            )
        super().__init__()
        self.compose = compose_command()
        self.plan = plan
        self.servers: dict[str, Server] = {}
        self._loadgen_pid: int | None = None

    def place(self, role: str) -> Place:
        return Place()  # every role on this machine's engine

    def place_of(self, running: RunningServer) -> Place:
        return Place()

    def prepare(self) -> None:
        """docker-compose.yml as the manifests give it, then what a killed run left removed. Once."""
        if not self._prepared:
            self.servers = discover()
            if ensure_compose_file(self.servers):
                say(f"docker-compose.yml regenerated from the manifests ({', '.join(self.servers)})")
        super().prepare()

    def compose_run(
        self, *args: str, overrides: dict[str, str] | None = None, timeout: float = 300, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        if self.plan is None:
            raise RuntimeFailure("the Docker runtime was made without a CPU plan, so it cannot run Compose")
        env = {**os.environ, **compose_env(self.plan, overrides)}
        argv = [*self.compose, "-f", str(COMPOSE_FILE), "-p", PROJECT, *args]
        return run_cli(argv, timeout=timeout, env=env, check=check)

    # how a container is started and stopped here: through Compose -------------------------------------------------
    def _ready(self, server: Server, place: Place, port: int) -> None:
        if service_of(server) not in self.servers:
            self.servers = discover()
            ensure_compose_file(self.servers)
        owner = port_owner(place.address, port)
        if owner:
            raise RuntimeFailure(
                f"cannot start {server.name}: port {port} is in use by {owner}. Stop it (make down, if it is ours; "
                f'make down RUNTIME=local if a local run left it) or choose another port: PORTS="{server.name}=<port>"'
            )

    def _start_server(self, server: Server, place: Place, cpus: list[int], port: int, env: dict[str, str]) -> int:
        overrides = {**cpu_vars(role_of(server), cpus), port_var(server): str(port)}
        if env.get("H2C_PORT"):
            overrides[h2c_port_var(server)] = env["H2C_PORT"]
        if env.get("UPSTREAM_URL"):
            overrides["BENCH_UPSTREAM_URL"] = env["UPSTREAM_URL"]
        # `run` by the container's name, not `up`: up keeps one container per service, and the A/A twin is its
        # server's service once more, beside it (and Compose v1 links a one-off container to the service's `up` one,
        # which host networking refuses: so every server is a one-off). --no-deps: the session starts the upstream
        # itself, first, and waits for it (depends_on serves `docker compose up <server>` by hand).
        self.compose_run(
            "run",
            "-d",
            "--no-deps",
            "--name",
            container_name(server.name),
            service_of(server),
            overrides=overrides,
            timeout=server.startup_timeout_s + 120,
        )
        pid: int = (inspect(container_name(server.name)) or {}).get("State", {}).get("Pid", 0)
        return pid

    def _remove_server(self, running: RunningServer, place: Place) -> None:
        container = running.in_container()
        before = inspect(container)
        run_cli(["docker", "unpause", container], check=False)  # a frozen container cannot be stopped
        # by its container's name, not its service's: an A/A twin is its server's service run a second time
        run_cli(["docker", "stop", "-t", str(STOP_GRACE_S), container], check=False, timeout=STOP_GRACE_S + 60)
        run_cli(["docker", "rm", "-f", "-v", container], check=False)
        if before and before["Image"] != (image_labels(before["Config"]["Image"]) or {}).get("id"):
            run_cli(["docker", "rmi", before["Image"]], check=False)  # an image rebuilt while this container ran

    def _servers_left(self, running: RunningServer) -> bool:
        proc = run_cli(
            ["docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={PROJECT}", "--format", "{{.Names}}"],
            check=False,
        )
        return any(n != container_name(LOADGEN) for n in proc.stdout.decode().split())

    def _start_loadgen(self, place: Place, cpus: list[int]) -> None:
        RESULTS.mkdir(parents=True, exist_ok=True)
        self.compose_run("up", "-d", "--no-recreate", "--no-build", LOADGEN, overrides=cpu_vars("loadgen", cpus))

    def _loadgen_busy(self) -> bool:
        info = inspect(container_name(LOADGEN))
        try:  # init + sleep: nothing else runs in it
            shim = psutil.Process(info["State"]["Pid"]).parent() if info and info["State"]["Running"] else None
            return bool(shim and len(shim.children(recursive=True)) > 2)
        except psutil.Error:
            return False

    def _kernel_cpus(self, container: str, pid: int, place: Place) -> list[int]:
        return allowed_cpus(pid)  # from this machine's /proc: nothing is started in the container

    # the servers' and the tools' processes, as this machine sees them ----------------------------------------------
    def pids(self, running: RunningServer) -> list[int]:
        """The container's processes as the host sees them (psutil only: this is called while load runs)."""
        try:
            leader = psutil.Process(running.pid)
            if not still_runs(running.pid, running.is_process):
                return []
            return [leader.pid, *(child.pid for child in leader.children(recursive=True))]
        except psutil.Error:
            return []

    def tool_sampler(self, tree: Callable[[], list[int]], cpus: list[int]) -> ProcessSampler:
        self.prepare()
        self._loadgen_pid = self._ensure_loadgen(cpus)["State"]["Pid"]  # up before the load: tools_cpu_s reads it
        return super().tool_sampler(tree, cpus)

    def tools_cpu_s(self) -> float | None:
        """The loadgen container's CPU, ended tools included (its control group's count: the sampler's idle-priority
        thread may not run at all beside a short tool on a busy CPU). Not this process's reaped children: during a
        load they include `docker inspect` clients, not only the `docker exec` ones that relay the tools' output."""
        return cgroup_cpu_s(self._loadgen_pid) if self._loadgen_pid else None

    def tool_process(self, argv: list[str], cpus: list[int], output: Path) -> ContainerProcess:
        self.prepare()
        loadgen_pid = self._loadgen_pid = self._ensure_loadgen(cpus)["State"]["Pid"]
        applied = allowed_cpus(loadgen_pid)
        if sorted(applied) != sorted(cpus):
            raise RuntimeFailure(f"the loadgen container runs on CPU {format_cpus(applied)}, not {format_cpus(cpus)}")
        if os.getuid() == 0:  # the tool runs as the container's user (`bench`): its side files go next to its output,
            # in a folder given to that user (the uid its init runs as, seen from here), not made world-writable
            user = psutil.Process(loadgen_pid)
            os.chown(output.parent, user.uids().real, user.gids().real)
            os.chmod(output.parent, 0o755)
        token = uuid.uuid4().hex
        command = [
            "docker",
            "exec",
            "-e",
            f"BENCH_TOOL={token}",
            container_name(LOADGEN),
            *(container_path(a) for a in argv),
        ]
        with output.open("wb") as out:
            # the docker client only relays output; it too stays on the load generator's CPUs
            client = subprocess.Popen(
                pinned(command, cpus), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        return ContainerProcess(client, token, loadgen_pid)

    # for `make build` and for what the records should show ---------------------------------------------------------
    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """Every server's image from its artifacts (after `make build` made them), and the loadgen image."""
        say(f"building the images of {', '.join(s.name for s in servers)} from those artifacts")
        build_images(servers, force)

    def check_tools(self, tools: set[str]) -> None:
        """The tools are in the loadgen image (docker/loadgen.Dockerfile): it is built here when missing. The tools the
        project builds itself (oha, Gatling) are built on the host and run from the repository the container mounts."""
        provision(tools)
        ensure_runtime_images({LOADGEN})

    def conditions(self) -> dict[str, Any]:
        """The engine and Compose, and the loadgen container as applied (when it runs: call this during a run)."""
        info = json.loads(run_cli(["docker", "info", "--format", "{{json .}}"]).stdout)
        return {
            "engine": info.get("ServerVersion"),
            "storage_driver": info.get("Driver"),
            "cgroup": f"v{info.get('CgroupVersion', '1')} {info.get('CgroupDriver', '')}".strip(),
            "compose": " ".join(self.compose) + " " + compose_version(self.compose),
            "loadgen": self._container_facts(container_name(LOADGEN), Place()),
        }
