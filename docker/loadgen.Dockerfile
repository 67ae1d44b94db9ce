# The load generator: ab (apache2-utils), wrk, httperf and h2load (nghttp2-client) from Debian, the same packages as a local run, a JRE for
# Gatling, and ping (with HOSTS the harness measures the round-trip time and path MTU to the server's host with it);
# oha and Gatling themselves are built on the host (.tools/oha, loadgen/gatling/target) and run from the mount.
# `make base-images` builds it as bench/loadgen:bookworm; the compose service `loadgen` runs it with its own cpuset and
# the harness `docker exec`s every tool run into it (the repository is bind-mounted read-only at /bench, the results
# folder read-write at /bench/results).
# BASE: debian:bookworm-slim, or bench/base:bookworm (debootstrap, docker/base-images.sh) where no registry answers.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN set -eux; export DEBIAN_FRONTEND=noninteractive; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends apache2-utils wrk httperf nghttp2-client openjdk-17-jre-headless iputils-ping; \
    apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old; \
    groupadd --system --gid 10001 bench; \
    useradd --system --uid 10001 --gid bench --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin bench
USER bench
WORKDIR /bench
