#!/usr/bin/env bash
# A three-host topology on one machine (issue 13, first part): `server`, `loadgen` and `upstream`, each a
# network namespace with its own address, containerd, dockerd and sshd, so that the harness can address them the
# way it will address real machines (HOSTS="server=ssh://root@... ...") before it has real machines.
#
#   docker/hosts-demo.sh up            build it (idempotent: when it is already up, says so and prints HOSTS again)
#   docker/hosts-demo.sh down [--purge] remove it; --purge also deletes the image stores in /var/lib/bench-hosts
#   docker/hosts-demo.sh status        each host: namespace, daemons, address, what its engine answers
#   docker/hosts-demo.sh line          the HOSTS value to use with it (what `up` prints)
#
# Layout (10.213.77.0/24, nothing else is touched):
#
#   root namespace (the harness)          bench-h-net (a namespace that only holds the bridge)
#     bench-h0 10.213.77.1/24  --veth--    p-root ---+
#                                                     br0 --- p-server   --veth-- eth0 10.213.77.2  bench-h-server
#                                                      |----- p-loadgen  --veth-- eth0 10.213.77.3  bench-h-loadgen
#                                                      '----- p-upstream --veth-- eth0 10.213.77.4  bench-h-upstream
#
# The bridge lives in its own namespace so that nothing is bridged, forwarded or routed in the root namespace: the
# root namespace only gets one veth with an address in the /24, enough for the harness to reach each host's sshd.
#
# Why each host runs its OWN containerd: a container's processes are started by a containerd-shim, and the shim
# inherits the network namespace of the containerd that spawns it. A `--network host` container has no namespace
# of its own, so it lives wherever its shim lives. If the hosts' dockerds all used the system containerd
# (/run/containerd/containerd.sock, in the root namespace), every "host network" container would land in the root
# namespace. So: containerd is started inside the host's namespace and that host's dockerd uses it (--containerd).
#
# Why nsenter --net and not `ip netns exec`: `ip netns exec` also gives the process a private mount namespace.
# dockerd mounts each container's overlay rootfs and hands the path to containerd/runc; if the two daemons were in
# different mount namespaces, runc would see an empty directory. nsenter --net changes only the network namespace,
# so all daemons share the root mount namespace (and `down` unmounts whatever they leave under our directories).
#
# Why cgroupfs and a relative --cgroup-parent (bench-h-<role>): several dockerds on one machine must not fight
# over the same cgroups. With the cgroupfs driver, a relative parent puts each host's containers under
# <the cgroup this script runs in>/bench-h-<role>/<id>, distinct per host, and keeps them inside whatever limits
# the caller's cgroup has (an absolute parent, Docker's default /docker, would escape them).
#
# Files: /run/bench-hosts/<role>/ (sockets, pid files, logs, configs, ssh host key; removed by `down`),
#        /run/bench-hosts/cgroups (the per-host cgroups runc makes, bench-h-<role> under containerd's own cgroups:
#          `down` removes these, never another bench-h-* cgroup of the machine),
#        /var/lib/bench-hosts/<role>/ (image stores; kept by `down` so the next `up` is fast; `down --purge`),
#        /etc/ssh/ssh_config.d/bench-hosts.conf (how the harness's ssh reaches the three hosts, and only them; removed
#          by `down`, which puts back a file of that name that was there before `up`: see write_ssh_config).
#
# HOSTS_DEMO_FAIL_AT=netns|containerd|dockerd|sshd|image makes `up` fail after that step (tests the cleanup).
set -euo pipefail

ROLES=(server loadgen upstream)
declare -A ADDR=([server]=10.213.77.2 [loadgen]=10.213.77.3 [upstream]=10.213.77.4)
SUBNET=10.213.77.0/24
ROOT_ADDR=10.213.77.1
NET_NS=bench-h-net      # holds the bridge
BRIDGE=br0
ROOT_VETH=bench-h0      # the root namespace's end of its veth to the bridge
RUN=/run/bench-hosts
LIB=/var/lib/bench-hosts
SSH_CONF=/etc/ssh/ssh_config.d/bench-hosts.conf
SSH_CONF_MARK="# bench-hosts: written by docker/hosts-demo.sh"  # its first line: the file is ours to remove
SSH_DIR=$RUN/ssh        # the harness's key pair, the hosts' authorized_keys, the known_hosts file
IMAGE=bench-hosts/busybox:latest  # a tiny image (busybox-static), imported into each host: there is no registry
STOP_TIMEOUT=${HOSTS_DEMO_STOP_TIMEOUT:-15}   # seconds between TERM and KILL
START_TIMEOUT=${HOSTS_DEMO_START_TIMEOUT:-60}
FAIL_AT=${HOSTS_DEMO_FAIL_AT:-}

