#!/usr/bin/env bash
# Starts Debian's nginx in the foreground with this folder's config (never the system service).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export HOST=${HOST:-127.0.0.1} PORT=${PORT:-8000} STATIC_DIR=${STATIC_DIR:-$here/static}
export SERVER_CORES=${SERVER_CORES:-$(nproc)}
export RUN_DIR=${RUN_DIR:-$(mktemp -d)}
# Started as root (the harness run by root), the master binds and reads its config as root, its workers serve as
# `nobody`: they only read the static files, which a checkout under /root (mode 700) would hide from nobody, so then
# the files are served from a world-readable copy. Started by another user, nginx runs as that user alone.
# The copy is a fresh directory of mktemp's (never a predictable path another user could have made or linked first),
# root's own and writable by no one else, removed when nginx exits; its path is kept in $RUN_DIR/static-copy so that
# the next start removes one a SIGKILL left.
export USER_DIRECTIVE=""
copy=""
remove_left_copy() {
  local left
  left=$(cat "$RUN_DIR/static-copy" 2>/dev/null || true)
  # only a name mktemp gave below (no other folder, no `..`), a directory of root's, not a link
  if [[ "$left" =~ ^/tmp/bench-nginx-static\.[A-Za-z0-9]{10}$ ]] && [ -d "$left" ] && [ ! -L "$left" ] \
      && [ "$(stat -c %u "$left")" = 0 ]; then
    rm -rf -- "$left"
  fi
  rm -f -- "$RUN_DIR/static-copy"
}
if [ "$(id -u)" = 0 ]; then
  export USER_DIRECTIVE="user nobody nogroup;"
  if ! runuser -u nobody -- test -r "$STATIC_DIR/hello"; then
    mkdir -p "$RUN_DIR"
    remove_left_copy
    trap 'rm -rf -- "$copy"; rm -f -- "$RUN_DIR/static-copy"' EXIT
    copy=$(mktemp -d /tmp/bench-nginx-static.XXXXXXXXXX)
    printf '%s\n' "$copy" > "$RUN_DIR/static-copy"
    cp -r "$STATIC_DIR/." "$copy/"
    chmod -R u=rwX,go=rX "$copy"
    STATIC_DIR=$copy
  fi
fi
# Cleartext HTTP/2 (prior knowledge) on a port of its own when the harness sets H2C_PORT (CONTRACT.md).
if [ -n "${H2C_PORT:-}" ]; then
  export H2C_LISTEN="listen $HOST:$H2C_PORT http2 reuseport backlog=4096;"
else
  export H2C_LISTEN=""
fi
mkdir -p "$RUN_DIR"
envsubst '${HOST} ${PORT} ${STATIC_DIR} ${SERVER_CORES} ${RUN_DIR} ${USER_DIRECTIVE} ${H2C_LISTEN}' \
  < "$here/nginx.conf.template" > "$RUN_DIR/nginx.conf"
nginx=$(command -v nginx || echo /usr/sbin/nginx)
if [ -z "$copy" ]; then
  exec "$nginx" -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf"
fi
# With a copy to remove, nginx runs as this script's child: a signal to the script (or its process group, as the
# harness stops servers) is passed on, and the script exits with nginx's status once nginx is gone (the EXIT trap).
"$nginx" -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf" &
nginx_pid=$!
trap 'kill -TERM "$nginx_pid" 2>/dev/null || true' TERM INT HUP QUIT
status=0
wait "$nginx_pid" || status=$?
while [ "$status" -gt 128 ] && kill -0 "$nginx_pid" 2>/dev/null; do
  status=0
  wait "$nginx_pid" || status=$?
done
exit "$status"
