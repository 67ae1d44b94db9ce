"""Privileges and what is left on the machine (issue 34): what the harness's scripts do as root to paths others can
write, what they pass to a shell, what they leave enabled, which Docker endpoints they trust and whose containers
they remove. Real scripts and real processes; stubs only where a real daemon cannot be started here."""

from __future__ import annotations

import http.client
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from harness.config.manifest import REPO

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

NGINX_RUN = REPO / "nginx" / "run.sh"
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="run.sh copies the static files only when started as root")


def _wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"run.sh exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nginx did not listen on {port}")


def _wait_port_free(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
                return
            except OSError:
                time.sleep(0.1)
    raise AssertionError(f"port {port} still held")


def _get(port: int, path: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        return conn.getresponse().read()
    finally:
        conn.close()


def _served_root(run_dir: Path) -> Path:
    for line in (run_dir / "nginx.conf").read_text().splitlines():
        if line.strip().startswith("root "):
            return Path(line.split()[1].rstrip(";"))
    raise AssertionError("no root directive in the generated nginx.conf")


def _start_nginx(tmp_path: Path, port: int) -> tuple[subprocess.Popen, Path]:
    """run.sh as the harness starts it, with static files `nobody` cannot read (a checkout under /root): the case where
    it serves a copy."""
    static = tmp_path / "private" / "static"
    if not static.exists():
        shutil.copytree(REPO / "nginx" / "static", static)
    os.chmod(tmp_path / "private", 0o700)
    run_dir = tmp_path / "run"
    env = {
        **os.environ,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "SERVER_CORES": "1",
        "STATIC_DIR": str(static),
        "RUN_DIR": str(run_dir),
    }
    env.pop("H2C_PORT", None)
    proc = subprocess.Popen(
        [str(NGINX_RUN)],
        cwd=NGINX_RUN.parent,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    _wait_for_port(port, proc)
    return proc, run_dir


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    proc.wait(timeout=15)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _other_user_path(kind: str, predictable: Path, tmp_path: Path) -> Path:
    """What a local user (here `nobody`) could have put at the predictable path before root's run.sh: a directory of
    their own, or a symlink to one. Returns the directory they own."""
    nobody = pwd.getpwnam("nobody")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "mine").write_text("their file\n")
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    os.chown(theirs / "mine", nobody.pw_uid, nobody.pw_gid)
    os.chmod(tmp_path, 0o755)
    if kind == "directory":
        shutil.move(str(theirs), predictable)
        return predictable
    predictable.symlink_to(theirs)
    os.lchown(predictable, nobody.pw_uid, nobody.pw_gid)
    return theirs


@as_root
@pytest.mark.parametrize("kind,port", [("directory", 19180), ("symlink", 19181)])
def test_nginx_static_copy_never_uses_a_path_another_user_made(tmp_path, kind, port):
    predictable = Path(f"/tmp/bench-nginx-static-{port}")
    _remove(predictable)
    theirs = _other_user_path(kind, predictable, tmp_path)
    proc = None
    try:
        proc, run_dir = _start_nginx(tmp_path, port)
        assert _get(port, "/hello") == (REPO / "nginx" / "static" / "hello").read_bytes()
        root = _served_root(run_dir)
        # their path is neither followed nor used nor removed: it is exactly as they left it
        assert predictable.is_symlink() == (kind == "symlink"), f"{predictable} was replaced"
        assert sorted(p.name for p in theirs.iterdir()) == ["mine"], f"root wrote into {theirs}"
        assert theirs.stat().st_uid == pwd.getpwnam("nobody").pw_uid
        assert root.resolve() != theirs.resolve() and root != predictable
        # the copy served is root's own, which nobody else may write into
        st = os.lstat(root)
        assert not root.is_symlink() and st.st_uid == 0 and not st.st_mode & 0o022, oct(st.st_mode)
        _stop(proc)
        assert not root.exists(), f"the copy {root} is left after nginx stopped"
    finally:
        if proc and proc.poll() is None:
            _stop(proc, signal.SIGKILL)
        _remove(predictable)


@as_root
def test_nginx_static_copy_left_by_a_killed_run_is_removed_at_the_next_start(tmp_path):
    port = 19182
    proc, run_dir = _start_nginx(tmp_path, port)
    first = _served_root(run_dir)
    _stop(proc, signal.SIGKILL)  # no trap runs: the copy stays until the next start
    _wait_port_free(port)  # the killed group's workers let go of it a moment later
    proc, run_dir = _start_nginx(tmp_path, port)
    try:
        assert not first.exists() or first == _served_root(run_dir), f"{first} left by the killed run"
    finally:
        root = _served_root(run_dir)
        _stop(proc)
    assert not root.exists()


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


SETUP_DOCKER = REPO / "docker" / "setup-docker.sh"


def _setup_docker_with_stubs(tmp_path: Path, flags: str) -> tuple[subprocess.CompletedProcess, Path]:
    """setup-docker.sh with a docker CLI that answers once a dockerd has run, and a dockerd that records its argv,
    one argument a line (nothing real is installed or started)."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    _stub(
        stubs,
        "docker",
        f'case "$1" in compose) exit 0;; info) [ -e "{tmp_path}/up" ] || exit 1; echo "stub, vfs";; esac\n',
    )
    _stub(stubs, "dockerd", f'printf "%s\\n" "$@" > "{tmp_path}/dockerd.args"; touch "{tmp_path}/up"\n')
    _stub(stubs, "debootstrap", "exit 0\n")
    env = {
        **os.environ,
        "PATH": f"{stubs}:/usr/bin:/bin",
        "DOCKERD_FLAGS": flags,
        "DOCKERD_LOG": str(tmp_path / "dockerd.log"),
    }
    proc = subprocess.run([str(SETUP_DOCKER)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    time.sleep(0.3)  # what a shell string would have started in the background
    return proc, tmp_path / "dockerd.args"


@pytest.mark.parametrize("injected", ["; touch {x}", "$(touch {x})", "`touch {x}` && touch {x}"])
def test_setup_docker_passes_dockerd_flags_as_arguments_never_through_a_shell(tmp_path, injected):
    marker = tmp_path / "x"
    proc, args = _setup_docker_with_stubs(tmp_path, "--iptables=false " + injected.format(x=marker))
    assert not marker.exists(), f"DOCKERD_FLAGS ran a second command: {proc.stderr}"
    assert args.read_text().splitlines()[0] == "--iptables=false", proc.stderr
    assert proc.returncode == 0, proc.stderr


def test_setup_docker_gives_dockerd_each_flag_as_one_argument(tmp_path):
    proc, args = _setup_docker_with_stubs(tmp_path, "--iptables=false  --bridge=none --storage-driver=vfs")
    assert proc.returncode == 0, proc.stderr
    assert args.read_text().splitlines() == ["--iptables=false", "--bridge=none", "--storage-driver=vfs"]


DEMO_TOOLS = ("dockerd", "containerd", "sshd", "busybox", "ping", "ip")  # what `make hosts-demo` installs when missing
DEMO_UNITS = ("ssh.service", "docker.service", "docker.socket", "containerd.service")


def _hosts_demo_checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the Makefile and the demo's install script, a stub `docker/hosts-demo.sh` (the topology itself is
    not built), and a PATH of stubs: apt-get, which checks the policy-rc.d and then enables the services the way the
    packages' postinst scripts do (through systemctl) and, with STUB_APT_HANG, waits to be interrupted; systemctl,
    which keeps each unit's state in a file."""
    checkout, stubs, units = tmp_path / "checkout", tmp_path / "bin", tmp_path / "units"
    for folder in (checkout / "docker", stubs, units):
        folder.mkdir(parents=True)
    shutil.copy(REPO / "Makefile", checkout)
    if (REPO / "docker" / "hosts-demo-install.sh").exists():
        shutil.copy(REPO / "docker" / "hosts-demo-install.sh", checkout / "docker")
    _stub(checkout / "docker", "hosts-demo.sh", f'echo "$@" > "{tmp_path}/demo-called"\n')
    for tool in ("bash", "sh", "env", "id", "cat", "tee", "chmod", "rm", "touch", "sleep", "make", "mkdir"):
        (stubs / tool).symlink_to(shutil.which(tool))
    _stub(
        stubs,
        "apt-get",
        f'''case "$*" in *install*)
  policy=$HOSTS_DEMO_POLICY_RC_D
  if [ -x "$policy" ] && ! "$policy" ssh start; then echo refused > "{tmp_path}/policy-during-install"; fi
  systemctl enable {" ".join(DEMO_UNITS)}
  touch "{tmp_path}/installing"
  [ -z "${{STUB_APT_HANG:-}}" ] || exec sleep 60;;
esac
''',
    )
    _stub(
        stubs,
        "systemctl",
        f'''cmd=$1; shift; echo "$cmd $*" >> "{tmp_path}/systemctl.log"
for unit; do case "$unit" in --*) continue;; esac
  case "$cmd" in
    is-enabled) state=$(cat "{units}/$unit" 2>/dev/null || echo disabled); echo "$state"; [ "$state" = enabled ] || exit 1;;
    enable) echo enabled > "{units}/$unit";;
    disable) echo disabled > "{units}/$unit";;
  esac
done
''',
    )
    (units / "containerd.service").write_text("enabled\n")  # enabled before: not the install's doing, so it stays
    env = {**os.environ, "PATH": str(stubs), "HOSTS_DEMO_POLICY_RC_D": str(tmp_path / "policy-rc.d")}
    if all(shutil.which(t, path=str(stubs)) or os.access(f"/usr/sbin/{t}", os.X_OK) for t in DEMO_TOOLS):
        pytest.skip("every tool of the demo is installed here: `make hosts-demo` installs nothing")
    return checkout, env


def _unit_states(tmp_path: Path) -> dict[str, str]:
    return {
        unit: (tmp_path / "units" / unit).read_text().strip() if (tmp_path / "units" / unit).exists() else "disabled"
        for unit in DEMO_UNITS
    }


def _assert_machine_as_found(tmp_path: Path) -> None:
    wrong = []
    if not (tmp_path / "policy-during-install").exists():
        wrong.append("apt-get ran without the policy-rc.d that stops services")
    if (tmp_path / "policy-rc.d").exists():
        wrong.append("the policy-rc.d is left in place")
    states = _unit_states(tmp_path)
    if states != {
        "ssh.service": "disabled",
        "docker.service": "disabled",
        "docker.socket": "disabled",
        "containerd.service": "enabled",
    }:
        wrong.append(f"services for the next boot: {states}")
    assert not wrong, wrong


def test_hosts_demo_install_leaves_no_policy_and_nothing_newly_enabled(tmp_path):
    checkout, env = _hosts_demo_checkout(tmp_path)
    proc = subprocess.run(
        ["make", "-s", "hosts-demo"], cwd=checkout, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "demo-called").read_text().split() == ["up"]
    _assert_machine_as_found(tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_hosts_demo_install_interrupted_restores_the_policy_and_the_services(tmp_path, sig):
    checkout, env = _hosts_demo_checkout(tmp_path)
    proc = subprocess.Popen(
        ["make", "-s", "hosts-demo"],
        cwd=checkout,
        env={**env, "STUB_APT_HANG": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "installing").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert (tmp_path / "installing").exists(), proc.communicate()[0]
        os.killpg(proc.pid, sig)  # Ctrl-C on the terminal (the whole group), or a TERM to it
        out = proc.communicate(timeout=30)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert not (tmp_path / "demo-called").exists(), "the topology was built after an interrupted install"
    _assert_machine_as_found(tmp_path)
    assert "disabling" in out


@as_root
@pytest.mark.parametrize("named", ["/tmp/bench-nginx-static.aaaaaaaaaa/../{victim}", "{victim}"])
def test_nginx_removes_no_folder_but_its_own_copy_whatever_run_dir_names(tmp_path, named):
    """.run/nginx/static-copy names the copy to remove: anything else it names (another folder, a path through `..`)
    is left alone."""
    victim = Path("/tmp") / f"bench-victim-{os.getpid()}"
    victim.mkdir()
    (victim / "keep").write_text("kept\n")
    (Path("/tmp") / "bench-nginx-static.aaaaaaaaaa").mkdir(exist_ok=True)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "static-copy").write_text(named.format(victim=victim.name if ".." in named else victim) + "\n")
    try:
        proc, _ = _start_nginx(tmp_path, 19183)
        _stop(proc)
        assert (victim / "keep").exists(), f"run.sh removed {victim}"
    finally:
        shutil.rmtree(victim, ignore_errors=True)
        shutil.rmtree("/tmp/bench-nginx-static.aaaaaaaaaa", ignore_errors=True)
