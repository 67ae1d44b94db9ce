"""The hosts runtime (HOSTS="server=ssh://... loadgen=ssh://... upstream=..."): the server, the load generator and the
upstream each in a container on its own Docker host, driven from here through the Docker CLI (`docker --host X` or
`--context X`; see harness/hosts.py for the HOSTS syntax). No agent of our own runs on the hosts.

How it differs from the one-machine Docker runtime (runtime.py):
- `docker run` with the options docker-compose.yml gives each service (the same constants, compose.py), not
  Compose: Debian's Compose v1 reaches ssh:// engines only through paramiko, while the Docker CLI itself reaches
  every kind of endpoint (ssh://, tcp:// with TLS, unix://, contexts).
- images are built here by the local engine and sent to each host whose copy differs (`docker save | docker load`,
  harness/hosts.py: no registry); a server image carries its base image's layers with it.
- every service binds to its host's address (HOSTS' address=, default the endpoint's IP), never 0.0.0.0; the
  contract check and the tools use those addresses.
- nothing of the harness's machine is the hosts': no bind mount (nginx's static files go into a volume on its host,
  wrk's script is copied into the loadgen container's volume, the tools' side files are read back from its /tmp), no
  /proc, no psutil.
  CPU and memory come from each engine's cgroup counters (engine_api.py); the CPU sets are read back from the
  engine and from the container's own /proc/1/status.
- every container carries the label bench.checkout=<this checkout>: `make down` and a later command remove what a
  killed one left, on every host.
"""
from __future__ import annotations

import atexit
import io
import re
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

from harness import hosts as hosts_config
from harness.console import say, warn
from harness.cpus import CpuPlan, format_cpus, parse_cpus
from harness.host import nofile_limit
from harness.hosts import Host, docker_args
from harness.manifest import REPO, Server
from harness.runtime.base import STATE_DIR, RunningServer, RuntimeError_, State, await_start, exit_reason
from harness.runtime.docker.compose import (IMAGE_USER, LOADGEN_MEMORY, PIDS_LIMIT, SERVER_MEMORY, STOP_GRACE_S,
                                            WRITABLE_TMPFS, container_name)
from harness.runtime.docker.engine import engine_answers, follow_log, inspect, log_tail, run_cli
from harness.runtime.docker.engine_api import EngineStatsSampler
from harness.runtime.docker.process import RelayedTool
from harness.runtime.docker.images import (LOADGEN, app_dir, build_images, ensure_runtime_images, ensure_server_image,
                                           runtime_image, server_image, static_mounts, version_in_image)
from harness.tools import TOOLS

CHECKOUT_LABEL = "bench.checkout"
REMOTE_TOOLS = ("ab", "wrk", "httperf", "h2load")  # in the loadgen image; oha and Gatling are built on this machine
# where the loadgen container holds the repository files a tool reads (wrk's script): an anonymous volume, the one
# place `docker cp` may write in a container with a read-only root; removed with the container (`docker rm -v`)
LOADGEN_REPO = "/bench"
ENGINE_SETTLE_S = 5


