"""How much of a load's swing is the speed of the two CPUs (issue 41; docs/cpu-speed.md): a server
already up on CPU 0 (make up, or by hand), wrk -t1 -c100 keep-alive on CPU 1 for `seconds`, a low-duty speed meter
(harness/basics/cpu_meter.c, about 1 % of each CPU) on both CPUs at once, and the loopback's TCP segments counted every 0.1 s (two a
request on keep-alive). Over windows as long as an attempt it prints the req/s CV, each CPU's speed CV, their
correlations, and the CV left after a least-squares fit of ln req/s on both CPUs' ln speed.

    cd loadgen && ../.venv/bin/python profiling/speed_vs_load.py http://127.0.0.1:8086/hello [seconds=30] [window=0.8]
"""

import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.basics import cpu_speed

PERIOD_MS = 20  # one meter sample (about 0.2 ms of arithmetic) every 20 ms: about 1 % of the CPU it shares


def segments_out() -> int:
    lines = [line.split() for line in Path("/proc/net/snmp").read_text().splitlines() if line.startswith("Tcp:")]
    return int(dict(zip(lines[0], lines[1]))["OutSegs"])


def speeds(output: str) -> list[tuple[float, float]]:
    """(start, speed) per meter sample: the best chunk's time over the kept chunks' mean time (1 = the best seen)."""
    rows = [tuple(map(float, line.split())) for line in output.splitlines() if len(line.split()) == 4]
    best = min(r[3] for r in rows)
    return [(r[0], r[1] * best / r[2]) for r in rows if r[1] > 0]


def measure(
    url: str, seconds: float, meter: str
) -> tuple[list[tuple[float, int]], dict[int, list[tuple[float, float]]]]:
    subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c100", "-d3s", url], check=True, capture_output=True)  # warm
    meters = {
        cpu: subprocess.Popen(
            ["taskset", "-c", str(cpu), meter, str(seconds + 1), str(PERIOD_MS)], stdout=subprocess.PIPE, text=True
        )
        for cpu in (0, 1)
    }
    wrk = subprocess.Popen(
        ["taskset", "-c", "1", "wrk", "-t1", "-c100", f"-d{seconds:g}s", url], stdout=subprocess.DEVNULL
    )
    counts = []
    while wrk.poll() is None:
        counts.append((time.monotonic(), segments_out()))
        time.sleep(0.1)
    return counts, {cpu: speeds(p.communicate()[0]) for cpu, p in meters.items()}


def windows(counts, meters, window: float) -> list[tuple[float, float, float]]:
    """(ln req/s, ln speed of CPU 0, of CPU 1) per window, the first second left out (wrk's connections opening)."""
    out, i = [], next(k for k, c in enumerate(counts) if c[0] - counts[0][0] >= 1)
    while (j := next((k for k in range(i, len(counts)) if counts[k][0] - counts[i][0] >= window), None)) is not None:
        (t0, s0), (t1, s1) = counts[i], counts[j]
        inside = {cpu: [s for t, s in m if t0 <= t < t1] for cpu, m in meters.items()}
        if all(inside.values()) and s1 > s0:
            out.append((math.log((s1 - s0) / 2 / (t1 - t0)), *(math.log(statistics.fmean(inside[c])) for c in (0, 1))))
        i = j
    return out


def main() -> None:
    url, seconds = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    window = float(sys.argv[3]) if len(sys.argv) > 3 else 0.8
    cpu_speed.choose(True)
    meter = cpu_speed.meter()  # the harness's own build of it (.tools/cpu-meter)
    if meter is None:
        sys.exit("the CPU meter could not be built (see above)")
    counts, meters = measure(url, seconds, str(meter))
    rows = numpy.array(windows(counts, meters, window))
    rate, cpu0, cpu1 = rows.T
    fit = numpy.column_stack([numpy.ones(len(rows)), cpu0, cpu1])
    coef, *_ = numpy.linalg.lstsq(fit, rate, rcond=None)
    left = rate - fit @ coef
    print(
        f"{len(rows)} windows of {window} s: req/s CV {100 * rate.std():.1f} %; speed CV: CPU 0 {100 * cpu0.std():.1f} %, "
        f"CPU 1 {100 * cpu1.std():.1f} %; correlation with req/s: CPU 0 {numpy.corrcoef(rate, cpu0)[0, 1]:+.2f}, "
        f"CPU 1 {numpy.corrcoef(rate, cpu1)[0, 1]:+.2f}, between the CPUs {numpy.corrcoef(cpu0, cpu1)[0, 1]:+.2f}; "
        f"fit ln req/s = {coef[1]:.2f} ln speed0 + {coef[2]:.2f} ln speed1: req/s CV left {100 * left.std():.1f} %"
    )


if __name__ == "__main__":
    main()
