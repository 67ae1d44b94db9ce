"""`python -m harness.containers compose-file|images|env|down|clean`: what the Makefile's docker targets run."""

from __future__ import annotations

import shlex
import sys

from harness.basics.cpus import plan_from_env
from harness.basics.messages import say
from harness.config.host_roles import HostsError
from harness.config.manifest import ManifestError, discover, select
from harness.containers.compose import COMPOSE_FILE, compose_env, ensure_compose_file
from harness.containers.engine import engine_answers, run_cli
from harness.containers.images import build_images
from harness.containers.one_host import DockerRuntime
from harness.containers.service import STOP_GRACE_S
from harness.runtime.protocol import RuntimeFailure


def main(argv: list[str]) -> int:
    """compose-file | images [server...] | env | down | clean: what the Makefile's docker targets run."""
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
                raise RuntimeFailure(f"cannot build images: {why}")
            servers = discover()
            ensure_compose_file(servers)
            build_images(select(servers, names or None))
            return 0
        if command in ("down", "clean"):
            ok, why = engine_answers()
            if not ok:
                say(f"nothing to do: {why}")
                return 0
            runtime = DockerRuntime(plan_from_env())
            runtime.prepare()
            runtime.compose_run("down", "--remove-orphans", "-t", str(STOP_GRACE_S), timeout=STOP_GRACE_S + 120)
            if command == "clean":  # the server images; the base images (bench/*:bookworm) stay
                images = (
                    run_cli(
                        [
                            "docker",
                            "images",
                            "--filter",
                            "reference=bench/server-*",
                            "--format",
                            "{{.Repository}}:{{.Tag}}",
                        ]
                    )
                    .stdout.decode()
                    .split()
                )
                if images:
                    run_cli(["docker", "rmi", *images])
                say(f"removed {len(images)} server image(s); base images kept")
            return 0
    except (RuntimeFailure, ManifestError, HostsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(main.__doc__, file=sys.stderr)
    return 2
