"""The Docker runtime (RUNTIME=docker): every server in its own container, the load tools in the `loadgen` container.

Compose drives the containers (`docker compose`, or Debian's `docker-compose` v1; $COMPOSE from the Makefile picks one),
with the top-level docker-compose.yml that this module generates from the servers' manifests (`render_compose`; it is
rewritten when a server folder is added, so adding a server still means only adding a folder). The harness keeps
running on the host:

- start: builds the server's image when it is missing or older than its artifacts (the jars, binary, scripts and
  node_modules `make build` made: docker/server.Dockerfile on the family runtime bench/<family>:bookworm), then
  `compose up -d --no-deps <server>` with the CPU set of the harness's CpuPlan in the environment, waits for GET /id
  like the local runtime, and records the CPUs the container's main process may actually run on (read back from the
  kernel, checked against `docker inspect`) in RunningServer.cpus.
- every service uses the host's network and listens on 127.0.0.1: no bridge network, load never goes to a bridge address.
- tool_process: `docker exec bench-loadgen <tool>` in a long-running loadgen container started with the load generator's
  cpuset; output streamed to the host file, side files written through the bind-mounted results folder.
- pin: `docker update --cpuset-cpus/--cpus`; pids: the container's processes as the host sees them; stop: compose stop+rm.

`python -m harness.runtime.docker compose-file|images|env|down|clean` (the Makefile's docker targets) exposes the rest.
"""
from __future__ import annotations

import atexit
import hashlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path

import psutil

from harness.console import say, warn
from harness.cpus import CpuPlan, format_cpus, parse_cpus, plan_from_env
from harness.manifest import REPO, Server, discover
from harness.runtime import (STATE_DIR, RunningServer, RuntimeError_, indent, nofile_limit, pinned_child_setup,
                             process_create_time, wait_ready, wait_until)

COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKER_DIR = REPO / "docker"
PROJECT = "bench"
SUITE = "bookworm"
UPSTREAM = "nginx"  # the service other servers fetch /weather.json from (harness.session.UPSTREAM)
LOADGEN = "loadgen"
CONTAINER_REPO = "/bench"  # where the loadgen container sees the repository (read-only) and results/ (read-write)
APP_ROOT = "/srv"  # a server's artifacts are copied to /srv/<its folder>, its working directory
IMAGE_USER = "10001:10001"  # `bench`, the unprivileged user of every image (docker/*.Dockerfile)
SERVER_MEMORY = "3g"  # JVMs: 1 GiB fixed heap + metaspace, code cache, threads; node: a process per core
STOP_GRACE_S = 15
# Every check is a process started in the server's container, on its CPUs: rare enough not to show in the measurements
# (at 3 s they raised rust's p99 latency measurably). The harness does not wait on them: it waits for GET /id itself.
HEALTH = {"interval": "10s", "timeout": "3s", "retries": 3}


# ---------------------------------------------------------------------------------------------------------------- engine

def _run(argv: list[str], timeout: float = 120, env: dict | None = None, input: bytes | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, input=input)
    except FileNotFoundError as exc:
        raise RuntimeError_(f"{argv[0]} is not installed: make setup-docker (apt-get install docker.io docker-compose)") from exc
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError_(f"`{shlex.join(argv)}` did not finish within {timeout:g} s") from exc
    if check and proc.returncode != 0:
        output = (proc.stdout + proc.stderr).decode(errors="replace").strip()
        raise RuntimeError_(f"`{shlex.join(argv)}` failed (exit {proc.returncode}):\n" + indent(output[-3000:] or "(no output)"))
    return proc


def engine_answers(timeout: float = 10) -> tuple[bool, str]:
    """Whether a Docker engine answers `docker info`, and a sentence saying so (or why not)."""
    if not shutil.which("docker"):
        return False, "the docker command is not installed"
    try:
        proc = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"`docker info` did not answer within {timeout:g} s"
    if proc.returncode != 0 or not proc.stdout.strip():
        reason = (proc.stderr.strip().splitlines() or ["no answer"])[-1]
        return False, f"no Docker engine answers `docker info` ({reason})"
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return True, f"a Docker engine answers `docker info` (server {proc.stdout.strip()}, {host})"


