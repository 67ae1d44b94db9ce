# The user's commands. Every target takes SERVERS="node rust", PROFILE=quick|seed, RUNTIME=auto|docker|local, PORTS="node=9090".
# `make bench` is the main job; `make test` runs the project's tests. See README.md.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HARNESS = cd loadgen && ../$(PY) -m harness
# A value as one shell word, whatever it holds (spaces, ;, quotes, $(...)): inside '...' with each ' written '\''
quote = '$(subst ','\'',$(1))'
SERVERS ?=
PROFILE ?= quick
RUNTIME ?= auto
export SERVERS PROFILE RUNTIME PORTS REPEAT BUDGET_MIN ORDER ROUNDS CPUS_SERVER CPUS_LOADGEN CPUS_UPSTREAM SLO_P99_MS HOSTS HOSTS_INSECURE_TCP
export LOADGEN_PROCESSES ASSUME_CPUS ASSUME_SMT FORMAT CPU_IDLE CPU_METER KEEP_REQUEST_DB

APT_PACKAGES := wrk apache2-utils httperf nginx gettext-base python3-venv nghttp2-client
.PHONY: setup build ping up down bench test test-unit list report compare

# Installs what is missing: the load tools and nginx from Debian, the harness's Python packages into .venv.
setup: $(VENV)/.installed
	@missing=""; for bin in wrk ab httperf h2load nginx envsubst; do command -v $$bin >/dev/null || [ -x /usr/sbin/$$bin ] || missing="$$missing $$bin"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing (apt-get install $(APT_PACKAGES))"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	fi
	@if [ "$(RUNTIME)" = docker ]; then $(MAKE) --no-print-directory setup-docker; fi

# The harness's Python packages, every one pinned with its hashes (loadgen/requirements.lock, made by `make lock`)
$(VENV)/.installed: loadgen/requirements.lock
	@python3 -m venv $(VENV) || { echo "python3 -m venv failed: apt-get install python3-venv"; exit 1; }
	$(VENV)/bin/pip install -q --disable-pip-version-check --require-hashes -r loadgen/requirements.lock
	@touch $@

# loadgen/requirements.lock again from loadgen/requirements.in (the direct dependencies), with pip-tools in a venv
# of its own; then `make setup` installs it
.PHONY: lock lint typecheck
lock:
	@python3 -m venv .tools/pip-tools && .tools/pip-tools/bin/pip install -q --disable-pip-version-check pip-tools
	cd loadgen && ../.tools/pip-tools/bin/pip-compile -q --generate-hashes --allow-unsafe --strip-extras \
	  --no-emit-index-url -o requirements.lock requirements.in

# The harness's lint (ruff, configured in loadgen/pyproject.toml): its checks, and the tree formatted by its formatter
# (`cd loadgen && ../.venv/bin/ruff format .` formats it); make test runs it first
lint: $(VENV)/.installed
	cd loadgen && ../$(VENV)/bin/ruff check --no-cache . && ../$(VENV)/bin/ruff format --check --no-cache .

# The harness's type check: mypy --strict on the whole harness (loadgen/pyproject.toml); make test runs it after the lint
typecheck: $(VENV)/.installed
	cd loadgen && ../$(VENV)/bin/mypy --strict --no-incremental

build: setup
	$(HARNESS) build

ping: setup
	$(HARNESS) ping

# Each server's HTTP compliance (docs/probe.md): 158 raw-socket HTTP/1.1 cases, each judged by the RFC 9112/9110
# sentence it quotes (syntax, framing, the published request-smuggling vectors, two-step desync sequences, checks of
# the responses), and h2spec on the h2c port of those that speak it; pass, warn-lenient, warn-strict or fail per case,
# in a run folder and its report like every command that measures. `make bench` probes each server once too.
.PHONY: probe setup-h2spec
probe: setup setup-h2spec
	$(HARNESS) probe

# h2spec, the HTTP/2 conformance suite, built from its Go module into .tools/go/bin (once; needs `go`; without it
# make probe leaves h2c out and says so)
H2SPEC_VERSION := v2.2.1+incompatible
setup-h2spec:
	@[ -x .tools/go/bin/h2spec ] || command -v go >/dev/null || echo "h2spec not built: go is not installed (h2c is left out of the probe)"
	@[ -x .tools/go/bin/h2spec ] || ! command -v go >/dev/null || { echo "building h2spec $(H2SPEC_VERSION) with go install"; \
	  GOBIN=$$PWD/.tools/go/bin GOPATH=$$PWD/.tools/go GOFLAGS=-modcacherw go install github.com/summerwind/h2spec/cmd/h2spec@$(H2SPEC_VERSION); }

up: setup
	$(HARNESS) up

up-%: setup
	$(HARNESS) --servers $(call quote,$*) up

