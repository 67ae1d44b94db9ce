"""The Docker runtime (RUNTIME=docker): every server in its own container, the load tools in the `loadgen` container.

Compose drives the containers (`docker compose`, or Debian's `docker-compose` v1; $COMPOSE from the Makefile picks one),
with the top-level docker-compose.yml that compose.py generates from the servers' manifests (`render_compose`; it is
rewritten when a server folder is added, so adding a server still means only adding a folder). The harness keeps
running on the host:

- start: builds the server's image when it is missing or older than its artifacts (the jars, binary, scripts and
  node_modules `make build` made: docker/server.Dockerfile on the family runtime bench/<family>:bookworm), then
  `compose run -d --no-deps --name bench-<server> <service>` with the CPU set of the session's CpuPlan in the
  environment (an A/A twin: its server's service, under its own name and port), waits for GET /id from the host like
  the local runtime (no healthcheck runs in a container), and records the CPUs the container's main process may actually run on (read back from the
  kernel, checked against `docker inspect`) in RunningServer.cpus.
- every service uses the host's network and listens on 127.0.0.1: no bridge network, load never goes to a bridge address.
- tool_process: `docker exec bench-loadgen <tool>` in a long-running loadgen container started with the load generator's
  cpuset; output streamed to the host file, side files written through the bind-mounted results folder.
- pin: `docker update --cpuset-cpus/--cpus`; pids: the container's processes as the host sees them; stop: docker stop+rm.

One machine is the case of one host: engine_runtime.py (EngineRuntime) is the one engine-backed runtime, told where
each role runs; one_host.py (DockerRuntime) starts the containers through Compose on the local engine, several_hosts.py
(HostsRuntime, HOSTS=...) with `docker run` on each role's engine. Both start containers that service.py describes
(Service: compose.py writes docker-compose.yml from them, the several-hosts path its `docker run` options).

The other modules: engine.py (the docker and compose command lines, what the engine reports), engine_api.py (its HTTP
API, the cgroup counters), images.py, transfer.py (images sent to a host), compose.py (the file and its variables),
process.py (a tool in the loadgen container), by_hand.py (`python -m harness.containers
compose-file|images|env|down|clean`, the Makefile's docker targets).
"""

from __future__ import annotations

from harness.containers.engine import compose_command, engine_answers
from harness.containers.one_host import DockerRuntime

__all__ = ["DockerRuntime", "compose_command", "engine_answers"]
