#!/bin/bash
# Does the steadiness probe's busy loop see what moves a server's req/s? Back-to-back wrk attempts on a server already
# up (make up), each between two 0.3 s runs of a pinned busy loop (spin.c) on CPU `PROBE_CPU`; prints the req/s CV,
# the loop's CV and their correlation (issue 41; docs/noise.md).
#   profiling/probe-vs-load.sh http://127.0.0.1:8086/hello [attempts=20] [seconds=1]   (PROBE_CPU=0 or 1)
set -euo pipefail
url=$1; n=${2:-20}; seconds=${3:-1}; probe_cpu=${PROBE_CPU:-0}
spin=$(mktemp); trap 'rm -f "$spin" "$spin.out"' EXIT
gcc -O1 -o "$spin" "$(dirname "$0")/spin.c"
taskset -c 1 wrk -t1 -c100 -d3s "$url" >/dev/null  # warm
for _ in $(seq "$n"); do
  before=$(taskset -c "$probe_cpu" "$spin" 0.3)
  rps=$(taskset -c 1 wrk -t1 -c100 -d"${seconds}s" "$url" | awk '/Requests\/sec/{print $2}')
  after=$(taskset -c "$probe_cpu" "$spin" 0.3)
  echo "$before $rps $after"
done >"$spin.out"
python3 - "$spin.out" <<'PY'
import math, statistics as s, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
rps = [math.log(r[1]) for r in rows]
loop = [math.log((r[0] + r[2]) / 2) for r in rows]
print(f"req/s CV {100 * s.stdev(rps):.1f}%, busy loop CV {100 * s.stdev(loop):.1f}%, correlation {s.correlation(rps, loop):.2f}")
PY
