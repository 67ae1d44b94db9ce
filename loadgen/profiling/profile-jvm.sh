#!/usr/bin/env bash
# Where a JVM server spends its CPU on connection-per-request load: `make profile SERVER=akka`; on keep-alive load
# with KEEPALIVE=1.
#
# The server is started by the harness (its manifest, SERVER_CORES and CPU plan: the server's CPUs), warmed with
# WARMUPS runs of its load (JIT; the same connection pattern): `ab -n REQUESTS -c 100` without keep-alive, or with
# KEEPALIVE=1 `wrk -t1 -c64 -d10s` (which, unlike ab -k, saturates a server on one core: an idle server would
# count more wake-ups per request), then profiled by async-profiler (Maven Central,
# tools.profiler:async-profiler, attached with jcmd) during one more such run; the load runs on the load generator's CPUs.
# Writes results/profile-<server>-<time>/: profile.collapsed (flame-graph input), flat.txt (top frames) and
# summary.txt (CPU per request by activity, profiling/classify.py). Profiling costs some speed: compare servers with
# each other here, not with `make bench`.
set -euo pipefail
SERVER=${1:?usage: profile-jvm.sh <server> (a JVM server: akka, pekko, play, finagle, spray, socko)}
KEEPALIVE=${KEEPALIVE:-}
REQUESTS=${REQUESTS:-20000}
WARMUPS=${WARMUPS:-3}
AP_VERSION=4.0
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=$ROOT/.venv/bin/python
cd "$ROOT/loadgen"

for tool in ab wrk jcmd mvn; do command -v $tool >/dev/null || { echo "$tool is missing: make setup (ab, wrk), a JDK 17 (jcmd, mvn)"; exit 2; }; done
lib=$HOME/.m2/repository/tools/profiler/async-profiler/$AP_VERSION/async-profiler-$AP_VERSION-linux-x64.jar
[ -f "$lib" ] || mvn -q -B dependency:get -Dartifact=tools.profiler:async-profiler:$AP_VERSION:jar:linux-x64 -Dtransitive=false
agent_dir=$ROOT/.tools/async-profiler-$AP_VERSION
[ -f "$agent_dir/libasyncProfiler.so" ] || { mkdir -p "$agent_dir"; unzip -q -o -j "$lib" linux-x64/libasyncProfiler.so -d "$agent_dir"; }
agent=$agent_dir/libasyncProfiler.so
# perf events give kernel frames (accept, close, epoll): allowed for root at paranoid level 1 (Debian: 2 or 3). The
# machine's own level is put back on exit (the trap below).
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
restore_paranoid=""
if [ "$paranoid" -gt 1 ] && [ "$(id -u)" = 0 ]; then
  echo 1 > /proc/sys/kernel/perf_event_paranoid
  restore_paranoid="echo $paranoid > /proc/sys/kernel/perf_event_paranoid"
  trap 'eval "$restore_paranoid"' EXIT
fi

read -r port loadgen_cpus upstream_port < <($PY - "$SERVER" <<'PY'
import sys
from harness.basics.cpus import plan
from harness.config.manifest import ManifestError, discover, select
try:
    server = select(discover(), [sys.argv[1]])[0]
except ManifestError as e:
    sys.exit(f"{e}")
if server.run[0] != "java":
    sys.exit(f"{server.name} does not run on the JVM: profile-jvm.sh attaches a JVM agent")
upstream = discover().get("nginx")
print(server.port, ",".join(map(str, plan().loadgen)), upstream.port if upstream else 0)
PY
)
out=$ROOT/results/profile-$SERVER${KEEPALIVE:+-keepalive}-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
# stopped on exit: the server, and the upstream when `up` started it for this server
started=$SERVER
ss -ltnH "sport = :$upstream_port" | grep -q . || started="$SERVER nginx"
trap '$PY -m harness --runtime local --servers "$started" down >/dev/null 2>&1 || true; eval "$restore_paranoid"' EXIT
$PY -m harness --runtime local --servers "$SERVER" up
pid=$(ss -ltnpH "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
url=http://127.0.0.1:$port/hello
# prints the rate and the number of requests served
if [ -n "$KEEPALIVE" ]; then
  load() { taskset -c "$loadgen_cpus" wrk -t1 -c64 -d10s "$url" | awk '/requests in/{n=$1} /Requests\/sec/{print $2, n}'; }
else
  load() { taskset -c "$loadgen_cpus" ab -q -n "$REQUESTS" -c 100 "$url" | awk -v n="$REQUESTS" '/Requests per second/{print $4, n}'; }
fi
for i in $(seq "$WARMUPS"); do read -r rate _ < <(load); echo "warm-up $i: $rate req/s"; done
# jcmd's own parser splits name=value pairs: the agent's option string is passed quoted
jcmd "$pid" JVMTI.agent_load "$agent" "\"start,event=cpu,interval=200us,threads\"" >/dev/null
read -r rate requests < <(load)
echo "profiled: $rate req/s" | tee "$out/summary.txt"
jcmd "$pid" JVMTI.agent_load "$agent" "\"dump,file=$out/flat.txt,flat=30,traces=0\"" >/dev/null
jcmd "$pid" JVMTI.agent_load "$agent" "\"stop,file=$out/profile.collapsed,collapsed\"" >/dev/null
$PY "$ROOT/loadgen/profiling/classify.py" --requests "$requests" --interval-us 200 "$out/profile.collapsed" | tee -a "$out/summary.txt"
echo "written: $out"
