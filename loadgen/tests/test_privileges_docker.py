"""Which Docker engines the harness trusts and whose containers it removes (issue 34, "Privileges and what is left
on the machine"): a one-host DOCKER_HOST on plain TCP, and the label HOSTS' clean-up matches."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config.host_roles import HostsError, check_docker_host
from harness.config.host_roles import parse as parse_hosts
from harness.config.manifest import REPO, discover
from harness.containers import engine as engine_module
from harness.containers import engine_runtime, ownership
from harness.containers.several_hosts import HostsRuntime
from harness.runtime.protocol import RuntimeFailure

LOADGEN_DIR = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "environ",
    [
        {"DOCKER_HOST": "tcp://10.1.0.2:2375"},
        {"DOCKER_HOST": "tcp://127.0.0.1:2375", "DOCKER_CERT_PATH": "/certs"},  # certificates without verification
        {"DOCKER_HOST": " TCP://10.1.0.2:2375 "},
    ],
)
def test_plain_tcp_docker_host_is_refused(environ):
    with pytest.raises(HostsError, match=r"^DOCKER_HOST=tcp://\S+ is plain TCP.*HOSTS_INSECURE_TCP=1") as exc:
        check_docker_host(environ)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"DOCKER_HOST": ""},
        {"DOCKER_HOST": "unix:///var/run/docker.sock"},
        {"DOCKER_HOST": "ssh://bench@10.1.0.2"},
        {"DOCKER_HOST": "tcp://10.1.0.2:2376", "DOCKER_TLS_VERIFY": "1"},
    ],
)
def test_local_socket_ssh_and_tls_docker_hosts_pass(environ, capsys):
    check_docker_host(environ)
    assert capsys.readouterr().out == ""


def test_plain_tcp_docker_host_is_accepted_with_a_warning_when_asked(capsys):
    check_docker_host({"DOCKER_HOST": "tcp://10.1.0.2:2375", "HOSTS_INSECURE_TCP": "1"})
    assert (
        "warning: DOCKER_HOST=tcp://10.1.0.2:2375: plain TCP without TLS (HOSTS_INSECURE_TCP=1)"
        in capsys.readouterr().out
    )


def _stub_docker(tmp_path: Path) -> Path:
    """A docker CLI that answers as an engine would (and notes that it was asked)."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    docker = stubs / "docker"
    docker.write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/docker-called"\necho 24.0.7\n')
    docker.chmod(0o755)
    return stubs


