"""results/<run-id>/results.json: the run's conditions and one record per measurement, rewritten after each
measurement so an interrupted run keeps everything it measured. Raw tool outputs go to results/<run-id>/raw/."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness.manifest import REPO

RESULTS = REPO / "results"


def new_run_id(kind: str) -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{kind}"


class RunStore:
    def __init__(self, run_id: str, conditions: dict, root: Path = RESULTS):
        self.dir = root / run_id
        self.raw = self.dir / "raw"
        self.raw.mkdir(parents=True, exist_ok=True)
        self.data = {"run_id": run_id, "conditions": conditions, "verification": {}, "servers": {}, "records": []}
        self.save()
        latest = root / "latest"
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(run_id)

    @property
    def path(self) -> Path:
        return self.dir / "results.json"

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, ensure_ascii=False))
        os.replace(tmp, self.path)

    def add_record(self, record: dict) -> None:
        self.data["records"].append(record)
        self.save()

    def set(self, section: str, key: str, value) -> None:
        self.data[section][key] = value
        self.save()

    def finish(self) -> None:
        self.data["conditions"]["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.save()

    def raw_path(self, name: str) -> Path:
        return self.raw / name
