"""The run's conditions as (label, text) pairs, and which servers were not measured: shared by the HTML and Markdown
exports."""

from __future__ import annotations

from typing import Any

from harness.basics import idle_states
from harness.results.records import Run


def cpus_text(cpus: Any) -> str:
    if not cpus:
        return "-"
    if isinstance(cpus, dict):
        return ", ".join(f"{role} {','.join(map(str, ids))}" for role, ids in cpus.items())
    return ",".join(map(str, cpus))


def _placement(p: dict[str, Any]) -> str:
    """A container's or process's placement as read back: CPU set and quota, memory, open files, network."""
    nofile = next((u.get("Hard") for u in p.get("ulimits") or [] if u.get("Name") == "nofile"), None)
    return ", ".join(
        x
        for x in [
            p.get("host") and f"on the {p['host']} host {p.get('address')}",
            p.get("container") and f"{p['container']} ({p.get('image')})",
            p.get("cpuset") and f"cpuset {p['cpuset']}",
            p.get("cpus") and f"cpus {p['cpus']:g}",
            f"may run on CPU {cpus_text(p.get('allowed_cpus'))}",
            p.get("memory_bytes") and f"memory {p['memory_bytes'] / 2**30:.1f} GiB",
            nofile and f"nofile {nofile}",
            p.get("network_mode") and f"network {p['network_mode']}",
            p.get("processes") and f"{p['processes']} process(es)",
        ]
        if x
    )


def _finished(c: dict[str, Any]) -> str:
    """When the run closed, and how where it did not complete (runs before `ended` was kept say only when)."""
    if "finished_at" not in c:
        return "- (not closed: still running, or its harness was killed)"
    ended = c.get("ended", "complete")
    return c["finished_at"] if ended == "complete" else f"{c['finished_at']} ({ended})"


def _warmup(w: dict[str, Any] | None) -> str:
    if not w:
        return "-"
    if "window" not in w:  # an older harness: two runs in a row within the tolerance
        return (
            f"runs of the scenario's own load, each about {w.get('duration_s')} s, until two in a row agree within "
            f"{w.get('tolerance', 0):.0%} (at most {w.get('max_runs')} runs)"
        )
    return (
        f"runs of the scenario's own load (its tool and connection pattern), each sized to about "
        f"{w.get('duration_s')} s, until the latest {w['window']} show no trend beyond {w.get('tolerance', 0):.0%} "
        f"(Theil–Sen; at most {w.get('max_runs')} runs or {w.get('max_s'):g} s); a JVM server's first "
        "connection-per-request warm-up also makes its manifest's `warmup_connections`; none where the server was "
        "just measured with the same load (quick `long` after `low-compute`)"
    )


def machine_note(conditions: dict[str, Any]) -> str | None:
    """One sentence on the machine's own steadiness (the probe before and after the run), for the top of a report;
    None where the run has no probe."""
    probes = conditions.get("steadiness") or {}
    cvs = [c for result in probes.values() for c in (result.get("cv") or {}).values() if c is not None]
    if not cvs:
        return None
    window = next(iter(probes.values()))["window_s"]
    return (
        f"The machine itself: a pinned busy loop's speed varied {min(cvs) * 100:.0f}–{max(cvs) * 100:.0f} % "
        f"(coefficient of variation) between {window:g} s windows in the probes before and after this run. "
        "Attempts of that length cannot be steadier than the machine: a `spread` whose CV is of that size is the "
        "machine's noise as much as the server's (see the conditions)."
    )


def _machine(c: dict[str, Any]) -> list[tuple[str, str]]:
    """The machine the harness ran on and its limits."""
    m = c.get("machine") or {}
    described = [
        m.get("cpu_model"),
        f"{m.get('logical_cpus')} logical CPUs" if m.get("logical_cpus") else None,
        f"{m.get('memory_gib')} GiB" if m.get("memory_gib") else None,
        f"kernel {m.get('kernel')}" if m.get("kernel") else None,
        f"host {m.get('hostname')}" if m.get("hostname") else None,
    ]
    limits = [
        f"open files {m.get('nofile_hard_limit')}" if m.get("nofile_hard_limit") else None,
        f"somaxconn {m.get('somaxconn')}" if m.get("somaxconn") else None,
    ]
    return [
        ("harness machine" if c.get("machine_is") else "machine", ", ".join(x for x in described if x) or "-"),
        ("limits", ", ".join(x for x in limits if x) or "-"),
    ]


