#!/usr/bin/env bash
# `make setup RUNTIME=docker` (or `make setup-docker`): what the Docker runtime needs on a Debian machine.
#   1. apt-get install docker.io docker-compose debootstrap, where missing (Compose v2, `docker compose`, is used
#      instead of Debian's v1 `docker-compose` when its plugin is installed);
#   2. a running Docker engine: when `docker info` does not answer, start one: `systemctl start docker` where systemd
#      runs, else `dockerd` in the background (log: /var/log/dockerd.log), trying in turn
#        - the defaults (overlay2, iptables): what works on the reference machine (Debian bookworm, kernel 6.x, root),
#        - --iptables=false --bridge=none (sandboxes without netfilter; the runtime uses only the host network),
#        - the same with --storage-driver=vfs (no overlay filesystem: slow to build, runs the same).
#      DOCKERD_FLAGS="..." forces a set of flags (split on blanks, each one argument of dockerd's: never shell text);
#      DOCKERD_LOG moves the log.
set -euo pipefail
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
say() { echo "setup-docker: $*" >&2; }

missing=""
command -v docker >/dev/null || missing="$missing docker.io"
command -v dockerd >/dev/null || [ -x /usr/sbin/dockerd ] || missing="$missing docker.io"
{ docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null; } || missing="$missing docker-compose"
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing="$missing debootstrap"
missing=$(echo "$missing" | tr ' ' '\n' | sort -u | xargs)
if [ -n "$missing" ]; then
  say "installing $missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq $missing >/dev/null
fi

answers() { timeout 10 docker info >/dev/null 2>&1; }
if answers; then
  say "a Docker engine answers ($(docker info --format '{{.ServerVersion}}, {{.Driver}}'))"
  exit 0
fi
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
  say "starting docker (systemctl start docker)"
  $SUDO systemctl start docker && for _ in $(seq 30); do answers && break; sleep 1; done
fi
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
# start_dockerd FLAG...: each flag one argument of dockerd's. The root shell's script is a constant; the log and the
# flags reach it as its positional parameters, never as shell text (a flag with `;` or `$(...)` runs nothing).
start_dockerd() {
  say "starting dockerd $* (log: $DOCKERD_LOG)"
  local pid
  # shellcheck disable=SC2016  # $1, $@ and $! are the inner shell's
  pid=$($SUDO sh -c 'log=$1; shift; nohup dockerd "$@" >>"$log" 2>&1 </dev/null & echo $!' start-dockerd "$DOCKERD_LOG" "$@")
  # $SUDO: dockerd runs as root, and a non-root user's plain `kill -0` on it fails (EPERM) even while it starts
  for _ in $(seq 30); do answers && return 0; $SUDO kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  $SUDO kill -TERM "$pid" 2>/dev/null || true  # the one just started, which never answered
  sleep 2
  return 1
}
if ! answers; then
  if [ -n "${DOCKERD_FLAGS:-}" ]; then
    read -r -a flags <<<"$DOCKERD_FLAGS"  # split on blanks only: no globbing, no expansion, no command
    start_dockerd "${flags[@]}"
  else
    start_dockerd || start_dockerd --iptables=false --bridge=none \
      || start_dockerd --iptables=false --bridge=none --storage-driver=vfs
  fi
fi
if answers; then
  say "a Docker engine answers ($(docker info --format '{{.ServerVersion}}, {{.Driver}}'))"
else
  say "no Docker engine answers; see $DOCKERD_LOG"
  exit 1
fi
