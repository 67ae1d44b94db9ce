#!/usr/bin/env bash
# Starts Debian's nginx in the foreground with this folder's config (never the system service).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export HOST=${HOST:-127.0.0.1} PORT=${PORT:-8000} STATIC_DIR=${STATIC_DIR:-$here/static}
export SERVER_CORES=${SERVER_CORES:-$(nproc)}
export RUN_DIR=${RUN_DIR:-$(mktemp -d)}
# As root, nginx would hand its workers to 'nobody', who may not read a checkout under /root.
if [ "$(id -u)" = 0 ]; then export USER_DIRECTIVE="user root;"; else export USER_DIRECTIVE=""; fi
mkdir -p "$RUN_DIR"
envsubst '${HOST} ${PORT} ${STATIC_DIR} ${SERVER_CORES} ${RUN_DIR} ${USER_DIRECTIVE}' \
  < "$here/nginx.conf.template" > "$RUN_DIR/nginx.conf"
nginx=$(command -v nginx || echo /usr/sbin/nginx)
exec "$nginx" -p "$RUN_DIR" -c "$RUN_DIR/nginx.conf"
