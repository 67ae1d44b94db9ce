"""The sampler on a real process: its CPU seconds, its peak memory, and the once-a-second memory timeline that shows
whether a server grows during a long run; a process tree's cost read before and after some work (make twin's)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from harness.basics.sampling import ProcessSampler, cgroup_cpu_s, process_cost
from harness.runtime.child_tool import ChildTool

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

# grows by about 20 MB every 0.5 s, busy in between
GROWER = """
import time
hold, end = [], time.time() + 10
while time.time() < end:
    hold.append(bytearray(20 * 2**20))
    stop = time.time() + 0.5
    while time.time() < stop:
        pass
"""


def test_memory_timeline_shows_a_growing_process():
    proc = subprocess.Popen([sys.executable, "-c", GROWER])
    try:
        time.sleep(0.3)
        sampler = ProcessSampler(lambda: [proc.pid], cores=1).start()
        time.sleep(3.2)
        result = sampler.stop()
    finally:
        proc.kill()
        proc.wait()
    timeline = result["rss_mb_timeline"]
    assert len(timeline) >= 3 and [t for t, _ in timeline] == sorted(t for t, _ in timeline)
    assert timeline[-1][1] - timeline[0][1] > 60  # ~120 MB added over 3 s
    assert result["peak_rss_mb"] >= timeline[-1][1]
    assert result["cpu_s"] > 1.0  # busy between allocations


SPIN = "import time\nend = time.time() + 3\nwhile time.time() < end:\n    pass\n"


def test_a_process_sharing_its_cpu_shows_the_time_it_waited_for_it():
    """Two spinning processes on one CPU: each runs about half the time and waits for the CPU the other half (its
    threads' run delay, which says how much other work on a server's cores held its requests)."""
    cpu = sorted(os.sched_getaffinity(0))[-1]
    procs = [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", SPIN]) for _ in range(2)]
    try:
        time.sleep(0.3)
        sampler = ProcessSampler(lambda: [procs[0].pid], cores=1, cpus=[cpu]).start()
        time.sleep(1.5)
        result = sampler.stop()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert result["run_delay_s"] is not None
    assert 0.3 < result["run_delay_s"] < 1.5  # about 0.75 s of the 1.5 s
    assert result["run_delay_s"] + result["cpu_s"] == pytest.approx(1.5, abs=0.3)  # runnable all along
    assert 0 <= result["steal_s"] < 1.5  # the hypervisor's share of that CPU meanwhile: whatever the host did
    assert ProcessSampler(lambda: [], cores=1).start().stop().get("steal_s") is None  # no CPUs named: not read


def test_the_sampler_thread_runs_only_when_its_cpu_is_idle_and_the_caller_stays_as_it_was():
    """Its wake-ups beside the tool on the load generator's CPU preempted the tool (p99 of the calibrated burn 16.9-17.4
    ms against 16.05 without the harness; with SCHED_IDLE 16.07): the sampler's thread is SCHED_IDLE, the caller's
    (which starts the tools, whose children inherit its policy) is not."""
    sampler = ProcessSampler(lambda: [os.getpid()], cores=1).start()
    try:
        deadline = time.monotonic() + 5
        while sampler._thread.native_id is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # the thread sets its own policy as it starts
        assert os.sched_getscheduler(sampler._thread.native_id) == os.SCHED_IDLE
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
    finally:
        sampler.stop()


BUSY = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end:\n    pass\n"


def test_a_tool_reaped_as_a_child_has_its_own_cpu_exactly_its_reaped_children_included(tmp_path):
    """A tool that ends before any sampler reads it (samplers run SCHED_IDLE beside a saturated tool) still has its CPU:
    the kernel's account at wait4, which includes the children it reaped itself."""
    script = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BUSY.format(s=0.3)!r}])\n"
    script += BUSY.format(s=0.2)
    tool = ChildTool([sys.executable, "-c", script], tmp_path / "output.txt")
    assert tool.cpu_s is None and tool.poll() is None
    assert tool.wait(timeout=30) == 0
    assert tool.cpu_s is not None and 0.5 <= tool.cpu_s < 0.5 + 0.4  # 0.3 s grandchild + 0.2 s own + interpreters
    tool.terminate()  # ended and reaped: no signal to a pid the kernel may have handed on
    assert tool.poll() == 0


def test_a_child_tool_that_outlives_its_timeout_raises_and_can_still_be_stopped(tmp_path):
    tool = ChildTool(["sleep", "30"], tmp_path / "output.txt")
    with pytest.raises(subprocess.TimeoutExpired):
        tool.wait(timeout=0.2)
    tool.terminate()
    assert tool.wait(timeout=5) == -15 and tool.cpu_s is not None


