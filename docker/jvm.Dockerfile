# Runtime of the JVM servers (akka, finagle, pekko, play, socko, spray): Debian's OpenJDK 17 JRE, headless.
# `make base-images` builds it as bench/jvm:bookworm; a server image adds only its jar (docker/server.Dockerfile).
# BASE: debian:bookworm-slim, or bench/base:bookworm (debootstrap, docker/base-images.sh) where no registry answers.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN set -eux; export DEBIAN_FRONTEND=noninteractive; \
    apt-get update -qq; \
    mkdir -p /usr/share/man/man1; \
    apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless; \
    apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old; \
    groupadd --system --gid 10001 bench; \
    useradd --system --uid 10001 --gid bench --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin bench
USER bench