def compose_command() -> list[str]:
    """`docker compose` (v2) where the plugin is installed, else `docker-compose` (v1, Debian's package).
    $COMPOSE (the Makefile detects it the same way) overrides."""
    if os.environ.get("COMPOSE", "").strip():
        return shlex.split(os.environ["COMPOSE"])
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise RuntimeError_("neither `docker compose` (v2) nor `docker-compose` (v1) is installed: "
                        "make setup-docker (apt-get install docker-compose)")


def inspect(container: str) -> dict | None:
    proc = _run(["docker", "inspect", "--type", "container", container], check=False, timeout=30)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout)[0]


def image_labels(image: str) -> dict | None:
    proc = _run(["docker", "image", "inspect", "--format", "{{json .Config.Labels}} {{.Id}}", image], check=False)
    if proc.returncode != 0:
        return None
    labels, _, image_id = proc.stdout.decode().strip().rpartition(" ")
    return {**(json.loads(labels) or {}), "id": image_id}


def allowed_cpus(pid: int) -> list[int]:
    """The CPUs the kernel lets `pid` run on: what a cpuset really applies."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return list(parse_cpus(line.split(":", 1)[1].strip()))
    raise RuntimeError_(f"no Cpus_allowed_list in /proc/{pid}/status")


# ----------------------------------------------------------------------------------------------------- naming, images

def family(server: Server) -> str:
    """The image family of a server: docker/<name>.Dockerfile where there is one (nginx), else from what it runs."""
    if (DOCKER_DIR / f"{server.name}.Dockerfile").exists():
        return server.name
    program = Path(server.run[0]).name
    if program == "java":
        return "jvm"
    if program == "node":
        return "node"
    return "native"


def runtime_image(fam: str) -> str:
    return f"bench/{fam}:{SUITE}"


def server_image(server: Server) -> str:
    return f"bench/server-{server.name}:latest"


def container_name(service: str) -> str:
    return f"bench-{service}"


def app_dir(server: Server) -> str:
    return f"{APP_ROOT}/{server.folder.name}"


def _var(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.upper())


def port_var(server: Server) -> str:
    return f"BENCH_PORT_{_var(server.name)}"


def role(server: Server) -> str:
    """Which CPU set of the plan a service gets: nginx the upstream's, every other server the server's."""
    return "UPSTREAM" if server.name == UPSTREAM else "SERVER"


def static_mounts(server: Server) -> list[str]:
    """Artifacts that are folders named `static` are bind-mounted (read-only), not copied: nginx serves its files from
    the host's filesystem (measured here: 0.88-0.95x native bind-mounted, 0.77x from the image's overlay filesystem)."""
    return [a for a in server.artifacts if Path(a).name == "static" and (server.folder / a).is_dir()]


def _artifact_paths(server: Server) -> list[Path]:
    missing = [a for a in server.artifacts if not (server.folder / a).exists()]
    if missing:
        raise RuntimeError_(f"{server.name}: artifact(s) {', '.join(missing)} missing in {server.folder}: run `make build`")
    if not server.artifacts:
        raise RuntimeError_(f"{server.name}: its manifest lists no `artifacts`; the Docker runtime copies exactly those")
    return [server.folder / a for a in server.artifacts]


def _walk(path: Path):
    if path.is_dir() and not path.is_symlink():
        for child in sorted(path.iterdir()):
            yield from _walk(child)
    else:
        yield path


def inputs_digest(server: Server, runtime_id: str) -> str:
    """What a server image is made of: its artifacts (path, mode, content), its runtime image and the recipe."""
    h = hashlib.sha256()
    h.update((DOCKER_DIR / "server.Dockerfile").read_bytes())
    h.update(f"{runtime_id} {app_dir(server)}\n".encode())
    for top in _artifact_paths(server):
        for path in _walk(top):
            st = path.lstat()
            h.update(f"{path.relative_to(server.folder)} {st.st_mode:o}\n".encode())
            if path.is_symlink():
                h.update(os.readlink(path).encode())
            else:
                with path.open("rb") as f:
                    h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()[:24]


def ensure_runtime_images(families: set[str]) -> None:
    """bench/<family>:bookworm for each family, built by docker/base-images.sh where missing (it builds bench/base
    from Debian with debootstrap when no base image is present, or OFFLINE=1)."""
    missing = sorted(f for f in families if image_labels(runtime_image(f)) is None)
    if not missing:
        return
    say(f"building the runtime image(s) {', '.join(runtime_image(f) for f in missing)} (docker/base-images.sh)")
    proc = subprocess.run([str(DOCKER_DIR / "base-images.sh")], env={**os.environ, "FAMILIES": " ".join(missing)})
    if proc.returncode != 0:
        raise RuntimeError_("building the base images failed (output above); see docker/base-images.sh")


def ensure_server_image(server: Server, force: bool = False) -> bool:
    """Builds the server's image when it is missing or out of date with its artifacts; True when it built one."""
    fam = family(server)
    ensure_runtime_images({fam})
    runtime = image_labels(runtime_image(fam))
    digest = inputs_digest(server, runtime["id"])
    image = server_image(server)
    current = image_labels(image)
    if current and current.get("bench.inputs") == digest and not force:
        return False
    started = time.monotonic()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.add(DOCKER_DIR / "server.Dockerfile", arcname="Dockerfile")
        for artifact, path in zip(server.artifacts, _artifact_paths(server)):
            if artifact in static_mounts(server):  # bind-mounted at run time: an empty folder as the mount point
                info = tarfile.TarInfo(f"app/{artifact}")
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            tar.add(path, arcname=f"app/{artifact}")
    argv = ["docker", "build", "--force-rm", "--network", "none", "-t", image,
            "--build-arg", f"RUNTIME_IMAGE={runtime_image(fam)}", "--build-arg", f"APP_DIR={app_dir(server)}",
            "--label", f"bench.server={server.name}", "--label", f"bench.inputs={digest}",
            "--label", f"bench.runtime={runtime_image(fam)}", "-"]
    _run(argv, timeout=900, input=context.getvalue())
    if current and current["id"] != (image_labels(image) or {}).get("id"):
        _run(["docker", "rmi", current["id"]], check=False)  # the previous build, now untagged
    say(f"  image {image} built in {time.monotonic() - started:.1f} s ({image_size(image)}: "
        f"{runtime_image(fam)} + {len(context.getvalue()) / 1e6:.1f} MB of artifacts)")
    return True


