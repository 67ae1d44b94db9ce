"""Which runtime a command uses (RUNTIME): local processes or Docker containers, or whichever this machine has."""

from __future__ import annotations

from harness import containers
from harness.basics.cpus import CpuPlan
from harness.basics.messages import say
from harness.runtime import Runtime, RuntimeFailure
from harness.runtime.local import LocalRuntime


def get_runtime(name: str, plan: CpuPlan | None) -> Runtime:
    """`local`, `docker`, or `auto` (the default): docker when a Docker engine answers and Compose is installed, else
    local; auto says which it chose and why. `plan`: the session's CPU plan, the one the containers get (None for a
    command that starts nothing, such as `make build`)."""
    name = (name or "auto").strip().lower()
    if name == "auto":
        answers, why = containers.engine_answers()
        if answers:
            try:
                containers.compose_command()
            except RuntimeFailure as exc:
                answers, why = False, f"{why}, but {exc}"
        name = "docker" if answers else "local"
        say(f"runtime: {name} (RUNTIME=auto: {why}; RUNTIME=local or RUNTIME=docker chooses)")
    if name == "local":
        return LocalRuntime()
    if name == "docker":
        return containers.DockerRuntime(plan)
    raise RuntimeFailure(f"unknown runtime {name!r}: use RUNTIME=auto (the default), docker or local")
