# Runtime of the nginx server (static files, and the upstream of /weather/{city}): Debian's nginx, the same package as
# a local run, and envsubst for nginx/run.sh. `make base-images` builds it as bench/nginx:bookworm; the server image
# adds run.sh and the config template; the static files are bind-mounted (docker-compose.yml).
# BASE: debian:bookworm-slim, or bench/base:bookworm (debootstrap, docker/base-images.sh) where no registry answers.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN set -eux; export DEBIAN_FRONTEND=noninteractive; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends nginx gettext-base; \
    apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log /var/cache/debconf/*-old; \
    groupadd --system --gid 10001 bench; \
    useradd --system --uid 10001 --gid bench --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin bench; \
    # nginx opens its compiled-in error log before it reads our config (which logs to stderr): let the user write there
    chown -R bench:bench /var/log/nginx /var/lib/nginx
USER bench
