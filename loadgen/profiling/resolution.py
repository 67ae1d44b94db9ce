"""Issue 41's table for recorded benches: the share of server pairs each run's own ranking tells apart, by how far
apart their medians are; the A/A twins' orders; orders one bench claims that another reverses.

    cd loadgen && ../.venv/bin/python profiling/resolution.py ../results/*-bench/results.json

Runs with CPU_METER=1 are ranked as the report ranks them: two servers bound on one CPU on rates divided by its speed
where that leaves less noise (round_pairs.by_speed). --as-measured: the CPUs' speeds forgotten first, every pair on
the rates as measured.
"""

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.judging import ranking
from harness.judging.noise import groups_of
from harness.results.records import load

BUCKETS = [(0, 0.05, "<5%"), (0.05, 0.10, "5-10%"), (0.10, 0.20, "10-20%"), (0.20, 9e9, ">=20%")]


def without_speeds(records):
    """Each attempt's CPU speeds forgotten: the ranking then reads the rates as measured."""
    for r in records:
        for a in r.attempts:
            for sample in a.samples.values():
                if sample:
                    sample.cpu_speed = None


def bench(path, as_measured=False):
    run = load(Path(path))
    if as_measured:
        without_speeds(run.records)
    counts = {b[2]: [0, 0] for b in BUCKETS}
    twins = [0, 0]
    orders = {}
    widths = []
    for g in groups_of(run.records):
        g = [r for r in g if ranking.takes_part(r)]
        if len(g) < 2:
            continue
        anc = ranking.ancestors(g)
        for r in g:
            iv = ranking.rate_interval(r)
            if iv and r.rps:
                widths.append((iv[1] - iv[0]) / 2 / r.rps)
        for i, j in itertools.combinations(range(len(g)), 2):
            a, b = g[i], g[j]
            told = j in anc[i] or i in anc[j]
            key = (a.scenario, a.run, a.tool, a.runtime, a.round)
            names = {a.server, b.server}
            if names == {"node", "node-twin"}:
                twins[0] += 1
                twins[1] += told
                continue
            if not (a.rps and b.rps):
                continue
            d = abs(b.rps / a.rps - 1) if b.rps > a.rps else abs(a.rps / b.rps - 1)
            for lo, hi, name in BUCKETS:
                if lo <= d < hi:
                    counts[name][0] += 1
                    counts[name][1] += told
            if told:
                hi_ = a.server if i in anc[j] else b.server
                lo_ = b.server if hi_ == a.server else a.server
                orders[(key[0], key[1], key[2], hi_, lo_)] = True
    widths.sort()
    probe = run.conditions.get("steadiness") or {}
    cvs = [c for w in ("before", "after") for c in ((probe.get(w) or {}).get("cv") or {}).values()]
    return counts, twins, orders, widths[len(widths) // 2] if widths else None, cvs


if __name__ == "__main__":
    allorders = []
    as_measured = "--as-measured" in sys.argv
    for p in [a for a in sys.argv[1:] if a != "--as-measured"]:
        counts, twins, orders, med, cvs = bench(p, as_measured)
        cells = " | ".join(f"{c[1]}/{c[0]} {c[1] / c[0]:.0%}" if c[0] else "-" for c in counts.values())
        print(
            f"{Path(p).parent.name} | probe {min(cvs, default=0):.0%}-{max(cvs, default=0):.0%} | {cells} | median {f'±{med:.1%}' if med is not None else '-'} | twins ordered {twins[1]}/{twins[0]}"
        )
        allorders.append((p, orders))
    for (p1, o1), (p2, o2) in itertools.permutations(allorders, 2):
        rev = [k for k in o1 if (k[0], k[1], k[2], k[4], k[3]) in o2]
        if rev and p1 < p2:
            print("REVERSED", Path(p1).parent.name, Path(p2).parent.name, rev)
    print("orders per bench:", [len(o) for _, o in allorders])