say() { echo "hosts-demo: $*"; }
warn() { echo "hosts-demo: $*" >&2; }
die() { warn "$*"; exit 1; }
ns_of() { echo "bench-h-$1"; }
sock_of() { echo "$RUN/$1/docker.sock"; }
# The Docker CLI against one host's engine through its unix socket. DOCKER_HOST/DOCKER_CONTEXT from the caller's
# environment are dropped so that they cannot redirect us to another engine.
dk() { local role=$1; shift; env -u DOCKER_HOST -u DOCKER_CONTEXT docker -H "unix://$(sock_of "$role")" "$@"; }
ns_exists() { [ -e "/run/netns/$1" ]; }
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }

# pid_alive FILE NAME: the pid in FILE runs a process called NAME (a stale pid file, or a pid reused by another
# program, does not count: we only ever signal our own daemons).
pid_alive() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(tr -dc 0-9 <"$1")
  [ -n "$pid" ] && proc_is "$pid" "$2"
}
# proc_is PID NAME: PID runs NAME and is not a zombie (a KILLed daemon stays a zombie until init reaps it).
proc_is() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && [ "$(echo "${stat##*) }" | cut -c1)" != Z ]
}

# routed_here ADDR: ADDR goes out through our veth. Anything that uses ssh:// asks this first: with the topology
# down, 10.213.77.* would follow the default route off the machine, and no packet of ours may leave it.
routed_here() { ip -4 route get "$1" 2>/dev/null | grep -q " dev $ROOT_VETH "; }

engine_answers() { timeout 10 env -u DOCKER_HOST -u DOCKER_CONTEXT docker -H "unix://$(sock_of "$1")" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

require_tools() {
  local missing="" t
  for t in ip nsenter unshare setsid findmnt timeout containerd containerd-shim-runc-v2 runc dockerd docker sshd ssh ssh-keygen busybox ping; do
    command -v "$t" >/dev/null || [ -x "/usr/sbin/$t" ] || missing="$missing $t"
  done
  [ -z "$missing" ] || die "missing:$missing. Install them with: make hosts-demo (apt-get install docker.io containerd openssh-server busybox-static iputils-ping iproute2)"
  [ "$(id -u)" = 0 ] || die "must run as root (network namespaces, daemons)"
}

# ---------------------------------------------------------------------------------------------------------- down

# stop_pidfile FILE NAME: TERM the daemon, KILL it if it is still there after STOP_TIMEOUT seconds.
stop_pidfile() {
  local file=$1 name=$2 pid i
  pid_alive "$file" "$name" || return 0
  pid=$(tr -dc 0-9 <"$file")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
    proc_is "$pid" "$name" || return 0
    sleep 0.2
  done
  warn "$name ($pid) did not stop within ${STOP_TIMEOUT}s: KILL"
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.5
}

# Every process in namespace NS, with its descendants (a container with a namespace of its own is a child of a
# shim that is in NS). After the daemons have stopped, what is left here is ours: shims, containers.
ns_procs() {
  local ns=$1 roots
  ns_exists "$ns" || return 0
  roots=$(ip netns pids "$ns" 2>/dev/null | grep -vx "$$" || true)
  [ -n "$roots" ] || return 0
  ps -e -o pid=,ppid= | awk -v roots="$roots" '
    BEGIN { n = split(roots, r, "\n"); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { parent[$1] = $2 }
    END { changed = 1
          while (changed) { changed = 0
            for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 } }
          for (p in keep) if (p in parent) print p }'
}

# A containerd-shim's socket is a file under /run/containerd/s/ (containerd 1.6 puts it there whatever its --state),
# named by a hash; a shim that is KILLed leaves it behind. Unix sockets belong to the network namespace they were
# made in, so the ones that `ss` lists inside one of our namespaces are our shims'.
shim_sockets() {
  in_ns "$1" ss -xlnH 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ "^/run/containerd/s/[0-9a-f]+$") print $i }' | sort -u
}

