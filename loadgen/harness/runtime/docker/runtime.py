"""The Docker runtime (RUNTIME=docker) itself: DockerRuntime starts, pins, samples and stops server containers through
Compose and runs the load tools in the loadgen container, with the CPU sets of the session's plan.

Constructing one only checks that an engine answers; `prepare()`, on the first start, stop or tool run, brings
docker-compose.yml up to date and removes containers a killed run left behind. Building images or reading versions
changes nothing else."""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import psutil

from harness.console import say, warn
from harness.cpus import CpuPlan, format_cpus, parse_cpus
from harness.host import pinned, port_owner, process_create_time
from harness.manifest import REPO, Server, discover
from harness.runtime.base import STATE_DIR, OnThisMachine, RunningServer, RuntimeError_, State, await_start, exit_reason
from harness.runtime.docker.compose import (COMPOSE_FILE, CONTAINER_REPO, PROJECT, STOP_GRACE_S, compose_env,
                                            container_name, cpu_vars, ensure_compose_file, h2c_port_var, port_var,
                                            role)
from harness.runtime.docker.engine import (allowed_cpus, compose_command, compose_version, container_facts,
                                           engine_answers, follow_log, image_labels, inspect, log_tail, run_cli)
from harness.runtime.docker.images import (LOADGEN, build_images, ensure_runtime_images, ensure_server_image, runtime_image,
                                           version_in_image)
from harness.runtime.docker.process import ContainerProcess
from harness.preflight import provision
from harness.store import RESULTS
from harness.tools import TOOLS


ENGINE_SETTLE_S = 5  # the engine notes a container's exit a moment after its main process is gone


