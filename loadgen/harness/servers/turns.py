"""The servers of an interleaved run take turns: the ones not being measured sleep (SIGSTOP) until theirs comes."""

from __future__ import annotations

from collections.abc import Callable

from harness.servers.readiness import Target
from harness.servers.session import Session


class Turns:
    """In interleaved rounds, the servers that are not being measured sleep: their processes are stopped (SIGSTOP) and
    continued (SIGCONT) when their turn comes, and all of them at the end, also on failure and Ctrl-C (`wake_all`).
    A server that died is passed over: the runtime names no process of it (a recycled pid is never taken for its)."""

    def __init__(self, session: Session, targets: list[Target]):
        self.session = session
        self.targets: list[Target] = []
        self.retarget(targets)
        self.asleep: set[str] = set()

    def retarget(self, targets: list[Target]) -> None:
        """The servers that take turns, as now running (make versus starts its builds afresh)."""
        self.targets = [t for t in targets if not self.session.is_upstream(t.name)]  # it serves the others' weather

    def __call__(self, name: str) -> None:
        for t in self.targets:
            if t.name == name and name in self.asleep:
                self.session.runtime.pause(t.running, asleep=False)
                self.asleep.discard(name)
            elif t.name != name and t.name not in self.asleep:
                self.session.runtime.pause(t.running, asleep=True)
                self.asleep.add(t.name)

    def wake_all(self) -> None:
        for t in self.targets:
            if t.name in self.asleep:
                self.session.runtime.pause(t.running, asleep=False)
        self.asleep.clear()


def idle_pids(session: Session, targets: list[Target]) -> Callable[[str], list[int]]:
    """pids of the servers that sleep while `name` is measured (the upstream nginx, on its own CPUs, is not idle)."""

    def pids(name: str) -> list[int]:
        out = []
        for t in targets:
            if t.name != name and not session.is_upstream(t.name):
                out.extend(session.runtime.pids(t.running))
        return out

    return pids
