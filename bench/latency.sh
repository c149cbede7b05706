#!/usr/bin/env bash
# Submit to running (issue 19): on a fresh `drover up` (4 nodes, jobs in
# cgroups), N submissions one at a time, each timed from just before
# `sbatch` to the first line of its script (`date +%s%N`, as bench/run.sh
# step 6); the first 5 are not counted. GAP seconds between submissions:
# 0 is back to back, 1 an idle node (where a cold kernel lock shows).
# Prints the median, min and max. docs/benchmarks.md records the runs.
#
#   bench/latency.sh                       # N=36 GAP=0, release build
#   GAP=1 N=16 bench/latency.sh            # an idle node each time
#   BIN=/path/to/release/bins bench/latency.sh   # another build (A/B)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-36}
GAP=${GAP:-0}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p drover-cli -p drover-ctld -p drover-nodeagent -p drover-dbd
  BIN=$PWD/target/release
fi
DIR=$(mktemp -d /tmp/drover-latency.XXXXXX)
UP=
trap 'if [ -n "$UP" ]; then kill -INT "$UP" 2>/dev/null; wait "$UP" 2>/dev/null; fi; rm -rf "$DIR"' EXIT
# The build is timed from a fresh copy (bench/fresh_copy.sh).
. bench/fresh_copy.sh
fresh_copy "$BIN" "$DIR/build"
BIN=$DIR/build
"$BIN/drover" up --dir "$DIR" --nodes 4 --cpus-per-node 8 --mem-per-node 8000 > "$DIR/up.out" 2>&1 &
UP=$!
for _ in $(seq 600); do grep -q '^export' "$DIR/up.out" 2>/dev/null && break; sleep 0.05; done
eval "$(grep '^export' "$DIR/up.out")"
sleep 1
echo "build: $BIN; gap: ${GAP} s; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$N"); do
  [ "$GAP" != 0 ] && sleep "$GAP"
  t0=$(date +%s%N)
  sbatch -o /dev/null --wrap "date +%s%N > $DIR/f$i" > /dev/null
  for _ in $(seq 5000); do [ -s "$DIR/f$i" ] && break; sleep 0.001; done
  [ "$i" -gt 5 ] && echo $(( ($(cat "$DIR/f$i") - t0) / 10000 ))
done | sort -n | awk '{a[NR]=$1} END {printf "submit-to-running (%d samples): median %.2f ms, min %.2f, max %.2f\n", NR, a[int((NR+1)/2)]/100, a[1]/100, a[NR]/100}'
