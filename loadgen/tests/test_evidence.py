"""The evidence behind a figure is its own (issue 32): a load measured again (a record re-measured, its warm-up run
again) writes its tool's output beside the first one's instead of over it (Gatling's figures come from the report its
own run wrote: tests/test_gatling.py). The first test measures a server of the test's own on
loopback (tests/responders/contract_server.py, on a port of its own) with wrk, twice, under the same name."""

from __future__ import annotations

import pytest
from local_responder import running_responder
from ports import free_port

from harness.measuring.tool_processes import Beside, Naming, fresh_scratches, measure
from harness.runtime.local import LocalRuntime
from harness.tools import LoadSpec
from harness.tools.load_plan import plan_load

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

PORT = free_port()  # the operating system's choice (ports.py)


@pytest.fixture
def responder():
    with running_responder(PORT) as server:
        yield server


def test_a_load_measured_again_under_the_same_name_keeps_the_first_ones_output(responder, tmp_path):
    """tool_processes.py reused the first measurement's folder (mkdir exist_ok=True): the second wrk overwrote the first's
    output.txt, and the first attempts' raw paths then pointed at the second's figures."""
    spec = LoadSpec(url=f"http://127.0.0.1:{PORT}/hello", concurrency=2, threads=1, duration_s=1)
    naming = Naming(tmp_path, "probe-hello-c2-1", "probe hello #1")
    first = measure(LocalRuntime(), plan_load("wrk", spec, (1,)), naming, Beside(responder))
    kept = first.raw[0].read_text()
    second = measure(LocalRuntime(), plan_load("wrk", spec, (1,)), naming, Beside(responder))
    third = measure(LocalRuntime(), plan_load("wrk", spec, (1,)), naming, Beside(responder))
    assert (first.failure, second.failure, third.failure) == (None, None, None)
    assert [o.raw for o in (first, second, third)] == [
        [tmp_path / "probe-hello-c2-1" / "output.txt"],
        [tmp_path / "probe-hello-c2-1-again" / "output.txt"],
        [tmp_path / "probe-hello-c2-1-again2" / "output.txt"],
    ]
    assert first.raw[0].read_text() == kept  # untouched by the loads after it
    assert f"{first.measurement.requests} requests in" in kept
    assert f"{second.measurement.requests} requests in" in second.raw[0].read_text()


def test_wrk_measures_a_fractional_duration_for_that_long_not_for_its_whole_seconds(responder, tmp_path):
    """wrk takes whole seconds (-d 2s for 1.5): the runner ends it at 1.5 s with SIGINT, on which wrk reports what it
    measured over the time it ran; not a stop at a deadline (nothing counted as timeouts)."""
    spec = LoadSpec(url=f"http://127.0.0.1:{PORT}/hello", concurrency=2, threads=1, duration_s=1.5)
    outcome = measure(
        LocalRuntime(),
        plan_load("wrk", spec, (1,)),
        Naming(tmp_path, "probe-hello-c2-1", "probe hello"),
        Beside(responder),
    )
    assert outcome.failure is None and outcome.stopped is None
    assert "-d 2s" in " ".join(outcome.commands[0])
    m = outcome.measurement
    assert 1.4 <= m.duration_s <= 1.7 and m.requests > 0 and m.errors.total == 0
    assert m.rps == pytest.approx(m.requests / m.duration_s)


def test_the_folders_of_a_split_load_measured_again_are_fresh_too(tmp_path):
    (tmp_path / "ab-1.part2").mkdir()  # one part's folder of an earlier load is enough to move them all
    assert fresh_scratches(tmp_path, "ab-1", 2) == [tmp_path / "ab-1-again.part1", tmp_path / "ab-1-again.part2"]
    assert fresh_scratches(tmp_path, "ab-2", 2) == [tmp_path / "ab-2.part1", tmp_path / "ab-2.part2"]
