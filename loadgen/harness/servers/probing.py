"""`make probe` (and, once per server, `make bench`): each server's HTTP/1.1 compliance (harness.conformance.suite) and,
where it speaks h2c, h2spec's verdicts (harness.conformance.h2c), kept in results.json as `compliance.<server>`."""

from __future__ import annotations

from typing import Any

from harness.basics.messages import fail, say
from harness.config.manifest import Server, artifacts_stamp
from harness.config.maven import resolve_properties
from harness.conformance import compliance_cache, h2c, suite, verdicts
from harness.results.store import RunStore
from harness.runtime import RunningServer, RuntimeFailure
from harness.servers.session import Session


def probe(running: RunningServer, store: RunStore, version: str, kept_as: str | None = None) -> dict[str, Any]:
    """One server probed over HTTP/1.1 and h2c; its entry (with the `version` probed) saved in the store (and kept
    for later runs under the key `kept_as`, harness.conformance.compliance_cache) and summed up on the console."""
    cases = suite.run(running.host, running.port)
    h2 = h2c.run(running.host, running.h2c_port, store.raw) if running.h2c_port else None
    entry = {**suite.compliance(cases, h2, version), "probed_in": store.run.run_id}
    store.set_compliance(running.name, entry)
    compliance_cache.save(running.name, kept_as, entry)
    say(summary(running.name, entry))
    return entry


def server_version(session: Session, server: Server) -> str:
    """The server's version as its manifest's `version` command prints it (its framework's, or nginx -v)."""
    return resolve_properties(session.runtime.version(server), server.folder)


def probe_in_bench(
    session: Session, server: Server, running: RunningServer, store: RunStore, version: str
) -> dict[str, Any]:
    """`make bench`: the server's compliance as an earlier run probed this very build (same artifacts, manifest,
    probe, h2spec and runtime, and the same `version` reported now that it runs: server_version, as the run recorded
    it), or probed now. A server that was already up (`make up`) is probed afresh and not kept: what runs may not be
    what its folder holds now."""
    if server.name not in session.started:
        return probe(running, store, version)
    made = compliance_cache.key(server, running.artifacts, session.runtime.name)
    kept = compliance_cache.load(running.name, made)
    if kept is None or kept.get("version") != version:  # the same files, another binary (an upgraded nginx)
        return probe(running, store, version, kept_as=made)
    store.set_compliance(running.name, kept)
    say(f"{summary(running.name, kept)}\n  (probed in run {kept.get('probed_in', 'unknown')}: the same build)")
    return kept


def summary(name: str, entry: dict[str, Any]) -> str:
    """A server's probe in a few lines: the counts over all cases, per category, and each MUST it fails."""
    counts = entry["counts"]
    lines = [f"{name} ({entry.get('version', 'unknown')}): HTTP/1.1 {_counted(counts['all'])}"]
    if "h2c" in counts:
        lines.append(f"  h2c: {_counted(counts['h2c'])}")
    lines += [f"  {category:18} {_counted(c)}" for category, c in counts.items() if category not in ("all", "h2c")]
    lines += [
        f"  fails MUST {c['id']} ({c['rfc']}): {c['what']}; got {c['got']}" for c in verdicts.must_failures(entry)
    ]
    if (entry.get("h2c") or {}).get("note"):
        lines.append(f"  h2c: {entry['h2c']['note']}")
    return "\n".join(lines)


def _counted(c: dict[str, int]) -> str:
    return (
        f"{c['cases']:3} cases: {c['pass']:3} passed, {c.get('warn-lenient', 0):3} lenient, "
        f"{c.get('warn-strict', 0):3} strict, {c['fail']:3} failed ({c.get('must_fail', 0)} MUST)"
    )


def probe_servers(session: Session, store: RunStore, servers: list[Server]) -> bool:
    """`make probe`: every server started (or the one up used), probed and released; False when one did not start."""
    ok = True
    for server in servers:
        try:
            running = session.ensure(server)
        except RuntimeFailure as exc:
            fail(str(exc))
            store.set_server(server.name, {"started": False, "error": str(exc), "roles": list(server.roles)})
            ok = False
            continue
        try:
            store.set_server(
                server.name,
                {
                    "started": True,
                    "stack": server.stack,
                    "roles": list(server.roles),
                    "port": running.port,
                    "runtime": session.runtime.name,
                },
            )
            made = compliance_cache.key(server, running.artifacts, session.runtime.name)
            probe(running, store, server_version(session, server), made if server.name in session.started else None)
        finally:
            session.release(server.name)
    return ok


def builds_to_probe(session: Session, store: RunStore, servers: list[Server]) -> int:
    """How many of `servers` `make bench` will probe (for its estimate): those whose build no earlier run probed."""
    if store.run.compliance is None:
        return 0
    runtime = session.runtime.name
    return sum(
        1
        for server in servers
        if not server.twin_of
        and compliance_cache.load(server.name, compliance_cache.key(server, artifacts_stamp(server), runtime)) is None
    )


def wanted_in_bench(store: RunStore, server: Server) -> bool:
    """Whether `make bench` probes `server` now: the run asked for compliance (its entry exists) and this server has
    not been probed yet (an A/A twin is the same server: not probed twice)."""
    done = store.run.compliance
    return done is not None and server.name not in done and not server.twin_of
