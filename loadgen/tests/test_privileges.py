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
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port), "SERVER_CORES": "1", "STATIC_DIR": str(static),
           "RUN_DIR": str(run_dir)}
    env.pop("H2C_PORT", None)
    proc = subprocess.Popen([str(NGINX_RUN)], cwd=NGINX_RUN.parent, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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
@pytest.mark.parametrize("kind,port", [("directory", 44180), ("symlink", 44181)])
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
    port = 44182
    proc, run_dir = _start_nginx(tmp_path, port)
    first = _served_root(run_dir)
    _stop(proc, signal.SIGKILL)  # no trap runs: the copy stays until the next start
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
    _stub(stubs, "docker", f'case "$1" in compose) exit 0;; info) [ -e "{tmp_path}/up" ] || exit 1; '
                           'echo "stub, vfs";; esac\n')
    _stub(stubs, "dockerd", f'printf "%s\\n" "$@" > "{tmp_path}/dockerd.args"; touch "{tmp_path}/up"\n')
    _stub(stubs, "debootstrap", "exit 0\n")
    env = {**os.environ, "PATH": f"{stubs}:/usr/bin:/bin", "DOCKERD_FLAGS": flags,
           "DOCKERD_LOG": str(tmp_path / "dockerd.log")}
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
