import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
# the runs the tests make go to a folder of their own (harness.basics.paths reads it on import: so before any harness
# import), never results/; 0755: a container's user writes the tools' side files under it
os.environ["BENCH_RESULTS"] = tempfile.mkdtemp(prefix="bench-test-results-")
os.chmod(os.environ["BENCH_RESULTS"], 0o755)
atexit.register(shutil.rmtree, os.environ["BENCH_RESULTS"], True)

from ports import H2C_OFFSET, free_port  # noqa: E402

from harness.basics.machine import port_owner, wait_until  # noqa: E402
from harness.basics.paths import REPO  # noqa: E402

# `make bench` in seconds: the command line of the harness with a scenario file of one short wrk scenario, for the tests
# of what a whole bench does (its A/A twin) under each runtime
SHORT_SCENARIOS = """
[settings.quick]
repeat = 2
warmup = { duration_s = 1, tolerance = 1.0, window = 3, max_runs = 3, max_s = 10 }

[hello]
description = "GET /hello with wrk"
tool = "wrk"
targets = [{ route = "hello", path = "/hello" }]
profile.quick = { runs = [{ threads = 1, concurrency = 4, duration_s = 1 }] }
"""
LAUNCH_WITH_SCENARIOS = """
import pathlib, sys
from harness import cli
from harness.config import scenarios
scenarios.SCENARIO_FILE = pathlib.Path(sys.argv.pop(1))
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.fixture
def short_bench(tmp_path):
    """argv(*args): the harness's command line, its scenarios one wrk run of 1 s on /hello, two attempts."""
    scenario_file = tmp_path / "scenarios.toml"
    scenario_file.write_text(SHORT_SCENARIOS)
    return lambda *args: [sys.executable, "-c", LAUNCH_WITH_SCENARIOS, str(scenario_file), *args]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test is a unit test unless it is marked integration (a module's `pytestmark`): `make test-unit` runs those."""
    for item in items:
        if item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.unit)


@pytest.fixture
def upstream(tmp_path):
    """The project's own nginx (nginx/run.sh: Debian's nginx with the repository's config, the upstream of /weather)
    on a free port, its h2c listener H2C_OFFSET above it; yields the HTTP/1.1 port."""
    port = free_port()
    env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port), "H2C_PORT": str(port + H2C_OFFSET)}
    proc = subprocess.Popen(
        ["bash", str(REPO / "nginx" / "run.sh")],
        env=env | {"SERVER_CORES": "1", "RUN_DIR": str(tmp_path)},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        listening = [port, port + H2C_OFFSET]
        assert wait_until(lambda: all(port_owner("127.0.0.1", p) is not None for p in listening), 10), (
            "nginx did not listen"
        )
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
