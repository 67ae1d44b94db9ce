"""Faults, third pass: processes (issue 34). On real processes, servers of the test's own (BENCH_SERVERS_DIR:
tests/responders/contract_server.py, slow to start where a JVM would be):
- a harness killed with SIGKILL while a server starts: the server is listed, and the next command stops it;
- a second `make bench` while one runs is refused before it builds anything;
- a second SIGINT during clean-up does not abort it, and SIGHUP stops a command like SIGINT;
- a full disk at the state write after a start: the server is stopped and the message says so;
- a reused process-group id: the harness never signals a group that is not its server's;
- a stepped wall clock: the harness still knows its own processes (the kernel's start time, in ticks since boot).
Ports are the operating system's choice (ports.py); the state is the checkout's (.run/), so no server may be up."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from ports import free_port

from harness.basics.machine import port_owner, wait_until
from harness.config.manifest import discover
from harness.runtime import RunningServer, State
from harness.runtime.local import LocalRuntime
from harness.runtime.state import Starter

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = Path(__file__).resolve().parents[1]
RESPONDER = Path(__file__).parent / "responders" / "contract_server.py"
PORTS = {name: free_port() for name in ("slowpoke", "probe", "stubborn")}  # the operating system's choice
ROUTES = '["id", "hello", "backend", "tweets", "factorial", "fibonacci"]'
SCENARIOS = """
[settings.quick]
repeat = 1
warmup = { duration_s = 1, tolerance = 1.0, window = 3, max_runs = 3, max_s = 10 }

[hello]
description = "GET /hello with wrk"
tool = "wrk"
targets = [{ route = "hello", path = "/hello" }]
profile.quick = { runs = [{ threads = 1, concurrency = 4, duration_s = 1 }] }
"""
# The command line with the test's scenario file, a short stop grace, and optionally a disk that fills at the state
# write after a start (every write of .run/state.json that lists a started server fails with ENOSPC), or at the first
# (every write that lists a server, starting or started)
LAUNCH = """
import errno, pathlib, re, sys
from harness import cli
from harness.config import scenarios
from harness.runtime import local
scenarios.SCENARIO_FILE = pathlib.Path(sys.argv.pop(1))
local.STOP_GRACE_S = 4
disk = sys.argv.pop(1)
if disk != "ok":
    write_text, listed = pathlib.Path.write_text, r'"startup_s": (?!0\\.0,)' if disk == "full-after-start" else '"startup_s"'
    def full(self, text, *args, **kw):
        if self.name == "state.tmp" and re.search(listed, text):
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return write_text(self, text, *args, **kw)
    pathlib.Path.write_text = full
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.fixture
def servers_dir(tmp_path) -> Path:
    """`probe` starts at once (its build leaves a mark), `slowpoke` listens after 60 s (a JVM's start, longer),
    `stubborn` too and ignores SIGTERM (stopped by SIGKILL after the grace)."""
    runs = {"slowpoke": ("60", ""), "probe": ("0", ""), "stubborn": ("60", "trap '' TERM; ")}
    for name, (delay, trap) in runs.items():
        folder = tmp_path / "servers" / name
        folder.mkdir(parents=True)
        command = f"{trap}exec {sys.executable} {RESPONDER} {{port}} {name} --start-delay {delay}"
        (folder / "manifest.toml").write_text(
            f'[[server]]\nname = "{name}"\nport = {PORTS[name]}\nroutes = {ROUTES}\nstartup_timeout_s = 120\n'
            f'build = "touch built"\nrun = ["sh", "-c", "{command}"]\n'
        )
    return tmp_path / "servers"


@pytest.fixture
def nothing_up(servers_dir):
    """No server listed nor port held before; none of the test's servers left after (whatever an assertion left)."""
    if State().load() or any(port_owner("127.0.0.1", p) for p in PORTS.values()):
        pytest.skip("servers are listed in .run/state.json or a port of this test is held: make down first")
    yield
    subprocess.run(harness_argv("down"), cwd=LOADGEN, env=harness_env(servers_dir), capture_output=True, timeout=120)
    for proc in responders():
        proc.kill()