class DockerRuntime(OnThisMachine):
    name = "docker"
    tools_are_children = False  # the tools' CPU is sampled (their processes live under the container's shim)

    def __init__(self, plan: CpuPlan | None):
        """`plan`: the session's CPU plan, the one every container gets. Only asks; changes nothing."""
        ok, why = engine_answers()
        if not ok:
            raise RuntimeError_(f"RUNTIME=docker: {why}. Start one (make setup-docker RUNTIME=docker installs docker.io "
                                f"and starts dockerd) or use RUNTIME=local")
        self.compose = compose_command()
        self.plan = plan
        self.servers: dict[str, Server] = {}
        self._prepared = False
        self._loadgen_started = False
        self._followers: dict[str, subprocess.Popen] = {}

    def prepare(self) -> None:
        """Before the first container starts or stops: docker-compose.yml as the manifests give it, and server
        containers a killed run left behind removed (they hold ports). Once; later calls do nothing."""
        if self._prepared:
            return
        self.servers = discover()
        if ensure_compose_file(self.servers):
            say(f"docker-compose.yml regenerated from the manifests ({', '.join(self.servers)})")
        self._remove_unknown_containers()
        self._prepared = True

    # compose -------------------------------------------------------------------------------------------------------
    def compose_run(self, *args: str, overrides: dict[str, str] | None = None, timeout: float = 300,
                    check: bool = True) -> subprocess.CompletedProcess:
        if self.plan is None:
            raise RuntimeError_("the Docker runtime was made without a CPU plan, so it cannot run Compose")
        env = {**os.environ, **compose_env(self.plan, overrides)}
        argv = [*self.compose, "-f", str(COMPOSE_FILE), "-p", PROJECT, *args]
        return run_cli(argv, timeout=timeout, env=env, check=check)

    def _remove_unknown_containers(self) -> None:
        """What a killed run left, removed: server containers the harness's state does not list (they hold ports),
        and the loadgen container with any load tool still running in it (a command removes it when it ends, so one
        found before this command ran a tool was left by a command that was killed)."""
        known = {e.container for e in State().load().values() if e.runtime == self.name}
        for name in self._server_containers():
            info = inspect(name)
            if name not in known and info and _checkout(info) == str(REPO):  # another checkout's are not ours to remove
                warn(f"removing the leftover container {name} (not in the harness's state: a run that was killed?)")
                run_cli(["docker", "rm", "-f", "-v", name], check=False)
        loadgen = inspect(container_name(LOADGEN))
        if loadgen and _checkout(loadgen) == str(REPO):
            warn(f"removing the leftover container {container_name(LOADGEN)} ({loadgen['State']['Status']}), with any "
                 f"load tool still running in it: a command that was killed left it")
            run_cli(["docker", "rm", "-f", "-v", container_name(LOADGEN)], check=False)

    def _remove_leftover(self, service: str) -> None:
        name = container_name(service)
        info = inspect(name)
        if info is None:
            return
        state = "running" if info["State"]["Running"] else info["State"]["Status"]
        if info["State"]["Running"] and _checkout(info) != str(REPO):
            raise RuntimeError_(f"cannot start {service}: the container {name} is running from another checkout "
                                f"({_checkout(info)}); stop it there (make down) or: docker rm -f {name}")
        warn(f"removing the leftover container {name} ({state}; not in the harness's state)")
        run_cli(["docker", "rm", "-f", name], check=False)

    # Runtime protocol ---------------------------------------------------------------------------------------------
    def start(self, server: Server, cpus: list[int], port: int, env: dict[str, str]) -> RunningServer:
        self.prepare()
        host = env.get("HOST", "127.0.0.1")
        if server.name not in self.servers:
            self.servers = discover()
            ensure_compose_file(self.servers)
        ensure_server_image(server)
        self._remove_leftover(server.name)
        owner = port_owner(host, port)
        if owner:
            raise RuntimeError_(
                f"cannot start {server.name}: port {port} is in use by {owner}. Stop it (make down, if it is ours; "
                f"make down RUNTIME=local if a local run left it) or choose another port: PORTS=\"{server.name}=<port>\"")
        run_dir = STATE_DIR / server.name
        run_dir.mkdir(parents=True, exist_ok=True)
        log = run_dir / "server.log"
        log.write_bytes(b"")
        overrides = {**cpu_vars(role(server), cpus), port_var(server): str(port)}
        if env.get("H2C_PORT"):
            overrides[h2c_port_var(server)] = env["H2C_PORT"]
        if env.get("UPSTREAM_URL"):
            overrides["BENCH_UPSTREAM_URL"] = env["UPSTREAM_URL"]
        started = time.monotonic()
        try:
            # --no-deps: the session starts the upstream itself, first, and waits for it; compose must not start a
            # container the harness does not know about (depends_on serves `docker compose up <server>` by hand)
            self.compose_run("up", "-d", "--no-recreate", "--no-build", "--no-deps", server.name, overrides=overrides,
                             timeout=server.startup_timeout_s + 120)
        except RuntimeError_ as exc:
            self._discard(server.name)
            raise RuntimeError_(f"cannot start {server.name}: {exc}\n  its log:\n{log_tail(container_name(server.name))}") from None
        info = inspect(container_name(server.name)) or {}
        pid = info.get("State", {}).get("Pid", 0)
        running = RunningServer(name=server.name, host=host, port=port, cpus=list(cpus), pid=pid, log=str(log),
                                started_at=time.time(), startup_s=0.0, runtime=self.name,
                                container=container_name(server.name), pid_created=process_create_time(pid),
                                h2c_port=int(env["H2C_PORT"]) if env.get("H2C_PORT") else None)
        self._followers[server.name] = follow_log(running.container, running.log)
        return await_start(self, server, running, started, lambda: self._applied_cpus(running, cpus))

    def _applied_cpus(self, running: RunningServer, asked: list[int]) -> list[int]:
        """The container's CPU set read back: from the kernel (what its main process may run on), checked against
        what the engine says it applied (docker inspect) and what was asked."""
        info = inspect(running.container) or {}
        configured = info.get("HostConfig", {}).get("CpusetCpus", "")
        applied = allowed_cpus(running.pid)
        if sorted(applied) != sorted(asked) or sorted(parse_cpus(configured)) != sorted(asked):
            raise RuntimeError_(f"{running.name}: asked for CPU {format_cpus(asked)}, the container has cpuset "
                                f"{configured!r} and its process may run on CPU {format_cpus(applied)}")
        return applied

    def alive(self, running: RunningServer) -> bool:
        if running.runtime != self.name or not running.container or not _main_process_runs(running):
            return False
        info = inspect(running.container)
        return bool(info and info["State"]["Running"] and info["State"]["Pid"] == running.pid)

    def death(self, running: RunningServer) -> str | None:
        """What the engine says of the container once its main process is gone (psutil alone while it runs: this is
        called around every attempt)."""
        if _main_process_runs(running):
            return None
        settle_by = time.monotonic() + ENGINE_SETTLE_S
        while (info := inspect(running.container)) and info["State"]["Running"] and info["State"]["Pid"] == running.pid:
            if time.monotonic() > settle_by:
                return None  # the engine insists it runs
            time.sleep(0.1)
        if info is None:
            return "gone (its container was removed)"
        state = info["State"]
        if state.get("OOMKilled"):
            return "killed for memory (OOMKilled)"
        return f"container {state['Status']}: {exit_reason(state['ExitCode'])}"

    def log_tail(self, running: RunningServer, lines: int = 15) -> str:
        return log_tail(running.container, lines)

    def pids(self, running: RunningServer) -> list[int]:
        """The container's processes as the host sees them (psutil only: this is called while load runs)."""
        try:
            leader = psutil.Process(running.pid)
            if not running.is_process(leader.create_time()):
                return []
            return [leader.pid, *(child.pid for child in leader.children(recursive=True))]
        except psutil.Error:
            return []

    def pin(self, running: RunningServer, cpus: list[int]) -> None:
        run_cli(["docker", "update", "--cpuset-cpus", format_cpus(cpus), "--cpus", str(len(cpus)), running.container])
        running.cpus = self._applied_cpus(running, cpus)

    def stop(self, running: RunningServer) -> None:
        self.prepare()
        service = running.name
        before = inspect(container_name(service))
        proc = self.compose_run("stop", "-t", str(STOP_GRACE_S), service, check=False, timeout=STOP_GRACE_S + 60)
        if proc.returncode == 0:
            proc = self.compose_run("rm", "-f", "-v", service, check=False)
        if proc.returncode != 0 or inspect(container_name(service)) is not None:
            run_cli(["docker", "rm", "-f", "-v", container_name(service)], check=False)
        if before and before["Image"] != (image_labels(before["Config"]["Image"]) or {}).get("id"):
            run_cli(["docker", "rmi", before["Image"]], check=False)  # an image rebuilt while this container ran
        follower = self._followers.pop(service, None)
        if follower:
            try:
                follower.wait(5)
            except subprocess.TimeoutExpired:
                follower.kill()
        if not self._server_containers():
            self._stop_loadgen(only_if_idle=True)

    def tool_process(self, argv: list[str], cpus: list[int], output: Path) -> ContainerProcess:
        self.prepare()
        loadgen_pid = self._ensure_loadgen(cpus)
        if os.getuid() == 0:  # the tool runs as the container's user (`bench`): its side files go next to its output,
            # in a folder given to that user (the uid its init runs as, seen from here), not made world-writable
            user = psutil.Process(loadgen_pid)
            os.chown(output.parent, user.uids().real, user.gids().real)
            os.chmod(output.parent, 0o755)
        token = uuid.uuid4().hex
        command = ["docker", "exec", "-e", f"BENCH_TOOL={token}", container_name(LOADGEN),
                   *(self.container_path(a) for a in argv)]
        with output.open("wb") as out:
            # the docker client only relays output; it too stays on the load generator's CPUs
            client = subprocess.Popen(pinned(command, cpus), stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        return ContainerProcess(client, token, loadgen_pid)

    # for `make build` and for what the records should show ---------------------------------------------------------
    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """Every server's image from its artifacts (after `make build` made them), and the loadgen image."""
        say(f"building the images of {', '.join(s.name for s in servers)} from those artifacts")
        build_images(servers, force)

    def version(self, server: Server) -> str:
        return version_in_image(server)

    def tool_versions(self) -> dict[str, str]:
        out = {}
        for name, tool in TOOLS.items():  # the loadgen image's; a tool it lacks says so here
            proc = run_cli(["docker", "run", "--rm", "--network", "none", "-v", f"{REPO}:{CONTAINER_REPO}:ro",
                            runtime_image(LOADGEN), self.container_path(tool.binary), *tool.version_args], check=False)
            lines = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()
            out[name] = lines[0].strip() if lines else "unknown"
        return out

    def check_tools(self, tools: set[str]) -> None:
        """The tools are in the loadgen image (docker/loadgen.Dockerfile): it is built here when missing. The tools the
        project builds itself (oha, Gatling) are built on the host and run from the repository the container mounts."""
        provision(tools)
        ensure_runtime_images({LOADGEN})

    def describe(self, running: RunningServer) -> dict:
        """The server's container as applied, read back from the engine and the kernel."""
        return container_facts(running.container) or {}

    def conditions(self) -> dict:
        """The engine and Compose, and the loadgen container as applied (when it runs: call this during a run)."""
        info = json.loads(run_cli(["docker", "info", "--format", "{{json .}}"]).stdout)
        return {"engine": info.get("ServerVersion"), "storage_driver": info.get("Driver"),
                "cgroup": f"v{info.get('CgroupVersion', '1')} {info.get('CgroupDriver', '')}".strip(),
                "compose": " ".join(self.compose) + " " + compose_version(self.compose),
                "loadgen": container_facts(container_name(LOADGEN))}

    # internals ------------------------------------------------------------------------------------------------------
    @staticmethod
    def container_path(arg: str) -> str:
        """A host path under the repository or the results folder, as the loadgen container sees it."""
        for host, inside in ((RESULTS, f"{CONTAINER_REPO}/results"), (REPO, CONTAINER_REPO)):
            prefix = str(host)
            if arg == prefix or arg.startswith(prefix + "/"):
                return inside + arg[len(prefix):]
        return arg

    def _ensure_loadgen(self, cpus: list[int]) -> int:
        name = container_name(LOADGEN)
        info = inspect(name)
        if info and info["State"]["Running"]:
            if sorted(parse_cpus(info["HostConfig"]["CpusetCpus"])) != sorted(cpus):
                run_cli(["docker", "update", "--cpuset-cpus", format_cpus(cpus), name])
        else:
            if info is not None:
                run_cli(["docker", "rm", "-f", name], check=False)
            ensure_runtime_images({LOADGEN})
            RESULTS.mkdir(parents=True, exist_ok=True)
            self.compose_run("up", "-d", "--no-recreate", "--no-build", LOADGEN, overrides=cpu_vars("LOADGEN", cpus))
            if not self._loadgen_started:
                self._loadgen_started = True
                atexit.register(self._stop_loadgen)
            info = inspect(name)
        applied = allowed_cpus(info["State"]["Pid"])
        if sorted(applied) != sorted(cpus):
            raise RuntimeError_(f"the loadgen container runs on CPU {format_cpus(applied)}, not {format_cpus(cpus)}")
        return info["State"]["Pid"]

    def _stop_loadgen(self, only_if_idle: bool = False) -> None:
        name = container_name(LOADGEN)
        info = inspect(name)
        if info is None:
            return
        if only_if_idle and info["State"]["Running"]:
            try:  # init + sleep: nothing else runs in it
                shim = psutil.Process(info["State"]["Pid"]).parent()
                if len(shim.children(recursive=True)) > 2:
                    return
            except psutil.Error:
                pass
        run_cli(["docker", "rm", "-f", "-v", name], check=False)

    def _server_containers(self) -> list[str]:
        proc = run_cli(["docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={PROJECT}",
                        "--format", "{{.Names}}"], check=False)
        return [n for n in proc.stdout.decode().split() if n != container_name(LOADGEN)]

    def _discard(self, service: str) -> None:
        run_cli(["docker", "rm", "-f", "-v", container_name(service)], check=False)



def _main_process_runs(running: RunningServer) -> bool:
    """Whether the container's main process, as the harness recorded it, still runs (a recycled pid does not)."""
    try:
        proc = psutil.Process(running.pid)
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE and running.is_process(proc.create_time())
    except psutil.Error:
        return False


def _checkout(info: dict) -> str:
    """The checkout (folder of docker-compose.yml) a container was created from, per Compose's labels."""
    return (info.get("Config", {}).get("Labels") or {}).get("com.docker.compose.project.working_dir", "")
