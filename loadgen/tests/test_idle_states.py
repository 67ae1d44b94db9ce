"""Idle CPUs poll while the harness measures (harness.basics.idle_states): the kernel's PM QoS request is taken while
a command's Session is open and ends with it; where it cannot be taken, the run goes on and its conditions say why."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from harness.basics import idle_states
from harness.history.compare import condition_differences
from harness.report.run_conditions import items
from harness.results.records import Run

DEVICE = idle_states.DEVICE
HALT_STATES = sorted(Path("/sys/devices/system/cpu/cpu0/cpuidle").glob("state[1-9]/usage"))
needs_device = pytest.mark.skipif(
    os.geteuid() != 0 or not DEVICE.exists() or not HALT_STATES,
    reason="needs root, /dev/cpu_dma_latency and a cpuidle state deeper than polling",
)


@pytest.fixture(autouse=True)
def fresh_module(monkeypatch):
    """Each test starts with nothing held and the default mode (the module keeps the process's one request)."""
    monkeypatch.setattr(idle_states, "_mode", "poll")
    monkeypatch.setattr(idle_states, "_fd", None)
    monkeypatch.setattr(idle_states, "_holders", 0)
    monkeypatch.setattr(idle_states, "_why_not", None)
    yield
    while idle_states._holders:
        idle_states.release()


def the_kernels_target_us() -> int:
    """The latency every request together allows (what reading the device returns), in µs."""
    fd = os.open(DEVICE, os.O_RDONLY)
    try:
        return int(struct.unpack("i", os.read(fd, 4))[0])
    finally:
        os.close(fd)


def halts(seconds: float) -> int:
    """How often CPU 0 entered an idle state deeper than polling over `seconds` of this process sleeping.

    The kernel counts a halt when it ends: a halt begun before the request counts when the request wakes the CPU,
    a moment later, so the count starts after a settling tenth of a second (a CI run once read 1 without it)."""
    time.sleep(0.1)
    before = sum(int(p.read_text()) for p in HALT_STATES)
    time.sleep(seconds)
    return sum(int(p.read_text()) for p in HALT_STATES) - before


@needs_device
def test_while_held_the_kernel_allows_no_wake_up_latency_and_cpu0_does_not_halt():
    idle_states.hold()
    try:
        assert the_kernels_target_us() == 0
        assert halts(0.5) == 0
        assert idle_states.reading()["in_force"] == "poll"
    finally:
        idle_states.release()
    assert not idle_states.held()


@needs_device
def test_nested_holders_share_one_request_and_the_last_release_ends_it():
    idle_states.hold()
    idle_states.hold()
    fd = idle_states._fd
    idle_states.release()
    assert idle_states.held() and idle_states._fd == fd
    idle_states.release()
    assert not idle_states.held()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed: the kernel dropped the request with it


def test_machine_mode_takes_nothing():
    idle_states.choose("machine")
    idle_states.hold()
    assert not idle_states.held()
    r = idle_states.reading()
    assert (r["asked"], r["in_force"], r.get("why_not")) == ("machine", "machine", None)
    assert "CPU_IDLE=machine" in idle_states.text(r)
    idle_states.release()


def test_a_device_that_cannot_be_opened_is_said_once_and_recorded(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(idle_states, "DEVICE", tmp_path / "no-such-device")
    idle_states.hold()
    idle_states.release()
    idle_states.hold()
    r = idle_states.reading()
    assert (r["asked"], r["in_force"]) == ("poll", "machine")
    assert "no-such-device could not be opened" in r["why_not"] and "CPU_IDLE=machine" in r["why_not"]
    assert capsys.readouterr().out.count("idle CPUs keep the machine's idle states") == 1


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="CPU_IDLE='halt'"):
        idle_states.choose("halt")


def test_remote_roles_record_their_hosts_idle_states():
    r = idle_states.reading(remote=True)
    assert r["in_force"] == "machine" and "other hosts" in r["why_not"]


def test_the_reports_conditions_say_how_idle_cpus_waited():
    def said(conditions: dict) -> str:
        run = Run(run_id="r", conditions=conditions, verification=None, servers={}, records=[])
        return dict(items(run))["idle CPUs"]

    polled = {"asked": "poll", "in_force": "poll", "driver": "haltpoll", "states": ["POLL", "haltpoll"]}
    assert said({"cpu_idle": polled}).startswith("idle CPUs polled while measuring")
    assert "haltpoll" in said({"cpu_idle": polled})
    assert said({}).startswith("not recorded")


def test_make_compare_says_when_two_runs_idled_differently():
    def run(conditions: dict) -> Run:
        return Run(run_id="r", conditions=conditions, verification=None, servers={}, records=[])

    older, polled = run({}), run({"cpu_idle": {"asked": "poll", "in_force": "poll"}})
    assert "idle CPUs: machine → poll" in " ".join(condition_differences(older, polled))
    assert not condition_differences(polled, polled)