def test_a_child_tool_polled_from_two_threads_at_once_is_reaped_once(tmp_path):
    """The sampler's thread polls the tool while the runner waits for it: neither may find the child gone."""
    for _ in range(20):
        tool = ChildTool([sys.executable, "-c", BUSY.format(s=0.05)], tmp_path / "output.txt")
        errors = []

        def poll_until_ended(tool=tool, errors=errors):
            try:
                while tool.poll() is None:
                    pass
            except Exception as exc:  # noqa: BLE001 - the test reports it
                errors.append(exc)

        pollers = [threading.Thread(target=poll_until_ended) for _ in range(3)]
        for poller in pollers:
            poller.start()
        assert tool.wait() == 0
        for poller in pollers:
            poller.join()
        assert errors == [] and tool.cpu_s is not None and tool.cpu_s > 0.04


# three threads that live on; on each line read they sleep 1 ms 200 times each (600 voluntary switches at least),
# then the main thread spins 0.5 s
WORKER = """
import sys, threading, time
go, done = threading.Semaphore(0), threading.Semaphore(0)
def naps():
    while True:
        go.acquire()
        for _ in range(200):
            time.sleep(0.001)
        done.release()
for _ in range(3):
    threading.Thread(target=naps, daemon=True).start()
print("ready", flush=True)
for _ in sys.stdin:
    for _ in range(3):
        go.release()
    for _ in range(3):
        done.acquire()
    end = time.time() + 0.5
    while time.time() < end:
        pass
    print("done", flush=True)
"""


def test_a_process_trees_cost_counts_its_childrens_cpu_and_every_threads_switches():
    """The worker runs under a shell that waits for it, so it is a descendant of the pid asked about; its threads'
    switches are summed, where the main thread's own count (/proc/<pid>/status, psutil's) shows a handful."""
    shell = subprocess.Popen(
        ["sh", "-c", f"{sys.executable} -c '{WORKER}'; true"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    worker = None
    try:
        assert shell.stdout is not None and shell.stdin is not None and shell.stdout.readline() == "ready\n"
        worker = psutil.Process(shell.pid).children()[0]
        before, main_before = process_cost(shell.pid), sum(worker.num_ctx_switches())
        shell.stdin.write("go\n")
        shell.stdin.flush()
        assert shell.stdout.readline() == "done\n"
        after, main_after = process_cost(shell.pid), sum(worker.num_ctx_switches())
    finally:
        for proc in (worker, shell):
            if proc is not None:
                proc.kill()
        shell.communicate()
    assert before is not None and after is not None
    assert 0.4 <= after.user_s - before.user_s <= 1.5  # the 0.5 s spin, in the child
    assert after.system_s >= before.system_s
    assert 600 <= after.switches - before.switches <= 2000
    assert main_after - main_before < 100
    assert process_cost(shell.pid) is None  # gone


def _own_cpu_group(name: str) -> Path | None:
    """A fresh control group with a CPU count (cgroup v2, or v1's cpuacct), made here; None where this user cannot."""
    v2, v1 = Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpuacct")
    root = v2 if (v2 / "cgroup.controllers").exists() else v1 if (v1 / "cpuacct.usage").exists() else None
    if root is None:
        return None
    try:
        (root / name).mkdir()
    except OSError:
        return None
    return root / name


def test_a_control_groups_cpu_counts_its_processes_that_have_ended():
    """What the Docker runtime reads of the loadgen container: a tool that spun 0.5 s and ended still counts, read
    through a process that stayed (the container's init), without anyone sampling the tool while it ran."""
    group = _own_cpu_group(f"bench-test-{os.getpid()}")
    if group is None:
        pytest.skip("no control group can be made here (needs root and a cgroup v2 or v1 cpuacct hierarchy)")
    stayer = subprocess.Popen(["sleep", "30"])
    try:
        (group / "cgroup.procs").write_text(str(stayer.pid))
        before = cgroup_cpu_s(stayer.pid)
        spin = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
        tool = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(0.3)\n{spin}"])  # moved, then spins
        (group / "cgroup.procs").write_text(str(tool.pid))
        assert tool.wait(10) == 0
        after = cgroup_cpu_s(stayer.pid)
    finally:
        stayer.kill()
        stayer.wait()
        time.sleep(0.1)
        group.rmdir()
    assert before is not None and after is not None
    assert 0.45 <= after - before <= 1.0
