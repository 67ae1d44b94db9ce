"""Under which conditions the numbers were taken: machine, CPU sets, versions, commit, profile."""

from __future__ import annotations

import os
import platform
from typing import Any

import psutil

from harness.basics import cpu_speed, idle_states
from harness.basics.cpus import CpuPlan
from harness.basics.machine import nofile_limit, shell_output, timestamp
from harness.results.readable import GIT_COMMIT
from harness.runtime import Runtime


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit() -> str | None:
    """The checkout's commit, `-dirty` after it where tracked files changed; None outside a git checkout (what git
    says then is no commit, and readers refuse what is not one: harness.results.readable.GIT_COMMIT)."""
    commit = shell_output("git rev-parse --short HEAD")
    dirty = shell_output("git status --porcelain --untracked-files=no")
    return commit + ("-dirty" if dirty else "") if GIT_COMMIT.fullmatch(commit) else None


def collect(runtime: Runtime, profile: str, plan: CpuPlan, command: str) -> dict[str, Any]:
    """`runtime`: the Runtime the run uses; tool versions are those it runs (the host's, or the loadgen image's)."""
    return {
        "started_at": timestamp(),
        "command": command,
        "runtime": runtime.name,
        "runtime_details": runtime.conditions(),
        "profile": profile,
        "cpus": plan.to_dict(),
        "git_commit": git_commit(),
        **({"machine_is": "the harness's own; each role's host is in runtime_details.hosts"} if runtime.remote else {}),
        "machine": {
            "hostname": platform.node(),
            "kernel": platform.release(),
            "cpu_model": cpu_model(),
            "logical_cpus": os.cpu_count(),
            "usable_cpus": sorted(os.sched_getaffinity(0)),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "nofile_hard_limit": nofile_limit(),
            "somaxconn": shell_output("cat /proc/sys/net/core/somaxconn"),
        },
        "tools": runtime.tool_versions(),
        # how idle CPUs waited while this run measured: polling, or the machine's idle states (and why)
        "cpu_idle": idle_states.reading(remote=runtime.remote),
        # whether each CPU's speed was read beside every attempt (CPU_METER; harness/basics/cpu_speed.py)
        "cpu_meter": cpu_speed.reading(remote=runtime.remote),
    }
