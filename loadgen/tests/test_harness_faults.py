"""Faults of the harness itself, on real servers on loopback (rust, and nginx, which a run starts beside it):
- killed with SIGKILL mid-attempt (local and Docker runtimes): results.json stays valid, and `harness down` (or the
  next command that starts servers) finds the servers, the load tool (and the containers) the killed run left, says
  so, and stops them;
- two commands at once: the second stops with exit status 2, naming the first, and starts nothing; `up` then `run`
  still work (up releases the lock and leaves its servers up, which are not leftovers);
- the disk holding the run's folder fills (a small tmpfs mounted there, filled for real: ENOSPC) while raw outputs
  are written: a clear error, the records so far kept, the servers stopped, exit status 1.
Each test ends with no process, container or listener of its own left. Ports are this file's own (24xxx)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness.basics.cpus import plan
from harness.basics.machine import port_owner, wait_until
from harness.basics.paths import REPO
from harness.config.manifest import discover
from harness.containers import engine, images
from harness.containers.compose import container_name
from harness.results import records as results
from harness.results.store import RESULTS
from harness.runtime import RunningServer, State
from harness.runtime.local import LocalRuntime
from harness.runtime.state import Starter
from harness.servers.lock import LOCK_FILE, HarnessBusy, one_command_at_a_time
from harness.servers.session import Session

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = Path(__file__).resolve().parents[1]
PORTS = {"rust": 24086, "nginx": 24000}
ENGINE, WHY = engine.engine_answers()


def harness(*args: str, runtime: str = "local", **env: str) -> tuple[list[str], dict]:
    ports = " ".join(f"{n}={p}" for n, p in PORTS.items())
    full_env = {**os.environ, "RUNTIME": runtime, "REPEAT": "3", "PROFILE": "quick", **env}
    full_env.pop("SERVERS", None)
    return [sys.executable, "-m", "harness", "--ports", ports, *args], full_env


def start(*args: str, **kw) -> subprocess.Popen:
    argv, env = harness(*args, **kw)
    return subprocess.Popen(argv, cwd=LOADGEN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run(*args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    argv, env = harness(*args, **kw)
    proc = subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True, timeout=timeout)
    print(proc.stdout, proc.stderr)
    return proc


def ports_free() -> bool:
    return all(port_owner("127.0.0.1", port) is None for port in PORTS.values())


def running(pid: int, created: float | None) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def project_containers() -> list[str]:
    names = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout
    ours = {container_name(n) for n in (*PORTS, images.LOADGEN)}
    return [n for n in names.split() if n in ours]


@pytest.fixture
def nothing_up(request):
    """The state is shared with the developer's servers (`make up`): `down` would stop them, so none may be up."""
    up = [name for name, entry in State().load().items() if psutil.pid_exists(entry.pid)]
    if up:
        pytest.skip(f"servers are up ({', '.join(up)}; .run/state.json is shared): make down first")
    if not ports_free():
        pytest.skip(f"a port of this test is in use: {PORTS}")
    yield
    runtime = getattr(request.node, "callspec", None) and request.node.callspec.params.get("runtime") or "local"
    run("down", runtime=runtime, timeout=300)  # whatever a failed assertion left
    assert ports_free() and (runtime == "local" or not project_containers())


# ------------------------------------------------------------------------------------------------------ unit tests


def test_the_lock_names_its_holder_and_is_free_again_once_released(tmp_path):
    lock = tmp_path / "harness.lock"
    with one_command_at_a_time(lock):
        assert json.loads(lock.read_text())["pid"] == os.getpid()
        with pytest.raises(HarnessBusy, match=rf"running in this checkout: pid {os.getpid()} \(.*\)\. Wait for it"):
            with one_command_at_a_time(lock):
                pass
    assert lock.read_text() == ""
    with one_command_at_a_time(lock):  # released: taken again at once
        pass