down: setup
	$(HARNESS) down

list: setup
	$(HARNESS) list

# What `make bench` (or SCENARIOS="hello backend") would run, without starting anything: the CPU plan, every load's tool
# processes with their cores and command lines, the estimated time. ASSUME_CPUS=64: the plan of a 64-CPU machine;
# FORMAT=json for scripts. Takes every variable the measuring targets take (SERVERS, PROFILE, LOADGEN_PROCESSES, ...).
.PHONY: plan
plan: setup
	@$(HARNESS) plan "$$SCENARIOS"

# (up-%, test-% and test-long-% must stay out of .PHONY: make skips pattern rules for phony targets)
# Each scenario of loadgen/scenarios.toml is a target: test-low-compute, test-high-compute, test-backend, ...
# test-long-node: seed 001's long run on one server (20,000 connections at once, or the most the open-file limit leaves
# a server, one request each, each connection cycled five times); not in `make bench`, whose 20 minutes it would take
test-long-%: setup
	$(HARNESS) --servers $(call quote,$*) run long

test-%: setup
	$(HARNESS) run $(call quote,$*)

# The main job: build, verify, measure every scenario on every server, report. The build is the harness's, under its
# lock: a second `make bench` is refused before it builds anything beside the first one's measurements.
# CPU_METER: each CPU's speed beside every attempt, which the ranking divides by (docs/cpu-speed.md); CPU_METER=0 leaves it out
# BUDGET_MIN=40: the minutes it may take (default the profile's, about 20): more attempts a record where they fit; its
# first lines forecast what the run will tell apart (measuring/forecast.py), its report says what it did
bench: CPU_METER := $(or $(CPU_METER),1)
bench: setup setup-h2spec
	$(HARNESS) --build bench

# The HTTP/2 scenarios (h2c with h2load; not in `bench`, whose 20 minutes are taken): every server that speaks h2c,
# each scenario's HTTP/1.1 baseline beside its 1, 10 and 100 streams per connection
.PHONY: bench-h2
bench-h2: setup
	$(HARNESS) --build run "h2-hello h2-tweets"

# The HTML report (with PNG charts, summary.md, summary.csv) of a run: RUN=<run-id>, default the latest.
report: setup
	$(HARNESS) report $(call quote,$(or $(RUN),latest))

# Change in req/s and p99 between two runs, and whether it exceeds their measured spread: A=<run-id> B=<run-id>
compare: setup
	@[ -n $(call quote,$(A)) ] && [ -n $(call quote,$(B)) ] || { echo "usage: make compare A=<run-id> B=<run-id> (run ids: ls results/)"; exit 2; }
	$(HARNESS) compare $(call quote,$(A)) $(call quote,$(B))

# Every run on one timeline (RUNS="results/*" by default, others only when named; SERVERS=, SCENARIOS=, SINCE=2026-11-24):
# req/s, p99 and CPU µs/req per server, scenario and run, the machine's own speed and each figure divided by it, the
# changes found (E-divisive means) and their cause (the machine, or a server with its commits): results/history/
# index.html and index.md; FORMAT=json prints {changes, series, paired}. Reads results only: starts nothing, no lock.
# SERVERS is passed as --only: any name a run recorded (an A/A twin, a server since removed), not only today's.
.PHONY: history
history: setup
	@unset SERVERS; $(HARNESS) history --runs $(call quote,$(RUNS)) --scenarios $(call quote,$(SCENARIOS)) --since $(call quote,$(SINCE)) \
	  --only $(call quote,$(SERVERS))

# Did my change make it faster? Two builds of one server in one sitting: SERVER=node BASE=<git revision>
# [HEAD=<rev>, default the working tree] [SCENARIOS="hello backend"] [BUDGET_S=seconds for the whole sitting,
# shared by its scenario runs; default 120 per scenario run]
# [RESOLUTION=3 (%, the goal the answer is set against; it never ends a sitting early)]; everything checkable checked
# before the builds, both built in worktrees of their own, measured in starts of ABBA rounds (docs/versus.md); each
# CPU's speed read beside every attempt and the ratios taken on it (CPU_METER=0 leaves it out)
.PHONY: versus
versus: CPU_METER := $(or $(CPU_METER),1)
versus: setup
	@[ -n $(call quote,$(SERVER)) ] && [ -n $(call quote,$(BASE)) ] || { echo "usage: make versus SERVER=<name> BASE=<git revision> [HEAD=<git revision>] [SCENARIOS=\"hello backend\"] [RESOLUTION=3] [BUDGET_S=seconds for the whole sitting, default 120 per scenario run]"; exit 2; }
	$(HARNESS) versus --server $(call quote,$(SERVER)) --base $(call quote,$(BASE)) --head $(call quote,$(HEAD)) \
	  --scenarios $(call quote,$(SCENARIOS)) --resolution $(call quote,$(RESOLUTION)) --budget-s $(call quote,$(BUDGET_S))

