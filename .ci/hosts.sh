#!/usr/bin/env bash
# CI, the several-hosts path (after .ci/docker.sh, whose Docker engine and base images it uses): the three namespaced
# hosts of `make hosts-demo` (each with its own containerd, dockerd and sshd), the HOSTS integration test against them
# (build, ping, a wrk and an ab scenario with server, load generator and upstream on separate hosts, a short `bench`
# with its A/A twin on the server's host, Ctrl-C), then `make hosts-demo-down`, and a check that nothing of it is
# left: no namespace, daemon, container, link or listener.
# Traffic goes only to the namespaces the demo creates (10.213.77.0/24 through bench-h0).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

started=$(date +%s)
trap 'make hosts-demo-down >/dev/null 2>&1 || true' EXIT
make hosts-demo
cd loadgen
../.venv/bin/python -m pytest -q -rs tests/test_hosts_demo.py
cd ..
make hosts-demo-down
trap - EXIT

left=""
ip netns list | grep -q '^bench-h-' && left="$left namespaces:$(ip netns list | grep '^bench-h-' | cut -d' ' -f1 | tr '\n' ' ')"
ip link show bench-h0 >/dev/null 2>&1 && left="$left link:bench-h0"
pgrep -af 'bench-hosts' >/dev/null && left="$left processes:$(pgrep -af bench-hosts | tr '\n' ';')"
ss -Hltn | grep -q '10\.213\.77\.' && left="$left listeners:$(ss -Hltn | grep '10\.213\.77\.' | tr '\n' ';')"
[ -e /run/bench-hosts ] && left="$left /run/bench-hosts"
[ -z "$left" ] || { echo "hosts-demo-down left:$left"; exit 1; }
echo "hosts path: $(( $(date +%s) - started )) s, nothing left"