def harness_argv(*args: str, disk: str = "ok", scenario_file: Path | None = None) -> list[str]:
    scenario_file = scenario_file or LOADGEN / "scenarios.toml"
    return [sys.executable, "-c", LAUNCH, str(scenario_file), disk, "--runtime", "local", *args]


def harness_env(servers_dir: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SERVERS", "PORTS", "REPEAT", "ORDER", "PROFILE")}
    return {**env, "BENCH_SERVERS_DIR": str(servers_dir), "TWIN": "", **extra}


def start(servers_dir: Path, *args: str, disk: str = "ok") -> subprocess.Popen:
    scenario_file = servers_dir.parent / "scenarios.toml"
    scenario_file.write_text(SCENARIOS)
    return subprocess.Popen(
        harness_argv(*args, disk=disk, scenario_file=scenario_file),
        cwd=LOADGEN,
        env=harness_env(servers_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )  # its own group: signals reach it as a terminal's would


def run(servers_dir: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        harness_argv(*args), cwd=LOADGEN, env=harness_env(servers_dir), capture_output=True, text=True, timeout=120
    )
    print(proc.stdout, proc.stderr)
    return proc


def responders(name: str | None = None) -> list[psutil.Process]:
    """The test's servers still running (any, or `name`)."""
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if (
            str(RESPONDER) in cmdline
            and proc.info["status"] != psutil.STATUS_ZOMBIE
            and (name is None or name in cmdline)
        ):
            out.append(proc)
    return out


def starting(proc: subprocess.Popen, name: str) -> None:
    """Until the harness waits for `name` to answer (its process runs, not listening yet)."""
    assert wait_until(lambda: responders(name) or proc.poll() is not None, 60), f"{name} never started"
    assert proc.poll() is None, proc.communicate()[0]
    time.sleep(1.5)


def ended(proc: subprocess.Popen) -> str:
    try:
        output = proc.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the harness did not end within 60 s:\n{proc.communicate()[0]}")
    print(output)
    return output


def assert_nothing_left() -> None:
    assert wait_until(lambda: not responders(), 5), f"servers left running: {[p.cmdline() for p in responders()]}"
    assert all(port_owner("127.0.0.1", p) is None for p in PORTS.values())
    assert not State().load(), f"servers still listed: {list(State().load())}"


# ---------------------------------------------------------------------------------------- killed while a server starts


@pytest.mark.parametrize(
    "then",
    [
        ["down"],
        ["--servers", "probe", "ping"],
        ["--build", "--servers", "probe", "ping"],
        ["--servers", "probe", "build"],
    ],
)
def test_a_bench_killed_while_a_server_starts_leaves_it_listed_and_the_next_command_stops_it(
    servers_dir, nothing_up, then
):
    proc = start(servers_dir, "--servers", "slowpoke", "bench")
    starting(proc, "slowpoke")
    proc.kill()  # SIGKILL: the harness runs nothing more
    ended(proc)
    assert responders("slowpoke"), "the server did not outlive the harness: nothing to test"
    assert "slowpoke" in State().load(), "the starting server is not listed in .run/state.json"
    after = run(servers_dir, *then)
    said = " ".join(after.stdout.split())
    assert after.returncode == 0 and "Traceback" not in after.stderr, said
    assert f"found what pid {proc.pid} (" in said and f"slowpoke (local, port {PORTS['slowpoke']})" in said, said
    assert "stopping slowpoke" in said
    if then[-1] == "ping":
        assert "probe: contract OK" in said
    if "build" in " ".join(then):  # make bench (or build) again: the leftover stopped before its jars are rewritten
        assert said.index("stopping slowpoke") < said.index("building probe"), said
    assert_nothing_left()


def jvms(folder: Path) -> list[psutil.Process]:
    """The JVMs running from `folder` (this checkout's server, not another checkout's)."""
    out = []
    for proc in psutil.process_iter(["name", "cwd", "status"]):
        if (
            proc.info["name"] == "java"
            and proc.info["cwd"] == str(folder)
            and proc.info["status"] != psutil.STATUS_ZOMBIE
        ):
            out.append(proc)
    return out


BUILT = LOADGEN.parent / "spray" / "target"


def jvm_server(tmp_path: Path) -> Path | None:
    """A servers folder with spray alone (its manifest without the weather route: no upstream to start), run from a
    built spray/target; None where none is built."""
    if not (BUILT / "spray-server.jar").exists():
        return None
    folder = tmp_path / "jvm" / "spray"
    folder.mkdir(parents=True)
    (folder / "target").symlink_to(BUILT.resolve())
    manifest = (LOADGEN.parent / "spray" / "manifest.toml").read_text()
    (folder / "manifest.toml").write_text(manifest.replace('"fibonacci", "weather"]', '"fibonacci"]'))
    return folder


def test_a_bench_killed_during_a_jvm_s_start_leaves_nothing_unlisted_and_down_stops_it(tmp_path):
    """The real case: spray (a JVM, 1 GiB heap touched before it listens), `bench` SIGKILLed before it answers."""
    folder = jvm_server(tmp_path)
    if not folder:
        pytest.skip("spray is not built (make build)")
    port = free_port()
    if State().load():
        pytest.skip("servers are listed in .run/state.json")
    (tmp_path / "scenarios.toml").write_text(SCENARIOS)
    env = harness_env(folder.parent)
    argv = harness_argv(
        "--ports", f"spray={port}", "--servers", "spray", "bench", scenario_file=tmp_path / "scenarios.toml"
    )
    proc = subprocess.Popen(
        argv, cwd=LOADGEN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        assert wait_until(lambda: jvms(folder) or proc.poll() is not None, 120, interval_s=0.02), "spray never started"
        answering = port_owner("127.0.0.1", port)
        proc.kill()  # SIGKILL while the JVM starts
        ended(proc)
        assert not answering, "spray already listened: not during its start"
        assert jvms(folder), "the JVM did not outlive the harness: nothing to test"
        assert "spray" in State().load(), "the starting JVM is not listed in .run/state.json"
        down = subprocess.run(
            harness_argv("--ports", f"spray={port}", "down"),
            cwd=LOADGEN,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        said = " ".join(down.stdout.split())
        assert down.returncode == 0 and f"found what pid {proc.pid} (" in said and "stopping spray" in said, said
        assert not jvms(folder) and port_owner("127.0.0.1", port) is None and not State().load()
    finally:
        for jvm in jvms(folder):
            jvm.kill()


# -------------------------------------------------------------------------------------- a second bench while one runs


def test_a_second_make_bench_is_refused_before_it_builds_anything(servers_dir, nothing_up):
    first = start(servers_dir, "--build", "--servers", "slowpoke", "bench")  # what `make bench` runs
    try:
        starting(first, "slowpoke")
        assert (servers_dir / "slowpoke" / "built").exists(), "the first bench did not build"
        env = harness_env(servers_dir, SERVERS="probe", RUNTIME="local")
        second = subprocess.run(
            ["make", "--no-print-directory", "-o", "setup", "bench"],
            cwd=LOADGEN.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        said = " ".join((second.stdout + second.stderr).split())
        print(said)
        assert second.returncode != 0
        assert f"another harness command is running in this checkout: pid {first.pid} (" in said
        assert not (servers_dir / "probe" / "built").exists(), "the second bench built beside the first"
        assert "Traceback" not in said
    finally:
        first.send_signal(signal.SIGINT)
        ended(first)
    assert first.returncode == 130
    assert_nothing_left()


# ---------------------------------------------------------------------------------------- signals during clean-up


@pytest.mark.parametrize("gap_s", [1.0, 0.2])
def test_a_second_sigint_during_clean_up_does_not_abort_it(servers_dir, nothing_up, gap_s):
    """SIGINT while `stubborn` starts: its stop sends SIGTERM (ignored) and waits the grace (4 s here); a second SIGINT
    in that wait (or a double Ctrl-C, 0.2 s apart) must not end the wait, or the SIGKILL after it never comes."""
    proc = start(servers_dir, "--servers", "stubborn", "ping")
    starting(proc, "stubborn")
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(gap_s)
    os.killpg(proc.pid, signal.SIGINT)
    output = ended(proc)
    assert proc.returncode == 130, output
    assert "interrupted: stopped what this command started" in output and "Traceback" not in output
    assert_nothing_left()


def test_sighup_stops_a_command_like_sigint(servers_dir, nothing_up):
    """An ssh session that drops sends SIGHUP: everything stopped, exit status 130."""
    proc = start(servers_dir, "--servers", "slowpoke", "ping")
    starting(proc, "slowpoke")
    os.killpg(proc.pid, signal.SIGHUP)
    output = ended(proc)
    assert proc.returncode == 130, output
    assert "Traceback" not in output
    assert_nothing_left()


# ------------------------------------------------------------------------------------------- a full disk under .run/


@pytest.mark.parametrize("disk", ["full-after-start", "full"])
def test_a_full_disk_at_the_state_write_after_a_start_stops_the_server_and_says_so(servers_dir, nothing_up, disk):
    proc = start(servers_dir, "--servers", "probe", "run", "hello", disk=disk)
    output = ended(proc)
    said = " ".join(output.split())
    assert not responders(), "the server that could not be listed is still running"
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    assert f"error: no space left on the device holding {State().path.parent}" in said, said
    assert "probe was stopped" in said, said
    assert all(port_owner("127.0.0.1", p) is None for p in PORTS.values())


# ----------------------------------------------------------------------------------- who is the harness's process


def server_entry(pid: int, start_ticks: int | None, created: float, **kw) -> RunningServer:
    """A state entry for a server whose process is `pid`, started at `start_ticks` (kernel ticks since boot) or, as
    an older harness wrote it, at `created` (psutil's wall-clock create_time)."""
    fields = {f.name for f in dataclasses.fields(RunningServer)}
    extra = {"pid_start": start_ticks} if "pid_start" in fields else {}
    return RunningServer(
        name="old",
        host="127.0.0.1",
        port=PORTS["probe"],
        cpus=[0],
        pid=pid,
        log="",
        started_at=created,
        startup_s=1.0,
        runtime="local",
        pid_created=created,
        **extra,
        **kw,
    )


def kernel_start(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])


def test_a_reused_process_group_id_is_never_signalled():
    """A stale entry's server died and its pid now leads an unrelated group (started after it): stopping the entry must
    leave that group alone."""
    group = subprocess.Popen(["sh", "-c", "sleep 300 & exec sleep 301"], start_new_session=True)
    try:
        assert wait_until(lambda: len([p for p in psutil.process_iter() if _pgid(p.pid) == group.pid]) == 2, 5)
        members = [p for p in psutil.process_iter() if _pgid(p.pid) == group.pid]
        assert len(members) == 2
        leader = psutil.Process(group.pid)
        stale = server_entry(group.pid, kernel_start(group.pid) - 500, leader.create_time() - 5)
        LocalRuntime().stop(stale)
        assert all(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in members), (
            "an unrelated group was signalled"
        )
    finally:
        try:
            os.killpg(group.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # the test failed: the group was signalled already
        group.wait()


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def test_a_stepped_wall_clock_does_not_lose_the_harness_s_own_processes(servers_dir, monkeypatch):
    """psutil's create_time is the kernel's start time plus the boot time, which /proc/stat derives from the wall
    clock: a step of the clock moves it. Shifted by an hour here (as `date -s` would), on a real server."""
    if port_owner("127.0.0.1", PORTS["probe"]):
        pytest.skip("probe's port is held")
    runtime, probe = LocalRuntime(), discover(servers_dir)["probe"]
    running = runtime.start(probe, [0], PORTS["probe"], {})
    me = Starter.this_command()
    try:
        booted = psutil._pslinux.boot_time()
        monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: booted + 3600)
        assert abs(psutil.Process(running.pid).create_time() - running.pid_created - 3600) < 1  # the clock "stepped"
        assert runtime.alive(running), "the server is taken for another process after the step"
        assert runtime.pids(running) == [running.pid], runtime.pids(running)
        assert not me.ended(), "this command is taken for ended after the step"
        runtime.stop(running)
        assert not responders("probe"), "stop() killed nothing after the step"
    finally:
        monkeypatch.undo()
        for proc in responders("probe"):
            proc.kill()
