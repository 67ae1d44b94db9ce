"""Idle CPUs poll instead of sleeping while the harness measures (CPU_IDLE=poll, the default; docs/idle-cpus.md).

A CPU with nothing to run enters an idle state; waking it again takes that state's exit latency. On a virtual
machine the idle state is a halt that leaves the guest, and the wake-up an interrupt sent through the host: on this
project's 2-core VM (cpuidle driver `haltpoll`, its polling set to 0 ns by the platform) one connection's ping-pong
served 14-16k req/s when the CPUs halted and 42-50k when they polled, the same server back to back. A latency-bound
load (weather c1) then measures the hypervisor's wake-up, not the server. Bare metal has the same effect, smaller:
deep C-states.

The kernel's PM QoS interface takes a process's request for at most N µs of wake-up latency while it holds
/dev/cpu_dma_latency open; 0 keeps every CPU in its polling state. It is what tuned's `latency-performance` profile
does. The request ends with the file (the command's end, also on a crash or SIGKILL): nothing is left behind.

`choose` takes the configured mode once; a Session holds the request while it is open (`hold`/`release`, counted, so
that nested sessions share it); `reading` is what the run's conditions record.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from harness.basics.messages import warn

DEVICE = Path("/dev/cpu_dma_latency")
CPUIDLE = Path("/sys/devices/system/cpu/cpuidle")
MODES = ("poll", "machine")  # CPU_IDLE: poll while measuring, or leave the machine's idle states as they are

_mode = "poll"
_fd: int | None = None
_holders = 0
_why_not: str | None = None  # why the request could not be taken (None: not tried, or taken)


def choose(mode: str) -> None:
    """CPU_IDLE, checked by the configuration: "poll" or "machine"."""
    global _mode
    if mode not in MODES:
        raise ValueError(f"CPU_IDLE={mode!r}: use one of {', '.join(MODES)}")
    _mode = mode


def hold() -> None:
    """Take the request (the first holder), or count one more holder. Where it cannot be taken (no such device, not
    root), say so once and go on with the machine's idle states: the run's conditions say which."""
    global _fd, _holders, _why_not
    _holders += 1
    if _mode != "poll" or _fd is not None or _why_not is not None:
        return
    try:
        fd = os.open(DEVICE, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        _why_not = f"{DEVICE} could not be opened ({exc.strerror}); run as root, or set CPU_IDLE=machine"
        warn(f"idle CPUs keep the machine's idle states: {_why_not}")
        return
    try:
        os.write(fd, struct.pack("i", 0))  # µs of wake-up latency allowed: none, so the CPUs poll
    except OSError as exc:
        os.close(fd)
        _why_not = f"{DEVICE} refused the request ({exc.strerror})"
        warn(f"idle CPUs keep the machine's idle states: {_why_not}")
        return
    _fd = fd


def release() -> None:
    """One holder fewer; the last one closes the file, which ends the request."""
    global _fd, _holders
    _holders = max(0, _holders - 1)
    if _holders == 0 and _fd is not None:
        os.close(_fd)
        _fd = None


def held() -> bool:
    return _fd is not None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def reading(remote: bool = False) -> dict[str, Any]:
    """What the run's conditions record: the mode in force, why where it is not the one asked for, the cpuidle driver
    and the idle states CPU 0 offers. `remote`: the roles run on other hosts, whose idle states are theirs."""
    if remote:
        return {"asked": _mode, "in_force": "machine", "why_not": "the roles run on other hosts (HOSTS)"}
    states = sorted(CPUIDLE.parent.glob("cpu0/cpuidle/state*/name"))
    out: dict[str, Any] = {
        "asked": _mode,
        "in_force": "poll" if held() else "machine",
        "driver": _read(CPUIDLE / "current_driver"),
        "states": [name for p in states if (name := _read(p))],
    }
    if not held() and _why_not:  # set only by a poll that could not be had
        out["why_not"] = _why_not
    return out


def text(r: dict[str, Any] | None) -> str:
    """The reading in a sentence, for the report's conditions."""
    if not r:
        return "not recorded (an older harness: the machine's idle states)"
    driver = f"cpuidle driver {r.get('driver')}, states {', '.join(r.get('states') or []) or '-'}"
    if r.get("in_force") == "poll":
        return f"idle CPUs polled while measuring ({DEVICE} held at 0 µs); {driver}"
    why = r.get("why_not") or ("CPU_IDLE=machine" if r.get("asked") == "machine" else "not held by this command")
    return f"idle CPUs kept the machine's idle states ({why}); {driver}"
