"""docker-compose.yml, rendered from the servers' manifests as `Service`s (service.py: the description the several-hosts
path starts with `docker run`), and the variables it reads. Rendering is pure (unit tested); every machine-dependent
value (CPU sets, ports, open-file limit) comes from `compose_env` at each call."""

from __future__ import annotations

import os
from pathlib import Path

from harness.basics.cpus import CpuPlan, format_cpus
from harness.basics.machine import nofile_limit
from harness.basics.paths import REPO, RESULTS
from harness.config.manifest import Server, discover, upstream_of, upstream_url
from harness.containers.images import LOADGEN, app_dir, family, static_mounts
from harness.containers.service import (
    CONTAINER_REPO,
    CONTAINER_RESULTS,
    IMAGE_USER,
    SERVER_MEMORY,
    Mount,
    Service,
    container_name,
    limits,
    loadgen_service,
    quoted,
    role_of,
    server_service,
)

COMPOSE_FILE = REPO / "docker-compose.yml"
PROJECT = "bench"
NEED = "set by the harness: see the top of this file"


def _var(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.upper())


def service_of(server: Server) -> str:
    """The service a server's container is made from: its own; an A/A twin's is its server's, run a second time under
    a container name of its own (so the twins are one description, as they are one image), reading its variables."""
    return server.twin_of or server.name


def port_var(server: Server) -> str:
    return f"BENCH_PORT_{_var(service_of(server))}"


def h2c_port_var(server: Server) -> str:
    return f"BENCH_H2C_PORT_{_var(service_of(server))}"


def memory_var(server: Server) -> str:
    """The variable that gives one server a memory limit other than SERVER_MEMORY (e.g. a test's small one)."""
    return f"BENCH_MEM_LIMIT_{_var(service_of(server))}"


def role_cpus(role: str) -> dict[str, str]:
    """A role's CPU set and quota as the file reads them (its anchor x-server or x-upstream; the loadgen has no quota)."""
    return {"cpuset": f"${{BENCH_{role.upper()}_CPUSET:?{NEED}}}", "cpus": f"${{BENCH_{role.upper()}_CPUS:?{NEED}}}"}


def default_upstream_url(servers: dict[str, Server]) -> str:
    """The upstream at its manifest's port (the runtime passes the session's own URL when it starts a server)."""
    upstream = upstream_of(servers)
    return upstream_url(upstream) if upstream else ""


def server_entry(server: Server, servers: dict[str, Server]) -> Service:
    """A server as docker-compose.yml describes it: each value the harness sets per call a variable."""
    role = role_of(server)
    values = {
        "host": "127.0.0.1",
        "port": f"${{{port_var(server)}:-{server.port}}}",
        "cores": f"${{BENCH_{role.upper()}_CORES:?{NEED}}}",
        "upstream_url": f"${{BENCH_UPSTREAM_URL:-{default_upstream_url(servers)}}}",
        "h2c_port": f"${{{h2c_port_var(server)}:-{server.h2c_port}}}" if server.h2c_port else "",
    }
    args = {
        "host": "127.0.0.1",
        "port": f"${{{port_var(server)}}}",
        "cores": f"${{BENCH_{role.upper()}_CORES}}",
        "upstream_url": "${BENCH_UPSTREAM_URL}",
    }
    mounts = [
        Mount(f"./{server.folder.name}/{m}", f"{app_dir(server)}/{m}", read_only=True) for m in static_mounts(server)
    ]
    return server_service(
        server,
        values,
        args=args,
        literal=lambda text: text.replace("$", "$$"),
        **role_cpus(role),
        memory=f"${{{memory_var(server)}:-{SERVER_MEMORY}}}",
        mounts=mounts,
        notes={"volumes": "served from the host's filesystem: bind-mounted, not copied into the image"},
    )


def loadgen_entry() -> Service:
    mounts = [
        Mount("./", CONTAINER_REPO, read_only=True, note="wrk's report script"),
        Mount(
            "${BENCH_RESULTS:-./results}",
            CONTAINER_RESULTS,
            note="ab's percentile files, next to the outputs",
        ),
    ]
    return loadgen_service(
        role_cpus("loadgen")["cpuset"],
        f"${{BENCH_LOADGEN_USER:-{IMAGE_USER}}}",
        mounts,
        notes={
            "cpuset": "its own CPUs; no CPU quota on the load generator",
            "user": "the host user, so result files are theirs (root: bench)",
            "init": "an init as PID 1: stops at once",
        },
    )


def _scalar(key: str, value: str, note: str = "", indent: str = "    ") -> str:
    return f"{indent}{key}: {quoted(value) if '$' in value else value}" + (f"  # {note}" if note else "")


def entry(key: str, service: Service, merge: str, given: dict[str, str]) -> list[str]:
    """A service of the file: it merges the anchor `merge` and writes what that anchor does not `given` it."""
    s, notes = service, service.notes
    lines = [f"  {key}:", f"    <<: *{merge}"]
    for name, value in (
        ("image", s.image),
        ("container_name", s.name),
        ("cpuset", s.cpuset),
        ("cpus", s.cpus),
        ("mem_limit", s.memory),
        ("user", s.user),
        ("init", "true" if s.init else ""),
        ("working_dir", s.working_dir),
    ):
        if value and given.get(name) != value:
            lines.append(_scalar(name, value, notes.get(name, "")))
    lines.append(f"    command: [{', '.join(quoted(a) for a in s.command)}]")
    for name, mapping in (("environment", s.env), ("labels", s.labels)):
        if mapping:
            lines += [f"    {name}:", *(f"      {k}: {quoted(v)}" for k, v in mapping.items())]
    if s.mounts:
        lines += [
            "    volumes:" + (f"  # {notes['volumes']}" if notes.get("volumes") else ""),
            *(f"      - {m.spec}" + (f"  # {m.note}" if m.note else "") for m in s.mounts),
        ]
    return lines


