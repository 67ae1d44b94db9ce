"""HOSTS parsing (issue 13): each role's endpoint, kind, address and CPUs, and one clear error per bad value."""
from __future__ import annotations

import shutil

import pytest

from harness.hosts import Host, HostsError, parse, probe

DEMO = "server=ssh://root@10.213.77.2 loadgen=ssh://root@10.213.77.3 upstream=ssh://root@10.213.77.4"


def test_the_demo_line_gives_each_role_its_host_and_address():
    hosts = parse(DEMO, environ={})
    assert hosts == {
        "server": Host("server", "ssh://root@10.213.77.2", "ssh", "10.213.77.2"),
        "loadgen": Host("loadgen", "ssh://root@10.213.77.3", "ssh", "10.213.77.3"),
        "upstream": Host("upstream", "ssh://root@10.213.77.4", "ssh", "10.213.77.4"),
    }


def test_upstream_left_out_shares_the_server_host_and_options_are_read():
    hosts = parse("server=ssh://bench@box-a,address=10.1.0.2,cpus=0-3 loadgen=local-ctx,address=10.1.0.3",
                  environ={})
    assert hosts["server"] == Host("server", "ssh://bench@box-a", "ssh", "10.1.0.2", (0, 1, 2, 3))
    assert hosts["loadgen"] == Host("loadgen", "local-ctx", "context", "10.1.0.3")
    assert hosts["upstream"] == Host("upstream", "ssh://bench@box-a", "ssh", "10.1.0.2", (0, 1, 2, 3))


def test_tcp_with_tls_is_accepted_and_plain_tcp_only_when_asked(capsys):
    tls = {"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"}
    assert parse("server=tcp://10.1.0.2:2376 loadgen=tcp://10.1.0.3:2376", environ=tls)["server"].kind == "tcp"
    with pytest.raises(HostsError, match=r"server=tcp://10.1.0.2:2375: a Docker engine on plain TCP .* "
                                         r"HOSTS_INSECURE_TCP=1 to accept it"):
        parse("server=tcp://10.1.0.2:2375 loadgen=ssh://b@10.1.0.3", environ={})
    parse("server=tcp://10.1.0.2:2375 loadgen=ssh://b@10.1.0.3", environ={"HOSTS_INSECURE_TCP": "1"})
    assert "warning: server: plain TCP to tcp://10.1.0.2:2375 without TLS" in capsys.readouterr().out


@pytest.mark.parametrize("raw, message", [
    ("server=ssh://b@10.1.0.2", r"HOSTS has no loadgen endpoint"),
    ("loadgen=ssh://b@10.1.0.3", r"HOSTS has no server endpoint"),
    ("server=ssh://b@10.1.0.2 loadgen=ssh://b@10.1.0.3 db=ssh://b@10.1.0.4", r"unknown role 'db'; the roles are server"),
    ("server=ssh://b@10.1.0.2 server=ssh://b@10.1.0.5 loadgen=ssh://b@10.1.0.3", r"names the server role twice"),
    ("server loadgen=ssh://b@10.1.0.3", r"HOSTS entry 'server': write role=endpoint"),
    ("server=http://10.1.0.2 loadgen=ssh://b@10.1.0.3", r"use ssh://user@host \(preferred\)"),
    ("server=ssh://b@box-a loadgen=ssh://b@10.1.0.3", r"server=ssh://b@box-a: say where the other roles reach it: "
                                                      r"server=ssh://b@box-a,address=IP"),
    ("server=unix:///var/run/docker.sock loadgen=ssh://b@10.1.0.3", r"say where the other roles reach it"),
    ("server=ssh://b@10.1.0.2,cpus=3-1 loadgen=ssh://b@10.1.0.3", r"cpus='3-1'; write a list like cpus=0-3"),
    ("server=ssh://b@10.1.0.2,port=22 loadgen=ssh://b@10.1.0.3", r"bad option 'port=22'"),
    ("server=ssh://b@10.1.0.2,address=box loadgen=ssh://b@10.1.0.3", r"address 'box' is not an IP address"),
    ("server=tcp://10.1.0.2 loadgen=ssh://b@10.1.0.3", r"a tcp:// endpoint needs its port"),
])
def test_a_bad_hosts_value_names_the_entry_and_what_to_write(raw, message):
    with pytest.raises(HostsError, match=message):
        parse(raw, environ={})


@pytest.mark.skipif(not shutil.which("docker"), reason="the Docker CLI is not installed")
def test_an_engine_that_does_not_answer_is_named_before_anything_starts(tmp_path):
    roles = parse(f"server=unix://{tmp_path}/no-engine.sock,address=10.1.0.2 loadgen=ssh://b@10.1.0.3", environ={})
    with pytest.raises(HostsError, match=rf"server: the Docker engine at unix://{tmp_path}/no-engine.sock does not "
                                         r"answer \(.+\); check that the engine runs"):
        probe(roles)  # the server's endpoint is asked first: nothing is sent to the loadgen address
