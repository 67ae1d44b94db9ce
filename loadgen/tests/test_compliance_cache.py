"""make bench probes a build's HTTP compliance once (harness/conformance/compliance_cache.py): a second run of the same
build takes the first run's entry without sending a byte, and a changed build, manifest, version or runtime is probed
again; a server that was already up is probed afresh and not kept.
On the reference responder (tests/responders/strict_http11.py), really probed over loopback."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.conformance import compliance_cache, suite
from harness.conformance.wire import Timing
from harness.results.records import Run
from harness.results.store import RunStore
from harness.servers import probing

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

sys.path.insert(0, str(Path(__file__).parent / "responders"))
import strict_http11  # noqa: E402


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    monkeypatch.setattr(compliance_cache, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(probing.suite, "run", functools.partial(suite.run, timing=Timing(answer_s=1.0, settle_s=0.3)))
    folder = tmp_path / "strict"
    folder.mkdir()
    (folder / "manifest.toml").write_text('[[server]]\nname = "strict"\n')
    server = SimpleNamespace(name="strict", folder=folder)
    local = SimpleNamespace(runtime=SimpleNamespace(name="local"))
    return SimpleNamespace(root=tmp_path, server=server, local=local)


def probed_in_run(
    bench: SimpleNamespace, run_id: str, port: int, artifacts: str, runtime: str = "local", **how: Any
) -> Any:
    """`how`: version (what the server reports, default "strict 1.0"), up_before (make up left it running)."""
    store = RunStore(Run(run_id, {}, {}, {}, [], compliance={}), root=bench.root)
    running = SimpleNamespace(name="strict", host="127.0.0.1", port=port, h2c_port=None, artifacts=artifacts)
    version = how.get("version", "strict 1.0")
    session = SimpleNamespace(
        runtime=SimpleNamespace(name=runtime),
        started=[] if how.get("up_before") else ["strict"],
    )
    probing.probe_in_bench(session, bench.server, running, store, version)  # type: ignore[arg-type]
    return store.run.compliance["strict"] if store.run.compliance else None


def failing(entry: dict[str, Any]) -> list[str]:
    return [c["id"] for c in entry["cases"] if c["verdict"] == "fail"]


def test_the_same_build_is_not_probed_twice_and_a_changed_one_is(bench: SimpleNamespace) -> None:
    faulty = strict_http11.serve(frozenset({"host-optional"}))
    port = faulty.server_address[1]
    try:
        first = probed_in_run(bench, "run-1", port, artifacts="build-a")
    finally:
        faulty.shutdown()
        faulty.server_close()
    assert failing(first) == ["HO-01", "HO-10"] and first["probed_in"] == "run-1"
    assert first["version"] == "strict 1.0"
    # nothing listens now: only the kept entry can answer, and it is the first run's, saying so
    assert probed_in_run(bench, "run-2", port, artifacts="build-a") == first
    right = strict_http11.serve(frozenset())
    port = right.server_address[1]
    try:
        rebuilt = probed_in_run(bench, "run-3", port, artifacts="build-b")  # make build changed the artifacts
        assert failing(rebuilt) == [] and rebuilt["probed_in"] == "run-3"
        other_runtime = probed_in_run(bench, "run-4", port, artifacts="build-b", runtime="docker")
        assert other_runtime["probed_in"] == "run-4"
        (bench.server.folder / "manifest.toml").write_text('[[server]]\nname = "strict"\nenv = { X = "1" }\n')
        assert probed_in_run(bench, "run-5", port, artifacts="build-b")["probed_in"] == "run-5"
        # the same files, another binary (Debian's nginx upgraded): its version is in the key
        upgraded = probed_in_run(bench, "run-6", port, artifacts="build-b", version="strict 1.1")
        assert upgraded["probed_in"] == "run-6" and upgraded["version"] == "strict 1.1"
        # left up by make up: probed afresh, and not kept for the next run
        assert probed_in_run(bench, "run-7", port, artifacts="build-b", up_before=True)["probed_in"] == "run-7"
        assert probed_in_run(bench, "run-8", port, artifacts="build-b", version="strict 1.1")["probed_in"] == "run-6"
    finally:
        right.shutdown()
        right.server_close()


def test_a_build_whose_artifacts_are_not_known_is_probed_and_not_kept(bench: SimpleNamespace) -> None:
    assert compliance_cache.key(bench.server, None, "local") is None  # type: ignore[arg-type]
    compliance_cache.save("strict", None, {"cases": [], "counts": {}})
    assert not compliance_cache.CACHE_DIR.exists()
    assert compliance_cache.load("strict", None) is None


def test_the_cache_key_covers_every_harness_module_the_probe_imports() -> None:
    """A kept entry is reused only while the probe's own code is the same: every module the probe's entry points (the
    HTTP/1.1 suite, h2spec's reading) import, all the way down, is in the key's sources, and each exists."""
    harness = compliance_cache.HARNESS
    sources = set(compliance_cache.PROBE_SOURCES)
    assert all(path.is_file() for path in sources), sources
    seen: set[Path] = set()
    todo = [harness / "conformance" / "suite.py", harness / "conformance" / "h2c.py"]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness."):
                module = harness.joinpath(*node.module.split(".")[1:])
                for name in node.names:
                    found = [module.with_suffix(".py"), module / f"{name.name}.py"]
                    todo += [f for f in found if f.is_file()]
    probe_code = {p for p in seen if p.parent.name in ("conformance", "basics") and p.name != "__init__.py"}
    leaves = {
        p for p in probe_code if p.parent.name == "basics" and p.name != "http1.py"
    }  # messages, paths: no verdict
    assert probe_code - leaves <= sources, sorted(str(p) for p in probe_code - leaves - sources)
