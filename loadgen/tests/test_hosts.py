"""HOSTS parsing (issue 13): each role's endpoint, kind, address and CPUs, and one clear error per bad value."""

from __future__ import annotations

import shutil

import pytest

from harness.config.host_roles import Host, HostsError, parse, probe

DEMO = "server=ssh://root@10.213.77.2 loadgen=ssh://root@10.213.77.3 upstream=ssh://root@10.213.77.4"


def test_the_demo_line_gives_each_role_its_host_and_address():
    hosts = parse(DEMO, environ={})
    assert hosts == {
        "server": Host("server", "ssh://root@10.213.77.2", "ssh", "10.213.77.2"),
        "loadgen": Host("loadgen", "ssh://root@10.213.77.3", "ssh", "10.213.77.3"),
        "upstream": Host("upstream", "ssh://root@10.213.77.4", "ssh", "10.213.77.4"),
    }


def test_upstream_left_out_shares_the_server_host_and_options_are_read():
    hosts = parse("server=ssh://bench@box-a,address=10.1.0.2,cpus=0-3 loadgen=local-ctx,address=10.1.0.3", environ={})
    assert hosts["server"] == Host("server", "ssh://bench@box-a", "ssh", "10.1.0.2", (0, 1, 2, 3))
    assert hosts["loadgen"] == Host("loadgen", "local-ctx", "context", "10.1.0.3")
    assert hosts["upstream"] == Host("upstream", "ssh://bench@box-a", "ssh", "10.1.0.2", (0, 1, 2, 3))


def test_tcp_with_tls_is_accepted_and_plain_tcp_only_when_asked(capsys):
    tls = {"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": "/certs"}
    assert parse("server=tcp://10.1.0.2:2376 loadgen=tcp://10.1.0.3:2376", environ=tls)["server"].kind == "tcp"
    with pytest.raises(
        HostsError,
        match=r"server=tcp://10.1.0.2:2375: a Docker engine on plain TCP .* "
        r"HOSTS_INSECURE_TCP=1 to accept it",
    ):
        parse("server=tcp://10.1.0.2:2375 loadgen=ssh://b@10.1.0.3", environ={})
    parse("server=tcp://10.1.0.2:2375 loadgen=ssh://b@10.1.0.3", environ={"HOSTS_INSECURE_TCP": "1"})
    assert "warning: server: plain TCP to tcp://10.1.0.2:2375 without TLS" in capsys.readouterr().out


@pytest.mark.parametrize(
    "raw, message",
    [
        ("server=ssh://b@10.1.0.2", r"HOSTS has no loadgen endpoint"),
        ("loadgen=ssh://b@10.1.0.3", r"HOSTS has no server endpoint"),
        (
            "server=ssh://b@10.1.0.2 loadgen=ssh://b@10.1.0.3 db=ssh://b@10.1.0.4",
            r"unknown role 'db'; the roles are server",
        ),
        ("server=ssh://b@10.1.0.2 server=ssh://b@10.1.0.5 loadgen=ssh://b@10.1.0.3", r"names the server role twice"),
        ("server loadgen=ssh://b@10.1.0.3", r"HOSTS entry 'server': write role=endpoint"),
        ("server=http://10.1.0.2 loadgen=ssh://b@10.1.0.3", r"use ssh://user@host \(preferred\)"),
        (
            "server=ssh://b@box-a loadgen=ssh://b@10.1.0.3",
            r"server=ssh://b@box-a: say where the other roles reach it: "
            r"server=ssh://b@box-a,address=IP",
        ),
        ("server=unix:///var/run/docker.sock loadgen=ssh://b@10.1.0.3", r"say where the other roles reach it"),
        ("server=ssh://b@10.1.0.2,cpus=3-1 loadgen=ssh://b@10.1.0.3", r"cpus='3-1'; write a list like cpus=0-3"),
        ("server=ssh://b@10.1.0.2,port=22 loadgen=ssh://b@10.1.0.3", r"bad option 'port=22'"),
        ("server=ssh://b@10.1.0.2,address=box loadgen=ssh://b@10.1.0.3", r"address 'box' is not an IP address"),
        ("server=tcp://10.1.0.2 loadgen=ssh://b@10.1.0.3", r"a tcp:// endpoint needs its port"),
    ],
)
def test_a_bad_hosts_value_names_the_entry_and_what_to_write(raw, message):
    with pytest.raises(HostsError, match=message):
        parse(raw, environ={})


