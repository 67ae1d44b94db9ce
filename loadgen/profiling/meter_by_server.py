"""Whether the CPU meter's reading (CPU_METER=1) depends on the server measured, beyond the machine's own speed.

Dividing two servers' rates by the speed of the CPU both are bound on (round_pairs.by_speed, docs/cpu-speed.md) is
fair between them only if neither slows the meter's chunks more than the other (its interrupts, its timers). In
interleaved rounds every server of a round meets the same machine within seconds, so a server's mean ln speed, less
its round's, is its own part plus chance:

    ln speed[s, k] = server[s] + round[k] + residual[s, k]   (two-way layout, one group at a time)

Printed for each role's CPU: the servers' mean square against the residual's (F near 1: no server's own part shows),
then each server's offset pooled over all groups and runs, with its standard error.

    cd loadgen && ../.venv/bin/python profiling/meter_by_server.py ../results/*-bench/results.json
"""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.judging.noise import groups_of, speed_of
from harness.results.records import load


def table(group, role):
    """{server: {round: ln speed}} over the rounds every server of the group has."""
    rows = {}
    for r in group:
        if r.remeasured:
            continue
        found = {
            a.attempt: math.log(s) for a in r.attempts if a.measured and a.round_position and (s := speed_of(a, role))
        }
        if found:
            rows[r.server] = found
    if len(rows) < 3:
        return {}
    common = set.intersection(*(set(v) for v in rows.values()))
    return {s: {k: v[k] for k in common} for s, v in rows.items()} if len(common) >= 2 else {}


def analyse(paths, role):
    offsets = {}  # server: [(offset, its variance)]
    ss_server = ss_resid = df_server = df_resid = 0.0
    for path in paths:
        for group in groups_of(load(Path(path)).records):
            t = table(group, role)
            if not t:
                continue
            servers, rounds = list(t), sorted(next(iter(t.values())))
            grand = sum(t[s][k] for s in servers for k in rounds) / (len(servers) * len(rounds))
            row = {s: sum(t[s].values()) / len(rounds) - grand for s in servers}
            col = {k: sum(t[s][k] for s in servers) / len(servers) - grand for k in rounds}
            resid = sum((t[s][k] - grand - row[s] - col[k]) ** 2 for s in servers for k in rounds)
            dfr = (len(servers) - 1) * (len(rounds) - 1)
            ss_resid, df_resid = ss_resid + resid, df_resid + dfr
            ss_server += len(rounds) * sum(v * v for v in row.values())
            df_server += len(servers) - 1
            for s in servers:
                offsets.setdefault(s, []).append((row[s], resid / dfr / len(rounds)))
    if not df_resid:
        return f"{role}: no attempts with the meter's reading"
    ms_server, ms_resid = ss_server / df_server, ss_resid / df_resid
    lines = [
        f"{role}: servers' mean square {ms_server:.2e} on {df_server:g} df, residual {ms_resid:.2e} on {df_resid:g} df, "
        f"F = {ms_server / ms_resid:.2f}"
    ]
    for s, found in sorted(offsets.items()):
        weights = [1 / v for _, v in found if v > 0]
        mean = sum(o / v for o, v in found if v > 0) / sum(weights)
        lines.append(f"  {s:<14} {math.expm1(mean):+6.2%} ± {math.sqrt(1 / sum(weights)):.2%} ({len(found)} groups)")
    return "\n".join(lines)


if __name__ == "__main__":
    for role in ("server", "loadgen"):
        print(analyse(sys.argv[1:], role))
