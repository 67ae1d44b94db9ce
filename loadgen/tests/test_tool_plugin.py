"""A load tool joins the harness through its adapter alone (docs/extending.md, "Adding a load tool"): a fake one
(fixtures/fake_tool/fake_load.py, its adapter below) is registered, named by a scenario file of the test's own and
measures the rust server on loopback through the harness's command line. The last test starts servers on fixed ports
(29086, 29000): run this file under the integration lock, like tests/test_cli_integration.py."""

import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from harness import cli
from harness.basics.paths import RESULTS
from harness.config import scenarios
from harness.tools import TOOLS, LoadSpec, ToolFailed, register
from harness.tools.output import Errors, Measurement

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

SCRIPT = Path(__file__).parent / "fixtures" / "fake_tool" / "fake_load.py"
PORTS = "rust=29086 nginx=29000"  # away from the defaults and from test_cli_integration's
REQUESTS = 300
SUMMARY = re.compile(r"^fake_load: (\d+) responses \((\d+) non-2xx\), (\d+) failed in ([\d.]+) s$", re.MULTILINE)
SCENARIOS = f"""
[settings.quick]
repeat = 1
warmup = {{ duration_s = 1, tolerance = 1.0, max_runs = 2 }}

[fake-hello]
description = "the fake load tool's GET /hello over 4 connections"
tool = "fake"
targets = [{{ route = "hello", path = "/hello" }}]
profile.quick = {{ runs = [{{ label = "c4", requests = {REQUESTS}, concurrency = 4 }}] }}
"""


class FakeTool:
    """What a newcomer's module in harness/tools/ would hold, here for the fixture's script."""

    name = "fake"
    binary = sys.executable  # the script runs on the harness's own Python
    install_hint = "nothing to install: the harness's Python runs tests/fixtures/fake_tool/fake_load.py"
    version_args = (str(SCRIPT), "--version")

    def completed(self, output_tail: bytes) -> int | None:
        return None  # prints only its summary

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return nofile_limit - 16  # a descriptor per connection, a few for the interpreter

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        """Unchanged: the scenario's request count, so the test knows exactly how many were sent."""
        return spec

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        argv = [self.binary, str(SCRIPT), "--requests", str(spec.requests), "--concurrency", str(spec.concurrency)]
        if spec.timeout_s:
            argv += ["--timeout", f"{spec.timeout_s:g}"]
        return [*argv, spec.url]

    def parse(self, output: str, scratch: Path) -> Measurement:
        found = SUMMARY.search(output)
        if not found:
            raise ToolFailed("fake_load printed no summary")
        answered, non_2xx, failed = (int(g) for g in found.groups()[:3])
        seconds = float(found.group(4))
        return Measurement(
            requests=answered,
            errors=Errors(non_2xx=non_2xx, other=failed),
            duration_s=seconds,
            rps=answered / seconds if seconds else 0.0,
        )


@pytest.fixture
def scenario_file(tmp_path, monkeypatch):
    """The harness, its command line included, reads this test's scenarios instead of loadgen/scenarios.toml."""
    path = tmp_path / "scenarios.toml"
    path.write_text(SCENARIOS)
    monkeypatch.setattr(scenarios, "SCENARIO_FILE", path)
    return path


def test_a_scenario_cannot_name_a_tool_that_is_not_registered(scenario_file):
    with pytest.raises(
        scenarios.ScenarioError, match="tool 'fake' is not one of ab, gatling, h2load, httperf, oha, oha-mix, wrk"
    ):
        scenarios.load("quick")


def test_a_registered_tool_leaves_the_registry_when_its_block_ends_and_replaces_none():
    with register(FakeTool()):
        assert TOOLS["fake"].name == "fake"
        with pytest.raises(ValueError, match="'fake' is already registered"), register(FakeTool()):
            pass
    assert "fake" not in TOOLS
    impostor = FakeTool()
    impostor.name = "ab"
    with pytest.raises(ValueError, match="'ab' is already registered"), register(impostor):
        pass
    assert TOOLS["ab"] is not impostor


def test_a_registered_tool_measures_a_real_server_through_the_command_line(scenario_file):
    run_id = f"test-tool-plugin-{os.getpid()}"
    argv = [
        "--runtime",
        "local",
        "--servers",
        "rust",
        "--ports",
        PORTS,
        "--profile",
        "quick",
        "--repeat",
        "1",
        "--run-id",
        run_id,
        "run",
        "fake-hello",
    ]
    sigterm = signal.getsignal(signal.SIGTERM)  # the command line installs its own handler: not this process's
    try:
        with register(FakeTool()):
            assert cli.main(argv) == 0
    finally:
        signal.signal(signal.SIGTERM, sigterm)
    results = RESULTS / run_id
    [record] = json.loads((results / "results.json").read_text())["records"]
    assert (record["server"], record["scenario"], record["tool"]) == ("rust", "fake-hello", "fake")
    assert record["requests"] == REQUESTS and record["errors"]["total"] == 0 and record["rps"] > 0
    [attempt] = record["attempts"]
    assert f"{SCRIPT} --requests {REQUESTS} --concurrency 4 " in attempt["commands"][0]
    raw = (results / attempt["raw"][0]).read_text()
    assert SUMMARY.search(raw).group(1) == str(REQUESTS)
