# Runtime of native executables (the rust server, built on the host by `make build` against bookworm's glibc):
# the base OS and the unprivileged user, nothing else. `make base-images` builds it as bench/native:bookworm.
# BASE: debian:bookworm-slim, or bench/base:bookworm (debootstrap, docker/base-images.sh) where no registry answers.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN groupadd --system --gid 10001 bench && \
    useradd --system --uid 10001 --gid bench --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin bench
USER bench
