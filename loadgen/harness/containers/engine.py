"""The Docker engine and Compose as the harness calls them: their command lines, whether an engine answers, and what
it reports about containers and images (read back from the engine and the kernel, never assumed)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from harness.basics.cpus import parse_cpus
from harness.config.host_roles import check_docker_host
from harness.runtime.protocol import RuntimeFailure, indent


def run_cli(
    argv: list[str],
    timeout: float = 120,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """A docker or compose command; unless `check` is off, a failure raises RuntimeFailure with the end of its output."""
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, input=input)
    except FileNotFoundError as exc:
        raise RuntimeFailure(
            f"{argv[0]} is not installed: make setup-docker (apt-get install docker.io docker-compose)"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise RuntimeFailure(f"`{shlex.join(argv)}` did not finish within {timeout:g} s") from exc
    if check and proc.returncode != 0:
        output = (proc.stdout + proc.stderr).decode(errors="replace").strip()
        raise RuntimeFailure(
            f"`{shlex.join(argv)}` failed (exit {proc.returncode}):\n" + indent(output[-3000:] or "(no output)")
        )
    return proc


def engine_answers(timeout: float = 10) -> tuple[bool, str]:
    """Whether a Docker engine answers `docker info`, and a sentence saying so (or why not). A DOCKER_HOST on plain
    TCP is not asked: HostsError, unless HOSTS_INSECURE_TCP=1 (config/host_roles.py, check_docker_host)."""
    check_docker_host()
    if not shutil.which("docker"):
        return False, "the docker command is not installed"
    try:
        proc = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=timeout
        )
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
    if shutil.which("docker") and run_cli(["docker", "compose", "version"], timeout=30, check=False).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise RuntimeFailure(
        "neither `docker compose` (v2) nor `docker-compose` (v1) is installed: "
        "make setup-docker (apt-get install docker-compose)"
    )


def inspect(container: str, where: Sequence[str] = ()) -> dict[str, Any] | None:
    """The engine's `docker inspect` of a container, None when there is none. `where`: the Docker CLI's options that
    address another engine (harness/config/host_roles.py's docker_args); default the local one."""
    proc = run_cli(["docker", *where, "inspect", "--type", "container", container], check=False, timeout=30)
    if proc.returncode != 0:
        return None
    info: dict[str, Any] = json.loads(proc.stdout)[0]
    return info


def image_labels(image: str, where: Sequence[str] = ()) -> dict[str, str] | None:
    """An image's labels and its id ("id"), None when the engine has no such image."""
    proc = run_cli(
        ["docker", *where, "image", "inspect", "--format", "{{json .Config.Labels}} {{.Id}}", image],
        check=False,
        timeout=30,
    )
    if proc.returncode != 0:
        return None
    labels, _, image_id = proc.stdout.decode().strip().rpartition(" ")
    return {**(json.loads(labels) or {}), "id": image_id}


def image_bytes(image: str, where: Sequence[str] = ()) -> int | None:
    """An image's size as the engine reports it (`docker image inspect`), None when it cannot say."""
    proc = run_cli(["docker", *where, "image", "inspect", "--format", "{{.Size}}", image], check=False, timeout=30)
    text = proc.stdout.decode().strip()
    return int(text) if proc.returncode == 0 and text.isdigit() else None


def container_log(container: str, lines: int = 15, where: Sequence[str] = ()) -> str:
    """The last `lines` of a container's output, indented for an error message."""
    proc = run_cli(["docker", *where, "logs", "--tail", str(lines), container], check=False)
    return indent((proc.stdout + proc.stderr).decode(errors="replace").rstrip() or "(empty log)")


def follow_log(container: str, path: str, where: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """The container's output appended to `path` as it comes (like a local server's log), until it ends."""
    with open(path, "ab") as log:
        return subprocess.Popen(
            ["docker", *where, "logs", "-f", container],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def piped(stream: IO[bytes] | None, what: str) -> IO[bytes]:
    """A pipe of a Popen opened with subprocess.PIPE for it, which Popen always makes: RuntimeFailure otherwise."""
    if stream is None:
        raise RuntimeFailure(f"{what} has no pipe (a process opened without subprocess.PIPE for it)")
    return stream


def allowed_cpus(pid: int) -> list[int]:
    """The CPUs the kernel lets `pid` run on: what a cpuset really applies."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return list(parse_cpus(line.split(":", 1)[1].strip()))
    raise RuntimeFailure(f"no Cpus_allowed_list in /proc/{pid}/status")


def container_facts(c: dict[str, Any], allowed: list[int]) -> dict[str, Any]:
    """A container's CPU set, quota, memory, open-file limit, network and image as the engine applied them (`c`: its
    `docker inspect`), and `allowed`, the CPUs its main process may run on as the kernel says."""
    host = c["HostConfig"]
    return {
        "container": c["Name"].lstrip("/"),
        "image": c["Config"]["Image"],
        "image_id": c["Image"],
        "cpuset": host["CpusetCpus"],
        "cpus": host["NanoCpus"] / 1e9 or None,
        "allowed_cpus": allowed,
        "memory_bytes": host["Memory"] or None,
        "ulimits": host.get("Ulimits"),
        "network_mode": host["NetworkMode"],
        "user": c["Config"].get("User"),
    }


def compose_version(compose: list[str]) -> str:
    proc = run_cli([*compose, "version", "--short"], check=False)
    return proc.stdout.decode().strip() or "?"
