"""A load split over several tool processes (issue 43): its parts start one after another, so their merged rate is all
requests over the time all of them ran, on the harness's one clock, and each part's CPU share over its own time.
Under a runtime that starts each part 0.3 s after the one before it: a tool of this test's own whose parts each
answer a known count in a known time (the truth by construction), and real ab processes against the calibrated
server (a 2 ms service time), the runtime noting on its own when each part's process started and ended."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_tool import SleepingTool

from harness.basics.cpus import plan as cpu_plan
from harness.config.manifest import discover
from harness.judging import flags
from harness.measuring.tool_processes import Beside, Naming, measure
from harness.results.records import Attempt, Record
from harness.runtime import RunningServer
from harness.runtime.local import LocalRuntime
from harness.tools import LoadSpec, register
from harness.tools.load_plan import divide, plan_load
from harness.tools.output import Errors, Measurement, merge

SERVER = discover()["calibrated"]
PORT = 9414  # this test's own, in the range of the calibration's tests
STAGGER_S = 0.3


class StaggeredRuntime(LocalRuntime):
    """The local runtime, each tool process started STAGGER_S after the one before; `lives` holds each one's start and
    end on this clock (a thread waits for each), independently of what the harness records."""

    def __init__(self) -> None:
        super().__init__()
        self.lives: list[list[float]] = []

    def tool_process(self, argv: list[str], cpus: list[int], output: Path) -> subprocess.Popen:
        if self.lives:
            time.sleep(STAGGER_S)
        proc = super().tool_process(argv, cpus, output)
        life = [time.monotonic()]
        self.lives.append(life)
        threading.Thread(target=lambda: (proc.wait(), life.append(time.monotonic())), daemon=True).start()
        return proc


class Known(SleepingTool):
    """Each process says it answered its share of requests in SECONDS (and sleeps that long)."""

    name = binary = "known-split"


@pytest.mark.integration
def test_three_parts_started_0_3_s_apart_are_merged_over_the_time_all_of_them_ran(tmp_path):
    """3,000 requests in parts of 1 s started 0.3 s apart: 1.6 s from the first start to the last end, 1,875 req/s
    (merged as if simultaneous, as before: 3,000 req/s)."""
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    runtime = StaggeredRuntime()
    try:
        server = RunningServer(
            name="idle",
            host="127.0.0.1",
            port=1,
            cpus=[0],
            pid=idle.pid,
            log="",
            started_at=0,
            startup_s=0,
            runtime="local",
        )
        with register(Known()):  # type: ignore[arg-type]  # a tool of the test's own
            load = plan_load(
                "known-split", LoadSpec(url="http://127.0.0.1:1/", concurrency=3, requests=3000), (0,), override=3
            )
            outcome = measure(runtime, load, Naming(tmp_path, "known", "known"), Beside(server))
    finally:
        idle.kill()
    starts = [life[0] - runtime.lives[0][0] for life in runtime.lives]  # 0.3 s apart, and each Popen's own time
    assert starts == pytest.approx([0, STAGGER_S, 2 * STAGGER_S], abs=0.1)
    assert outcome.failure is None and outcome.measurement and outcome.measurement.requests == 3000
    assert outcome.measurement.rps == pytest.approx(3000 / (starts[-1] + Known.SECONDS), rel=0.01)
    assert outcome.parts_started_s == pytest.approx(starts, abs=0.01)


@pytest.fixture(scope="module")
def calibrated():
    if not (SERVER.folder / SERVER.artifacts[0]).exists():
        subprocess.run(SERVER.build, shell=True, cwd=SERVER.folder, check=True, timeout=600)
    runtime = LocalRuntime()
    running = runtime.start(SERVER, list(cpu_plan().server), PORT, {})
    try:
        yield running
    finally:
        runtime.stop(running)


@pytest.mark.integration
def test_parts_started_apart_are_merged_over_the_time_all_of_them_ran(calibrated, tmp_path):
    runtime = StaggeredRuntime()
    spec = LoadSpec(url=f"http://127.0.0.1:{PORT}/hello?service_us=2000", concurrency=8, requests=4000, keepalive=True)
    load = plan_load("ab", spec, tuple(cpu_plan().loadgen), override=2)
    assert len(load.processes) == 2
    outcome = measure(runtime, load, Naming(tmp_path, "split", "calibrated"), Beside(calibrated))
    assert outcome.failure is None and outcome.measurement
    time.sleep(0.2)  # the waiting threads note the ends
    first_start, last_end = min(life[0] for life in runtime.lives), max(life[1] for life in runtime.lives)
    truth = 4000 / (last_end - first_start)
    assert outcome.measurement.requests == 4000
    # within 3 %: each process's life holds ab's start and its writing of its files, which its own time does not
    assert outcome.measurement.rps == pytest.approx(truth, rel=0.03)
    assert outcome.parts_started_s[0] == 0 and outcome.parts_started_s[1] == pytest.approx(STAGGER_S, abs=0.05)
    # the parts overlapped for part of the time only: the longest part alone would have read faster by about the
    # stagger's share of the whole time (at least half of it), so a merge as if simultaneous would have been told apart
    span = last_end - first_start
    assert 4000 / max(outcome.parts_duration_s) > truth * (1 + 0.5 * STAGGER_S / span)


def test_a_merge_without_starts_takes_the_parts_as_simultaneous():
    part = Measurement(requests=1000, errors=Errors(), duration_s=1.0, rps=1000.0)
    assert merge([part, part]).rps == 2000
    assert merge([part, part], [0.0, 1.0]).rps == 1000  # one after the other: 2000 requests in 2 s
    assert merge([part, part], [0.5, 0.8]).duration_s == pytest.approx(1.3)


def test_requests_and_rate_follow_each_part_s_connections():
    parts = divide(LoadSpec(url="http://x/", concurrency=10, requests=1001), 3)
    assert [p.concurrency for p in parts] == [4, 3, 3] and [p.requests for p in parts] == [401, 300, 300]
    rated = divide(LoadSpec(url="http://x/", concurrency=10, rate=100.0, calls_per_connection=5), 3)
    assert [p.rate for p in rated] == [40.0, 30.0, 30.0]  # httperf: each part opens its connections as fast
    assert [p.requests for p in divide(LoadSpec(url="http://x/", concurrency=8, requests=800), 3)] == [300, 300, 200]
    with pytest.raises(ValueError, match="2 request"):
        divide(LoadSpec(url="http://x/", concurrency=8, requests=2), 3)


def test_never_more_parts_than_requests():
    load = plan_load("ab", LoadSpec(url="http://x/", concurrency=8, requests=2), (1,), override=3)
    assert [p.spec.requests for p in load.processes] == [1, 1]


def test_each_part_s_cpu_share_is_over_its_own_time():
    """Two parts of a 1 s attempt, the second started 0.5 s late: its 0.5 CPU s over its own 0.5 s is a whole core."""
    attempt = Attempt.from_dict(
        {
            "duration_s": 1.0,
            "rps": 1000.0,
            "samples": {"loadgen": {"cores": 2, "cpu_s": 1.0}},
            "processes": [
                {"cores": [1], "threads": 1, "capacity": 1.0, "cpu_s": 0.5, "started_s": 0.0, "duration_s": 1.0},
                {"cores": [2], "threads": 1, "capacity": 1.0, "cpu_s": 0.5, "started_s": 0.5, "duration_s": 0.5},
            ],
        }
    )
    record = Record.from_dict({"server": "s", "scenario": "x", "tool": "ab", "attempts": []})
    assert flags.loadgen_busy(record, attempt) == pytest.approx(1.0)