def _runtime(run: Run) -> list[tuple[str, str]]:
    """Where the servers and the load generator ran: the Docker engine, the hosts, the path between them, each
    server's placement."""
    details = run.conditions.get("runtime_details") or {}
    out = []
    if details.get("engine"):
        engine = (
            f"{details['engine']}, {details.get('storage_driver')}, cgroup {details.get('cgroup')}, "
            f"{details.get('compose')}"
        )
        out.append(("Docker engine", engine))
    if details.get("loadgen"):
        out.append(("loadgen container", _placement(details["loadgen"])))
    for role, h in (details.get("hosts") or {}).items():  # HOSTS: which host ran what
        out.append(
            (
                f"{role} host",
                f"{h.get('host_name')} at {h.get('address')} ({h.get('endpoint')}), engine "
                f"{h.get('engine')}, kernel {h.get('kernel')}, CPU {cpus_text(h.get('cpus'))} "
                f"of {h.get('host_cpus')}",
            )
        )
    path = details.get("path_loadgen_to_server")
    if path:
        rtt = (
            f"round trip {path['rtt_min_ms']}/{path['rtt_avg_ms']}/{path['rtt_max_ms']} ms (min/avg/max)"
            if "rtt_avg_ms" in path
            else f"round trip not measured ({path.get('rtt_error')})"
        )
        mtu = f"path MTU {path['mtu']}" if "mtu" in path else f"path MTU not measured ({path.get('mtu_error')})"
        out.append(("loadgen to server", f"{path.get('from')} to {path.get('to')}: {rtt}, {mtu}"))
    out += [(f"{name} placement", _placement(s["placement"])) for name, s in run.servers.items() if s.get("placement")]
    return out


def items(run: Run) -> list[tuple[str, str]]:
    c = run.conditions
    out = [
        ("run", run.run_id),
        ("started", c.get("started_at", "-")),
        ("finished", _finished(c)),
        ("profile", c.get("profile", "-")),
        ("attempts per measurement (REPEAT)", str(c.get("repeat", "-"))),
        ("warm-up", _warmup(c.get("warmup"))),
        *(
            (f"machine steadiness {when} the run", steadiness_text(result))
            for when, result in (c.get("steadiness") or {}).items()
        ),
        ("idle CPUs", idle_states.text(c.get("cpu_idle"))),
        ("CPU speed meter", str(c.get("cpu_meter", "- (not recorded by the harness of this run)"))),
        ("runtime", c.get("runtime", "-")),
        ("CPU sets", cpus_text(c.get("cpus"))),
        *_machine(c),
        ("git commit", c.get("git_commit") or "-"),
        ("command", c.get("command", "-")),
        *(
            [("disk use", f"{c['disk_bytes'] / 2**20:,.1f} MB in the run's folder when it finished")]
            if c.get("disk_bytes") is not None
            else []
        ),
        *_runtime(run),
    ]
    out += [(f"tool {name}", str(version)) for name, version in (c.get("tools") or {}).items()]
    out += [("note", str(note)) for note in c.get("limit_notes") or []]
    out += [("not measured", f"{what}: {why}") for what, why in (c.get("not_measured") or {}).items()]
    return out


def contract_text(run: Run, server: str) -> str:
    v = (run.verification or {}).get(server)
    if not v:
        return "not verified"
    checks = "?" if v.checks is None else v.checks
    if v.ok:
        return f"OK ({checks} checks)"
    return f"FAILED ({len(v.failures)} of {checks} checks)"


def not_measured(run: Run) -> list[str]:
    """Servers of the run that have no measurement, and why (did not start, failed the contract)."""
    measured = {r.server for r in run.records}
    verification = run.verification or {}
    out = []
    for name, s in run.servers.items():
        if name in measured:
            continue
        if not s.get("started", True):
            out.append(f"{name}: did not start ({s.get('error', 'no reason recorded')})")
        elif name in verification and not verification[name].ok:
            out.append(f"{name}: not benchmarked, it fails the contract: {contract_text(run, name)}")
        else:
            out.append(f"{name}: no measurement")
    return out


def steadiness_text(result: dict[str, Any] | None) -> str:
    """'CPU speed varied 7.5 % (server CPU 0) and 6.1 % (load generator CPU 1) between 2 s windows over 20 s; the two
    moved together (correlation 0.63)'"""
    if not result:
        return "-"
    names = {"server": "server", "loadgen": "load generator"}
    parts = [
        f"{c * 100:.1f} % ({names.get(role, role)} CPU {result['cpus'][role]})"
        for role, c in result["cv"].items()
        if c is not None
    ]
    if not parts:
        return f"too few windows in {result['seconds']:g} s to tell"
    text = (
        f"CPU speed varied {' and '.join(parts)} between {result['window_s']:g} s windows over "
        f"{result['seconds']:g} s (coefficient of variation of a pinned busy loop)"
    )
    if result.get("correlation") is not None:
        text += f"; the two moved together with correlation {result['correlation']:.2f}"
    stalled = [
        f"{s['per_s']:g}/s on the {names.get(role, role)}'s, at worst {s['worst_ms']:g} ms"
        for role, s in (result.get("stalls") or {}).items()
    ]
    if stalled:
        text += f"; its CPUs taken away for 1 ms or more {' and '.join(stalled)}"
    return text
