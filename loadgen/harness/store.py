"""results/<run-id>/: results.json, the run as harness.results types it, rewritten (atomically: a temporary file, then a
rename) after each change so an interrupted run keeps everything it measured; raw/ holds the tools' own outputs."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness.manifest import REPO
from harness.results import Record, Run, Verification

RESULTS = REPO / "results"


def new_run_id(kind: str) -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{kind}"


class RunStore:
    """A run's folder, made `results/latest`, and its results.json kept up to date with `run`."""

    def __init__(self, run: Run, root: Path = RESULTS):
        self.run = run
        self.dir = root / run.run_id
        self.raw = self.dir / "raw"
        self.raw.mkdir(parents=True, exist_ok=True)
        self.save()
        latest = root / "latest"
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(run.run_id)

    @property
    def path(self) -> Path:
        return self.dir / "results.json"

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.run.to_dict(), indent=2, ensure_ascii=False))
        os.replace(tmp, self.path)

    def add_record(self, record: Record) -> None:
        self.run.records.append(record)
        self.save()

    def update_conditions(self, **values) -> None:
        self.run.conditions.update(values)
        self.save()

    def set_server(self, name: str, description: dict) -> None:
        self.run.servers[name] = description
        self.save()

    def set_verification(self, name: str, verification: Verification) -> None:
        self.run.verification[name] = verification
        self.save()

    def set_overhead(self, ratios: dict) -> None:
        self.run.overhead = ratios
        self.save()
