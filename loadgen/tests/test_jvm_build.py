"""jvm-contract/build.sh, the JVM servers' shared build: Maven runs when a jar is missing or older than a file it is
built from, and not otherwise (a fake `mvn` on PATH records its calls)."""

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

SCRIPT = Path(__file__).resolve().parents[2] / "jvm-contract" / "build.sh"
OLD, NEW = 1_700_000_000, 1_700_000_100  # the sources' and the jars' modification times


@pytest.fixture
def reactor(tmp_path):
    """A reactor's files (pom.xml, jvm-contract, two servers), every jar newer than every source."""
    for source in (
        "pom.xml",
        "jvm-contract/java/src/Contract.java",
        "jvm-contract/java/target/classes/Contract.class",
        "akka/pom.xml",
        "akka/src/Server.scala",
        "finagle/src/Server.scala",
    ):
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / source).write_text("x")
        os.utime(tmp_path / source, (OLD, OLD))
    for folder in ("akka", "finagle"):
        jar = tmp_path / folder / "target" / f"{folder}-server.jar"
        jar.parent.mkdir(parents=True)
        jar.write_text("jar")
        os.utime(jar, (NEW, NEW))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mvn").write_text('#!/bin/sh\necho "$@" >> "$MVN_CALLS"\n')
    (bin_dir / "mvn").chmod(0o755)
    return tmp_path


def build(reactor: Path) -> tuple[str, list[str]]:
    calls = reactor / "calls"
    proc = subprocess.run(
        ["sh", str(SCRIPT), "akka,finagle"],
        cwd=reactor,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{reactor / 'bin'}:{os.environ['PATH']}", "MVN_CALLS": str(calls)},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, calls.read_text().splitlines() if calls.exists() else []


def test_nothing_newer_than_the_jars_runs_no_maven(reactor):
    out, calls = build(reactor)
    assert calls == [] and out.startswith("up to date")
    (reactor / "akka" / "target" / "classes").mkdir()
    (reactor / "akka" / "target" / "classes" / "Server.class").write_text("y")  # Maven's own output, not a source
    assert build(reactor)[1] == []


@pytest.mark.parametrize(
    "changed",
    [
        "akka/src/Server.scala",
        "finagle/src/Server.scala",
        "pom.xml",
        "jvm-contract/java/src/Contract.java",
        "akka/src/New.scala",
    ],
)
def test_a_source_newer_than_a_jar_runs_maven_for_every_server_named(reactor, changed):
    (reactor / changed).write_text("changed")  # now: newer than the jars
    out, calls = build(reactor)
    assert calls == ["-B -q -f pom.xml -pl akka,finagle -am package -DskipTests"]
    assert changed in out


def test_a_missing_jar_runs_maven(reactor):
    (reactor / "finagle" / "target" / "finagle-server.jar").unlink()
    out, calls = build(reactor)
    assert len(calls) == 1 and "no finagle/target/finagle-server.jar" in out


def test_a_source_newer_than_one_jar_only_runs_maven(reactor):
    os.utime(reactor / "akka" / "target" / "akka-server.jar", (OLD + 10, OLD + 10))  # built before the edit below
    os.utime(reactor / "finagle" / "src" / "Server.scala", (OLD + 50, OLD + 50))  # older than finagle's jar only
    out, calls = build(reactor)
    assert len(calls) == 1 and "finagle/src/Server.scala is newer than akka/target/akka-server.jar" in out
