#!/usr/bin/env bash
# The base images of the Docker runtime, built locally: no container registry is needed (`make base-images`).
#
#   bench/base:bookworm      Debian bookworm + bookworm-updates + bookworm-security: a debootstrap'ed minimal rootfs
#                            with apt lists, caches, docs and logs dropped, `docker import`ed. Built only when the
#                            public base ($BASE_IMAGE, default debian:bookworm-slim) is not present locally, or OFFLINE=1.
#   bench/<family>:bookworm  the runtime of each image family, `docker build`-ed from docker/<family>.Dockerfile on that
#                            base (apt inside, from Debian's mirror): jvm (OpenJDK 17 JRE), node (no Node.js: each
#                            server brings the one node/package.json pins),
#                            native (nothing more: the rust binary), nginx (nginx + envsubst), loadgen (ab, wrk, httperf, h2load).
#
# Server images (docker/server.Dockerfile) add only the artifacts `make build` made to these; the harness builds them.
#
# Environment: OFFLINE=1 (ignore $BASE_IMAGE, use bench/base), BASE_IMAGE, PULL=1 (try `docker pull $BASE_IMAGE` when
# it is missing instead of building bench/base), REBUILD=1 (rebuild everything), DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR,
# FAMILIES="jvm node" (default: all). Needs root for debootstrap (apt-get install debootstrap).
set -euo pipefail
cd "$(dirname "$0")"

OFFLINE=${OFFLINE:-}
BASE_IMAGE=${BASE_IMAGE:-debian:bookworm-slim}
LOCAL_BASE=bench/base:bookworm
SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
FAMILIES=${FAMILIES:-jvm node native nginx loadgen}
DOCKER=${DOCKER:-docker}

say() { echo "base-images: $*" >&2; }
have_image() { $DOCKER image inspect "$1" >/dev/null 2>&1; }
image_id() { $DOCKER image inspect -f '{{.Id}}' "$1"; }
truthy() { [[ "${1:-}" =~ ^(1|yes|true|on)$ ]]; }

# An engine on plain TCP (no TLS) is refused, as the harness refuses it (loadgen/harness/config/host_roles.py): anyone
# on that network could run containers as root there, and the images built there could be anyone's.
case "${DOCKER_HOST:-}" in
  [Tt][Cc][Pp]://*)
    if [ -z "${DOCKER_TLS_VERIFY:-}" ] && [ "${HOSTS_INSECURE_TCP:-}" != 1 ]; then
      say "DOCKER_HOST=$DOCKER_HOST is plain TCP: anyone on the network could run containers as root there; use unix://, ssh:// or TLS (DOCKER_TLS_VERIFY=1), or HOSTS_INSECURE_TCP=1 to accept it"
      exit 2
    fi ;;
esac

$DOCKER info >/dev/null 2>&1 || { say "no Docker engine answers (docker info failed): make setup-docker, or start dockerd"; exit 1; }

