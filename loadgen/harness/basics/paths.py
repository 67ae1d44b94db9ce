"""Where things are: the repository's root, the results folder, the harness's own state folder."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# another results folder (relative to the repository, as docker-compose.yml reads it): the tests' own, so that
# `make history` never reads their runs as the user's
RESULTS_VAR = "BENCH_RESULTS"
RESULTS = REPO / (os.environ.get(RESULTS_VAR) or "results")
STATE_DIR = REPO / ".run"