def image_size(image: str) -> str:
    proc = _run(["docker", "image", "inspect", "--format", "{{.Size}}", image], check=False)
    return f"{int(proc.stdout.strip()) / 1e6:.0f} MB" if proc.returncode == 0 else "?"


def build_images(servers: list[Server], force: bool = False) -> None:
    ensure_runtime_images({family(s) for s in servers} | {LOADGEN})
    for server in servers:
        if not ensure_server_image(server, force):
            say(f"  image {server_image(server)} is up to date with {server.folder.name}/'s artifacts")


# ---------------------------------------------------------------------------------------------------- compose file

def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def _compose_arg(arg: str, server: Server) -> str:
    """A `run` argument for compose: placeholders as compose variables, a literal $ escaped."""
    arg = arg.replace("$", "$$")
    values = {"port": f"${{{port_var(server)}}}", "host": "127.0.0.1", "cores": f"${{BENCH_{role(server)}_CORES}}",
              "run_dir": "/tmp/run", "upstream_url": "${BENCH_UPSTREAM_URL}"}
    try:
        return arg.format(**values)
    except (KeyError, IndexError, ValueError):
        return arg


def _healthcheck(server: Server) -> list[str]:
    probe = (f"exec 3<>/dev/tcp/$$HOST/$$PORT && printf 'GET /id HTTP/1.0\\r\\n\\r\\n' >&3 && "
             f"grep -qx {shlex.quote(server.name)} <&3")
    return ["CMD", "bash", "-c", probe]