def render_compose(servers: dict[str, Server]) -> str:
    lines = [
        "# The Docker runtime (RUNTIME=docker; RUNTIME=auto picks it when a Docker engine answers).",
        "# GENERATED from the servers' manifests by loadgen/harness/containers/compose.py (`make docker-compose.yml`); the",
        "# harness rewrites it when a server folder is added. Edit the generator, not this file.",
        "#",
        "# The harness drives it (`docker compose` or `docker-compose`, -p bench) and sets every machine-dependent value in",
        "# the environment of each call: CPU sets and counts from its CPU plan (CPUS_SERVER etc. override), ports (PORTS),",
        "# the open-file limit, the results folder. It builds the images first (docker/, `make docker-images`): the family",
        '# runtimes bench/<family>:bookworm plus exactly the artifacts of `make build`. By hand: eval "$(make -s docker-env)".',
        "#",
        "# Every service uses the host's network and listens on 127.0.0.1: no bridge network, load never goes to a bridge",
        "# address. Servers run as the unprivileged user `bench` (the loadgen as that user or the harness's), every service",
        "# with no capability (nginx binds an unprivileged port), no way to gain privileges, the engine's default seccomp",
        "# profile, a read-only root filesystem (a tmpfs at /tmp, where RUN_DIR is) and a process limit.",
        f"# Each server's memory limit is {SERVER_MEMORY}; BENCH_MEM_LIMIT_<SERVER>=256m in the harness's environment sets another.",
        "# No healthcheck: each check would be a process in the server's container, on the server's CPUs, every few seconds",
        "# of the measurements and outside their samples. The harness asks GET /id itself, from the host over loopback.",
        "",
        "x-limits: &limits",
        *("  " + line for compose_lines, _ in limits("${BENCH_NOFILE:-20000}") for line in compose_lines.split("\n")),
    ]
    for role in ("server", "upstream"):
        lines += [
            "",
            f"x-{role}: &{role}",
            "  <<: *limits",
            *(_scalar(k, v, indent="  ") for k, v in role_cpus(role).items()),
        ]
    lines += [
        "",
        "services:",
        "  # The load generator: ab, wrk and httperf. The harness runs every tool with "
        f"`docker exec {container_name(LOADGEN)} ...`.",
        "  # No security_opt, cap_drop or read_only of its own: the engine's default seccomp profile, no capability and",
        "  # no privilege to gain, as x-limits gives every service (its writes go to the results mount and /tmp).",
        *entry(LOADGEN, loadgen_entry(), "limits", {}),
    ]
    # the upstream first, then the servers in the order of their folders
    upstream = upstream_of(servers)
    for server in sorted(servers.values(), key=lambda s: not s.has_role("upstream")):
        role = role_of(server)
        lines += [
            "",
            f"  # {server.name}: {server.folder.name}/manifest.toml ({family(server)} family, docker/{family(server)}.Dockerfile)",
            *entry(server.name, server_entry(server, servers), role, role_cpus(role)),
        ]
        if server.needs_upstream and upstream and server is not upstream:
            lines += [f"    depends_on: [{upstream.name}]  # by hand: started first (the harness starts it itself)"]
    return "\n".join(lines) + "\n"


def ensure_compose_file(servers: dict[str, Server] | None = None, path: Path = COMPOSE_FILE) -> bool:
    """Writes docker-compose.yml when it is missing or differs from what the manifests give; True when written."""
    text = render_compose(servers if servers is not None else discover())
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def compose_env(
    plan: CpuPlan, overrides: dict[str, str] | None = None, servers: dict[str, Server] | None = None
) -> dict[str, str]:
    """The variables docker-compose.yml reads: every role's CPU set from the plan, then `overrides`. `servers`: the
    manifests (default: discovered), for the upstream's default URL."""
    env = {}
    for role, cpus in (("server", plan.server), ("upstream", plan.upstream), ("loadgen", plan.loadgen)):
        env.update(cpu_vars(role, list(cpus)))
    uid, gid = os.getuid(), os.getgid()
    env.update(
        {
            "BENCH_NOFILE": str(nofile_limit()),
            "BENCH_RESULTS": str(RESULTS),
            "BENCH_LOADGEN_USER": f"{uid}:{gid}" if uid != 0 else IMAGE_USER,
            "BENCH_UPSTREAM_URL": os.environ.get("BENCH_UPSTREAM_URL") or default_upstream_url(servers or discover()),
            "COMPOSE_PROJECT_NAME": PROJECT,
        }
    )
    env.update(overrides or {})
    return env


def cpu_vars(role: str, cpus: list[int]) -> dict[str, str]:
    """A role's (server, upstream, loadgen) CPU set, quota and core count, as the file's variables."""
    name = role.upper()
    return {
        f"BENCH_{name}_CPUSET": format_cpus(cpus),
        f"BENCH_{name}_CPUS": str(len(cpus)),
        f"BENCH_{name}_CORES": str(len(cpus)),
    }
