"""What make history keeps of each run it has read (results/history/runs.json): a results.json is read and checked
by harness/results/readable.py once (its summaries only: readable.load(attempts=False)), and what the
timeline uses of it (conditions, servers' versions, each record's names, tool, load, flags and summary) is kept, keyed
by the file's path, size, modification time and inode. A file changed since is read and checked again; the figures
taken from the cache are checked again as any run's (harness.history.timeline). A cache that cannot be read is
ignored, never an error."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from harness.results import readable
from harness.results.records import ResultsError, Run

MAX_CACHE_BYTES = 256 * 2**20  # 200 benches keep about 10 MB


def write_atomically(path: Path, text: str) -> None:
    """`text` into `path` through a temporary file beside it, renamed over it: a reader (or a second make history)
    sees the old file or the new one, never half of one."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def slim(run: Run) -> dict[str, Any]:
    """What the timeline reads of a run, as a results.json of its own (attempts left out)."""
    return {
        "schema": run.schema,
        "run_id": run.run_id,
        "conditions": run.conditions,
        "servers": {name: {"version": s.get("version")} for name, s in run.servers.items()},
        "records": [
            {
                "server": r.server,
                "scenario": r.scenario,
                "run": r.run,
                "runtime": r.runtime,
                "round": r.round,
                "tool": r.tool,
                "concurrency": r.concurrency,
                "threads": r.threads,
                "failed": r.failed,
                "attempts": [],
                "summary": r.summary.to_dict() if r.summary else None,
                "flags": [f.to_dict() for f in r.flags],
            }
            for r in run.records
        ],
    }


class RunCache:
    """The runs kept from the last make history, and those read this time (saved: only the runs still there)."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.kept: dict[str, Any] = {}
        self.now: dict[str, Any] = {}
        try:
            if file.stat().st_size <= MAX_CACHE_BYTES:
                loaded = readable.loads(file.read_bytes())
                self.kept = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError, RecursionError):
            self.kept = {}

    def get(self, path: Path) -> Run | None:
        entry = self.kept.get(str(path))
        try:
            if isinstance(entry, dict) and entry.get("stamp") == _stamp(path):
                run = Run.from_dict(entry["run"], str(path))
                self.now[str(path)] = entry
                return run
        except (OSError, ResultsError, TypeError, KeyError, AttributeError, ValueError):
            return None
        return None

    def put(self, path: Path, slimmed: dict[str, Any]) -> None:
        """The run read from `path` kept, as slim() made it."""
        try:
            self.now[str(path)] = {"stamp": _stamp(path), "run": slimmed}
        except OSError:
            return

    def save(self) -> None:
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.file, json.dumps(self.now, separators=(",", ":")))  # orjson writes NaN as null
        except OSError:
            return