class HostsRuntime:
    name = "hosts"
    tools_are_children = False
    remote = True  # this machine's CPUs, processes and ports are not the roles'

    def __init__(self, roles: dict[str, Host] | None = None):
        """Parses HOSTS and asks every engine (HostsError for one that does not answer, before anything starts);
        the CPU plan is each host's own (`cpu_plan`)."""
        self.roles = roles or hosts_config.from_env()
        if not self.roles:
            raise RuntimeError_("the hosts runtime needs HOSTS (see README: Several hosts)")
        self.engines = hosts_config.probe(self.roles)
        ok, why = engine_answers()
        if not ok:
            raise RuntimeError_(f"HOSTS: the images are built here by the local Docker engine and sent to the hosts, "
                                f"but {why}. Start one: make setup-docker")
        self.plan: CpuPlan = hosts_config.cpu_plan(self.roles, self.engines)
        self._followers: dict[str, subprocess.Popen] = {}
        self._copied: set[str] = set()
        self._path: dict | None = None
        self._prepared = False
        self._loadgen_started = False
        self._loadgen_cpus: list[int] | None = None
        for role, h in self.roles.items():
            engine = self.engines[h.endpoint]
            say(f"{role}: {h.endpoint} (engine {engine.version} on {engine.name}, {engine.cpus} CPUs, kernel "
                f"{engine.kernel}), at {h.address}, CPU {format_cpus(getattr(self.plan, role))}")

    # where things run ----------------------------------------------------------------------------------------------
    def host_of(self, server: Server) -> Host:
        return self.roles["upstream" if server.has_role("upstream") else "server"]

    def address(self, role: str) -> str:
        return self.roles[role].address

    def _host_of_running(self, running: RunningServer) -> Host:
        for h in self.roles.values():
            if h.endpoint == running.engine:
                return h
        raise RuntimeError_(f"{running.name} runs on {running.engine}, which HOSTS no longer names: unset HOSTS "
                            f"changes, or remove it there: docker --host {running.engine} rm -f {running.container}")

    def docker(self, h: Host, *args: str, timeout: float = 120, check: bool = True,
               input: bytes | None = None) -> subprocess.CompletedProcess:
        return run_cli(["docker", *docker_args(h), *args], timeout=timeout, check=check, input=input)

    def _hosts(self) -> list[Host]:
        """Each distinct engine once."""
        return list({h.endpoint: h for h in self.roles.values()}.values())

    # images --------------------------------------------------------------------------------------------------------
    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """Built here, then sent to the host that runs each (the loadgen image to the load generator's)."""
        say(f"building the images of {', '.join(s.name for s in servers)} here, for the hosts")
        build_images(servers, force)
        for server in servers:
            self._send(server_image(server), self.host_of(server))
        self._send(runtime_image(LOADGEN), self.roles["loadgen"])

    def _send(self, image: str, h: Host) -> None:
        started = time.monotonic()
        if hosts_config.send_image(image, h):
            say(f"  {image} sent to {h.role} ({h.endpoint}) in {time.monotonic() - started:.1f} s")

    # the Runtime protocol ------------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Containers of this checkout that the state does not list, removed on every host (a killed run's)."""
        if self._prepared:
            return
        known = {e.container for e in State().load().values() if e.runtime == self.name}
        for h in self._hosts():
            proc = self.docker(h, "ps", "-a", "--filter", f"label={CHECKOUT_LABEL}={REPO}", "--format", "{{.Names}}",
                               check=False, timeout=30)
            for name in proc.stdout.decode().split():
                if name not in known:
                    warn(f"removing the leftover container {name} on {h.role} ({h.endpoint}): a killed run's")
                    self.docker(h, "rm", "-f", "-v", name, check=False)
        self._prepared = True

    def start(self, server: Server, cpus: list[int], port: int, env: dict[str, str]) -> RunningServer:
        self.prepare()
        h = self.host_of(server)
        ensure_server_image(server)
        self._send(server_image(server), h)
        name = container_name(server.name)
        leftover = inspect(name, docker_args(h))
        if leftover:
            if (leftover["Config"].get("Labels") or {}).get(CHECKOUT_LABEL) != str(REPO):
                raise RuntimeError_(f"cannot start {server.name}: {h.role} ({h.endpoint}) runs a container {name} of "
                                    f"another checkout; stop it there: docker --host {h.endpoint} rm -f {name}")
            self.docker(h, "rm", "-f", "-v", name, check=False)
        run_dir = STATE_DIR / server.name
        run_dir.mkdir(parents=True, exist_ok=True)
        log = run_dir / "server.log"
        log.write_bytes(b"")
        values = {"port": str(port), "host": h.address, "cores": str(len(cpus)), "run_dir": "/tmp/run",
                  "upstream_url": env.get("UPSTREAM_URL", "")}
        command = [arg.format(**values) for arg in server.run]
        environment = {**server.env, "HOST": h.address, "PORT": str(port), "SERVER_CORES": str(len(cpus)),
                       "RUN_DIR": "/tmp/run"}
        if server.needs_upstream:
            environment["UPSTREAM_URL"] = env.get("UPSTREAM_URL", "")
        if env.get("H2C_PORT"):
            environment["H2C_PORT"] = env["H2C_PORT"]
        argv = ["run", "-d", "--name", name, "--label", f"{CHECKOUT_LABEL}={REPO}", "--label", f"bench.role={h.role}",
                *self._limits(), "--cpuset-cpus", format_cpus(cpus), "--cpus", str(len(cpus)),
                "--memory", SERVER_MEMORY, "--user", IMAGE_USER, "--workdir", app_dir(server),
                *(a for k, v in environment.items() for a in ("--env", f"{k}={v}")),
                *self._static_volumes(server, h), server_image(server), *command]
        started = time.monotonic()
        try:
            self.docker(h, *argv, timeout=server.startup_timeout_s + 120)
        except RuntimeError_ as exc:
            self.docker(h, "rm", "-f", "-v", name, check=False)
            raise RuntimeError_(f"cannot start {server.name} on {h.role} ({h.endpoint}): {exc}") from None
        running = RunningServer(name=server.name, host=h.address, port=port, cpus=list(cpus), pid=0, log=str(log),
                                started_at=time.time(), startup_s=0.0, runtime=self.name, container=name,
                                engine=h.endpoint, h2c_port=int(env["H2C_PORT"]) if env.get("H2C_PORT") else None)
        self._followers[server.name] = follow_log(name, running.log, docker_args(h))
        return await_start(self, server, running, started, lambda: self._applied_cpus(running, cpus))

    @staticmethod
    def _privileges() -> list[str]:
        """x-limits' least privilege: no capability, none to gain (the engine's default seccomp profile), a read-only
        root but for a tmpfs at /tmp, a process limit. Every container of this runtime has it."""
        return ["--cap-drop", "ALL", "--security-opt", "no-new-privileges:true", "--read-only", "--tmpfs",
                WRITABLE_TMPFS, "--pids-limit", str(PIDS_LIMIT)]

    @classmethod
    def _limits(cls) -> list[str]:
        """docker-compose.yml's x-limits as `docker run` options (compose.py: the same values)."""
        nofile = nofile_limit()
        return ["--network", "host", "--ulimit", f"nofile={nofile}:{nofile}", "--stop-timeout", str(STOP_GRACE_S),
                "--restart", "no", *cls._privileges()]

    def _static_volumes(self, server: Server, h: Host) -> list[str]:
        """Folders the one-machine runtime bind-mounts (nginx's static files) cannot be mounted from here: each is
        copied into a volume on the host (a volume is the host's own filesystem, as fast as a bind mount) and
        mounted read-only."""
        options = []
        for folder in static_mounts(server):
            volume = f"bench-{server.name}-{folder.replace('/', '-')}"
            self.docker(h, "volume", "rm", "-f", volume, check=False)
            self.docker(h, "volume", "create", "--label", f"{CHECKOUT_LABEL}={REPO}", volume)
            archive = io.BytesIO()
            with tarfile.open(fileobj=archive, mode="w") as tar:
                tar.add(server.folder / folder, arcname=".")
            self.docker(h, "run", "--rm", "-i", "--network", "none", "--user", "0", "-v", f"{volume}:/fill",
                        "--entrypoint", "tar", server_image(server), "-x", "-C", "/fill", "--no-same-owner",
                        input=archive.getvalue(), timeout=300)
            options += ["-v", f"{volume}:{app_dir(server)}/{folder}:ro"]
        return options

    def _applied_cpus(self, running: RunningServer, asked: list[int]) -> list[int]:
        """The CPU set as the engine applied it and as the kernel lets the container's init run."""
        h = self._host_of_running(running)
        info = inspect(running.container, docker_args(h)) or {}
        configured = info.get("HostConfig", {}).get("CpusetCpus", "")
        proc = self.docker(h, "exec", running.container, "grep", "Cpus_allowed_list", "/proc/1/status", check=False)
        applied = list(parse_cpus(proc.stdout.decode().partition(":")[2].strip())) if proc.returncode == 0 else []
        if sorted(parse_cpus(configured)) != sorted(asked) or (applied and sorted(applied) != sorted(asked)):
            raise RuntimeError_(f"{running.name}: asked for CPU {format_cpus(asked)} on {h.role}, the container has "
                                f"cpuset {configured!r} and its init may run on CPU {format_cpus(applied)}")
        return applied or list(asked)

    def alive(self, running: RunningServer) -> bool:
        if running.runtime != self.name or not running.engine:
            return False
        try:
            info = inspect(running.container, docker_args(self._host_of_running(running)))
        except RuntimeError_:
            return False
        return bool(info and info["State"]["Running"])

    def death(self, running: RunningServer) -> str | None:
        h = self._host_of_running(running)
        settle_by = time.monotonic() + ENGINE_SETTLE_S
        info = inspect(running.container, docker_args(h))
        if info and info["State"]["Running"]:
            return None
        while info and info["State"]["Status"] in ("created", "restarting") and time.monotonic() < settle_by:
            time.sleep(0.1)
            info = inspect(running.container, docker_args(h))
        if info is None:
            return f"gone (its container was removed from {h.role})"
        state = info["State"]
        if state.get("OOMKilled"):
            return "killed for memory (OOMKilled)"
        return f"container {state['Status']} on {h.role}: {exit_reason(state['ExitCode'])}"

    def log_tail(self, running: RunningServer, lines: int = 15) -> str:
        return log_tail(running.container, lines, docker_args(self._host_of_running(running)))

    def pids(self, running: RunningServer) -> list[int]:
        return []  # its processes are another machine's

    def sampler(self, running: RunningServer, cores: int) -> EngineStatsSampler:
        h = self._host_of_running(running)
        return EngineStatsSampler(docker_args(h), f"{h.role} {h.endpoint}", running.container, cores)

    def tool_sampler(self, tree, cpus: list[int]) -> EngineStatsSampler:
        """The loadgen container's CPU, from its host's engine: the tools run in it, and nothing else does but its
        init and a sleep (loadgen saturation is judged from this)."""
        self.prepare()
        self._ensure_loadgen(cpus)  # the sampler starts before the first tool does
        h = self.roles["loadgen"]
        return EngineStatsSampler(docker_args(h), f"loadgen {h.endpoint}", container_name(LOADGEN), len(cpus))

    def pause(self, running: RunningServer, asleep: bool) -> None:
        """Interleaved rounds: an idle server is frozen (the cgroup freezer: `docker pause`), then thawed."""
        self.docker(self._host_of_running(running), "pause" if asleep else "unpause", running.container, check=False)

    def pin(self, running: RunningServer, cpus: list[int]) -> None:
        self.docker(self._host_of_running(running), "update", "--cpuset-cpus", format_cpus(cpus), "--cpus",
                    str(len(cpus)), running.container)
        running.cpus = self._applied_cpus(running, cpus)

    def stop(self, running: RunningServer) -> None:
        try:
            h = self._host_of_running(running)
        except RuntimeError_ as exc:
            warn(str(exc))
            return
        self.docker(h, "unpause", running.container, check=False)
        self.docker(h, "stop", "-t", str(STOP_GRACE_S), running.container, check=False, timeout=STOP_GRACE_S + 60)
        self.docker(h, "rm", "-f", "-v", running.container, check=False)
        volumes = self.docker(h, "volume", "ls", "-q", "--filter", f"label={CHECKOUT_LABEL}={REPO}", "--filter",
                              f"name=bench-{running.name}-", check=False).stdout.decode().split()
        if volumes:
            self.docker(h, "volume", "rm", "-f", *volumes, check=False)
        follower = self._followers.pop(running.name, None)
        if follower:
            try:
                follower.wait(5)
            except subprocess.TimeoutExpired:
                follower.kill()
        if not any(e.runtime == self.name and e.name != running.name for e in State().load().values()):
            self._stop_loadgen()

    # the load generator --------------------------------------------------------------------------------------------
    def _ensure_loadgen(self, cpus: list[int]) -> None:
        if self._loadgen_cpus == sorted(cpus):  # started by this command on these CPUs (a dead one fails the tool)
            return
        h, name = self.roles["loadgen"], container_name(LOADGEN)
        info = inspect(name, docker_args(h))
        if info and info["State"]["Running"]:
            if sorted(parse_cpus(info["HostConfig"]["CpusetCpus"])) != sorted(cpus):
                self.docker(h, "update", "--cpuset-cpus", format_cpus(cpus), name)
            self._loadgen_cpus = sorted(cpus)
            return
        if info is not None:
            self.docker(h, "rm", "-f", "-v", name, check=False)
        ensure_runtime_images({LOADGEN})
        self._send(runtime_image(LOADGEN), h)
        # as docker-compose.yml's loadgen service, except the mounts: instead of the repository, an anonymous volume
        # that the repository files a tool reads are copied into (docker cp writes neither into a read-only root nor
        # into a tmpfs); the tools' side files stay on the /tmp tmpfs and are read back through `docker exec`
        self.docker(h, "run", "-d", "--name", name, "--label", f"{CHECKOUT_LABEL}={REPO}", "--label", "bench.role=loadgen",
                    *self._limits(), "--init", "--cpuset-cpus", format_cpus(cpus), "--memory", LOADGEN_MEMORY,
                    "--user", IMAGE_USER, "--volume", LOADGEN_REPO, "--workdir", LOADGEN_REPO,
                    runtime_image(LOADGEN), "sleep", "infinity")
        self._copied.clear()
        self._loadgen_cpus = sorted(cpus)
        if not self._loadgen_started:
            self._loadgen_started = True
            atexit.register(self._stop_loadgen)

    def _stop_loadgen(self) -> None:
        self._loadgen_cpus = None
        self.docker(self.roles["loadgen"], "rm", "-f", "-v", container_name(LOADGEN), check=False)

    def _container_arg(self, arg: str, scratch: Path, token: str) -> str:
        """A path of this machine as the loadgen container sees it: the tool's scratch folder (its side files) is
        /tmp/out-<token>, a repository file is copied to /bench/<its path>."""
        if arg == str(scratch) or arg.startswith(f"{scratch}/"):
            return f"/tmp/out-{token}" + arg[len(str(scratch)):]
        if arg.startswith(f"{REPO}/") and Path(arg).is_file():
            relative = arg[len(str(REPO)) + 1:]
            if relative not in self._copied:
                # a tar of the file at its path: the engine makes the folders on the way (no root in the container
                # needed for a mkdir); owned by the container's root, read-only for the tools
                archive = io.BytesIO()
                with tarfile.open(fileobj=archive, mode="w") as tar:
                    tar.add(arg, arcname=relative, filter=_readable)
                self.docker(self.roles["loadgen"], "cp", "-", f"{container_name(LOADGEN)}:{LOADGEN_REPO}",
                            input=archive.getvalue())
                self._copied.add(relative)
            return f"{LOADGEN_REPO}/{relative}"
        return arg

    def tool_process(self, argv: list[str], cpus: list[int], output: Path) -> RemoteTool:
        self.prepare()
        self._ensure_loadgen(cpus)
        token = uuid.uuid4().hex[:16]
        scratch = output.parent
        inside = [self._container_arg(a, scratch, token) for a in argv]
        # a shell records the tool's pid (for signals), makes its side-file folder, then becomes the tool
        script = f'mkdir -p /tmp/out-{token} && echo $$ > /tmp/pid-{token} && exec "$@"'
        command = ["docker", *docker_args(self.roles["loadgen"]), "exec", container_name(LOADGEN), "sh", "-c", script,
                   "sh", *inside]
        with output.open("wb") as out:
            client = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return RemoteTool(client, self, token, scratch)

    def check_tools(self, tools: set[str]) -> None:
        other = sorted(set(tools) - set(REMOTE_TOOLS))
        if other:
            raise RuntimeError_(f"HOSTS: {', '.join(other)} cannot run on the load generator's host yet (the loadgen "
                                f"image has {', '.join(REMOTE_TOOLS)}); measure those scenarios without HOSTS")
        ensure_runtime_images({LOADGEN})
        self._send(runtime_image(LOADGEN), self.roles["loadgen"])

    # what the records show -----------------------------------------------------------------------------------------
    def version(self, server: Server) -> str:
        return version_in_image(server)  # asked of the local engine's copy: the hosts hold the same image id

    def tool_versions(self) -> dict[str, str]:
        out = {}
        for name in REMOTE_TOOLS:
            tool = TOOLS[name]
            proc = self.docker(self.roles["loadgen"], "run", "--rm", "--network", "none", *self._privileges(),
                               runtime_image(LOADGEN), tool.binary, *tool.version_args, check=False)
            lines = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()
            out[name] = lines[0].strip() if lines else "unknown"
        return out

    def describe(self, running: RunningServer) -> dict:
        h = self._host_of_running(running)
        c = inspect(running.container, docker_args(h))
        if not c:
            return {"host": h.role, "endpoint": h.endpoint, "address": h.address}
        config = c["HostConfig"]
        return {"host": h.role, "endpoint": h.endpoint, "address": h.address, "container": running.container,
                "image": c["Config"]["Image"], "image_id": c["Image"], "cpuset": config["CpusetCpus"],
                "cpus": config["NanoCpus"] / 1e9 or None, "allowed_cpus": running.cpus,
                "memory_bytes": config["Memory"] or None, "network_mode": config["NetworkMode"],
                "user": c["Config"].get("User")}

    def conditions(self) -> dict:
        """Each role's host (endpoint, address, engine, CPUs, kernel, CPU plan), and the path from the load generator
        to the server as measured from the load generator's host (round-trip time, path MTU)."""
        roles = {}
        for role, h in self.roles.items():
            e = self.engines[h.endpoint]
            roles[role] = {"endpoint": h.endpoint, "address": h.address, "engine": e.version, "host_name": e.name,
                           "host_cpus": e.cpus, "kernel": e.kernel, "cpus": list(getattr(self.plan, role))}
        if self._path is None:
            self._path = self.measure_path()
        return {"hosts": roles, "path_loadgen_to_server": self._path}

    def measure_path(self) -> dict:
        """Round-trip time (10 pings) and path MTU (the largest don't-fragment ping that passes, from the MTU the
        kernel reports back) from the load generator's host to the server's address."""
        h, target = self.roles["loadgen"], self.roles["server"].address
        # ping: root with NET_RAW alone (raw ICMP sockets), nothing else of the engine's default capabilities
        base = ["run", "--rm", "--network", "host", *self._privileges(), "--user", "0", "--cap-add", "NET_RAW",
                runtime_image(LOADGEN)]
        proc = self.docker(h, *base, "ping", "-n", "-q", "-c", "10", "-i", "0.2", target, check=False, timeout=60)
        text = proc.stdout.decode(errors="replace")
        found = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", text)
        path = {"from": h.address, "to": target}
        if not found:
            path["rtt_error"] = (text + proc.stderr.decode(errors="replace")).strip()[-300:] or "no answer"
        else:
            path.update(rtt_min_ms=float(found[1]), rtt_avg_ms=float(found[2]), rtt_max_ms=float(found[3]))
        mtu = 9000
        for _ in range(4):
            proc = self.docker(h, *base, "ping", "-n", "-c", "1", "-W", "2", "-M", "do", "-s", str(mtu - 28), target,
                               check=False, timeout=30)
            said = (proc.stdout + proc.stderr).decode(errors="replace")
            if proc.returncode == 0:
                path["mtu"] = mtu
                break
            smaller = re.search(r"mtu\s*=\s*(\d+)", said)
            if not smaller or int(smaller[1]) >= mtu:
                path["mtu_error"] = said.strip()[-300:]
                break
            mtu = int(smaller[1])
        return path