def render_compose(servers: dict[str, Server]) -> str:
    need = "set by the harness: see the top of this file"
    lines = [
        "# The Docker runtime (RUNTIME=docker; RUNTIME=auto picks it when a Docker engine answers).",
        "# GENERATED from the servers' manifests by loadgen/harness/runtime/docker.py (`make docker-compose.yml`); the",
        "# harness rewrites it when a server folder is added. Edit the generator, not this file.",
        "#",
        "# The harness drives it (`docker compose` or `docker-compose`, -p bench) and sets every machine-dependent value in",
        "# the environment of each call: CPU sets and counts from its CPU plan (CPUS_SERVER etc. override), ports (PORTS),",
        "# the open-file limit, the results folder. It builds the images first (docker/, `make docker-images`): the family",
        "# runtimes bench/<family>:bookworm plus exactly the artifacts of `make build`. By hand: eval \"$(make -s docker-env)\".",
        "#",
        "# Every service uses the host's network and listens on 127.0.0.1: no bridge network, load never goes to a bridge",
        "# address. Servers run as the unprivileged user `bench`.",
        "",
        "x-limits: &limits",
        "  network_mode: host",
        "  ulimits:",
        "    # the harness's hard open-file limit (20000 on the reference machine); above the engine's own a container fails to start",
        "    nofile: {soft: \"${BENCH_NOFILE:-20000}\", hard: \"${BENCH_NOFILE:-20000}\"}",
        f"  stop_grace_period: {STOP_GRACE_S}s",
        "  restart: \"no\"",
        "",
        "x-server: &server",
        "  <<: *limits",
        f"  cpuset: \"${{BENCH_SERVER_CPUSET:?{need}}}\"",
        f"  cpus: \"${{BENCH_SERVER_CPUS:?{need}}}\"",
        f"  mem_limit: \"${{BENCH_SERVER_MEMORY:-{SERVER_MEMORY}}}\"",
        "",
        "x-upstream: &upstream",
        "  <<: *limits",
        f"  cpuset: \"${{BENCH_UPSTREAM_CPUSET:?{need}}}\"",
        f"  cpus: \"${{BENCH_UPSTREAM_CPUS:?{need}}}\"",
        f"  mem_limit: \"${{BENCH_SERVER_MEMORY:-{SERVER_MEMORY}}}\"",
        "",
        "x-health: &health",
        *(f"  {k}: {v}" for k, v in HEALTH.items()),
        "",
        "services:",
        "  # The load generator: ab, wrk and httperf. The harness runs every tool with `docker exec bench-loadgen ...`.",
        f"  {LOADGEN}:",
        "    <<: *limits",
        f"    image: {runtime_image(LOADGEN)}",
        f"    container_name: {container_name(LOADGEN)}",
        f"    cpuset: \"${{BENCH_LOADGEN_CPUSET:?{need}}}\"  # its own CPUs; no CPU quota on the load generator",
        "    mem_limit: 2g",
        f"    user: \"${{BENCH_LOADGEN_USER:-{IMAGE_USER}}}\"  # the host user, so result files are theirs (root: bench)",
        "    init: true  # an init as PID 1: stops at once",
        "    # the tools are not what is measured: without the engine's seccomp filter on each of their syscalls (a few",
        "    # hundred thousand a second at full load) they drive a server as hard as on the host; the servers keep it",
        "    security_opt: [\"seccomp=unconfined\"]",
        "    command: [\"sleep\", \"infinity\"]",
        f"    working_dir: {CONTAINER_REPO}",
        "    volumes:",
        f"      - ./:{CONTAINER_REPO}:ro  # wrk's report script",
        f"      - ${{BENCH_RESULTS:-./results}}:{CONTAINER_REPO}/results  # ab's percentile files, next to the outputs",
    ]
    # the upstream first, then the servers in the order of their folders
    for server in sorted(servers.values(), key=lambda s: s.name != UPSTREAM):
        r = role(server)
        env = {"HOST": "127.0.0.1", "PORT": f"${{{port_var(server)}:-{server.port}}}",
               "SERVER_CORES": f"${{BENCH_{r}_CORES:?{need}}}", "RUN_DIR": "/tmp/run"}
        if server.needs_upstream:
            env["UPSTREAM_URL"] = "${BENCH_UPSTREAM_URL:-http://127.0.0.1:8000/weather.json}"
        env.update({k: v.replace("$", "$$") for k, v in server.env.items()})
        lines += [
            "",
            f"  # {server.name}: {server.folder.name}/manifest.toml ({family(server)} family, docker/{family(server)}.Dockerfile)",
            f"  {server.name}:",
            f"    <<: *{'upstream' if r == 'UPSTREAM' else 'server'}",
            f"    image: {server_image(server)}",
            f"    container_name: {container_name(server.name)}",
            f"    working_dir: {app_dir(server)}",
            f"    command: [{', '.join(_q(_compose_arg(a, server)) for a in server.run)}]",
            "    environment:",
            *(f"      {k}: {_q(v)}" for k, v in env.items()),
            "    healthcheck:",
            "      <<: *health",
            f"      test: [{', '.join(_q(a) for a in _healthcheck(server))}]",
            f"      start_period: {int(server.startup_timeout_s)}s",
        ]
        mounts = static_mounts(server)
        if mounts:
            lines += ["    volumes:  # served from the host's filesystem: bind-mounted, not copied into the image",
                      *(f"      - ./{server.folder.name}/{m}:{app_dir(server)}/{m}:ro" for m in mounts)]
        if server.needs_upstream and server.name != UPSTREAM and UPSTREAM in servers:
            lines += ["    depends_on:", f"      {UPSTREAM}: {{condition: service_healthy}}"]
    return "\n".join(lines) + "\n"


