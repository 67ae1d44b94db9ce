#!/bin/bash
# A JVM server warmed by hand, outside the harness: the server on CPU 0, ab on CPU 1, connection-per-request load
# (ab -c1000 on /factorial?param=1, the low-compute scenario's) in runs of about 2 s, for SECONDS seconds; prints each
# run's rate and the connections made so far. What the manifests' `warmup_connections` and the closing notes'
# "warmed by hand" figures come from.
#   loadgen/profiling/warm-by-hand.sh akka 8081 90
set -euo pipefail
server=$1 port=$2 seconds=${3:-90}
repo=$(cd "$(dirname "$0")/../.." && pwd)
run_dir=$(mktemp -d)
cd "$repo/$server"
HOST=127.0.0.1 PORT=$port SERVER_CORES=1 UPSTREAM_URL=http://127.0.0.1:8000/weather.json RUN_DIR=$run_dir \
  taskset -c 0 java -server -Xms1g -Xmx1g -XX:+UseParallelGC -XX:+AlwaysPreTouch -jar "target/$server-server.jar" \
  >"$run_dir/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$run_dir"' EXIT
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/id" >/dev/null && break; sleep 0.5; done
start=$SECONDS made=0 count=4000
while (( SECONDS - start < seconds )); do
  rps=$(taskset -c 1 ab -r -s 10000 -n $count -c 1000 "http://127.0.0.1:$port/factorial?param=1" 2>&1 |
        sed -n 's/^Requests per second: *\([0-9.]*\).*/\1/p')
  made=$((made + count))
  echo "$server t=$((SECONDS - start))s connections=$made rps=${rps:-failed}"
  count=$(( ( ${rps%.*} * 2 / 1000 ) * 1000 )); (( count < 1000 )) && count=1000
done