class RemoteTool(RelayedTool):
    """A load tool in the loadgen container on the load generator's host, seen by the runner as a Popen: the local
    `docker exec` client relays its output; signals go to the tool through the engine (a killed client would leave
    the tool running there); its side files are copied back into its scratch folder when it has ended."""

    def __init__(self, client: subprocess.Popen, runtime: HostsRuntime, token: str, scratch: Path):
        super().__init__(client)
        self.runtime, self.token, self.scratch = runtime, token, scratch
        self._fetched = False

    @property
    def pid(self) -> int:
        return self.client.pid

    def wait(self, timeout: float | None = None):
        code = self.client.wait(timeout)
        if not self._fetched:
            self._fetched = True
            self._fetch()
        return code

    def _fetch(self) -> None:
        """The tool's side files (ab's percentiles...) into its scratch folder here (the folder in the container goes
        with the container at the end of the command). They are on the container's /tmp, a tmpfs that `docker cp`
        does not see: a tar of them through `docker exec`, regular files and folders only, inside the scratch folder."""
        proc = self.runtime.docker(self.runtime.roles["loadgen"], "exec", container_name(LOADGEN), "tar", "-C",
                                   f"/tmp/out-{self.token}", "-cf", "-", ".", check=False, timeout=120)
        if proc.returncode != 0:
            return
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
            members = [m for m in tar.getmembers() if (m.isfile() or m.isdir()) and m.name not in (".", "./")
                       and not m.name.startswith("/") and ".." not in Path(m.name).parts]
            tar.extractall(self.scratch, members=members,
                           **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))

    def send_signal(self, sig: int) -> None:
        if self.client.poll() is not None:
            return
        script = f"[ -s /tmp/pid-{self.token} ] && kill -{int(sig)} $(cat /tmp/pid-{self.token})"
        done = self.runtime.docker(self.runtime.roles["loadgen"], "exec", container_name(LOADGEN), "sh", "-c", script,
                                   check=False, timeout=30)
        if done.returncode != 0:
            self.client.send_signal(sig)


def _readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A repository file as copied into the loadgen container: root's, readable by all, writable by none else."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = (info.mode | 0o444) & 0o755
    return info