# Is one server faster than another? A=<server> B=<server> [SCENARIOS="hello"] [BUDGET_S=seconds for the whole
# sitting, default 120 per scenario run] [SEED=]: both built from the working tree and measured in one sitting on the
# paired engine make versus uses (starts of ABBA rounds, docs/versus.md): "B faster than A by 6.1 % (4.2–8.0 %)" or
# "no difference beyond ±1.8 %". A=node B=node: an A/A of two processes of one server.
.PHONY: duel
duel: CPU_METER := $(or $(CPU_METER),1)
duel: setup
	@[ -n $(call quote,$(A)) ] && [ -n $(call quote,$(B)) ] || { echo "usage: make duel A=<server> B=<server> [SCENARIOS=\"hello\"] [BUDGET_S=seconds for the whole sitting, default 120 per scenario run]"; exit 2; }
	$(HARNESS) duel --a $(call quote,$(A)) --b $(call quote,$(B)) --scenarios $(call quote,$(SCENARIOS)) \
	  --budget-s $(call quote,$(BUDGET_S)) --seed $(call quote,$(SEED))

# A server beside its TechEmpower twin (a folder outside the project with twin.toml, docs/twin.md), then beside itself
# (the A/A; AA=0 leaves it out): each a sitting of the paired engine versus and duel use (docs/versus.md), every route
# pair of twin.toml on keep-alive (wrk) and connection per request (ab; CLOSE_TOOL=wrk: wrk sending `Connection:
# close`, lighter than ab's one thread), at the profile's /hello load: "finagle faster than finagle-theirs by …".
# BUDGET_S: both sittings' measuring time (default 120 s per scenario run and sitting).
# TWIN is the twin's folder here, not bench's A/A twin: unset for the harness, which reads that TWIN.
.PHONY: twin
twin: CPU_METER := $(or $(CPU_METER),1)
twin: setup
	@[ -n $(call quote,$(SERVER)) ] && [ -n $(call quote,$(TWIN)) ] || { echo "usage: make twin SERVER=<name> TWIN=<folder with twin.toml> [BUDGET_S=seconds for both sittings] [AA=0] [CLOSE_TOOL=ab|wrk] [SEED=]"; exit 2; }
	@[ -z $(call quote,$(ROUNDS)) ] || { echo "make twin: ROUNDS is gone: the paired engine's clock sets the rounds; give BUDGET_S=<seconds> instead"; exit 2; }
	@case $(call quote,$(AA)) in ""|1|0) ;; *) echo "make twin: AA is 1 (the A/A beside, the default) or 0, not "$(call quote,$(AA)); exit 2;; esac
	@twin=$(call quote,$(TWIN)); unset TWIN; $(HARNESS) twin --server $(call quote,$(SERVER)) --twin "$$twin" \
	  --budget-s $(call quote,$(BUDGET_S)) --seed $(call quote,$(SEED)) $(if $(filter 0,$(AA)),--no-again) \
	  $(if $(CLOSE_TOOL),--close-tool $(call quote,$(CLOSE_TOOL)))

# The load tools the project builds itself, not packaged by Debian (the harness also builds them the first time a
# scenario needs them): oha with cargo (harness/tools/oha.py), Gatling with Maven (harness/tools/gatling.py).
.PHONY: setup-tools setup-oha setup-gatling
setup-tools: setup-oha setup-gatling
setup-oha: setup
	bash loadgen/build-oha.sh $$(cd loadgen && ../$(PY) -c 'from harness.tools.oha import VERSION; print(VERSION)')
setup-gatling:
	bash loadgen/gatling/build.sh

# Every load tool (ab, wrk, httperf, oha, h2load, Gatling) against the calibrated server (calibrated/), whose answers are
# known by construction: known against measured req/s, p50, p99, p99.9, CPU µs per request and the loadgen-saturated
# flag, each within its tolerance or the miss explained (plan: loadgen/calibrate.toml). TOOLS="ab wrk" for some of
# them; REPEAT=3 for more attempts per load. Builds the calibrated server first; never part of `make bench`.
.PHONY: calibrate
calibrate: setup
	$(HARNESS) --servers calibrated --build calibrate $(call quote,$(TOOLS))

# Where a JVM server's CPU goes on connection-per-request load (async-profiler): SERVER=akka; KEEPALIVE=1 for keep-alive (wrk)
.PHONY: profile
profile: build
	@[ -n $(call quote,$(SERVER)) ] || { echo "usage: make profile SERVER=<a JVM server: akka, pekko, play, finagle, spray, socko>"; exit 2; }
	KEEPALIVE=$(call quote,$(KEEPALIVE)) bash loadgen/profiling/profile-jvm.sh $(call quote,$(SERVER))

