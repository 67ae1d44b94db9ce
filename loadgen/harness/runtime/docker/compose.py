"""docker-compose.yml, rendered from the servers' manifests, and the variables it reads. Rendering is pure (unit
tested); every machine-dependent value (CPU sets, ports, open-file limit) comes from `compose_env` at each call."""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from harness.cpus import CpuPlan, format_cpus
from harness.host import nofile_limit
from harness.manifest import REPO, Server, discover, upstream_of, upstream_url
from harness.runtime.docker.images import LOADGEN, app_dir, family, runtime_image, server_image, static_mounts
from harness.store import RESULTS

COMPOSE_FILE = REPO / "docker-compose.yml"
PROJECT = "bench"
CONTAINER_REPO = "/bench"  # where the loadgen container sees the repository (read-only) and results/ (read-write)
IMAGE_USER = "10001:10001"  # `bench`, the unprivileged user of every image (docker/*.Dockerfile)
SERVER_MEMORY = "3g"  # JVMs: 1 GiB fixed heap + metaspace, code cache, threads; node: a process per core
LOADGEN_MEMORY = "2g"
# Least privilege: what may be written on a read-only root (RUN_DIR is /tmp/run; the JVMs' perf data and netty's
# native library go to /tmp: exec, or netty would silently fall back to NIO), and a ceiling on processes + threads
# (JVMs run a few hundred threads at most) that stops a runaway fork before it hurts the host.
WRITABLE_TMPFS = "/tmp:rw,exec,nosuid,nodev,size=64m,mode=1777"
PIDS_LIMIT = 4096
STOP_GRACE_S = 15
# Every check is a process started in the server's container, on its CPUs: rare enough not to show in the measurements
# (at 3 s they raised rust's p99 latency measurably). The harness does not wait on them: it waits for GET /id itself.
HEALTH = {"interval": "10s", "timeout": "3s", "retries": 3}


def container_name(service: str) -> str:
    return f"bench-{service}"


def _var(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.upper())


def port_var(server: Server) -> str:
    return f"BENCH_PORT_{_var(server.name)}"


def h2c_port_var(server: Server) -> str:
    return f"BENCH_H2C_PORT_{_var(server.name)}"


def memory_var(server: Server) -> str:
    """The variable that gives one server a memory limit other than SERVER_MEMORY (e.g. a test's small one)."""
    return f"BENCH_MEM_LIMIT_{_var(server.name)}"


def role(server: Server) -> str:
    """Which CPU set of the plan a service gets: the upstream its own, every other server the server's."""
    return "UPSTREAM" if server.has_role("upstream") else "SERVER"


