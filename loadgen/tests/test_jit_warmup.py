"""The warm-up's reading of a JVM's JIT (harness/basics/jit.py) and the end it decides (measuring/warmup.Progress)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.basics import jit
from harness.measuring.warmup import JIT_QUIET, Progress
from harness.stats import trend

FIXTURE = Path(__file__).parent / "fixtures" / "jit_by_hand_akka_20261202.txt"
HOT_LOOP = """
public class Hot {
    public static void main(String[] args) {
        long sum = 0;
        for (long i = 0; ; i++) { sum += Long.toString(i).hashCode(); if (sum == 42) System.out.println(sum); }
    }
}
"""


def by_hand() -> list[tuple[int, float, float]]:
    """The fixture's runs: connections made, req/s, the compilers' share of the JVM's CPU."""
    rows = re.findall(r"conns=(\d+) rps=([\d.]+) jit_ticks=(\d+) all_ticks=(\d+)", FIXTURE.read_text())
    return [(int(c), float(r), int(j) / int(a)) for c, r, j, a in rows]


def ended_at(runs: list[tuple[int, float, float | None]], connections: int, window: int = 3) -> int | None:
    """The run (1-based) at which a warm-up of these runs ends, as warmup.warm_up asks Progress after each."""
    done = Progress(window, connections)
    made = 0
    for n, (total, rps, share) in enumerate(runs, 1):
        done.add(rps, 1.0, total - made, 0, 0.10, share)
        made = total
        if done.enough():
            return n
    return None


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK (java) on PATH, as the JVM servers' build does")
def test_a_running_jvm_s_compilers_are_read_and_a_process_without_them_is_not(tmp_path):
    source = tmp_path / "Hot.java"
    source.write_text(HOT_LOOP)
    jvm = subprocess.Popen(["java", "-Xshare:auto", str(source)], stdout=subprocess.DEVNULL)
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(1.0)  # started and compiling its loop
        first = jit.read(jvm.pid)
        time.sleep(1.5)
        second = jit.read(jvm.pid)
        assert first is not None and second is not None
        assert second.total > first.total and sum(first.compiler.values()) > 0
        share = jit.share(first, second)
        assert share is not None and 0.0 <= share <= 1.0
        assert jit.read(plain.pid) is None  # no HotSpot compiler thread: judged on its rates alone
    finally:
        for proc in (jvm, plain):
            proc.kill()
            proc.wait()
    assert jit.read(jvm.pid) is None  # gone
    assert jit.share(None, second) is None and jit.share(second, second) is None


def test_akka_by_hand_ends_once_its_compilers_are_quiet_not_at_a_connection_count():
    runs = by_hand()
    climbing = [share for _, _, share in runs[:20]]
    late = [share for _, _, share in runs[-10:]]
    assert min(climbing) > 0.15 and sum(share <= JIT_QUIET for share in late) == 9  # loud, then quiet (one recompile)
    end = ended_at([(c, r, s) for c, r, s in runs], connections=60_000)
    assert end is not None
    made, rate, _ = runs[end - 1]
    # quiet from 46,000 connections on (one recompilation at 44,000): ended on the plateau, before the manifest's
    # 60,000 that the rates alone would have waited for
    assert 46_000 <= made < 60_000 and rate > 3_000
    assert all(share <= JIT_QUIET for _, _, share in runs[end - 3 : end])
    without_jit = ended_at([(c, r, None) for c, r, _ in runs], connections=60_000)
    assert without_jit is not None and runs[without_jit - 1][0] >= 60_000


def test_flat_rates_do_not_end_a_warm_up_while_the_jit_still_compiles():
    flat = [(1000 * n, 4000.0, 0.30) for n in range(1, 11)]
    assert ended_at(flat, connections=0) is None
    done = Progress(3, 0)
    for _ in range(3):
        done.add(4000.0, 1.0, 1000, 0, 0.10, 0.30)
    assert done.steady and not done.jit_quiet() and not done.enough()


def test_once_the_jit_is_quiet_its_latest_three_runs_judge_and_a_climb_still_does_not_end_it():
    # a climb that levelled off: over the latest half (five runs) still 20 % up; over the latest three, flat
    rates = [2000.0, 2600.0, 3000.0, 3400.0, 3900.0, 4200.0, 4700.0, 4750.0, 4680.0]
    assert not trend.settled(rates, trend.judged_window(len(rates), 3), 0.10)
    assert trend.settled(rates[-3:], 3, 0.10)
    quiet_at_last = [(n * 1000, r, 0.01 if n >= 7 else 0.3) for n, r in enumerate(rates, 1)]
    assert ended_at(quiet_at_last, connections=0) == 9
    assert ended_at([(n * 1000, r, None) for n, r in enumerate(rates, 1)], connections=0) is None
    climb = [3000.0, 3500.0, 4000.0]
    assert ended_at([(n * 1000, r, 0.0) for n, r in enumerate(climb, 1)], connections=0) is None


def test_a_warm_up_run_keeps_its_jit_share_and_older_files_read_and_write_back_unchanged():
    from harness.results.attempt_records import Warmup

    done = Progress(3, 0)
    done.add(4000.0, 1.0, 1000, 0, 0.10, 0.0123)
    done.add(4100.0, 1.0, 1000, 0, 0.10)
    written = Warmup("ab", done.runs, False, 0.10, 40).to_dict()
    assert written["runs"] == [
        {"rps": 4000.0, "duration_s": 1.0, "errors": 0, "jit_share": 0.012},
        {"rps": 4100.0, "duration_s": 1.0, "errors": 0},
    ]
    assert Warmup.from_dict(written).to_dict() == written


def test_a_compiler_thread_that_ends_or_starts_between_two_readings_is_counted_for_what_it_did_between_them():
    # HotSpot ends idle compiler threads and starts new ones: thread 2 ended, thread 3 started since the first reading
    before = jit.CpuTime({1: 0.50, 2: 0.10}, total=10.0)
    after = jit.CpuTime({1: 0.60, 3: 0.05}, total=11.0)
    assert jit.share(before, after) == pytest.approx(15 / 100)
    assert jit.share(after, jit.CpuTime({1: 0.60}, total=11.0)) is None  # no CPU spent: no share
