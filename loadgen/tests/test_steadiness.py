"""The machine's CPU-speed probe (harness/measuring/steadiness.py): real busy loops, pinned, and the arithmetic of windows."""

import os
import signal
import subprocess
import sys
import time

import pytest

from harness.config import scenarios
from harness.measuring import steadiness
from harness.report.run_conditions import steadiness_text
from harness.stats import intervals as stats


def test_windows_average_whole_groups_of_ticks_and_drop_a_partial_one():
    assert steadiness.windows([1, 3, 5, 7, 9], 2) == [2, 6]
    assert stats.cv([100, 100]) == 0 and stats.cv([90, 110]) == pytest.approx(0.1414, abs=1e-4)
    assert stats.cv([100]) is None


@pytest.mark.integration
def test_a_real_probe_on_two_pinned_cpus_reports_each_cpus_variation_and_their_correlation():
    cpus = sorted(os.sched_getaffinity(0))[:2]
    result = steadiness.probe({"server": cpus[0], "loadgen": cpus[-1]}, seconds=2, window_s=0.5)
    assert result["windows"] >= 3
    assert set(result["cv"]) == {"server", "loadgen"} and all(0 <= c < 1 for c in result["cv"].values())
    assert set(result["rate"]) == {"server", "loadgen"} and all(r > 1000 for r in result["rate"].values())  # loops/s
    text = steadiness_text(result)
    assert (
        text.startswith("CPU speed varied ")
        and f"(server CPU {cpus[0]})" in text
        and "between 0.5 s windows over 2 s" in text
    )


def test_the_profiles_probe_with_windows_as_long_as_an_attempt_and_a_bad_setting_is_refused(tmp_path):
    assert scenarios.settings("quick").steadiness == {"seconds": 9, "window_s": 0.8}
    bad = tmp_path / "scenarios.toml"
    bad.write_text(
        "[settings.quick]\nrepeat = 3\nsteadiness = { seconds = 0, window_s = 2 }\n"
        "warmup = { duration_s = 1, tolerance = 0.1, max_runs = 2 }\n"
    )
    with pytest.raises(scenarios.ScenarioError, match="steadiness = .* give positive seconds and window_s"):
        scenarios.settings("quick", path=bad)


@pytest.mark.integration
def test_the_probe_counts_a_stall_of_its_cpu_and_its_length():
    """A real probe process stopped for 60 ms (SIGSTOP: its CPU taken away, as a hypervisor does) reports a stall of
    at least that length; its counts still read as rates."""
    probe = subprocess.Popen(
        [sys.executable, "-c", steadiness.PROBE, str(steadiness.TICK_S), "1.5", str(steadiness.STALL_S)],
        stdout=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.6)
    probe.send_signal(signal.SIGSTOP)
    time.sleep(0.06)
    probe.send_signal(signal.SIGCONT)
    out, _ = probe.communicate(timeout=10)
    found = steadiness.stalls(out)
    assert (
        found is not None and found["worst_ms"] >= 60 and found["per_s"] > 0 and found["share"] >= 0.06 / 1.7
    )  # of about 1.6 s
    assert len(steadiness.tick_rates(out)) >= 10


def test_stalls_are_counted_per_second_over_the_ticks_and_an_older_probe_has_none():
    lines = "0.100000 1000 1 0.002500 0.002500\n0.100000 1000 0 0.000000 0.000000\n0.200000 2000 2 0.004000 0.006000\n"
    assert steadiness.stalls(lines) == {"per_s": 7.5, "worst_ms": 4.0, "share": 0.02125}
    assert steadiness.stalls("0.100000 1000\n0.100000 1000\n") is None
    assert steadiness.tick_rates(lines) == [10000.0, 10000.0, 10000.0]
