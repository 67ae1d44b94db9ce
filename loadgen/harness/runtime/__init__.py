"""Runtimes start and stop servers and run load tools, pinned to CPUs. `local` runs host processes, `docker` containers.

The shared types live in runtime/protocol.py and runtime/state.py (the runtimes import them from there, so this
package's own import of the runtimes below is no cycle) and are re-exported here for the harness's other modules."""

from __future__ import annotations

from harness.basics.cpus import CpuPlan
from harness.basics.messages import say
from harness.runtime import docker
from harness.runtime.local import LocalRuntime
from harness.runtime.protocol import RunningServer, Runtime, RuntimeFailure
from harness.runtime.state import State

__all__ = ["RunningServer", "Runtime", "RuntimeFailure", "State", "get_runtime"]


def get_runtime(name: str, plan: CpuPlan | None) -> Runtime:
    """`local`, `docker`, or `auto` (the default): docker when a Docker engine answers and Compose is installed, else
    local; auto says which it chose and why. `plan`: the session's CPU plan, the one the containers get (None for a
    command that starts nothing, such as `make build`)."""
    name = (name or "auto").strip().lower()
    if name == "auto":
        answers, why = docker.engine_answers()
        if answers:
            try:
                docker.compose_command()
            except RuntimeFailure as exc:
                answers, why = False, f"{why}, but {exc}"
        name = "docker" if answers else "local"
        say(f"runtime: {name} (RUNTIME=auto: {why}; RUNTIME=local or RUNTIME=docker chooses)")
    if name == "local":
        return LocalRuntime()
    if name == "docker":
        return docker.DockerRuntime(plan)
    raise RuntimeFailure(f"unknown runtime {name!r}: use RUNTIME=auto (the default), docker or local")
