"""Against the namespaced three-host topology (`make hosts-demo`): skipped unless it is up. Traffic goes only to
the namespaces that topology created (10.213.77.0/24 through bench-h0), never elsewhere."""
from __future__ import annotations

import subprocess

import pytest

from harness.hosts import image_id, parse, probe, send_image

DEMO = "server=ssh://root@10.213.77.2 loadgen=ssh://root@10.213.77.3 upstream=ssh://root@10.213.77.4"
IMAGE = "bench-hosts/busybox:latest"


def demo_is_up() -> bool:
    route = subprocess.run(["ip", "route", "get", "10.213.77.2"], capture_output=True, text=True)
    return route.returncode == 0 and "dev bench-h0" in route.stdout


pytestmark = pytest.mark.skipif(not demo_is_up(), reason="the hosts-demo topology is not up (make hosts-demo)")


def test_each_demo_host_answers_with_its_own_engine():
    engines = probe(parse(DEMO, environ={}))
    assert sorted(e.name for e in engines.values()) == ["bench-h-loadgen", "bench-h-server", "bench-h-upstream"]


def test_an_image_is_sent_once_and_then_found_equal():
    server = parse(DEMO, environ={})["server"]
    if not image_id(IMAGE, None):  # the demo imports its busybox image into each host, not into the local engine
        pytest.skip("no local Docker engine holding the demo image")
    subprocess.run(["docker", "--host", server.endpoint, "image", "rm", "--force", IMAGE], capture_output=True)
    assert send_image(IMAGE, server) is True
    assert image_id(IMAGE, server) == image_id(IMAGE, None)
    assert send_image(IMAGE, server) is False