@pytest.mark.integration
@pytest.mark.parametrize("runtime", ["auto", "docker"])
@pytest.mark.parametrize("command", ["down", "build"])
def test_cli_refuses_a_plain_tcp_docker_host_before_asking_it(tmp_path, runtime, command):
    stubs = _stub_docker(tmp_path)
    env = {
        **os.environ,
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "DOCKER_HOST": "tcp://127.0.0.1:44375",
        "RUNTIME": runtime,
        "SERVERS": "nginx",
    }
    for name in ("DOCKER_TLS_VERIFY", "HOSTS_INSECURE_TCP", "HOSTS", "DOCKER_CONTEXT"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", command],
        cwd=LOADGEN_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 2, out
    assert len(out) == 1 and out[0].startswith("error: DOCKER_HOST=tcp://127.0.0.1:44375 is plain TCP"), out
    assert not (tmp_path / "docker-called").exists(), "the plain-TCP engine was asked"


# ------------------------------------------------------------------------------------------------------------------
# HOSTS: whose containers the clean-up removes. Two harness machines with the same checkout path share the hosts:
# what the other one runs there is never taken for ours.


class FakeEngines:
    """The Docker CLI against a few engines, as far as the clean-up uses it: ps with name and label filters, inspect,
    rm, stop, unpause, update, volume ls/rm. Each engine: container name -> (labels, running)."""

    def __init__(self, engines: dict[str, dict[str, tuple[dict, bool]]]):
        self.engines = engines
        self.calls: list[list[str]] = []

    def run_cli(self, argv, timeout=120, env=None, input=None, check=True) -> subprocess.CompletedProcess:
        self.calls.append(argv)
        assert argv[0] == "docker" and argv[1] == "--host", argv
        engine, (verb, *rest) = self.engines[argv[2]], argv[3:]
        out, rc = "", 0
        if verb == "ps":
            names = [n for n, (labels, running) in engine.items() if self._passes(n, labels, running, rest)]
            out = "\n".join(names)
        elif verb == "inspect":
            found = engine.get(rest[-1])
            rc = 0 if found else 1
            out = (
                json.dumps(
                    [
                        {
                            "Name": "/" + rest[-1],
                            "Config": {"Labels": found[0]},
                            "State": {"Running": found[1], "Status": "running" if found[1] else "exited", "Pid": 0},
                            "HostConfig": {"CpusetCpus": "0"},
                        }
                    ]
                )
                if found
                else ""
            )
        elif verb == "rm":
            for name in (a for a in rest if not a.startswith("-")):
                engine.pop(name, None)
        elif verb == "volume":
            out = ""
        return subprocess.CompletedProcess(argv, rc, out.encode(), b"")

    @staticmethod
    def _passes(name: str, labels: dict, running: bool, args: list[str]) -> bool:
        if "-a" not in args and not running:
            return False
        for key, value in (args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--filter"):
            if key == "label":
                k, _, v = value.partition("=")
                if labels.get(k) != v:
                    return False
            elif key == "name" and not re.search(value, "/" + name):
                return False
        return True

    def removed(self) -> list[tuple[str, str]]:
        return [(c[2], c[-1]) for c in self.calls if c[3] == "rm"]


SERVER_HOST, LOADGEN_HOST = "ssh://bench@10.9.0.2", "ssh://bench@10.9.0.3"


@pytest.fixture
def two_harnesses(monkeypatch, tmp_path):
    """A HostsRuntime (not started: no engine asked) whose hosts also run another harness machine's containers, made
    from a checkout at the same path; and the fake engines."""
    ours = ownership.owner_id(state_dir=tmp_path / "run", machine_id=tmp_path / "machine-id")
    theirs = {"bench.checkout": str(REPO), "bench.role": "server", ownership.OWNER_LABEL: "0123456789abcdef"}
    mine = {"bench.checkout": str(REPO), "bench.role": "server", ownership.OWNER_LABEL: ours}
    fake = FakeEngines(
        {
            SERVER_HOST: {"bench-rust": (theirs, True), "bench-akka": (theirs, False), "bench-node": (mine, False)},
            LOADGEN_HOST: {"bench-loadgen": ({**theirs, "bench.role": "loadgen"}, True)},
        }
    )
    monkeypatch.setattr(engine_module, "run_cli", fake.run_cli)
    monkeypatch.setattr(engine_runtime, "run_cli", fake.run_cli)
    monkeypatch.setattr(engine_runtime, "State", lambda: type("Empty", (), {"load": lambda self: {}})())
    monkeypatch.setattr(ownership, "owner_id", lambda **_: ours)
    runtime = HostsRuntime.__new__(HostsRuntime)
    engine_runtime.EngineRuntime.__init__(runtime)
    runtime.roles = parse_hosts(f"server={SERVER_HOST} loadgen={LOADGEN_HOST}")
    runtime._loadgen_cpus = None
    return runtime, fake, ours


def test_hosts_containers_carry_this_machine_and_checkout_id(tmp_path):
    (tmp_path / "machine-id").write_text("a" * 32 + "\n")
    (tmp_path / "other-machine-id").write_text("b" * 32 + "\n")
    first = ownership.owner_id(state_dir=tmp_path / "run", machine_id=tmp_path / "machine-id")
    assert first == ownership.owner_id(state_dir=tmp_path / "run", machine_id=tmp_path / "machine-id")  # kept
    assert (tmp_path / "run" / "owner-id").exists()
    # the same path on another machine (its own machine id and .run/), or even with a copied .run/: another id
    assert first != ownership.owner_id(state_dir=tmp_path / "run2", machine_id=tmp_path / "machine-id")
    assert first != ownership.owner_id(state_dir=tmp_path / "run", machine_id=tmp_path / "other-machine-id")
    labels = HostsRuntime._labels("server")
    assert labels[ownership.OWNER_LABEL] == ownership.owner_id() and labels["bench.checkout"] == str(REPO)
    assert ownership.owner_filter() == ["--filter", f"label={ownership.OWNER_LABEL}={ownership.owner_id()}"]


def test_hosts_clean_up_never_removes_another_machines_containers(two_harnesses):
    runtime, fake, _ = two_harnesses
    runtime.prepare()  # what a killed run of ours left
    runtime._stop_loadgen()  # the end of a command
    assert fake.removed() == [(SERVER_HOST, "bench-node")], fake.calls
    assert set(fake.engines[SERVER_HOST]) == {"bench-rust", "bench-akka"}
    assert set(fake.engines[LOADGEN_HOST]) == {"bench-loadgen"}


def test_hosts_refuse_to_start_beside_another_machines_running_container(two_harnesses):
    runtime, fake, _ = two_harnesses
    with pytest.raises(RuntimeFailure, match="bench-rust on server .* another checkout"):
        runtime._remove_leftover(discover()["rust"], runtime.place("server"))
    with pytest.raises(RuntimeFailure, match="bench-loadgen on loadgen .* another checkout"):
        runtime._ensure_loadgen([1])
    assert not [c for c in fake.calls if c[3] in ("rm", "update", "stop")], fake.calls
    assert "bench-rust" in fake.engines[SERVER_HOST] and "bench-loadgen" in fake.engines[LOADGEN_HOST]


@pytest.mark.integration
def test_base_images_refuse_a_plain_tcp_docker_host_before_asking_it(tmp_path):
    stubs = _stub_docker(tmp_path)
    env = {
        **os.environ,
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "DOCKER_HOST": "tcp://127.0.0.1:44375",
        "FAMILIES": "native",
    }
    for name in ("DOCKER_TLS_VERIFY", "HOSTS_INSECURE_TCP", "DOCKER"):
        env.pop(name, None)
    proc = subprocess.run(
        [str(REPO / "docker" / "base-images.sh")], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "DOCKER_HOST=tcp://127.0.0.1:44375 is plain TCP" in proc.stderr
    assert not (tmp_path / "docker-called").exists(), "the plain-TCP engine was asked"
