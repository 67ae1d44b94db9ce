#!/bin/bash
# A JVM server warmed by hand, outside the harness: the server on CPU 0, ab on CPU 1, connection-per-request load
# (ab -c1000 on /factorial?param=1, the low-compute scenario's) in runs of about RUN_S (2) s, for SECONDS seconds;
# prints each run's rate, the connections made so far, and the clock ticks its JIT compiler threads and all its
# threads took in the run (harness/basics/jit.py reads the same). What the manifests' `warmup_connections`, the
# closing notes' "warmed by hand" figures and tests/fixtures/jit_by_hand_akka_20261202.txt (RUN_S=1) come from.
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
ticks() {  # the CPU ticks (utime + stime) of the JVM's threads whose names match the pattern $1 (all threads: "")
  local sum=0 task fields
  for task in /proc/$pid/task/*; do
    [[ $(cat "$task/comm" 2>/dev/null) == $1* ]] || continue
    fields=($(sed 's/^.*) //' "$task/stat" 2>/dev/null)) || continue
    sum=$((sum + fields[11] + fields[12]))
  done
  echo $sum
}
run_s=${RUN_S:-2} start=$SECONDS made=0 count=4000 jit=$(ticks "C[12] Compiler") all=$(ticks "")
while (( SECONDS - start < seconds )); do
  rps=$(taskset -c 1 ab -r -s 10000 -n $count -c 1000 "http://127.0.0.1:$port/factorial?param=1" 2>&1 |
        sed -n 's/^Requests per second: *\([0-9.]*\).*/\1/p')
  made=$((made + count)) jit_now=$(ticks "C[12] Compiler") all_now=$(ticks "")
  echo "$server t=$((SECONDS - start))s conns=$made rps=${rps:-failed} jit_ticks=$((jit_now - jit)) all_ticks=$((all_now - all))"
  jit=$jit_now all=$all_now
  count=$(( ( ${rps%.*} * run_s / 1000 ) * 1000 )); (( count < 1000 )) && count=1000
done
