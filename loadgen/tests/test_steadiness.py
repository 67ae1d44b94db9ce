"""The machine's CPU-speed probe (harness/measuring/steadiness.py): real busy loops, pinned, and the arithmetic of windows."""

import os

import pytest

from harness.basics import stats
from harness.config import scenarios
from harness.measuring import steadiness
from harness.report.run_conditions import steadiness_text


def test_windows_average_whole_groups_of_ticks_and_drop_a_partial_one():
    assert steadiness.windows([1, 3, 5, 7, 9], 2) == [2, 6]
    assert stats.cv([100, 100]) == 0 and stats.cv([90, 110]) == pytest.approx(0.1414, abs=1e-4)
    assert stats.cv([100]) is None


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
    assert scenarios.settings("quick").steadiness == {"seconds": 9, "window_s": 1.25}
    bad = tmp_path / "scenarios.toml"
    bad.write_text(
        "[settings.quick]\nrepeat = 3\nsteadiness = { seconds = 0, window_s = 2 }\n"
        "warmup = { duration_s = 1, tolerance = 0.1, max_runs = 2 }\n"
    )
    with pytest.raises(scenarios.ScenarioError, match="steadiness = .* give positive seconds and window_s"):
        scenarios.settings("quick", path=bad)
