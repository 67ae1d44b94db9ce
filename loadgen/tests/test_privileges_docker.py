"""Which Docker engines the harness trusts and whose containers it removes (issue 34, "Privileges and what is left
on the machine"): a one-host DOCKER_HOST on plain TCP, and the label HOSTS' clean-up matches."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config.host_roles import HostsError, check_docker_host

LOADGEN_DIR = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("environ", [
    {"DOCKER_HOST": "tcp://10.1.0.2:2375"},
    {"DOCKER_HOST": "tcp://127.0.0.1:2375", "DOCKER_CERT_PATH": "/certs"},  # certificates without verification
    {"DOCKER_HOST": " TCP://10.1.0.2:2375 "},
])
def test_plain_tcp_docker_host_is_refused(environ):
    with pytest.raises(HostsError, match=r"^DOCKER_HOST=tcp://\S+ is plain TCP.*HOSTS_INSECURE_TCP=1") as exc:
        check_docker_host(environ)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("environ", [
    {}, {"DOCKER_HOST": ""}, {"DOCKER_HOST": "unix:///var/run/docker.sock"}, {"DOCKER_HOST": "ssh://bench@10.1.0.2"},
    {"DOCKER_HOST": "tcp://10.1.0.2:2376", "DOCKER_TLS_VERIFY": "1"},
])
def test_local_socket_ssh_and_tls_docker_hosts_pass(environ, capsys):
    check_docker_host(environ)
    assert capsys.readouterr().out == ""


def test_plain_tcp_docker_host_is_accepted_with_a_warning_when_asked(capsys):
    check_docker_host({"DOCKER_HOST": "tcp://10.1.0.2:2375", "HOSTS_INSECURE_TCP": "1"})
    assert "warning: DOCKER_HOST=tcp://10.1.0.2:2375: plain TCP without TLS (HOSTS_INSECURE_TCP=1)" \
        in capsys.readouterr().out


def _stub_docker(tmp_path: Path) -> Path:
    """A docker CLI that answers as an engine would (and notes that it was asked)."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    docker = stubs / "docker"
    docker.write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/docker-called"\necho 24.0.7\n')
    docker.chmod(0o755)
    return stubs


@pytest.mark.parametrize("runtime", ["auto", "docker"])
@pytest.mark.parametrize("command", ["down", "build"])
def test_cli_refuses_a_plain_tcp_docker_host_before_asking_it(tmp_path, runtime, command):
    stubs = _stub_docker(tmp_path)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "DOCKER_HOST": "tcp://127.0.0.1:44375",
           "RUNTIME": runtime, "SERVERS": "nginx"}
    for name in ("DOCKER_TLS_VERIFY", "HOSTS_INSECURE_TCP", "HOSTS", "DOCKER_CONTEXT"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-m", "harness", command], cwd=LOADGEN_DIR, env=env, capture_output=True,
                          text=True, timeout=120)
    out = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 2, out
    assert len(out) == 1 and out[0].startswith("error: DOCKER_HOST=tcp://127.0.0.1:44375 is plain TCP"), out
    assert not (tmp_path / "docker-called").exists(), "the plain-TCP engine was asked"