kill_ns_procs() {
  local ns=$1 pids i socks
  pids=$(ns_procs "$ns")
  [ -n "$pids" ] || return 0
  socks=$(shim_sockets "$ns")
  warn "$ns: stopping leftover processes: $(echo $pids)"
  kill -TERM $pids 2>/dev/null || true
  # Wait on the pids themselves: once its shim is gone, a container's init is no longer a descendant of anything
  # in the namespace, and a container's pid 1 ignores TERM unless it handles it.
  local left
  for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
    left=""
    for p in $pids; do [ -e "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] && left="$left $p"; done
    [ -n "$left" ] || break
    sleep 0.2
  done
  if [ -n "$left" ]; then kill -KILL $left 2>/dev/null || true; sleep 0.5; fi
  [ -z "$socks" ] || rm -f $socks
}

# Whatever dockerd/containerd left mounted under our directories (overlay rootfs, shm, netns bind mounts):
# deepest first, then lazily if a mount is still busy.
unmount_ours() {
  local m
  for m in $(findmnt -rn -o TARGET | grep -E "^($RUN|$LIB)(/|$)" | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || warn "could not unmount $m"
  done
}

# cgroup_dir CONTROLLERS PATH: the folder of the cgroup PATH of the hierarchy with CONTROLLERS (a line of
# /proc/<pid>/cgroup: "" for cgroup v2), where that hierarchy is mounted; fails when it is not.
cgroup_dir() {
  local want=$1 path=$2 target="" fsroot=""
  read -r target fsroot < <(findmnt -rn -t cgroup,cgroup2 -o TARGET,FSTYPE,FSROOT,OPTIONS | awk -v want="$want" '
    want == "" && $2 == "cgroup2" { print $1, $3; exit }
    want != "" && $2 == "cgroup" { n = split(want, w, ","); m = split($4, o, ","); ok = 1
      for (i = 1; i <= n; i++) { hit = 0; for (j = 1; j <= m; j++) if (o[j] == w[i]) hit = 1; if (!hit) ok = 0 }
      if (ok) { print $1, $3; exit } }') || return 1
  [ -n "$target" ] || return 1
  [ "$fsroot" = / ] || { case $path in "$fsroot"|"$fsroot"/*) path=${path#"$fsroot"} ;; *) return 1 ;; esac; }
  echo "$target${path%/}"
}

# The cgroups runc will make for ROLE's containers: with cgroupfs it resolves the relative --cgroup-parent
# bench-h-<role> against its own cgroups, which are its shim's, which are ROLE's containerd's. Recorded when that
# containerd runs, one folder a line in $RUN/cgroups, for `down` (which may run in other cgroups than `up`).
record_cgroups() {
  local role=$1 pid controllers path dir
  pid=$(tr -dc 0-9 <"$RUN/$role/containerd.pid")
  while IFS=: read -r _ controllers path; do
    if dir=$(cgroup_dir "$controllers" "$path"); then echo "$dir/$(ns_of "$role")" >>"$RUN/cgroups"; fi
  done <"/proc/$pid/cgroup"
}

# The cgroups `up` recorded (bench-h-<role>, and a container's <id> under it when its shim was killed), deepest
# first; nothing else (another bench-h-* on the machine is not ours). rmdir never removes a cgroup with tasks.
remove_cgroups() {
  local d
  [ -s "$RUN/cgroups" ] || return 0
  sort -u "$RUN/cgroups" | while read -r d; do
    case $d in /sys/fs/cgroup/*) ;; *) continue ;; esac
    case ${d##*/} in bench-h-server|bench-h-loadgen|bench-h-upstream) ;; *) continue ;; esac
    if [ -d "$d" ]; then find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
  done
}

# The ssh client configuration is ours when it starts with our mark, or with the first line an earlier version of
# this script wrote (a file of that name that was there before `up` was moved to $RUN/ssh_config.saved, and `down`
# puts it back).
ours_ssh_conf() {
  [ -f "$SSH_CONF" ] || return 1
  case "$(head -n 1 "$SSH_CONF")" in "$SSH_CONF_MARK"*|"# The bench hosts of docker/hosts-demo.sh (removed by 'docker/hosts-demo.sh down')"*) return 0 ;; esac
  return 1
}
restore_ssh_conf() {
  if ours_ssh_conf; then rm -f "$SSH_CONF"; fi
  if [ -e "$RUN/ssh_config.saved" ]; then mv -f "$RUN/ssh_config.saved" "$SSH_CONF"; fi
  if [ -e "$RUN/created-ssh-config-dir" ]; then rmdir "$(dirname "$SSH_CONF")" 2>/dev/null || true; fi
}

