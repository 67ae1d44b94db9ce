#!/bin/bash
# Is the attempts' own noise the machine's memory? The steadiness probe's busy loop (harness/measuring/steadiness.py)
# and a memory-bound pointer chase (chase.c, 64 MB) take turns, each on both CPUs at once for SECS seconds, ROUNDS
# times; prints each one's CV between 0.8 s windows, per CPU (issue 41; docs/noise.md).
#   profiling/memory-vs-loop.sh            (SECS=9 ROUNDS=3; nothing else running)
set -euo pipefail
secs=${SECS:-9}; rounds=${ROUNDS:-3}
here=$(cd "$(dirname "$0")" && pwd); out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
gcc -O2 -o "$out/chase" "$here/chase.c"
loop=$(cd "$here/.." && ../.venv/bin/python -c 'from harness.measuring.steadiness import PROBE; print(PROBE)')
for r in $(seq "$rounds"); do
  for kind in loop chase; do
    for cpu in 0 1; do
      if [ $kind = loop ]; then cmd=(python3 -c "$loop" 0.1 "$secs" 0.001); else cmd=("$out/chase" 64 "$secs"); fi
      taskset -c $cpu "${cmd[@]}" >"$out/$kind.$r.$cpu" &
    done
    wait
  done
done
# the probe's own arithmetic (steadiness.py: tick rates, 0.8 s windows, their CV), so both read as the probe reads
cd "$here/.." && ../.venv/bin/python - "$out" <<'PY'
import glob, statistics, sys
from harness.stats.intervals import cv
from harness.measuring.steadiness import TICK_S, tick_rates, windows
cvs = {}
for f in sorted(glob.glob(sys.argv[1] + "/*.*.*")):
    kind, _, cpu = f.rsplit("/", 1)[1].split(".")
    rates = tick_rates(open(f).read())[2:]  # its first 0.2 s: start-up
    found = cv(windows(rates, round(0.8 / TICK_S)))
    if found is not None:
        cvs.setdefault((kind, cpu), []).append(100 * found)
for (kind, cpu), v in sorted(cvs.items()):
    print(f"{kind:5s} CPU {cpu}: CV between 0.8 s windows {' '.join(f'{x:.1f}' for x in v)} %, median {statistics.median(v):.1f} %")
PY
