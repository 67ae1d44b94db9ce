# The user's commands. Every target takes SERVERS="node rust", PROFILE=quick|seed, RUNTIME=local, PORTS="node=9090".
# `make bench` is the main job; `make test` runs the project's tests. See README.md.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
HARNESS = cd loadgen && ../$(PY) -m harness
SERVERS ?=
PROFILE ?= quick
RUNTIME ?= local
export SERVERS PROFILE RUNTIME PORTS REPEAT CPUS_SERVER CPUS_LOADGEN CPUS_UPSTREAM

APT_PACKAGES := wrk apache2-utils httperf nginx gettext-base python3-venv
.PHONY: setup build ping up down bench test list report compare

# Installs what is missing: the load tools and nginx from Debian, the harness's Python packages into .venv.
setup: $(VENV)/.installed
	@missing=""; for bin in wrk ab httperf nginx envsubst; do command -v $$bin >/dev/null || [ -x /usr/sbin/$$bin ] || missing="$$missing $$bin"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing (apt-get install $(APT_PACKAGES))"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	fi

$(VENV)/.installed: loadgen/requirements.txt
	@python3 -m venv $(VENV) || { echo "python3 -m venv failed: apt-get install python3-venv"; exit 1; }
	$(VENV)/bin/pip install -q --disable-pip-version-check -r loadgen/requirements.txt
	@touch $@

build: setup
	$(HARNESS) build

ping: setup
	$(HARNESS) ping

up: setup
	$(HARNESS) up

up-%: setup
	$(HARNESS) --servers $* up

down: setup
	$(HARNESS) down

list: setup
	$(HARNESS) list

# (up-%, test-% and test-long-% must stay out of .PHONY: make skips pattern rules for phony targets)
# Each scenario of loadgen/scenarios.toml is a target: test-low-compute, test-high-compute, test-backend, ...
test-long-%: setup
	$(HARNESS) --servers $* run long

test-%: setup
	$(HARNESS) run $*

# The main job: build, verify, measure every scenario on every server, report.
bench: build
	$(HARNESS) bench

# The HTML report (with PNG charts, summary.md, summary.csv) of a run: RUN=<run-id>, default the latest.
report: setup
	$(HARNESS) report $(or $(RUN),latest)

# Change in req/s and p99 between two runs, and whether it exceeds their measured spread: A=<run-id> B=<run-id>
compare: setup
	@[ -n "$(A)" ] && [ -n "$(B)" ] || { echo "usage: make compare A=<run-id> B=<run-id> (run ids: ls results/)"; exit 2; }
	$(HARNESS) compare $(A) $(B)

# The project's tests: unit tests, then integration tests against real servers on loopback.
test: build
	cd loadgen && ../$(PY) -m pytest -q tests