do_down() {
  local purge=${1:-} role ns
  # 1. containers, through each host's own engine (while it still answers).
  for role in "${ROLES[@]}"; do
    if [ -S "$(sock_of "$role")" ] && engine_answers "$role"; then
      local ids
      ids=$(dk "$role" ps -aq 2>/dev/null || true)
      [ -z "$ids" ] || timeout 60 env -u DOCKER_HOST -u DOCKER_CONTEXT docker -H "unix://$(sock_of "$role")" rm -f $ids >/dev/null 2>&1 || true
    fi
  done
  # 2. the ssh connections the harness's docker commands share (ControlMaster), then the daemons, by their pid
  #    files: dockerd before the containerd it uses, sshd last.
  #    (`ssh -O exit` only speaks to the local control socket: no packet is sent when there is none)
  for role in "${ROLES[@]}"; do
    ssh -o ControlPath="$SSH_DIR/cm-%C" -O exit "root@${ADDR[$role]}" >/dev/null 2>&1 || true
  done
  for role in "${ROLES[@]}"; do stop_pidfile "$RUN/$role/dockerd.pid" dockerd; stop_pidfile "$RUN/$role/dockerd.launch-pid" dockerd; done
  for role in "${ROLES[@]}"; do stop_pidfile "$RUN/$role/containerd.pid" containerd; done
  for role in "${ROLES[@]}"; do stop_pidfile "$RUN/$role/sshd.pid" sshd; done
  # 3. anything still in our namespaces (shims of a killed containerd, a daemon whose pid file was never written).
  for role in "${ROLES[@]}"; do kill_ns_procs "$(ns_of "$role")"; done
  kill_ns_procs "$NET_NS"
  # 4. mounts, namespaces, the root-side veth (deleting a namespace deletes the veths inside it).
  unmount_ours
  for ns in "${ROLES[@]/#/bench-h-}" "$NET_NS"; do
    if ns_exists "$ns"; then ip netns delete "$ns" 2>/dev/null || warn "could not delete namespace $ns"; fi
  done
  if ip link show "$ROOT_VETH" >/dev/null 2>&1; then ip link delete "$ROOT_VETH"; fi
  # 5. cgroups and files (from what $RUN recorded: the cgroups, what `up` changed outside $RUN), then $RUN.
  remove_cgroups
  restore_ssh_conf
  if [ -e "$RUN/created-run-sshd" ]; then rmdir /run/sshd 2>/dev/null || true; fi
  rm -rf "$RUN"
  if [ "$purge" = --purge ]; then
    unmount_ours
    rm -rf "$LIB"
  fi
}

# ------------------------------------------------------------------------------------------------------ status

# health: prints what is missing, one item a line; nothing when the whole topology is up.
health() {
  local role ns
  for ns in "${ROLES[@]/#/bench-h-}" "$NET_NS"; do ns_exists "$ns" || echo "namespace $ns"; done
  ip link show "$ROOT_VETH" >/dev/null 2>&1 || echo "root veth $ROOT_VETH"
  ours_ssh_conf || echo "$SSH_CONF"
  [ -f "$RUN/up-complete" ] || echo "$RUN/up-complete (the last up did not finish)"
  for role in "${ROLES[@]}"; do
    pid_alive "$RUN/$role/containerd.pid" containerd || echo "$role: containerd"
    pid_alive "$RUN/$role/dockerd.pid" dockerd || echo "$role: dockerd"
    pid_alive "$RUN/$role/sshd.pid" sshd || echo "$role: sshd"
    engine_answers "$role" || echo "$role: engine at $(sock_of "$role")"
  done
}

# Anything of ours on the machine at all (to tell "down" from "half up").
any_trace() {
  local ns
  for ns in "${ROLES[@]/#/bench-h-}" "$NET_NS"; do ns_exists "$ns" && return 0; done
  ip link show "$ROOT_VETH" >/dev/null 2>&1 && return 0
  [ -e "$RUN" ] || ours_ssh_conf
}

# The namespaces share this machine's CPUs (each engine reports all of them), so the line gives each role its own
# CPUs: the harness's one-machine plan (loadgen/harness/basics/cpus.py), in HOSTS' cpus= form (0-3.6 for 0,1,2,3,6).
role_cpus() {
  PYTHONPATH="$(dirname "$0")/../loadgen" python3 -c '
from harness.basics.cpus import plan
p = plan()
print(" ".join(".".join(map(str, getattr(p, r))) for r in ("server", "loadgen", "upstream")))'
}

