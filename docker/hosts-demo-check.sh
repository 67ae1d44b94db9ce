#!/usr/bin/env bash
# Smoke check of the three-host topology of docker/hosts-demo.sh (run it after `up`; exits non-zero when any
# property fails). What it proves:
#   1. each host's engine answers on its unix socket and over ssh:// (the Docker CLI runs `docker system
#      dial-stdio` through the host's sshd, whose SetEnv DOCKER_HOST points at the host's own dockerd), and the
#      answer comes from that host (its engine's Name is bench-h-<role>); a `docker context` over ssh works too;
#   2. a `--network host` container started through the server host's dockerd lives in bench-h-server: it listens
#      on 10.213.77.2:8080 there, not in the root namespace nor in another host, its network namespace is
#      bench-h-server's, and the loadgen namespace reaches it across the bridge;
#   3. `docker run --cpuset-cpus 0` works on each host (cgroupfs, a distinct cgroup parent bench-h-<role>);
#   4. `docker save | docker load` moves an image from one host's engine to another's (unix:// and ssh://);
#   5. the engines are separate: a container of the server host is not in the loadgen host's `docker ps`.
# Everything it creates (a container, image tags, docker contexts) is removed on exit.
set -euo pipefail

declare -A ADDR=([server]=10.213.77.2 [loadgen]=10.213.77.3 [upstream]=10.213.77.4)
ROLES=(server loadgen upstream)
RUN=/run/bench-hosts
IMAGE=bench-hosts/busybox:latest
WEB=bench-hc-web            # the test container on the server host
CHECK_TAG=bench-hosts/saveload:check
CTX=bench-h-server          # a docker context, created and removed in a throw-away DOCKER_CONFIG

failures=0
pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
dk() { local role=$1; shift; env -u DOCKER_HOST -u DOCKER_CONTEXT docker -H "unix://$RUN/$role/docker.sock" "$@"; }
dssh() { local role=$1; shift; env -u DOCKER_HOST -u DOCKER_CONTEXT timeout 60 docker -H "ssh://root@${ADDR[$role]}" "$@"; }

# The docker context is made in a throw-away client config (DOCKER_CONFIG), not in ~/.docker: the user's own
# contexts are left alone, and nothing is left behind.
CTX_CONFIG=$(mktemp -d /tmp/bench-hosts-check.XXXXXX)
cleanup() {
  set +e
  rm -rf "$CTX_CONFIG"
  dk server rm -f "$WEB" >/dev/null 2>&1
  for role in server loadgen; do dk "$role" image rm "$CHECK_TAG" >/dev/null 2>&1; done
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "must run as root" >&2; exit 2; }
for role in "${ROLES[@]}"; do
  [ -S "$RUN/$role/docker.sock" ] || { echo "the topology is not up ($RUN/$role/docker.sock missing): make hosts-demo" >&2; exit 2; }
done
# Every ssh:// below must go through the topology's veth: were 10.213.77.* not routed there, it would follow the
# default route off the machine.
for role in "${ROLES[@]}"; do
  ip -4 route get "${ADDR[$role]}" | grep -q ' dev bench-h0 ' \
    || { echo "${ADDR[$role]} is not routed through bench-h0 (the topology is not up): make hosts-demo" >&2; exit 2; }
done
cleanup  # leftovers of an interrupted earlier check

# 1. engines: unix socket and ssh://, from the right host; a docker context over ssh.
for role in "${ROLES[@]}"; do
  if v=$(dk "$role" version --format '{{.Server.Version}}' 2>&1); then pass "$role: unix://$RUN/$role/docker.sock answers ($v)"; else fail "$role: unix socket: $v"; fi
  if a=$(dssh "$role" info --format '{{.Name}} {{.ServerVersion}}' 2>&1) && a=$(echo $a) && [ "${a%% *}" = "bench-h-$role" ]; then
    pass "$role: docker -H ssh://root@${ADDR[$role]} info -> $a"
  else
    fail "$role: docker -H ssh://root@${ADDR[$role]} info -> $(echo "$a" | grep -v '^[[:space:]]*$' | head -1)"
  fi
done
ctx() { env -u DOCKER_HOST -u DOCKER_CONTEXT DOCKER_CONFIG="$CTX_CONFIG" timeout 60 docker "$@"; }
if out=$(ctx context create "$CTX" --docker "host=ssh://root@${ADDR[server]}" 2>&1) \
   && out=$(ctx --context "$CTX" ps 2>&1) \
   && n=$(ctx --context "$CTX" info --format '{{.Name}}' 2>&1) && [ "$n" = bench-h-server ]; then
  pass "docker context $CTX (ssh://root@${ADDR[server]}): ps works, info Name=$n"