build_local_base() {
  [ "$(id -u)" = 0 ] || { say "debootstrap needs root: sudo make base-images"; exit 1; }
  command -v debootstrap >/dev/null || { say "debootstrap is missing: apt-get install debootstrap"; exit 1; }
  local root
  root=$(mktemp -d /var/tmp/bench-rootfs.XXXXXX)
  # shellcheck disable=SC2064
  trap "umount '$root/proc' 2>/dev/null || true; rm -rf '$root'" EXIT
  say "debootstrap $SUITE (minbase) from $DEBIAN_MIRROR into $root"
  debootstrap --variant=minbase --components=main "$SUITE" "$root" "$DEBIAN_MIRROR" >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; say "debootstrap failed (log above)"; exit 1; }
  rm -f "$root.log"

  # The same suites as Debian's official images: the release, its point-release updates and the security archive.
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $DEBIAN_MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $DEBIAN_SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  # What debian:*-slim does: no services started by package scripts, no docs/man/locales from later installs, apt
  # caches removed after every install.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod 755 "$root/usr/sbin/policy-rc.d"
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
DPKG
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
APT
  echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
  echo 'APT::Install-Recommends "false";' >"$root/etc/apt/apt.conf.d/docker-no-recommends"

  say "adding $SUITE-updates and $SUITE-security"
  mount -t proc proc "$root/proc"
  # (no pty and no _apt sandbox in a bare chroot: apt is told so instead of warning about it)
  local apt=(chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -qq -o APT::Sandbox::User=root -o Dpkg::Use-Pty=0)
  "${apt[@]}" update
  "${apt[@]}" -y -o Dpkg::Options::=--force-confold dist-upgrade >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; say "apt-get dist-upgrade in the new rootfs failed (log above)"; exit 1; }
  rm -f "$root.log"
  "${apt[@]}" clean
  umount "$root/proc"

  # Drop what a container never needs: apt lists and caches, logs, docs (copyrights kept), man pages, locales.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old \
         "$root"/tmp/* "$root"/var/tmp/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
         "$root"/usr/share/groff/* "$root"/usr/share/lintian/*
  find "$root/usr/share/man" -not -type d -delete  # the folders stay: package scripts link man pages into them
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  find "$root/var/log" -type f -delete
  : >"$root/etc/hostname"; rm -f "$root/etc/resolv.conf"; : >"$root/etc/machine-id"

  say "docker import -> $LOCAL_BASE"
  tar --numeric-owner --xattrs -C "$root" -c . | $DOCKER import \
    -c 'ENV LANG=C.UTF-8' -c 'CMD ["bash"]' \
    -m "debootstrap --variant=minbase $SUITE ($DEBIAN_MIRROR) + $SUITE-updates + $SUITE-security" - "$LOCAL_BASE" >/dev/null
  rm -rf "$root"; trap - EXIT
}

# 1. Which base: the public image where it is present (unless OFFLINE=1), else bench/base from debootstrap.
if ! truthy "$OFFLINE" && ! have_image "$BASE_IMAGE" && truthy "${PULL:-}"; then
  say "pulling $BASE_IMAGE"; $DOCKER pull -q "$BASE_IMAGE" >/dev/null || say "could not pull $BASE_IMAGE"
fi
if ! truthy "$OFFLINE" && have_image "$BASE_IMAGE"; then
  base=$BASE_IMAGE
  say "base: $BASE_IMAGE (present locally)"
else
  base=$LOCAL_BASE
  why=$(truthy "$OFFLINE" && echo "OFFLINE=1" || echo "$BASE_IMAGE is not present (PULL=1 pulls it)")
  if truthy "${REBUILD:-}" || ! have_image "$LOCAL_BASE"; then
    say "base: $LOCAL_BASE, building it from Debian ($why)"
    started=$(date +%s); build_local_base; say "$LOCAL_BASE built in $(( $(date +%s) - started )) s"
  else
    say "base: $LOCAL_BASE (present; $why)"
  fi
fi
base_id=$(image_id "$base")

# 2. The family runtimes, rebuilt when missing, built on another base or from another Dockerfile. No context: the Dockerfile comes on stdin.
for family in $FAMILIES; do
  tag=bench/$family:$SUITE
  recipe=$(sha256sum <"$family.Dockerfile" | cut -c1-16)
  if ! truthy "${REBUILD:-}" && have_image "$tag" && [ "$($DOCKER image inspect -f \
       '{{index .Config.Labels "bench.base-id"}} {{index .Config.Labels "bench.recipe"}}' "$tag")" = "$base_id $recipe" ]; then
    say "$tag is up to date"
    continue
  fi
  say "building $tag from $base (docker/$family.Dockerfile)"
  started=$(date +%s)
  # --network host: the build's apt talks to Debian's mirror from the host's network (no bridge network is used)
  old_id=$($DOCKER image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
  log=$(mktemp)
  if ! $DOCKER build --force-rm --network host --build-arg "BASE=$base" --label "bench.base=$base" \
      --label "bench.base-id=$base_id" --label "bench.family=$family" --label "bench.recipe=$recipe" -t "$tag" - <"$family.Dockerfile" >"$log" 2>&1; then
    tail -30 "$log" >&2; rm -f "$log"; say "building $tag failed (output above)"; exit 1
  fi
  rm -f "$log"
  # the previous build of this tag, now untagged: removed unless something still uses it
  [ -z "$old_id" ] || [ "$old_id" = "$(image_id "$tag")" ] || $DOCKER rmi "$old_id" >/dev/null 2>&1 || true
  say "$tag built in $(( $(date +%s) - started )) s ($($DOCKER image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
done