hosts_line() {
  local cpus
  read -r -a cpus <<<"$(role_cpus)"
  echo "HOSTS=\"server=ssh://root@${ADDR[server]},cpus=${cpus[0]} loadgen=ssh://root@${ADDR[loadgen]},cpus=${cpus[1]} upstream=ssh://root@${ADDR[upstream]},cpus=${cpus[2]}\""
}

print_usage_note() {
  hosts_line
  local role
  echo "  (copy the line above; each role is a network namespace with its own dockerd, reached over ssh; they share"
  echo "   this machine's CPUs, so the line gives each its own, as a one-machine run would)"
  for role in "${ROLES[@]}"; do
    printf '  %-8s %-12s namespace %-17s engine: ssh://root@%s or unix://%s\n' "$role" "${ADDR[$role]}" "$(ns_of "$role")" "${ADDR[$role]}" "$(sock_of "$role")"
  done
  echo "  e.g. docker -H ssh://root@${ADDR[server]} ps; ip netns exec bench-h-loadgen curl http://${ADDR[server]}:8080/"
  echo "  remove it with: make hosts-demo-down (docker/hosts-demo.sh down; --purge also drops the image stores)"
}

do_status() {
  local role ns d answer rc=0
  for role in "${ROLES[@]}"; do
    ns=$(ns_of "$role")
    d=""
    for daemon in containerd dockerd sshd; do
      if pid_alive "$RUN/$role/$daemon.pid" "$daemon"; then d="$d $daemon:$(tr -dc 0-9 <"$RUN/$role/$daemon.pid")"; else d="$d $daemon:down"; rc=1; fi
    done
    ns_exists "$ns" || rc=1
    if ! routed_here "${ADDR[$role]}"; then
      rc=1; answer="not asked: ${ADDR[$role]} is not routed through $ROOT_VETH (the topology is down)"
    elif ! answer=$(timeout 20 env -u DOCKER_HOST -u DOCKER_CONTEXT docker -H "ssh://root@${ADDR[$role]}" info --format '{{.Name}} {{.ServerVersion}} {{.CgroupDriver}}' 2>&1); then
      rc=1; answer="no answer: $(echo "$answer" | grep -v '^[[:space:]]*$' | head -1)"
    fi
    printf '%-8s namespace %-17s %-7s address %-12s%s\n         engine (ssh://root@%s): %s\n' \
      "$role" "$ns" "$(ns_exists "$ns" && echo present || echo absent)" "${ADDR[$role]}" "$d" "${ADDR[$role]}" "$answer"
  done
  printf '%-8s namespace %-17s %s; root veth %s: %s\n' net "$NET_NS" "$(ns_exists "$NET_NS" && echo present || echo absent)" \
    "$ROOT_VETH" "$(ip -br -4 addr show "$ROOT_VETH" 2>/dev/null | awk '{print $3}' || true)"
  [ "$rc" = 0 ] && hosts_line
  return "$rc"
}

# -------------------------------------------------------------------------------------------------------- up

STEP="starting"
UP_OK=0
maybe_fail() { if [ "$FAIL_AT" = "$1" ]; then die "HOSTS_DEMO_FAIL_AT=$1: failing on purpose after step '$1'"; fi; }

