#!/usr/bin/env bash
# CI, the Docker path (besides .ci/run's local one), on a fresh Debian machine as root, no container registry needed:
#   1. apt-get install docker.io docker-compose debootstrap, and a Docker engine started (make setup-docker: systemctl,
#      else dockerd in the background, with fallbacks for sandboxes; see docker/setup-docker.sh);
#   2. make build: the artifacts every image copies;
#   3. the base images built offline: debootstrap bookworm (+updates, +security) and `docker import` (OFFLINE=1);
#   4. the integration tests: images built, nginx + rust + node up through the CLI with RUNTIME=docker, ping, a few
#      seconds of ab, wrk and httperf each, down; no healthcheck in a server container; a short `bench` with its A/A
#      twin (rust-twin: rust's image and service in a container of its own); then the faults under Docker. It fails if a container or a server
#      image is left behind.
# Base images (bench/*:bookworm) stay for the next run. The engine, when this script started it, is left running.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

started=$(date +%s)
make setup RUNTIME=docker
make build RUNTIME=local
# the families the tests' servers use (nginx, rust, node; finagle for the memory and crash faults) and the load
# generator's
OFFLINE=1 FAMILIES="nginx native node jvm loadgen" make base-images
cd loadgen
# the test skips (rather than fails) without an engine; here an engine must answer
../.venv/bin/python -c 'from harness.containers import engine_answers; ok, why = engine_answers(); print(why); raise SystemExit(not ok)'
# the Docker runtime, then the faults under Docker (a container killed mid-load or for memory, a killed harness's
# containers cleared by `down`): on a fresh machine `make test` ran before the engine, so it skipped these
../.venv/bin/python -m pytest -q -rs tests/test_docker_runtime.py tests/test_docker_faults.py \
  "tests/test_faults_during_run.py::test_a_container_killed_during_an_attempt_costs_its_record_not_the_run" \
  tests/test_harness_faults.py "tests/test_h2.py::test_nginx_and_rust_are_verified_over_h2c_and_measured_beside_their_http1_baseline[docker]" \
  -k "docker or container"
cd ..
leftover=$(docker ps -aq --filter label=com.docker.compose.project=bench)
[ -z "$leftover" ] || { echo "containers left behind: $leftover"; exit 1; }
echo "docker path: $(( $(date +%s) - started )) s"
