"""Where things are: the repository's root, the results folder, the harness's own state folder."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RESULTS = REPO / "results"
STATE_DIR = REPO / ".run"