def test_the_state_tells_leftovers_from_servers_left_up_on_purpose(tmp_path):
    state = State(tmp_path / "state.json")
    gone = subprocess.Popen(["true"])
    gone.wait()
    killed = Starter(gone.pid, psutil.Process().create_time() - 1, "harness run hello")

    def server(name: str) -> RunningServer:  # this very process stands for every server: it is alive
        return RunningServer(
            name=name,
            host="127.0.0.1",
            port=1,
            cpus=[0],
            pid=os.getpid(),
            log="",
            started_at=0,
            startup_s=0,
            runtime="local",
            pid_created=psutil.Process().create_time(),
        )

    for name in ("mine", "left", "old"):
        state.put(server(name))
    state.put(server("kept"), keep=True)
    data = json.loads(state.path.read_text())
    data["started_by"]["kept"]["pid"] = data["started_by"]["left"]["pid"] = gone.pid  # their command has ended
    del data["started_by"]["old"]  # written by an older harness
    state.path.write_text(json.dumps(data))
    assert list(state.leftover_servers()) == ["left"]
    session = Session(LocalRuntime(), plan(), discover(), {})
    session.state = state
    assert set(session.running()) == {"mine", "kept", "old"}  # a leftover is not up: not chosen, nor measured

    state.add_tool(os.getpid(), ["wrk", "http://127.0.0.1:1/"])
    assert [t.argv[0] for t in state.tools()] == ["wrk"] and not state.leftover_tools()
    data = json.loads(state.path.read_text())
    data["tools"].append({**data["tools"][0], "started_by": vars(killed)})
    state.path.write_text(json.dumps(data))
    assert [t.started_by.pid for t in state.leftover_tools()] == [gone.pid]
    state.drop_tools()
    assert [t.started_by.pid for t in state.tools()] == [gone.pid]
    state.drop_tools(killed)
    assert not state.tools() and set(state.load()) == {"mine", "kept", "left", "old"}


# -------------------------------------------------------------------------------------------------- integration


def kill_mid_attempt(run_id: str, runtime: str) -> subprocess.Popen:
    """A `run hello` on rust, killed with SIGKILL while its first attempt's wrk runs; its results.json checked. The
    seed profile's 30 s attempt: `down` must find that wrk still running (a quick one, 1.5 s, could end first where a
    fresh clone's first `down` is slow to start)."""
    proc = start("--servers", "rust", "--run-id", run_id, "run", "hello", runtime=runtime, PROFILE="seed")
    first_attempt = RESULTS / run_id / "raw" / "rust-hello-c100-1"
    try:
        assert wait_until(lambda: first_attempt.exists() and State().tools(), 600, interval_s=0.05), (
            "the first attempt never started"
        )
    finally:
        proc.kill()  # SIGKILL: nothing of the harness runs after this
        output, _ = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, output
    data = json.loads((RESULTS / run_id / "results.json").read_text())
    assert data["run_id"] == run_id and results.load(RESULTS / run_id / "results.json").run_id == run_id
    return proc


