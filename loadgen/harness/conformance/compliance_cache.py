"""A server's HTTP compliance kept per build, so that `make bench` probes a build once, not in every run.

Why: the probe (its HTTP/1.1 cases on raw sockets, and h2spec where the server speaks h2c) takes minutes of a bench
(docs/probe.md), and its answer is the build's, not the machine's or the moment's: the same artifacts answer the same
cases alike. So an entry is reused only where everything it depends on is the same: the
server's artifacts (their stamp, as `make build` left them), its version as it reports it once started (a binary not
built here, Debian's nginx after an upgrade, says so there), the probe's own code (its cases and verdicts), the h2spec binary
(its size and time), the runtime and, under Docker, the base images. Anything else, and the server is probed again.
A server that was already up when the run began is probed afresh and not kept (servers/probing.py). A reused entry says from which run
it came (`compliance.<server>.probed_in`); `make probe` always probes afresh and refreshes the cache.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from harness.basics.paths import STATE_DIR
from harness.config.manifest import Server
from harness.conformance import h2c

CACHE_DIR = STATE_DIR / "compliance"
HARNESS = Path(__file__).resolve().parents[1]
# the probe's code: its cases, their verdicts, its wire and the one HTTP/1 reader (tests/test_compliance_cache.py
# checks that every harness module the probe imports is here)
NOT_THE_PROBE = {"__init__", "compliance_cache", "contract_table", "verification", "verification_h2c"}
PROBE_SOURCES = (
    *sorted(p for p in (HARNESS / "conformance").glob("*.py") if p.stem not in NOT_THE_PROBE),
    HARNESS / "basics" / "http1.py",
)


def key(server: Server, artifacts: str | None, runtime: str) -> str | None:
    """What a probe's answer depends on before the server runs, as one digest: the probe's code, the server's
    manifest (how it is run) and artifacts, the runtime (and its base images), the h2spec binary. None where the
    build's artifacts are not known. The version the server reports is compared once it runs (probing.py)."""
    if not artifacts:
        return None
    digest = hashlib.sha256()
    for source in [*PROBE_SOURCES, server.folder / "manifest.toml"]:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    digest.update(f"\0{server.name}\0{artifacts}\0{runtime}\0{_h2spec()}".encode())
    if runtime != "local":
        digest.update(f"\0images={_base_images()}".encode())
    return digest.hexdigest()


def _h2spec() -> str:
    found = h2c.binary()
    if found is None:
        return "h2spec=none"
    stat = found.stat()
    return f"h2spec={stat.st_size}:{stat.st_mtime_ns}"


def _base_images() -> str:
    """The base images' ids as `docker image ls` gives them (they are made here, `make base-images`); "" without
    Docker."""
    try:
        done = subprocess.run(
            ["docker", "image", "ls", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}}={{.ID}}"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return ",".join(sorted(line for line in done.stdout.splitlines() if "base" in line))


def _path(name: str) -> Path:
    return CACHE_DIR / f"{name}.json"


def load(name: str, wanted: str | None) -> dict[str, Any] | None:
    """The kept entry of `name` when it was made under the key `wanted`, else None."""
    if wanted is None:
        return None
    try:
        kept = json.loads(_path(name).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("key") != wanted or not isinstance(kept.get("entry"), dict):
        return None
    entry: dict[str, Any] = kept["entry"]
    return entry


def save(name: str, made: str | None, entry: dict[str, Any]) -> None:
    """Keep `entry` under the key `made` (nothing is kept without one); a cache that cannot be written costs only a
    probe in the next run."""
    if made is None:
        return
    try:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        scratch = _path(name).with_suffix(".tmp")
        scratch.write_text(json.dumps({"key": made, "entry": entry}))
        scratch.replace(_path(name))
    except OSError:
        pass