def ensure_compose_file(servers: dict[str, Server] | None = None, path: Path = COMPOSE_FILE) -> bool:
    """Writes docker-compose.yml when it is missing or differs from what the manifests give; True when written."""
    text = render_compose(servers if servers is not None else discover())
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


# ------------------------------------------------------------------------------------------------------ environment

def compose_env(plan: CpuPlan, overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The variables docker-compose.yml reads: every role's CPU set from the plan, then `overrides`."""
    env = {}
    for name, cpus in (("SERVER", plan.server), ("UPSTREAM", plan.upstream), ("LOADGEN", plan.loadgen)):
        env.update(cpu_vars(name, list(cpus)))
    from harness.store import RESULTS

    uid, gid = os.getuid(), os.getgid()
    env.update({
        "BENCH_NOFILE": str(nofile_limit()),
        "BENCH_RESULTS": str(RESULTS),
        "BENCH_LOADGEN_USER": f"{uid}:{gid}" if uid != 0 else IMAGE_USER,
        "BENCH_UPSTREAM_URL": os.environ.get("BENCH_UPSTREAM_URL", "http://127.0.0.1:8000/weather.json"),
        "COMPOSE_PROJECT_NAME": PROJECT,
    })
    env.update(overrides or {})
    return env


def cpu_vars(role_name: str, cpus: list[int]) -> dict[str, str]:
    return {f"BENCH_{role_name}_CPUSET": format_cpus(cpus), f"BENCH_{role_name}_CPUS": str(len(cpus)),
            f"BENCH_{role_name}_CORES": str(len(cpus))}


# ---------------------------------------------------------------------------------------------------- tool processes

class ContainerProcess:
    """A load tool running in the loadgen container, behaving like the subprocess.Popen the runner expects.

    `pid` is the tool's process as the host sees it (so the runner samples the tool, not the docker client);
    terminate/kill signal that process, not just the client (a killed `docker exec` leaves its process running)."""

    def __init__(self, client: subprocess.Popen, token: str, loadgen_pid: int):
        self.client, self.token, self.loadgen_pid = client, token, loadgen_pid
        self.args = client.args
        self._tool_pid: int | None = None

    def _find(self) -> int | None:
        if self._tool_pid is None:
            try:  # exec'd processes are children of the container's shim, like its init
                for child in psutil.Process(self.loadgen_pid).parent().children():
                    try:
                        if child.environ().get("BENCH_TOOL") == self.token:
                            self._tool_pid = child.pid
                            break
                    except psutil.Error:
                        continue
            except psutil.Error:
                pass
        return self._tool_pid

    @property
    def pid(self) -> int:
        return self._find() or self.client.pid

    @property
    def returncode(self):
        return self.client.returncode

    def poll(self):
        return self.client.poll()

    def wait(self, timeout: float | None = None):
        return self.client.wait(timeout)

    def send_signal(self, sig: int) -> None:
        if self.client.poll() is not None:
            return
        # the process may be a few milliseconds from existing when this comes right after the start
        wait_until(lambda: self._find() is not None or self.client.poll() is not None, 2)
        pid = self._find()
        if pid:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            except PermissionError:
                subprocess.run(["docker", "exec", "-u", "0", container_name(LOADGEN), "kill", f"-{int(sig)}",
                                str(self._container_pid(pid))], capture_output=True)
        else:
            self.client.send_signal(sig)

    @staticmethod
    def _container_pid(pid: int) -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
        return pid

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
        try:
            self.client.wait(5)
        except subprocess.TimeoutExpired:
            self.client.kill()


# ----------------------------------------------------------------------------------------------------------- runtime

class DockerRuntime:
    name = "docker"
    tools_are_children = False  # the tools' CPU is sampled (their processes live under the container's shim)

    def __init__(self, plan: CpuPlan | None = None):
        ok, why = engine_answers()
        if not ok:
            raise RuntimeError_(f"RUNTIME=docker: {why}. Start one (make setup-docker RUNTIME=docker installs docker.io "
                                f"and starts dockerd) or use RUNTIME=local")
        self.compose = compose_command()
        self.servers = discover()
        self._plan = plan
        # the CPUs this process may use now: the harness pins itself to the load generator's while a load runs
        self._available = tuple(sorted(os.sched_getaffinity(0)))
        if ensure_compose_file(self.servers):
            say(f"docker-compose.yml regenerated from the manifests ({', '.join(self.servers)})")
        self._loadgen_started = False
        self._followers: dict[str, subprocess.Popen] = {}
        self._remove_unknown_containers()

    @property
    def plan(self) -> CpuPlan:
        if self._plan is None:
            self._plan = plan_from_env(self._available)
        return self._plan

    # compose -------------------------------------------------------------------------------------------------------
    def compose_run(self, *args: str, overrides: dict[str, str] | None = None, timeout: float = 300,
                    check: bool = True) -> subprocess.CompletedProcess:
        env = {**os.environ, **compose_env(self.plan, overrides)}
        argv = [*self.compose, "-f", str(COMPOSE_FILE), "-p", PROJECT, *args]
        return _run(argv, timeout=timeout, env=env, check=check)

    def _remove_unknown_containers(self) -> None:
        """Server containers the harness's state does not list (a run that was killed) are removed: they hold ports."""
        from harness.runtime import State

        known = {e.container for e in State().load().values() if e.runtime == self.name}
        for name in self._server_containers():
            info = inspect(name)
            if name not in known and info and _checkout(info) == str(REPO):  # another checkout's are not ours to remove
                warn(f"removing the leftover container {name} (not in the harness's state: a run that was killed?)")
                _run(["docker", "rm", "-f", "-v", name], check=False)

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
        _run(["docker", "rm", "-f", name], check=False)

    # Runtime protocol ---------------------------------------------------------------------------------------------
    def start(self, server: Server, cpus: list[int], port: int, env: dict[str, str]) -> RunningServer:
        from harness.runtime.local import port_owner

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
            raise RuntimeError_(f"cannot start {server.name}: {exc}\n  its log:\n{self._log_tail(server.name)}") from None
        info = inspect(container_name(server.name)) or {}
        pid = info.get("State", {}).get("Pid", 0)
        running = RunningServer(name=server.name, host=host, port=port, cpus=list(cpus), pid=pid, log=str(log),
                                started_at=time.time(), startup_s=0.0, runtime=self.name,
                                container=container_name(server.name), pid_created=process_create_time(pid))
        self._follow_log(running)
        try:
            self._wait_ready(server, running)
            running.cpus = self._applied_cpus(running, cpus)
        except BaseException:
            self.stop(running)
            raise
        running.startup_s = round(time.monotonic() - started, 3)
        return running

    def _wait_ready(self, server: Server, running: RunningServer) -> None:
        def death() -> str | None:
            if running.pid and psutil.pid_exists(running.pid):
                return None
            info = inspect(running.container) or {"State": {"Status": "gone", "ExitCode": "?"}}
            return f"container {info['State']['Status']} (exit code {info['State'].get('ExitCode')})"

        wait_ready(server, running, death, lambda: self._log_tail(server.name))

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
        if running.runtime != self.name or not running.container:
            return False
        try:
            proc = psutil.Process(running.pid)
            if not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE or not running.is_process(proc.create_time()):
                return False
        except psutil.Error:
            return False
        info = inspect(running.container)
        return bool(info and info["State"]["Running"] and info["State"]["Pid"] == running.pid)

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
        _run(["docker", "update", "--cpuset-cpus", format_cpus(cpus), "--cpus", str(len(cpus)), running.container])
        running.cpus = self._applied_cpus(running, cpus)

    def stop(self, running: RunningServer) -> None:
        service = running.name
        before = inspect(container_name(service))
        proc = self.compose_run("stop", "-t", str(STOP_GRACE_S), service, check=False, timeout=STOP_GRACE_S + 60)
        if proc.returncode == 0:
            proc = self.compose_run("rm", "-f", "-v", service, check=False)
        if proc.returncode != 0 or inspect(container_name(service)) is not None:
            _run(["docker", "rm", "-f", "-v", container_name(service)], check=False)
        if before and before["Image"] != (image_labels(before["Config"]["Image"]) or {}).get("id"):
            _run(["docker", "rmi", before["Image"]], check=False)  # an image rebuilt while this container ran
        follower = self._followers.pop(service, None)
        if follower:
            try:
                follower.wait(5)
            except subprocess.TimeoutExpired:
                follower.kill()
        if not self._server_containers():
            self._stop_loadgen(only_if_idle=True)

    def tool_process(self, argv: list[str], cpus: list[int], output: Path) -> ContainerProcess:
        loadgen_pid = self._ensure_loadgen(cpus)
        if os.getuid() == 0:  # the tool runs as `bench`: let it write its side files next to its output
            os.chmod(output.parent, 0o777)
        token = uuid.uuid4().hex
        command = ["docker", "exec", "-e", f"BENCH_TOOL={token}", container_name(LOADGEN),
                   *(self.container_path(a) for a in argv)]
        with output.open("wb") as out:
            # the docker client only relays output; it too stays on the load generator's CPUs
            client = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      preexec_fn=pinned_child_setup(cpus))
        return ContainerProcess(client, token, loadgen_pid)

    # extras: for `make build` and for what the records should show --------------------------------------------------
    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """Every server's image from its artifacts (after `make build` made them), and the loadgen image."""
        build_images(servers, force)

    def version(self, server: Server) -> str:
        """The server's `version` command run in its image (the runtime's node/nginx/java), with its source folder
        mounted read-only where its image has the artifacts (pom.xml, Cargo.lock are read from there)."""
        if not server.version:
            return "unknown"
        proc = _run(["docker", "run", "--rm", "--network", "none", "-v", f"{server.folder}:{app_dir(server)}:ro",
                     "-w", app_dir(server), "--entrypoint", "bash", server_image(server), "-c", server.version],
                    check=False, timeout=60)
        return " ".join((proc.stdout + proc.stderr).decode(errors="replace").split()) or "unknown"

    def tool_versions(self) -> dict[str, str]:
        out = {}
        for tool, flag in (("ab", "-V"), ("wrk", "-v"), ("httperf", "-V")):
            proc = _run(["docker", "run", "--rm", "--network", "none", runtime_image(LOADGEN), tool, flag], check=False)
            lines = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()
            out[tool] = lines[0].strip() if lines else "unknown"
        return out

    def check_tools(self, tools: set[str]) -> None:
        """The tools are in the loadgen image (docker/loadgen.Dockerfile): it is built here when missing."""
        ensure_runtime_images({LOADGEN})

    def describe(self, running: RunningServer) -> dict:
        """The server's container as applied, read back from the engine and the kernel."""
        return _container_facts(running.container) or {}

    def conditions(self) -> dict:
        """The engine and Compose, and the loadgen container as applied (when it runs: call this during a run)."""
        info = json.loads(_run(["docker", "info", "--format", "{{json .}}"]).stdout)
        return {"engine": info.get("ServerVersion"), "storage_driver": info.get("Driver"),
                "cgroup": f"v{info.get('CgroupVersion', '1')} {info.get('CgroupDriver', '')}".strip(),
                "compose": " ".join(self.compose) + " " + _compose_version(self.compose),
                "loadgen": _container_facts(container_name(LOADGEN))}

    # internals ------------------------------------------------------------------------------------------------------
    @staticmethod
    def container_path(arg: str) -> str:
        """A host path under the repository or the results folder, as the loadgen container sees it."""
        from harness.store import RESULTS

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
                _run(["docker", "update", "--cpuset-cpus", format_cpus(cpus), name])
        else:
            if info is not None:
                _run(["docker", "rm", "-f", name], check=False)
            ensure_runtime_images({LOADGEN})
            from harness.store import RESULTS

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
        _run(["docker", "rm", "-f", "-v", name], check=False)

    def _server_containers(self) -> list[str]:
        proc = _run(["docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={PROJECT}",
                     "--format", "{{.Names}}"], check=False)
        return [n for n in proc.stdout.decode().split() if n != container_name(LOADGEN)]

    def _discard(self, service: str) -> None:
        _run(["docker", "rm", "-f", "-v", container_name(service)], check=False)

    def _follow_log(self, running: RunningServer) -> None:
        """The container's output, appended to .run/<name>/server.log as it comes (like a local server's log)."""
        with open(running.log, "ab") as log:
            self._followers[running.name] = subprocess.Popen(
                ["docker", "logs", "-f", running.container], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)

    def _log_tail(self, service: str, lines: int = 15) -> str:
        proc = _run(["docker", "logs", "--tail", str(lines), container_name(service)], check=False)
        return indent((proc.stdout + proc.stderr).decode(errors="replace").rstrip() or "(empty log)")


