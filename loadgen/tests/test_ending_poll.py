"""How closely a load is watched (harness.measuring.deadlines.wait): every 50 ms while it loads, every 5 ms from when it
is due to end (its planned stop sent, or the length it was sized to) for 0.2 s, then every 50 ms again: its exit is
noticed within 5 ms, and a load that runs past its time is not looked at 200 times a second."""

from __future__ import annotations

import pytest

from harness.measuring import deadlines
from harness.tools import LoadSpec


class Clock:
    """time.monotonic and time.sleep for deadlines.wait: the sleeps asked, and time moving only by them."""

    def __init__(self) -> None:
        self.now, self.sleeps = 0.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 4))
        self.now += seconds


class Tool:
    """A tool process that ends at `ends_at` seconds on the clock; notes the signals it was sent."""

    def __init__(self, clock: Clock, ends_at: float) -> None:
        self.clock, self.ends_at, self.signals = clock, ends_at, []

    def poll(self) -> int | None:
        return 0 if self.clock.now >= self.ends_at else None

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)
        self.ends_at = min(self.ends_at, self.clock.now + 0.012)  # it prints its summary and ends


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(deadlines.time, "monotonic", fake.monotonic)
    monkeypatch.setattr(deadlines.time, "sleep", fake.sleep)
    return fake


def watched(clock: Clock, spec: LoadSpec, tool_name: str, ends_at: float) -> Tool:
    tool = Tool(clock, ends_at)
    assert deadlines.wait([tool], tool_name, spec, [], "load", "", deadline=60.0) is False  # type: ignore[list-item]
    return tool


SIZED = LoadSpec(url="http://127.0.0.1:1/", concurrency=100, requests=8000, keepalive=True, sized_from_rps=10000)


def test_a_load_that_ends_itself_is_looked_at_closely_from_its_expected_end(clock):
    watched(clock, SIZED, "ab", ends_at=0.83)  # ab -k's count: due at 8,000 / 10,000 a second
    assert set(clock.sleeps[:16]) == {deadlines.POLL_S}  # 0 to 0.8 s
    assert set(clock.sleeps[16:]) == {deadlines.ENDING_POLL_S} and clock.now - 0.83 < deadlines.ENDING_POLL_S


def test_one_running_past_its_time_is_looked_at_as_while_it_loads(clock):
    watched(clock, SIZED, "ab", ends_at=2.0)
    fast = [s for s in clock.sleeps if s == deadlines.ENDING_POLL_S]
    assert len(fast) == round(deadlines.ENDING_WINDOW_S / deadlines.ENDING_POLL_S)
    assert clock.sleeps[-1] == deadlines.POLL_S


def test_a_planned_stop_is_sent_on_time_and_the_exit_after_it_noticed_within_5_ms(clock):
    spec = LoadSpec(url="http://127.0.0.1:1/", concurrency=100, duration_s=0.8, threads=1)  # wrk runs 1 s, stopped
    tool = watched(clock, spec, "wrk", ends_at=1.0)
    assert deadlines.planned_stop_s("wrk", spec) == pytest.approx(0.8) and len(tool.signals) == 1
    assert clock.now - (0.8 + 0.012) < deadlines.ENDING_POLL_S + 1e-9  # ended 12 ms after its SIGINT
