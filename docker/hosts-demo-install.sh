#!/usr/bin/env bash
# `make hosts-demo`, first step: installs what docker/hosts-demo.sh needs where it is missing, and leaves the
# machine's own services as it found them, on any exit (an error, Ctrl-C, TERM, HUP):
#   - apt must not start the system sshd, dockerd or containerd (the demo runs its own, in its namespaces): a
#     policy-rc.d that refuses every start is put in place for the install, when there is none, and removed after;
#   - the packages' postinst scripts enable those services for the next boot: each of DEMO_UNITS that this install
#     enabled is disabled again (one that was enabled before is left enabled).
# HOSTS_DEMO_POLICY_RC_D moves the policy file (the tests' stubs; default /usr/sbin/policy-rc.d).
set -euo pipefail
PACKAGES=(docker.io containerd openssh-server busybox-static iputils-ping iproute2)
DEMO_UNITS=(ssh.service ssh.socket docker.service docker.socket containerd.service)
POLICY=${HOSTS_DEMO_POLICY_RC_D:-/usr/sbin/policy-rc.d}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
say() { echo "hosts-demo: $*"; }

missing=""
for bin in dockerd containerd sshd busybox ping ip; do
  command -v "$bin" >/dev/null || [ -x "/usr/sbin/$bin" ] || missing="$missing $bin"
done
[ -n "$missing" ] || exit 0
say "missing:$missing; apt-get install ${PACKAGES[*]}"

# "enabled" or not (disabled, static, not installed, no systemctl): only "enabled" starts a unit at boot
enabled() { command -v systemctl >/dev/null && [ "$(systemctl is-enabled "$1" 2>/dev/null || true)" = enabled ]; }
declare -A was_enabled=()
for unit in "${DEMO_UNITS[@]}"; do was_enabled[$unit]=$(enabled "$unit" && echo 1 || echo 0); done
made_policy=0

restore() {
  local rc=$? unit
  trap '' INT TERM HUP  # a second signal (make passes a TERM on to its recipe) must not cut the restoring short
  trap - EXIT
  set +e
  if [ "$made_policy" = 1 ]; then $SUDO rm -f -- "$POLICY"; fi
  for unit in "${DEMO_UNITS[@]}"; do
    if [ "${was_enabled[$unit]}" = 0 ] && enabled "$unit"; then
      say "disabling $unit: the install enabled it for the next boot (the demo runs its own daemons)"
      $SUDO systemctl disable --quiet "$unit" || say "could not disable $unit: systemctl disable $unit"
    fi
  done
  exit "$rc"
}
# a signal: exit (which restores), further signals ignored from the first instant on
on_signal() { trap '' INT TERM HUP; exit "$1"; }
trap restore EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

if [ ! -e "$POLICY" ]; then
  made_policy=1  # before the file exists: an interrupt between the two still removes it
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod 755 "$POLICY"
fi
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${PACKAGES[@]}" >/dev/null