@pytest.mark.skipif(not shutil.which("docker"), reason="the Docker CLI is not installed")
def test_an_engine_that_does_not_answer_is_named_before_anything_starts(tmp_path):
    roles = parse(f"server=unix://{tmp_path}/no-engine.sock,address=10.1.0.2 loadgen=ssh://b@10.1.0.3", environ={})
    with pytest.raises(
        HostsError,
        match=rf"server: the Docker engine at unix://{tmp_path}/no-engine.sock does not "
        r"answer \(.+\); check that the engine runs",
    ):
        probe(roles)  # the server's endpoint is asked first: nothing is sent to the loadgen address


# -- each role's CPUs on its own host ------------------------------------------------------------------------------


def engines(**cpus_by_endpoint) -> dict:
    from harness.config.host_roles import Engine

    return {endpoint.replace("_", "."): Engine("28.0", n, "6.1", endpoint) for endpoint, n in cpus_by_endpoint.items()}


def roles(line: str):
    return parse(line, environ={})


def test_on_three_8_core_hosts_the_server_gets_4_cores_and_the_others_their_whole_host():
    from harness.config.host_roles import cpu_plan

    plan = cpu_plan(
        roles("server=a,address=10.0.0.2 loadgen=b,address=10.0.0.3 upstream=c,address=10.0.0.4"),
        engines(a=8, b=8, c=8),
    )
    assert (plan.server, plan.loadgen, plan.upstream) == ((0, 1, 2, 3), tuple(range(8)), tuple(range(8)))
    assert plan.hosts == {"server": "10.0.0.2", "loadgen": "10.0.0.3", "upstream": "10.0.0.4"}
    assert "server on CPU 0,1,2,3 of 10.0.0.2" in plan.describe() and "shared" not in plan.describe()


def test_an_upstream_on_the_server_host_takes_the_core_after_the_servers():
    from harness.config.host_roles import cpu_plan

    for n, server, upstream in ((8, (0, 1, 2, 3), (4,)), (4, (0, 1), (2,)), (2, (0,), (1,))):
        plan = cpu_plan(roles("server=a,address=10.0.0.2 loadgen=b,address=10.0.0.3"), engines(a=n, b=2))
        assert (plan.server, plan.upstream, plan.loadgen) == (server, upstream, (0, 1)), n


def test_cpus_given_in_hosts_win_and_must_exist_there():
    from harness.config.host_roles import cpu_plan

    line = "server=a,address=10.0.0.2,cpus=0 loadgen=b,address=10.0.0.3,cpus=1 upstream=c,address=10.0.0.4,cpus=1"
    plan = cpu_plan(roles(line), engines(a=2, b=2, c=2))
    assert (plan.server, plan.loadgen, plan.upstream) == ((0,), (1,), (1,))
    with pytest.raises(HostsError, match=r"HOSTS server: cpus= names CPU 5, but a has 2 CPUs \(0-1\)"):
        cpu_plan(roles(line.replace("cpus=0 ", "cpus=5 ")), engines(a=2, b=2, c=2))


def test_server_and_load_generator_on_one_engine_is_refused():
    from harness.config.host_roles import cpu_plan

    with pytest.raises(HostsError, match="on the same engine .* leave HOSTS unset"):
        cpu_plan(roles("server=a,address=10.0.0.2 loadgen=a,address=10.0.0.2"), engines(a=8))


# -- the engine's API over the CLI's dial-stdio: both body framings the engine uses ----------------------------------


def test_engine_responses_with_content_length_and_chunked_are_read_whole():
    import os
    import time

    from harness.containers.engine_api import DeadlineReader, _read_response

    def reader(data: bytes) -> DeadlineReader:
        read_end, write_end = os.pipe()
        os.write(write_end, data)
        os.close(write_end)
        return DeadlineReader(read_end)

    deadline = time.monotonic() + 5
    plain = reader(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{"a": 1}\nNEXT')
    assert _read_response(plain, deadline) == (200, b'{"a": 1}\n')
    assert plain.read(4, deadline) == b"NEXT"  # the connection stays usable for the next request
    chunked = reader(
        b'HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"me"\r\n6\r\n: 1}\r\n\r\n0\r\n\r\nNEXT'
    )
    assert _read_response(chunked, deadline) == (404, b'{"me": 1}\r\n')
    assert chunked.read(4, deadline) == b"NEXT"
