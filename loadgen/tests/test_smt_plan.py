"""SMT (issue 43): on a machine with two or more threads per physical core, the CPU plan gives each role whole cores
(the kernel's thread_siblings_list), so the server's CPUs have no sibling running the load generator; `make plan
ASSUME_CPUS=16 ASSUME_SMT=2` shows a larger machine's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.basics.cpus import CpuPlanError, assumed_siblings, physical_cores, plan, siblings_from_kernel

LOADGEN = Path(__file__).resolve().parents[1]


def cores_of(cpus, siblings) -> set[tuple[int, ...]]:
    return {tuple(sorted(siblings[c])) for c in cpus}


@pytest.mark.parametrize("count, threads", [(16, 2), (8, 2), (12, 2), (32, 4), (6, 2)])
def test_no_core_is_split_between_the_server_and_the_load_generator(count, threads):
    siblings = assumed_siblings(count, threads)
    p = plan(tuple(range(count)), siblings=siblings)
    assert not cores_of(p.server, siblings) & cores_of(p.loadgen, siblings)
    assert not cores_of(p.server, siblings) & cores_of(p.upstream, siblings)
    assert p.threads_per_core == threads and f"{threads} threads per core" in p.describe()
    assert set(p.server) | set(p.loadgen) | set(p.upstream) == set(range(count))


def test_a_16_thread_machine_of_8_cores():
    p = plan(tuple(range(16)), siblings=assumed_siblings(16, 2))
    assert (p.server, p.upstream) == ((0, 1, 8, 9), (2, 10))
    assert p.loadgen == (3, 4, 5, 6, 7, 11, 12, 13, 14, 15)


def test_without_smt_the_plan_is_as_it_was():
    for count, server, loadgen, upstream in (
        (2, (0,), (1,), (1,)),
        (4, (0,), (2, 3), (1,)),
        (16, (0, 1, 2, 3), tuple(range(5, 16)), (4,)),
    ):
        p = plan(tuple(range(count)), siblings={})
        assert (p.server, p.loadgen, p.upstream, p.threads_per_core) == (server, loadgen, upstream, 1)


def test_cpus_given_that_split_a_core_are_refused_in_one_line():
    with pytest.raises(CpuPlanError, match="CPU 0,8 are one physical core's threads"):
        plan(tuple(range(16)), {"server": "0-3", "loadgen": "8-15"}, siblings=assumed_siblings(16, 2))
    with pytest.raises(CpuPlanError, match="does not divide"):
        assumed_siblings(15, 2)


def test_the_kernel_s_topology_is_read(tmp_path):
    for cpu, siblings in ((0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3")):
        (tmp_path / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (tmp_path / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(siblings + "\n")
    read = siblings_from_kernel(range(5), tmp_path)
    assert read == {0: (0, 2), 1: (1, 3), 2: (0, 2), 3: (1, 3), 4: (4,)}  # cpu4: not described, a core of its own
    assert physical_cores((0, 1, 2, 3), read) == [(0, 2), (1, 3)]
    here = tuple(sorted(os.sched_getaffinity(0)))
    assert all(cpu in siblings for cpu, siblings in siblings_from_kernel(here).items())


@pytest.mark.integration
def test_make_plan_shows_an_assumed_smt_machine():
    env = {k: v for k, v in os.environ.items() if k not in ("CPUS_SERVER", "CPUS_LOADGEN", "CPUS_UPSTREAM", "HOSTS")}
    run = [sys.executable, "-m", "harness", "plan", "hello"]
    done = subprocess.run(
        run,
        cwd=LOADGEN,
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "ASSUME_CPUS": "16", "ASSUME_SMT": "2", "FORMAT": "json"},
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["machine"]["threads_per_core"] == 2 and data["cpu_plan"]["server"] == [0, 1, 8, 9]
    text = subprocess.run(
        run,
        cwd=LOADGEN,
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "ASSUME_CPUS": "16", "ASSUME_SMT": "2"},
    ).stdout
    assert "2 threads per physical core (SMT)" in text