RUNTIMES = [pytest.param("local"), pytest.param("docker", marks=pytest.mark.skipif(not ENGINE, reason=WHY))]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_harness_killed_mid_attempt_keeps_its_results_and_down_stops_what_it_left(nothing_up, runtime):
    if runtime == "docker":
        missing = [
            f for f in ("native", "nginx", images.LOADGEN) if engine.image_labels(images.runtime_image(f)) is None
        ]
        if missing:
            pytest.skip(f"base images missing ({', '.join(missing)}): make base-images")
    proc = kill_mid_attempt(f"test-killed-{runtime}-{os.getpid()}", runtime)
    tools, servers = State().tools(), State().load()
    assert [t.name for t in tools] == ["wrk"] and all(t.started_by.pid == proc.pid for t in tools)
    assert set(servers) == {"rust", "nginx"} and all(e.runtime == runtime for e in servers.values())
    assert all(t.running() for t in tools), "the tool ended before the harness was killed: not mid-attempt"
    if runtime == "local":
        server_pids = {
            pid: psutil.Process(pid).create_time() for e in servers.values() for pid in LocalRuntime().pids(e)
        }
        assert server_pids and all(running(pid, t) for pid, t in server_pids.items())
    else:
        server_pids = {}
        assert set(project_containers()) == {"bench-rust", "bench-nginx", "bench-loadgen"}
    assert not ports_free()

    down = run("down", runtime=runtime, timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    said = " ".join(down.stdout.split())
    assert f"found what pid {proc.pid} (" in said and "run hello) left running when it was killed" in said
    assert f"the load tool wrk (pid {tools[0].pid})" in said
    assert f"rust ({runtime}, port {PORTS['rust']})" in said and "stopping rust" in said and "stopping nginx" in said
    if runtime == "docker":
        assert "removing the leftover container bench-loadgen" in said
        assert not project_containers()
    assert not any(t.running() for t in tools)
    assert not any(running(pid, t) for pid, t in server_pids.items())
    assert not _loading(PORTS["rust"]), "a load tool on this test's port outlived `down`"
    assert ports_free() and not State().load() and not State().tools()


def test_the_next_command_that_starts_servers_stops_what_a_killed_one_left(nothing_up):
    proc = kill_mid_attempt(f"test-killed-then-ping-{os.getpid()}", "local")
    left = State().load()["rust"]
    ping = run("--servers", "rust", "ping")
    said = " ".join(ping.stdout.split())
    assert ping.returncode == 0, said
    assert f"found what pid {proc.pid} (" in said and "stopping rust" in said
    assert said.index("stopping rust") < said.index("starting rust") and "rust: contract OK" in said
    assert not LocalRuntime().alive(left) and not _loading(PORTS["rust"])
    assert ports_free() and not State().load() and not State().tools()


def test_a_second_command_stops_naming_the_first_and_starts_nothing(nothing_up):
    first = start("--servers", "rust", "--run-id", f"test-first-{os.getpid()}", "run", "hello")
    try:
        assert wait_until(lambda: _lock_holder() == first.pid and _answered("rust"), 120), (
            "the first command never held the lock with rust up"
        )
        before = State().load()
        second = run("--servers", "rust", "--run-id", f"test-second-{os.getpid()}", "run", "hello", timeout=60)
        said = " ".join(second.stdout.split())
        assert second.returncode == 2, said
        assert f"another harness command is running in this checkout: pid {first.pid} (" in said
        assert "--run-id test-first-" in said and "run hello)" in said and "Traceback" not in second.stderr
        assert "starting" not in said and not (RESULTS / f"test-second-{os.getpid()}").exists()
        assert State().load() == before  # nothing started, nothing forgotten
        assert run("list", timeout=60).returncode == 0  # read-only commands take no lock
    finally:
        first.send_signal(signal.SIGINT)
        output, _ = first.communicate(timeout=120)
    assert first.returncode == 130, output
    assert ports_free() and _lock_holder() is None


def test_up_releases_the_lock_and_the_next_commands_use_its_servers(nothing_up):
    up = run("--servers", "rust", "up", timeout=120)
    assert up.returncode == 0 and _lock_holder() is None, up.stdout
    rust = State().load()["rust"]
    measured = run("--servers", "rust", "--run-id", f"test-after-up-{os.getpid()}", "run", "hello", REPEAT="1")
    assert measured.returncode == 0, measured.stdout
    assert "starting rust" not in measured.stdout and "left running when it was killed" not in measured.stdout
    assert LocalRuntime().alive(rust), "the server `make up` left was stopped by the next command"
    down = run("down", timeout=120)
    assert down.returncode == 0 and "stopping rust" in down.stdout, down.stdout
    assert "killed" not in down.stdout  # left up on purpose: not a leftover
    assert not LocalRuntime().alive(rust) and ports_free()


def test_a_full_disk_keeps_the_records_measured_so_far_and_stops_the_servers(nothing_up, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs as the run's folder needs root")
    run_id = f"test-disk-full-{os.getpid()}"
    folder = RESULTS / run_id
    folder.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        proc = start("--servers", "rust", "--run-id", run_id, "run", "hello tweets", REPEAT="1")
        try:
            assert wait_until(lambda: _records(folder / "results.json") >= 1, 300, interval_s=0.05), (
                "the first record was never written"
            )
            _fill(folder / "filler")
            output, _ = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        said = " ".join(output.split())
        assert proc.returncode == 1, output
        shown = folder.relative_to(REPO) if folder.is_relative_to(REPO) else folder  # results/<run>, or the tests' own
        assert (
            f"error: no space left on the device holding {shown}: free some space; the 1 record(s) "
            f"measured so far are in {shown}/results.json"
        ) in said
        assert "Traceback" not in output
        kept = results.load(folder / "results.json")
        assert [(r.server, r.scenario) for r in kept.records] == [("rust", "hello")]
        assert ports_free() and not State().load()
        shutil.copy(folder / "results.json", tmp_path / "results.json")
    finally:
        subprocess.run(["umount", str(folder)], check=True)
    shutil.copy(tmp_path / "results.json", folder / "results.json")  # the run stays readable where `latest` points


def _loading(port: int) -> list[int]:
    """Processes (a load tool, on the host or in a container) whose command line targets `port` on loopback."""
    pids = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if f"127.0.0.1:{port}" in " ".join(proc.info["cmdline"] or []) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            pids.append(proc.pid)
    return pids


def _answered(name: str) -> bool:
    """`name` is listed in .run/state.json and has answered: no longer `starting` (its entry is complete)."""
    try:
        data = json.loads(State().path.read_text())
    except (OSError, ValueError):
        return False
    return name in data.get("servers", {}) and not data.get("started_by", {}).get(name, {}).get("starting", True)


def _lock_holder() -> int | None:
    try:
        return json.loads(LOCK_FILE.read_text())["pid"]
    except (OSError, ValueError):
        return None


def _records(path: Path) -> int:
    try:
        return len(json.loads(path.read_text())["records"])
    except (OSError, ValueError):
        return 0


def _fill(path: Path) -> None:
    """Writes until the device is full: every size down to one byte, so not a byte is left."""
    with path.open("wb", buffering=0) as out:
        for size in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == 28  # ENOSPC
