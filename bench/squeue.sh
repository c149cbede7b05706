#!/usr/bin/env bash
# squeue at N held jobs (issue 19): wall times, and the controller's CPU
# time for the queries next to its idle CPU over 5 s (passes, heartbeats),
# which is what to read on a loaded machine. Prints md5s of the default
# output and of `--json` with every 10-digit number (times) blanked, to
# compare two builds' output. docs/benchmarks.md records the runs.
#
#   bench/squeue.sh                              # N=10000, release build
#   BIN=/path/to/release/bins bench/squeue.sh    # another build (A/B)
#   CALLGRIND=1 bench/squeue.sh                  # also the client's instructions
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p drover-cli -p drover-ctld -p drover-nodeagent -p drover-dbd
  BIN=$PWD/target/release
fi
DIR=$(mktemp -d /tmp/drover-squeue.XXXXXX)
UP=
stop_up() { if [ -n "$UP" ]; then kill -INT "$UP" 2>/dev/null || true; wait "$UP" 2>/dev/null || true; UP=; fi; }
trap 'stop_up; rm -rf "$DIR"' EXIT
"$BIN/drover" up --dir "$DIR" --nodes "${NODES:-4}" --cpus-per-node 8 --mem-per-node 8000 > "$DIR/up.out" 2>&1 &
UP=$!
for _ in $(seq 6000); do grep -q '^export' "$DIR/up.out" 2>/dev/null && break; sleep 0.05; done
eval "$(grep '^export' "$DIR/up.out")"
now_ns() { date +%s%N; }
ms() { echo "scale=1; ($2 - $1) / 1000000" | bc; }
ctld_pid() { pgrep -f "droverctld -D -f $DIR/" | head -n1; }
rss_mib() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$(ctld_pid)/status"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { local n=$1; shift; for _ in $(seq "$n"); do t0=$(now_ns); "$@" > /dev/null; t1=$(now_ns); ms "$t0" "$t1"; done | median; }
ctld_cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$(ctld_pid)/stat"; }
"$BIN/drover" bench submit --count "$N" --concurrency 256 --hold > /dev/null
sleep 1
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  bin: $BIN"
echo "RSS with $N pending: $(rss_mib) MiB"
squeue | md5sum | sed 's/^/squeue md5 /'
squeue --json | sed -E 's/[0-9]{10}/T/g; s/drover-squeue\.[A-Za-z0-9]{6}/DIR/g' | md5sum | sed 's/^/json md5 (times dropped) /'
for _ in 1 2 3; do DROVER_TIMING=1 squeue 2>&1 >/dev/null | tr '\n' ' '; echo; done
echo "squeue median of 11: $(timed 11 squeue) ms"
echo "squeue --json median of 5: $(timed 5 squeue --json) ms"
c0=$(ctld_cpu); sleep 5; c1=$(ctld_cpu); echo "ctld CPU idle 5 s: $(echo "$c1 - $c0" | bc) s"
c0=$(ctld_cpu); t0=$(now_ns); for _ in $(seq 20); do squeue > /dev/null; done; c1=$(ctld_cpu); t1=$(now_ns); echo "20 squeue took $(ms $t0 $t1) ms wall"
echo "ctld CPU for 20 squeue: $(echo "$c1 - $c0" | bc) s"
c0=$(ctld_cpu); for _ in $(seq 10); do squeue --json > /dev/null; done; c1=$(ctld_cpu)
echo "ctld CPU for 10 squeue --json: $(echo "$c1 - $c0" | bc) s"
echo "RSS after the queries: $(rss_mib) MiB"
if [ -n "${CALLGRIND:-}" ]; then
  valgrind --tool=callgrind --callgrind-out-file=$DIR/cg.out squeue > /dev/null 2>$DIR/cg.err || true
  grep -h "summary\|totals" $DIR/cg.out | sed 's/^/client squeue Ir /'
  valgrind --tool=callgrind --callgrind-out-file=$DIR/cgj.out squeue --json > /dev/null 2>$DIR/cgj.err || true
  grep -h "summary\|totals" $DIR/cgj.out | sed 's/^/client squeue --json Ir /'
fi
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
