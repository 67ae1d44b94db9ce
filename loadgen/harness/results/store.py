"""results/<run-id>/: results.json, the run as harness.results.records types it, rewritten after each change so an interrupted
run keeps everything it measured; raw/ holds the tools' own outputs.

Each rewrite goes to a temporary file, is fsynced, then renamed over results.json (and the folder fsynced): a harness
killed at any moment, even the machine losing power, leaves the previous results.json or the new one, never half of
one. A full disk (ENOSPC) keeps the last results.json written and says so (`DiskFull`)."""

from __future__ import annotations

import errno
import itertools
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from harness.basics.messages import warn
from harness.basics.paths import REPO, RESULTS
from harness.results.records import Record, Run, Verification

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(Exception):
    """The device holding a run's folder is full; the message says where and what was kept."""


def is_out_of_space(exc: OSError) -> bool:
    return exc.errno in NO_SPACE


class RunIdError(Exception):
    """A --run-id that is not a folder name under results/, or names a run already there."""


# one folder name under results/: no '/', no '..', no hidden folder, not the `latest` link
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
CLAIMED = ".claimed"  # the marker of a run that took a folder it found empty


def check_run_id(run_id: str, root: Path | None = None) -> None:
    """Refuses, before anything starts, a run id that would leave results/ or overwrite a run."""
    root = root or RESULTS
    if not RUN_ID.fullmatch(run_id) or run_id == "latest":
        raise RunIdError(
            f"--run-id {run_id!r}: give a folder name under results/ (letters, digits, '.', '_', '-'; "
            "not starting with '.' or '-', not 'latest'), e.g. --run-id my-test-1"
        )
    folder = root / run_id
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):  # an empty folder (a mount point) is free
        raise RunIdError(
            f"--run-id {run_id!r}: {folder} already holds a run; give another id, or remove "
            "that folder to measure under this one again"
        )


def claim_run_id(run_id: str, root: Path | None = None) -> str:
    """`run_id` checked, and its folder made so that no other run can take it (the check and the making at once)."""
    root = root or RESULTS
    check_run_id(run_id, root)
    if not _make_folder(root / run_id) and not _claim_empty(root / run_id):
        check_run_id(run_id, root)  # another run took it in between: the same message
        raise RunIdError(f"--run-id {run_id!r}: another run took {root / run_id} just now; give another id")
    return run_id


def _claim_empty(folder: Path) -> bool:
    """An empty folder that was there (one a test or a user mounted a file system on) taken by an exclusive marker:
    of two runs, one creates it."""
    try:
        with (folder / CLAIMED).open("x"):
            return True
    except FileExistsError:
        return False


def new_run_id(kind: str, root: Path | None = None) -> str:
    """A run id of this second and `kind`, its folder made: a second run started in the same second gets `-2`."""
    root = root or RESULTS
    base = time.strftime("%Y%m%d-%H%M%S") + f"-{kind}"
    for n in itertools.count(1):
        run_id = base if n == 1 else f"{base}-{n}"
        if not RUN_ID.fullmatch(run_id):  # a kind from names (scenarios, a server) that no folder name takes
            raise RunIdError(
                f"the run id {run_id[:160]!r} made for this run is not a folder name under results/ (letters, digits, "
                "'.', '_', '-'; at most 128): give one with --run-id, e.g. --run-id my-test-1"
            )
        if _make_folder(root / run_id):
            return run_id
    raise AssertionError("unreachable")


def _make_folder(folder: Path) -> bool:
    """True when this call made `folder` (mkdir is atomic: of two runs, one makes it); False when it was there."""
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        return False
    except OSError as exc:
        if is_out_of_space(exc):
            raise DiskFull(
                f"no space left on the device holding {folder.parent}: free some space; nothing was measured yet"
            ) from None
        raise
    return True


