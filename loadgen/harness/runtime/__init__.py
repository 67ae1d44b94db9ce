"""Runtimes start and stop servers and run load tools, pinned to CPUs: the protocol they keep (protocol.py), the state
they share (state.py) and the local runtime (local.py), host processes; the Docker runtime is harness.containers',
chosen by harness.servers.runtime_choice. The shared types are re-exported here for the harness's other modules."""

from __future__ import annotations

from harness.runtime.protocol import RunningServer, Runtime, RuntimeFailure
from harness.runtime.state import State

__all__ = ["RunningServer", "Runtime", "RuntimeFailure", "State"]
