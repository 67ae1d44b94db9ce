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
export USER_DIRECTIVE=""
if [ "$(id -u)" = 0 ]; then
  export USER_DIRECTIVE="user nobody nogroup;"
  if ! runuser -u nobody -- test -r "$STATIC_DIR/hello"; then
    copy=/tmp/bench-nginx-static-$PORT
    rm -rf "$copy" && mkdir -p "$copy" && cp -r "$STATIC_DIR/." "$copy/" && chmod -R a+rX "$copy"
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
exec "$nginx" -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf"