class RunStore:
    """A run's folder, made `results/latest`, and its results.json kept up to date with `run`."""

    def __init__(self, run: Run, root: Path = RESULTS):
        self.run = run
        self.dir = root / run.run_id
        self.raw = self.dir / "raw"
        self.saved_records: int | None = None  # how many records the results.json on disk holds (None: none yet)
        # each record's JSON text and the compliance section's, kept between saves (`_text`)
        self._record_texts: dict[int, tuple[Record, str]] = {}
        self._compliance_text: tuple[object, str] | None = None
        try:
            self.raw.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if is_out_of_space(exc):
                raise self.out_of_space() from None
            raise
        self.save()
        point_latest(root, run.run_id)

    @property
    def path(self) -> Path:
        return self.dir / "results.json"

    def save(self, only: Record | None = None) -> None:
        """results.json written anew from `run`; `only`: the one record that changed since the last save (put_record),
        the others written as their text was then. A bench saves after every attempt: serializing all of its 2 MB
        each time took 0.15-0.2 s between two attempts (2 Dec), a fifth of a 0.8 s attempt's length."""
        text = self._text(only)
        tmp = self.path.with_suffix(".tmp")
        try:
            with tmp.open("w") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())  # the rename must not publish a file whose bytes are not on disk yet
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)  # what it took is given back; results.json is the last complete one
            if is_out_of_space(exc):
                raise self.out_of_space() from None
            raise
        _fsync_folder(self.dir)  # the rename itself, durable
        self.saved_records = len(self.run.records)

    def _text(self, only: Record | None) -> str:
        """The run as compact JSON (jq or `python -m json.tool` indents it); every record's text made anew unless `only`
        names the one that changed, and the compliance section's unless it is another object than last time."""
        cached = self._record_texts if only is not None else {}
        texts = {}
        for r in self.run.records:
            kept = cached.get(id(r))
            texts[id(r)] = kept if kept and kept[0] is r and r is not only else (r, _dumps(r.to_dict()))
        self._record_texts = texts  # holding each record keeps its id from being reused by another
        head = self.run.to_dict(records=False)
        compliance = head.pop("compliance", None)
        parts = [f"{_dumps(k)}:{_dumps(v)}" for k, v in head.items()]
        parts.insert(list(head).index("servers") + 1, '"records":[' + ",".join(t for _, t in texts.values()) + "]")
        if compliance is not None:
            if only is None or self._compliance_text is None or self._compliance_text[0] is not compliance:
                self._compliance_text = (compliance, _dumps(compliance))
            parts.append(f'"compliance":{self._compliance_text[1]}')
        return "{" + ",".join(parts) + "}"

    def disk_bytes(self) -> int:
        """What the run's folder takes on disk (its files' allocated blocks, as `du` counts them)."""
        total = 0
        for folder, _, files in os.walk(self.dir):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_blocks * 512
                except OSError:  # gone meanwhile
                    continue
        return total

    def out_of_space(self) -> DiskFull:
        """The error for a full disk under this run's folder: what to do, and what results.json still holds."""
        where = self.dir.relative_to(REPO) if self.dir.is_relative_to(REPO) else self.dir
        if self.saved_records is None:
            kept = "nothing was measured yet"
        else:
            kept = f"the {self.saved_records} record(s) measured so far are in {where / self.path.name}"
        return DiskFull(f"no space left on the device holding {where}: free some space; {kept}")

    def put_record(self, record: Record) -> None:
        """`record` written in place of the one with its key (the same record, with more attempts), else added."""
        at = next((i for i, r in enumerate(self.run.records) if r.key == record.key), None)
        if at is None:
            self.run.records.append(record)
        else:
            self.run.records[at] = record
        self.save(only=record)

    def update_conditions(self, **values: Any) -> None:
        self.run.conditions.update(values)
        self.save()

    def set_server(self, name: str, description: dict[str, Any]) -> None:
        self.run.servers[name] = description
        self.save()

    def set_verification(self, name: str, verification: Verification) -> None:
        self.run.verification[name] = verification  # type: ignore[index]  # a store's run has the section
        self.save()

    def set_overhead(self, ratios: dict[str, Any]) -> None:
        self.run.overhead = ratios
        self.save()

    def set_calibration(self, loads: list[dict[str, Any]]) -> None:
        self.run.calibration = loads
        self.save()

    def set_compliance(self, name: str, entry: dict[str, Any]) -> None:
        """`name`'s probe (harness.conformance.suite.compliance) kept beside the others'."""
        self.run.compliance = {**(self.run.compliance or {}), name: entry}
        self.save()


def point_latest(root: Path, run_id: str) -> None:
    """`root/latest` made a link to `run_id` in one step: a new link beside it, renamed over it, so that a reader
    always finds a run there. A real folder or file of that name is someone's own: left as it is, and said."""
    latest = root / "latest"
    if latest.exists() and not latest.is_symlink():
        kind = "folder" if latest.is_dir() else "file"
        warn(
            f"{latest} is a {kind}, not the link to the newest run: left as it is (move it away to have it follow runs)"
        )
        return
    link = root / f".latest-{os.getpid()}-{time.monotonic_ns()}"  # a hidden name no run id takes (RUN_ID)
    try:
        link.symlink_to(run_id)
        os.replace(link, latest)
    except OSError as exc:  # a folder made there meanwhile, or a file system without links
        link.unlink(missing_ok=True)
        warn(f"{latest} could not be pointed at {run_id} ({exc.strerror or exc}); the run is in {root / run_id}")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