def _container_facts(name: str) -> dict | None:
    """A running container's CPU set, quota, memory, open-file limit, network and image, as the engine applied them,
    and the CPUs its main process may run on as the kernel says."""
    c = inspect(name)
    if not c or not c["State"]["Running"]:
        return None
    host = c["HostConfig"]
    return {"container": name, "image": c["Config"]["Image"], "image_id": c["Image"],
            "cpuset": host["CpusetCpus"], "cpus": host["NanoCpus"] / 1e9 or None,
            "allowed_cpus": allowed_cpus(c["State"]["Pid"]), "memory_bytes": host["Memory"] or None,
            "ulimits": host.get("Ulimits"), "network_mode": host["NetworkMode"], "user": c["Config"].get("User")}


def _checkout(info: dict) -> str:
    """The checkout (folder of docker-compose.yml) a container was created from, per Compose's labels."""
    return (info.get("Config", {}).get("Labels") or {}).get("com.docker.compose.project.working_dir", "")


def _compose_version(compose: list[str]) -> str:
    proc = _run([*compose, "version", "--short"], check=False)
    return proc.stdout.decode().strip() or "?"


# -------------------------------------------------------------------------------------------------------- commands

def main(argv: list[str]) -> int:
    """compose-file | images [server...] | env | down | clean: what the Makefile's docker targets run."""
    from harness.manifest import ManifestError, select

    command, names = (argv[0] if argv else "help"), argv[1:]
    try:
        if command == "compose-file":
            written = ensure_compose_file()
            say(f"{COMPOSE_FILE.name} {'written' if written else 'is up to date'}")
            return 0
        if command == "env":  # for using docker-compose.yml by hand: eval "$(make -s docker-env)"
            for key, value in compose_env(plan_from_env()).items():
                print(f"export {key}={shlex.quote(value)}")
            return 0
        if command == "images":
            ok, why = engine_answers()
            if not ok:
                raise RuntimeError_(f"cannot build images: {why}")
            servers = discover()
            ensure_compose_file(servers)
            build_images(select(servers, names or None))
            return 0
        if command in ("down", "clean"):
            ok, why = engine_answers()
            if not ok:
                say(f"nothing to do: {why}")
                return 0
            runtime = DockerRuntime()
            runtime.compose_run("down", "--remove-orphans", "-t", str(STOP_GRACE_S), timeout=STOP_GRACE_S + 120)
            if command == "clean":  # the server images; the base images (bench/*:bookworm) stay
                images = _run(["docker", "images", "--filter", "reference=bench/server-*", "--format",
                               "{{.Repository}}:{{.Tag}}"]).stdout.decode().split()
                if images:
                    _run(["docker", "rmi", *images])
                say(f"removed {len(images)} server image(s); base images kept")
            return 0
    except (RuntimeError_, ManifestError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