# On any failure of `up` (an error, Ctrl-C, TERM): keep the logs, tear the half-built topology down, explain.
up_exit() {
  local rc=$?
  [ "$UP_OK" = 1 ] && return 0
  set +e
  trap - EXIT INT TERM HUP
  local keep="$LIB/last-failure"
  rm -rf "$keep"; mkdir -p "$keep"
  for f in "$RUN"/*/*.log; do [ -e "$f" ] && cp "$f" "$keep/$(basename "$(dirname "$f")")-$(basename "$f")"; done
  warn "up FAILED while: $STEP (exit $rc)."
  warn "removing the half-built topology (the same as: docker/hosts-demo.sh down) ..."
  do_down >&2
  if any_trace; then
    warn "some of it could not be removed: run 'docker/hosts-demo.sh down' and check 'ip netns list'."
  else
    warn "removed; nothing of the topology is left."
  fi
  if ls "$keep"/*.log >/dev/null 2>&1; then warn "daemon logs kept in $keep/."; fi
  warn "fix the cause and run 'make hosts-demo' again."
  exit "$rc"
}

write_containerd_config() {
  local role=$1
  cat >"$RUN/$role/containerd.toml" <<EOF
# containerd for the bench host '$role' (docker/hosts-demo.sh): runs in namespace $(ns_of "$role"), so its shims
# and the host-network containers they start live there too. No CRI, no TCP listener, its own directories.
version = 2
root = "$LIB/$role/containerd"
state = "$RUN/$role/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "$RUN/$role/containerd/containerd.sock"

[ttrpc]
  address = "$RUN/$role/containerd/containerd.sock.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$LIB/$role/containerd-opt"
EOF
}

# Why a system-wide ssh client file at all: the harness reaches the hosts as it would real machines, through the
# Docker CLI's ssh:// transport (HOSTS=ssh://root@...), which runs plain `ssh` with no way to pass -F, -i or -o; so
# the demo's key, its known_hosts and batch mode can only come from ssh's configuration. A drop-in of ours (Debian's
# /etc/ssh/ssh_config includes ssh_config.d/*.conf) rather than an edit of the caller's own ~/.ssh/config; it applies
# to the three addresses of the demo alone and names only files under $SSH_DIR (removed by `down`).
write_ssh_config() {
  if [ -e "$SSH_CONF" ] && ! ours_ssh_conf; then mv "$SSH_CONF" "$RUN/ssh_config.saved"; fi  # `down` puts it back
  if [ ! -d "$(dirname "$SSH_CONF")" ]; then mkdir -p "$(dirname "$SSH_CONF")"; touch "$RUN/created-ssh-config-dir"; fi
  cat >"$SSH_CONF" <<EOF
$SSH_CONF_MARK (removed by 'docker/hosts-demo.sh down')
# The three bench hosts of the demo, and no other address: key login as root with the demo's own key and known_hosts
# (in $SSH_DIR), no prompts.
Host ${ADDR[server]} ${ADDR[loadgen]} ${ADDR[upstream]}
  User root
  IdentityFile $SSH_DIR/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $SSH_DIR/known_hosts
  StrictHostKeyChecking accept-new
  BatchMode yes
  ConnectTimeout 10
  # one connection per host, shared by the harness's many short docker commands (0.5 s each without, 0.2 s with)
  ControlMaster auto
  ControlPath $SSH_DIR/cm-%C
  ControlPersist 60
EOF
  chmod 644 "$SSH_CONF"
}

write_sshd_config() {
  local role=$1
  cat >"$RUN/$role/sshd_config" <<EOF
# sshd for the bench host '$role' (docker/hosts-demo.sh): listens only on the host's address, in its namespace.
ListenAddress ${ADDR[$role]}:22
HostKey $RUN/$role/ssh_host_ed25519_key
PidFile $RUN/$role/sshd.pid
AuthorizedKeysFile $SSH_DIR/authorized_keys
PermitRootLogin prohibit-password
AllowUsers root
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
X11Forwarding no
PrintMotd no
# 'docker -H ssh://root@${ADDR[$role]}' runs 'docker system dial-stdio' here: this points it at the host's own engine.
SetEnv DOCKER_HOST=unix://$(sock_of "$role")
EOF
}

# wait_for WHAT PIDFILE NAME LOG CMD...: until CMD succeeds; fail early if the daemon has died.
wait_for() {
  local what=$1 pidfile=$2 name=$3 log=$4 i; shift 4
  for ((i = 0; i < START_TIMEOUT * 4; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    if [ -n "$pidfile" ] && [ $i -gt 8 ] && ! pid_alive "$pidfile" "$name"; then
      warn "$what died; last lines of $log:"; tail -n 15 "$log" >&2 || true
      return 1
    fi
    sleep 0.25
  done
  warn "$what did not answer within ${START_TIMEOUT}s; last lines of $log:"; tail -n 15 "$log" >&2 || true
  return 1
}

# The tiny image: busybox-static's binary and a page for httpd, built once (cached in $LIB/image).
image_tar() {
  local tar=$LIB/image/busybox-rootfs.tar root
  if [ ! -s "$tar" ]; then
    root=$(mktemp -d)
    mkdir -p "$root/bin" "$root/www" "$root/tmp" "$root/etc"
    cp "$(command -v busybox)" "$root/bin/busybox"
    for a in sh httpd wget cat ls sleep hostname ip ps grep echo; do ln -s busybox "$root/bin/$a"; done
    echo "hello from a bench host" >"$root/www/index.html"
    echo "root:x:0:0:root:/:/bin/sh" >"$root/etc/passwd"
    mkdir -p "$LIB/image"
    tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$tar.tmp" .
    mv "$tar.tmp" "$tar"
    rm -rf "$root"
  fi
  echo "$tar"
}

do_up() {
  require_tools
  local problems role ns
  if any_trace; then
    problems=$(health)
    if [ -z "$problems" ]; then
      say "already up (docker/hosts-demo.sh status for details)."
      print_usage_note
      return 0
    fi
    say "found a partial topology (missing: $(echo "$problems" | paste -sd, -)); removing it before building anew"
    do_down
  fi
  # The subnet must be ours alone: refuse if something else in the root namespace already uses it.
  if ip -4 route show to match "${ADDR[server]}" | grep -v '^default' | grep -q .; then
    die "$SUBNET is already routed in the root namespace ($(ip -4 route show to match "${ADDR[server]}" | grep -v '^default' | head -1)); not touching it"
  fi

  trap up_exit EXIT
  trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP

  STEP="creating directories"
  mkdir -p "$RUN" "$SSH_DIR" "$LIB"
  chmod 755 "$RUN" "$LIB"; chmod 700 "$SSH_DIR"
  for role in "${ROLES[@]}"; do mkdir -p "$RUN/$role" "$LIB/$role"; done

  STEP="creating the network namespaces, the bridge and the veths"
  say "network: namespaces ${ROLES[*]/#/bench-h-} and $NET_NS (bridge $BRIDGE), $SUBNET"
  for ns in "$NET_NS" "${ROLES[@]/#/bench-h-}"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
  ip -n "$NET_NS" link add "$BRIDGE" type bridge
  ip -n "$NET_NS" link set "$BRIDGE" up
  for role in "${ROLES[@]}"; do
    ns=$(ns_of "$role")
    ip -n "$NET_NS" link add "p-$role" type veth peer name eth0 netns "$ns"
    ip -n "$NET_NS" link set "p-$role" master "$BRIDGE" up
    ip -n "$ns" addr add "${ADDR[$role]}/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  ip link add "$ROOT_VETH" type veth peer name p-root netns "$NET_NS"
  ip -n "$NET_NS" link set p-root master "$BRIDGE" up
  ip addr add "$ROOT_ADDR/24" dev "$ROOT_VETH"
  ip link set "$ROOT_VETH" up

  STEP="checking the path between loadgen and server (ping)"
  local mtu
  mtu=$(cat "/sys/class/net/$ROOT_VETH/mtu")
  # The first packets can be lost while the bridge ports come up: retry the reachability check a few times.
  for _ in 1 2 3 4 5 6 7 8 9 10; do in_ns bench-h-loadgen ping -c 1 -W 1 "${ADDR[server]}" >/dev/null 2>&1 && break; sleep 0.5; done
  say "path loadgen -> server: $(in_ns bench-h-loadgen ping -c 3 -i 0.2 -W 2 "${ADDR[server]}" | tail -2 | paste -sd' ' -)"
  if in_ns bench-h-loadgen ping -c 1 -W 2 -M do -s $((mtu - 28)) "${ADDR[server]}" >/dev/null 2>&1; then
    say "path MTU loadgen -> server: $mtu (a $((mtu - 28))-byte ping with don't-fragment passes)"
  else
    die "a full-size ($mtu) don't-fragment ping from loadgen to server fails"
  fi
  for role in "${ROLES[@]}"; do ping -c 1 -W 2 "${ADDR[$role]}" >/dev/null || die "the root namespace does not reach $role (${ADDR[$role]})"; done
  maybe_fail netns

  STEP="starting containerd in each namespace"
  for role in "${ROLES[@]}"; do
    write_containerd_config "$role"
    # setsid: the daemons must not get the caller's terminal signals (Ctrl-C on make). $! is containerd itself:
    # setsid does not fork here (no job control, so the child is no group leader) and nsenter execs.
    setsid nsenter --net="/run/netns/$(ns_of "$role")" containerd --config "$RUN/$role/containerd.toml" \
      </dev/null >>"$RUN/$role/containerd.log" 2>&1 &
    echo $! >"$RUN/$role/containerd.pid"
  done
  for role in "${ROLES[@]}"; do
    wait_for "$role: containerd" "$RUN/$role/containerd.pid" containerd "$RUN/$role/containerd.log" \
      ctr --address "$RUN/$role/containerd/containerd.sock" version
    record_cgroups "$role"
  done
  maybe_fail containerd

  STEP="starting dockerd in each namespace"
  for role in "${ROLES[@]}"; do
    echo '{}' >"$RUN/$role/daemon.json"   # so that /etc/docker/daemon.json (the system engine's) is not read
    # unshare --uts + hostname: the engine reports bench-h-<role> as its Name (and host-network containers get it).
    setsid nsenter --net="/run/netns/$(ns_of "$role")" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$(ns_of "$role")" \
      dockerd --config-file "$RUN/$role/daemon.json" \
        --containerd "$RUN/$role/containerd/containerd.sock" \
        --data-root "$LIB/$role/docker" --exec-root "$RUN/$role/docker-exec" --pidfile "$RUN/$role/dockerd.pid" \
        -H "unix://$(sock_of "$role")" \
        --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --userland-proxy=false \
        --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "$(ns_of "$role")" \
      </dev/null >>"$RUN/$role/dockerd.log" 2>&1 &
    echo $! >"$RUN/$role/dockerd.launch-pid"   # dockerd writes dockerd.pid itself (it refuses an existing one)
  done
  for role in "${ROLES[@]}"; do
    wait_for "$role: dockerd" "$RUN/$role/dockerd.launch-pid" dockerd "$RUN/$role/dockerd.log" engine_answers "$role"
  done
  maybe_fail dockerd

  STEP="starting sshd in each namespace"
  [ -f "$SSH_DIR/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C bench-hosts -f "$SSH_DIR/id_ed25519"
  cp "$SSH_DIR/id_ed25519.pub" "$SSH_DIR/authorized_keys"; chmod 600 "$SSH_DIR/authorized_keys"
  : >"$SSH_DIR/known_hosts"
  write_ssh_config
  if [ ! -d /run/sshd ]; then mkdir -p /run/sshd; chmod 755 /run/sshd; touch "$RUN/created-run-sshd"; fi  # sshd's privilege separation directory
  for role in "${ROLES[@]}"; do
    ssh-keygen -q -t ed25519 -N '' -C "bench-h-$role" -f "$RUN/$role/ssh_host_ed25519_key"
    write_sshd_config "$role"
    /usr/sbin/sshd -t -f "$RUN/$role/sshd_config"
    # sshd daemonizes itself and writes its pid file.
    nsenter --net="/run/netns/$(ns_of "$role")" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$(ns_of "$role")" \
      /usr/sbin/sshd -f "$RUN/$role/sshd_config" -E "$RUN/$role/sshd.log" </dev/null
  done
  for role in "${ROLES[@]}"; do
    routed_here "${ADDR[$role]}" || die "${ADDR[$role]} is not routed through $ROOT_VETH"
    wait_for "$role: sshd" "" sshd "$RUN/$role/sshd.log" ssh "root@${ADDR[$role]}" true
    pid_alive "$RUN/$role/sshd.pid" sshd || die "$role: sshd answers but its pid file $RUN/$role/sshd.pid is not right"
  done
  maybe_fail sshd

  STEP="importing the tiny image $IMAGE into each engine"
  local tar
  tar=$(image_tar)
  for role in "${ROLES[@]}"; do
    dk "$role" image inspect "$IMAGE" >/dev/null 2>&1 || dk "$role" import --change 'CMD ["/bin/sh"]' "$tar" "$IMAGE" >/dev/null
  done
  maybe_fail image

  STEP="asking each engine over ssh"
  for role in "${ROLES[@]}"; do
    routed_here "${ADDR[$role]}" || die "${ADDR[$role]} is not routed through $ROOT_VETH"
    say "$role: ssh://root@${ADDR[$role]} answers: $(timeout 30 env -u DOCKER_HOST -u DOCKER_CONTEXT docker -H "ssh://root@${ADDR[$role]}" info --format '{{.Name}} {{.ServerVersion}} {{.CgroupDriver}}')"
  done

  touch "$RUN/up-complete"   # an `up` that was killed before this line is found partial by the next one
  UP_OK=1
  trap - EXIT INT TERM HUP
  say "up."
  print_usage_note
}

case "${1:-}" in
  up) do_up ;;
  down)
    [ "$(id -u)" = 0 ] || die "must run as root"
    [ "${2:-}" = "" ] || [ "${2:-}" = --purge ] || die "usage: $0 down [--purge]"
    do_down "${2:-}"
    if any_trace; then die "down: something is left (ip netns list; ls $RUN)"; fi
    say "down.$([ "${2:-}" = --purge ] && echo " Image stores removed ($LIB)." || echo " Image stores kept in $LIB (down --purge removes them).")"
    ;;
  status) do_status ;;
  line) hosts_line | sed 's/^HOSTS="//; s/"$//' ;;  # the HOSTS value alone, for scripts and tests
  *) echo "usage: $0 up | down [--purge] | status | line" >&2; exit 2 ;;
esac
