# Every server image: its family's runtime (bench/<family>:bookworm, docker/<family>.Dockerfile) plus exactly the
# `artifacts` of its manifest, as `make build` made them on the host, so Docker and local runs measure the same bytes.
# The harness (loadgen/harness/runtime/docker/images.py) streams the build context: this file and app/ = the artifacts,
# paths relative to the server's folder. The command, environment and limits come from docker-compose.yml.
ARG RUNTIME_IMAGE
FROM ${RUNTIME_IMAGE}
ARG APP_DIR
COPY app/ ${APP_DIR}/
WORKDIR ${APP_DIR}
USER bench