else
  fail "docker context over ssh: $out ${n:-}"
fi
ctx context rm -f "$CTX" >/dev/null 2>&1 || fail "docker context rm $CTX"

# 2. a host-network container on the server host lives in bench-h-server.
if dk server run -d --name "$WEB" --network host "$IMAGE" httpd -f -p "${ADDR[server]}:8080" -h /www >/dev/null; then
  for _ in $(seq 40); do ip netns exec bench-h-server ss -ltnH "sport = :8080" | grep -q "${ADDR[server]}:8080" && break; sleep 0.25; done
  if ip netns exec bench-h-server ss -ltnH "sport = :8080" | grep -q "${ADDR[server]}:8080"; then
    pass "server: the container listens on ${ADDR[server]}:8080 in namespace bench-h-server"
  else
    fail "server: no listener on ${ADDR[server]}:8080 in bench-h-server ($(ip netns exec bench-h-server ss -ltnH | paste -sd' ' -))"
  fi
  if ss -ltnH "sport = :8080" | grep -q .; then fail "root namespace: something listens on :8080 ($(ss -ltnH 'sport = :8080'))"; else pass "root namespace: no listener on :8080"; fi
  for role in loadgen upstream; do
    if ip netns exec "bench-h-$role" ss -ltnH "sport = :8080" | grep -q .; then fail "bench-h-$role: has a listener on :8080"; else pass "bench-h-$role: no listener on :8080"; fi
  done
  pid=$(dk server inspect -f '{{.State.Pid}}' "$WEB")
  if [ "$(stat -L -c %i "/proc/$pid/ns/net")" = "$(stat -L -c %i /run/netns/bench-h-server)" ]; then
    pass "server: the container's network namespace is bench-h-server's (inode $(stat -L -c %i /run/netns/bench-h-server))"
  else
    fail "server: the container (pid $pid) is not in bench-h-server's network namespace"
  fi
  if body=$(ip netns exec bench-h-loadgen curl -sS --max-time 5 "http://${ADDR[server]}:8080/" 2>&1) && [ "$body" = "hello from a bench host" ]; then
    pass "loadgen -> server: curl http://${ADDR[server]}:8080/ from bench-h-loadgen -> '$body'"
  else
    fail "loadgen -> server: curl http://${ADDR[server]}:8080/ -> $body"
  fi
  # 5. separate engines.
  if dk loadgen ps -a --format '{{.Names}}' | grep -qx "$WEB"; then fail "the loadgen engine lists the server's container"; else pass "the loadgen engine does not see the server's container"; fi
else
  fail "server: docker run --network host $IMAGE httpd failed"
fi

# 3. --cpuset-cpus 0 on each host, in its own cgroup parent.
for role in "${ROLES[@]}"; do
  if out=$(dk "$role" run --rm --network host --cpuset-cpus 0 "$IMAGE" sh -c 'grep Cpus_allowed_list /proc/self/status; grep cpuset /proc/self/cgroup; hostname' 2>&1) \
     && grep -q 'Cpus_allowed_list:[[:space:]]*0$' <<<"$out" && grep -q "/bench-h-$role/" <<<"$out"; then
    pass "$role: docker run --cpuset-cpus 0 -> $(echo "$out" | sed 's/[[:space:]]\+/ /g' | paste -sd' ' - | cut -c1-110)"
  else
    fail "$role: docker run --cpuset-cpus 0 -> $out"
  fi
done

# 4. save | load between engines: unix sockets, then over ssh (the harness's way).
dk loadgen tag "$IMAGE" "$CHECK_TAG"
if dk loadgen save "$CHECK_TAG" | dk server load >/dev/null && dk server image inspect "$CHECK_TAG" >/dev/null 2>&1; then
  pass "docker save $CHECK_TAG (loadgen, unix://) | docker load (server, unix://)"
else
  fail "save | load over unix sockets"
fi
dk server image rm "$CHECK_TAG" >/dev/null
if dssh loadgen save "$CHECK_TAG" | dssh server load >/dev/null 2>&1 && dk server image inspect "$CHECK_TAG" >/dev/null 2>&1; then
  pass "docker -H ssh://root@${ADDR[loadgen]} save | docker -H ssh://root@${ADDR[server]} load"
else
  fail "save | load over ssh"
fi

if [ "$failures" = 0 ]; then echo "hosts-demo-check: all passed"; else echo "hosts-demo-check: $failures FAILED"; exit 1; fi