# The project's tests: unit tests, then integration tests against real servers on loopback.
test: build setup-tools lint typecheck
	cd loadgen && ../$(PY) -m pytest -q tests

# The unit tests alone (pytest -m unit): no build, no server, no load tool; the harness's Python packages only
test-unit: $(VENV)/.installed
	cd loadgen && ../$(PY) -m pytest -q -m unit -n auto tests

# ======================================================================================================================
# Docker runtime. RUNTIME=docker runs every server in its own container and the load tools in a `loadgen` container
# (docker-compose.yml, generated from the manifests; docker/; loadgen/harness/containers/); RUNTIME=auto, the
# default, picks it when a Docker engine answers and says why. The harness stays on the host and drives Compose:
# v2 (`docker compose`) where its plugin is installed, else Debian's v1 (`docker-compose`). OFFLINE=1: build the base
# image from Debian (debootstrap) even where $(BASE_IMAGE) is present; PULL=1: try to pull $(BASE_IMAGE) when missing.
ifndef COMPOSE
COMPOSE := $(shell if docker compose version >/dev/null 2>&1; then echo "docker compose"; \
             elif command -v docker-compose >/dev/null 2>&1; then echo docker-compose; fi)
endif
BASE_IMAGE ?= debian:bookworm-slim
export COMPOSE OFFLINE PULL BASE_IMAGE
DOCKER_HARNESS = cd loadgen && ../$(PY) -m harness.containers

.PHONY: setup-docker base-images docker-images docker-env docker-down docker-clean docker-overhead
.PHONY: hosts-demo hosts-demo-check hosts-demo-down

# `make setup RUNTIME=docker` runs this: apt-get install docker.io docker-compose debootstrap where missing, and a
# Docker engine started when none answers (systemctl, else dockerd in the background; the flags that worked are
# printed; see docker/setup-docker.sh).
setup-docker:
	@docker/setup-docker.sh

# The base images, without a registry: bench/base:bookworm from debootstrap (+updates, +security) and `docker import`
# when $(BASE_IMAGE) is not present or OFFLINE=1, then the runtimes bench/{jvm,node,native,nginx,loadgen}:bookworm.
base-images:
	@docker/base-images.sh

# The server images: each server's artifacts from `make build` on its family's runtime (rebuilt when they change;
# the harness also does this before it starts a server). SERVERS="rust nginx" picks some.
docker-images: setup base-images
	$(DOCKER_HARNESS) images $(SERVERS)

# Rewrites docker-compose.yml from the manifests (the harness also does so when a server folder is added).
docker-compose.yml: $(wildcard */manifest.toml) $(addprefix loadgen/harness/containers/,compose.py images.py service.py) | $(VENV)/.installed
	$(DOCKER_HARNESS) compose-file

# The variables docker-compose.yml needs, for using it by hand: eval "$$(make -s docker-env)"; $(COMPOSE) ps
docker-env: | $(VENV)/.installed
	@$(DOCKER_HARNESS) env

# What the Docker runtime costs: nginx /weather.json, rust and node /hello with wrk, docker and local alternately,
# ROUNDS=3 times in one run; prints docker/local req/s per server and round (target: at least 0.95).
docker-overhead: build
	$(HARNESS) overhead

# Every container of the project removed (`make down` stops the servers the harness knows about).
docker-down: | $(VENV)/.installed
	$(DOCKER_HARNESS) down

# docker-down, and the server images removed; the base images (bench/*:bookworm) stay.
docker-clean: | $(VENV)/.installed
	$(DOCKER_HARNESS) clean

# Three hosts on this one machine (issue 13): `server`, `loadgen`, `upstream`, each a network namespace on a
# bridge (10.213.77.0/24) with its own containerd, dockerd and sshd; prints the HOSTS="server=ssh://root@... ..."
# line to copy. Installs docker.io, containerd, openssh-server, busybox-static (the tiny test image; there is no
# registry) and iputils-ping where missing, without letting apt start the system sshd, dockerd or containerd (a
# policy-rc.d for the install) and disabling again what the install enabled for the next boot, also when interrupted
# (docker/hosts-demo-install.sh). hosts-demo-check proves it works; hosts-demo-down removes it (the image stores in
# /var/lib/bench-hosts stay: `docker/hosts-demo.sh down --purge`). See docker/hosts-demo.sh.
hosts-demo:
	@docker/hosts-demo-install.sh
	@$$([ "$$(id -u)" = 0 ] || echo sudo) docker/hosts-demo.sh up

hosts-demo-check:
	@$$([ "$$(id -u)" = 0 ] || echo sudo) docker/hosts-demo-check.sh

hosts-demo-down:
	@$$([ "$$(id -u)" = 0 ] || echo sudo) docker/hosts-demo.sh down
