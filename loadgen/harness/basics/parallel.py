"""Independent pieces of work spread over the CPUs this process may use, in forked processes: each worker starts with
what the parent holds, so only a piece's index crosses to it and only its result comes back (pickled). Used where
one process is the bottleneck of a command a user waits on: the report's charts, and make history's reads and charts.
Fewer pieces than `least`, or one CPU: done here, in order, with no process started."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

Result = TypeVar("Result")
_PENDING: list[Callable[[], Any]] = []


def in_processes(pieces: Sequence[Callable[[], Result]], least: int = 2) -> list[Result]:
    """Each piece's result, in the pieces' order. A piece that raises raises here (the others are cancelled)."""
    workers = min(len(pieces), len(os.sched_getaffinity(0)))
    if workers < 2 or len(pieces) < least:
        return [piece() for piece in pieces]
    global _PENDING
    _PENDING = list(pieces)  # the forked workers inherit it: nothing but an index is sent to them
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            chunk = max(1, len(pieces) // (workers * 4))
            return list(pool.map(_run_pending, range(len(pieces)), chunksize=chunk))
    finally:
        _PENDING = []


def _run_pending(index: int) -> Any:
    return _PENDING[index]()