def default_upstream_url(servers: dict[str, Server]) -> str:
    """The upstream at its manifest's port (the runtime passes the session's own URL when it starts a server)."""
    upstream = upstream_of(servers)
    return upstream_url(upstream) if upstream else ""


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
        "# GENERATED from the servers' manifests by loadgen/harness/runtime/docker/compose.py (`make docker-compose.yml`); the",
        "# harness rewrites it when a server folder is added. Edit the generator, not this file.",
        "#",
        "# The harness drives it (`docker compose` or `docker-compose`, -p bench) and sets every machine-dependent value in",
        "# the environment of each call: CPU sets and counts from its CPU plan (CPUS_SERVER etc. override), ports (PORTS),",
        "# the open-file limit, the results folder. It builds the images first (docker/, `make docker-images`): the family",
        "# runtimes bench/<family>:bookworm plus exactly the artifacts of `make build`. By hand: eval \"$(make -s docker-env)\".",
        "#",
        "# Every service uses the host's network and listens on 127.0.0.1: no bridge network, load never goes to a bridge",
        "# address. Servers run as the unprivileged user `bench` (the loadgen as that user or the harness's), every service",
        "# with no capability (nginx binds an unprivileged port), no way to gain privileges, the engine's default seccomp",
        "# profile, a read-only root filesystem (a tmpfs at /tmp, where RUN_DIR is) and a process limit.",
        f"# Each server's memory limit is {SERVER_MEMORY}; BENCH_MEM_LIMIT_<SERVER>=256m in the harness's environment sets another.",
        "",
        "x-limits: &limits",
        "  network_mode: host",
        "  ulimits:",
        "    # the harness's hard open-file limit (20000 on the reference machine); above the engine's own a container fails to start",
        "    nofile: {soft: \"${BENCH_NOFILE:-20000}\", hard: \"${BENCH_NOFILE:-20000}\"}",
        f"  stop_grace_period: {STOP_GRACE_S}s",
        "  restart: \"no\"",
        "  cap_drop: [ALL]",
        "  security_opt: [\"no-new-privileges:true\"]",
        "  read_only: true",
        f"  tmpfs: [{_q(WRITABLE_TMPFS)}]",
        f"  pids_limit: {PIDS_LIMIT}",
        "",
        "x-server: &server",
        "  <<: *limits",
        f"  cpuset: \"${{BENCH_SERVER_CPUSET:?{need}}}\"",
        f"  cpus: \"${{BENCH_SERVER_CPUS:?{need}}}\"",
        "",
        "x-upstream: &upstream",
        "  <<: *limits",
        f"  cpuset: \"${{BENCH_UPSTREAM_CPUSET:?{need}}}\"",
        f"  cpus: \"${{BENCH_UPSTREAM_CPUS:?{need}}}\"",
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
        f"    mem_limit: {LOADGEN_MEMORY}",
        f"    user: \"${{BENCH_LOADGEN_USER:-{IMAGE_USER}}}\"  # the host user, so result files are theirs (root: bench)",
        "    init: true  # an init as PID 1: stops at once",
        "    # no security_opt, cap_drop or read_only of its own: the engine's default seccomp profile, no capability and",
        "    # no privilege to gain, as x-limits gives every service (its writes go to the results mount and /tmp)",
        "    command: [\"sleep\", \"infinity\"]",
        f"    working_dir: {CONTAINER_REPO}",
        "    volumes:",
        f"      - ./:{CONTAINER_REPO}:ro  # wrk's report script",
        f"      - ${{BENCH_RESULTS:-./results}}:{CONTAINER_REPO}/results  # ab's percentile files, next to the outputs",
    ]
    # the upstream first, then the servers in the order of their folders
    upstream = upstream_of(servers)
    for server in sorted(servers.values(), key=lambda s: not s.has_role("upstream")):
        r = role(server)
        env = {"HOST": "127.0.0.1", "PORT": f"${{{port_var(server)}:-{server.port}}}",
               "SERVER_CORES": f"${{BENCH_{r}_CORES:?{need}}}", "RUN_DIR": "/tmp/run"}
        if server.needs_upstream:
            env["UPSTREAM_URL"] = f"${{BENCH_UPSTREAM_URL:-{default_upstream_url(servers)}}}"
        if server.h2c_port:  # cleartext HTTP/2 on a port of its own (CONTRACT.md)
            env["H2C_PORT"] = f"${{{h2c_port_var(server)}:-{server.h2c_port}}}"
        env.update({k: v.replace("$", "$$") for k, v in server.env.items()})
        lines += [
            "",
            f"  # {server.name}: {server.folder.name}/manifest.toml ({family(server)} family, docker/{family(server)}.Dockerfile)",
            f"  {server.name}:",
            f"    <<: *{'upstream' if r == 'UPSTREAM' else 'server'}",
            f"    image: {server_image(server)}",
            f"    container_name: {container_name(server.name)}",
            f"    mem_limit: \"${{{memory_var(server)}:-{SERVER_MEMORY}}}\"",
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
        if server.needs_upstream and upstream and server is not upstream:
            lines += ["    depends_on:", f"      {upstream.name}: {{condition: service_healthy}}"]
    return "\n".join(lines) + "\n"


def ensure_compose_file(servers: dict[str, Server] | None = None, path: Path = COMPOSE_FILE) -> bool:
    """Writes docker-compose.yml when it is missing or differs from what the manifests give; True when written."""
    text = render_compose(servers if servers is not None else discover())
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def compose_env(plan: CpuPlan, overrides: dict[str, str] | None = None,
                servers: dict[str, Server] | None = None) -> dict[str, str]:
    """The variables docker-compose.yml reads: every role's CPU set from the plan, then `overrides`. `servers`: the
    manifests (default: discovered), for the upstream's default URL."""
    env = {}
    for name, cpus in (("SERVER", plan.server), ("UPSTREAM", plan.upstream), ("LOADGEN", plan.loadgen)):
        env.update(cpu_vars(name, list(cpus)))
    uid, gid = os.getuid(), os.getgid()
    env.update({
        "BENCH_NOFILE": str(nofile_limit()),
        "BENCH_RESULTS": str(RESULTS),
        "BENCH_LOADGEN_USER": f"{uid}:{gid}" if uid != 0 else IMAGE_USER,
        "BENCH_UPSTREAM_URL": os.environ.get("BENCH_UPSTREAM_URL") or default_upstream_url(servers or discover()),
        "COMPOSE_PROJECT_NAME": PROJECT,
    })
    env.update(overrides or {})
    return env


def cpu_vars(role_name: str, cpus: list[int]) -> dict[str, str]:
    return {f"BENCH_{role_name}_CPUSET": format_cpus(cpus), f"BENCH_{role_name}_CPUS": str(len(cpus)),
            f"BENCH_{role_name}_CORES": str(len(cpus))}
