"""What the harness has running, in .run/state.json: servers and load tools, each with the command that started it,
so that what a killed command left is found and stopped by the next one."""

from __future__ import annotations

import errno
import json
import os
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.basics.machine import kernel_start, process_create_time, started_as, still_runs
from harness.basics.paths import STATE_DIR
from harness.runtime.protocol import RunningServer, RuntimeFailure


@dataclass
class Starter:
    """The harness command that started a server or a load tool, and whether it meant to leave it running (`make up`)."""

    pid: int
    pid_created: float | None
    command: str
    keep: bool = False
    pid_start: int | None = None  # the identity (machine.kernel_start); pid_created is for older harnesses
    # listed before it answers (a JVM takes seconds): a command killed then leaves a server that only this names
    starting: bool = False

    @classmethod
    def this_command(cls, keep: bool = False, starting: bool = False) -> Starter:
        me = os.getpid()
        return cls(me, process_create_time(me), shlex.join(sys.orig_argv), keep, kernel_start(me), starting)

    def ended(self) -> bool:
        return not still_runs(self.pid, started_as(self.pid_start, self.pid_created))

    def key(self) -> tuple[int, float | None]:
        return self.pid, self.pid_start if self.pid_start is not None else self.pid_created

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command})"


@dataclass
class ListedTool:
    """A load tool listed while it runs (docker: the tool as the host sees it, or its `docker exec` client when the
    tool has not shown up yet; stopping the loadgen container stops it anyway)."""

    pid: int
    pid_created: float | None
    argv: list[str]
    started_by: Starter
    pid_start: int | None = None

    def running(self) -> bool:
        return still_runs(self.pid, started_as(self.pid_start, self.pid_created))

    @property
    def name(self) -> str:
        """The tool's name: its command's first word, past the `taskset -c <cores>` that pins it (taskset execs it)."""
        argv = self.argv[3:] if self.argv[:2] == ["taskset", "-c"] and len(self.argv) > 3 else self.argv
        return Path(argv[0]).name if argv else "?"


class StateFull(Exception):
    """.run/state.json could not be written: its device is full. Not a RuntimeFailure: every start after it would
    fail the same way, so the command stops."""


class State:
    """What the harness has running, in .run/state.json: the servers that are up (`make up` leaves them running for
    `make ping` and the test-* targets) and the load tools while they run, each with the command that started it. A
    command that is killed cannot stop them; the next one finds them here (`leftover_servers`, `leftover_tools`).

    Rewritten through a temporary file and a rename, so a killed harness leaves the old file or the new one, never
    half of one. Not fsynced: after a power cut the processes it lists are gone too."""

    def __init__(self, path: Path = STATE_DIR / "state.json"):
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text()) if self.path.exists() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self.corrupt(f"is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise self.corrupt("does not hold a JSON object")
        return data

    def corrupt(self, what: str) -> RuntimeFailure:
        return RuntimeFailure(
            f"{self.path} {what}: it lists the servers and tools the harness started. Stop any still "
            f"running (`ss -ltnp` shows who holds the servers' ports), then delete it: rm {self.path}"
        )

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data, indent=2))
            tmp.replace(self.path)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise StateFull(
                f"no space left on the device holding {self.path.parent}: {self.path} could not be "
                "written; free some space"
            ) from None

    def load(self) -> dict[str, RunningServer]:
        try:
            return {name: RunningServer(**entry) for name, entry in self._read().get("servers", {}).items()}
        except (TypeError, AttributeError) as exc:
            raise self.corrupt(f"has a server entry this harness cannot read ({exc})") from None

    def put(self, running: RunningServer, keep: bool = False, starting: bool = False) -> None:
        """`running` listed as started by this command; `keep`: it is meant to outlive the command (`make up`);
        `starting`: it has not answered yet (a leftover if the command ends, even with `keep`)."""
        data = self._read()
        data.setdefault("servers", {})[running.name] = asdict(running)
        data.setdefault("started_by", {})[running.name] = asdict(Starter.this_command(keep, starting))
        self._write(data)

    def drop(self, name: str) -> None:
        data = self._read()
        for key in ("servers", "started_by"):
            data.get(key, {}).pop(name, None)
        self._write(data)

    def leftover_servers(self) -> dict[str, tuple[RunningServer, Starter]]:
        """Servers whose command ended without stopping them though it did not mean to keep them, or while they were
        starting: it was killed. (A server listed by an older harness, with no starter, counts as left up on purpose.)"""
        starters = self._read().get("started_by", {})
        out = {}
        for name, running in self.load().items():
            try:
                starter = Starter(**starters[name]) if name in starters else None
            except TypeError as exc:
                raise self.corrupt(f"has a starter entry this harness cannot read ({exc})") from None
            if starter and (starter.starting or not starter.keep) and starter.ended():
                out[name] = (running, starter)
        return out

    def add_tool(self, pid: int, argv: list[str]) -> None:
        data = self._read()
        tool = ListedTool(pid, process_create_time(pid), list(argv), Starter.this_command(), kernel_start(pid))
        data.setdefault("tools", []).append(asdict(tool))
        self._write(data)

    def tools(self) -> list[ListedTool]:
        try:
            return [
                ListedTool(**{**t, "started_by": Starter(**t["started_by"])}) for t in self._read().get("tools", [])
            ]
        except (TypeError, AttributeError, KeyError) as exc:
            raise self.corrupt(f"has a tool entry this harness cannot read ({exc!r})") from None

    def leftover_tools(self) -> list[ListedTool]:
        """Tools whose command ended while they ran (it was killed): they may still be loading a server."""
        return [t for t in self.tools() if t.started_by.ended()]

    def drop_tools(self, starter: Starter | None = None) -> None:
        """Every tool listed by `starter` (default: this command) taken off the list: they have ended."""
        starter = starter or Starter.this_command()
        data = self._read()
        if data.get("tools"):
            data["tools"] = [t for t in data["tools"] if Starter(**t["started_by"]).key() != starter.key()]
            self._write(data)
