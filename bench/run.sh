#!/usr/bin/env bash
# Drover benchmarks on a `drover up` cluster (release build). Prints one line
# per figure; docs/benchmarks.md records the latest run.
#
#   bench/run.sh            # everything
#   N_LOOP=1000 N_PENDING=10000 N_DRAIN=1000 bench/run.sh
#   BENCH_CGROUP=off bench/run.sh   # jobs without cgroups (default: drover up's cgroup.conf)
#   BENCH_TLS=on bench/run.sh       # every connection over TLS, loopback included
#   BIN=/work/base-release bench/run.sh   # another build (A/B), not rebuilt
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/drained.sh
N_LOOP=${N_LOOP:-1000}
N_PENDING=${N_PENDING:-10000}
N_DRAIN=${N_DRAIN:-1000}
if [ -n "${BIN:-}" ]; then
  BIN=$(cd "$BIN" && pwd)
else
  cargo build --release -q
  BIN=$PWD/target/release
fi
echo "build: $BIN; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
DIR=$(mktemp -d /tmp/drover-bench.XXXXXX)
trap 'kill $UP 2>/dev/null; wait $UP 2>/dev/null; rm -rf "$DIR"' EXIT
# The build is timed from a fresh copy (bench/fresh_copy.sh).
. bench/fresh_copy.sh
fresh_copy "$BIN" "$DIR/build"
BIN=$DIR/build

# BENCH_CGROUP=off: run the jobs without cgroups (to see what they cost);
# BENCH_CGROUP_CONF='...': use this cgroup.conf instead of drover up's.
if [ "${BENCH_CGROUP:-on}" = off ]; then echo "CgroupPlugin=disabled" > "$DIR/cgroup.conf"; fi
if [ -n "${BENCH_CGROUP_CONF:-}" ]; then printf '%s\n' "$BENCH_CGROUP_CONF" > "$DIR/cgroup.conf"; fi
start_up() {
  "$BIN/drover" up --dir "$DIR" --nodes 4 --cpus-per-node 8 --mem-per-node 8000 > "$DIR/up.out" 2>&1 &
  UP=$!
  for _ in $(seq 600); do grep -q '^export' "$DIR/up.out" 2>/dev/null && break; sleep 0.05; done
}
# BENCH_TLS=on: every connection over TLS 1.3, loopback included
# (TLSType=tls/rustls, a CA and this host's certificate from `drover ca`).
if [ "${BENCH_TLS:-off}" = on ]; then
  start_up; kill $UP; wait $UP || true; rm -f "$DIR/up.out"
  echo "TLSType=tls/rustls" >> "$DIR/drover.conf"
  echo "TLSType=tls/rustls" >> "$DIR/droverdbd.conf"
  DROVER_CONF="$DIR/drover.conf" "$BIN/drover" ca init > /dev/null
  DROVER_CONF="$DIR/drover.conf" "$BIN/drover" ca issue "$(hostname -s)" --san 127.0.0.1 > /dev/null
fi
start_up
eval "$(grep '^export' "$DIR/up.out")"
CTLD_PID=$(pgrep -f "droverctld -D -f $DIR/" | head -n1 || true)

now_ns() { date +%s%N; }
ms() { echo "scale=1; ($2 - $1) / 1000000" | bc; }
rss_mib() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$CTLD_PID/status"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
clear_queue() {
  scancel -u "$(id -un)" 2>/dev/null || true
  for _ in $(seq 2000); do [ -z "$(squeue -h -o %i)" ] && return; sleep 0.05; done
}

echo "controller RSS idle: $(rss_mib) MiB"

# 1. API submissions, many in flight, from one process.
"$BIN/drover" bench submit --count "$N_PENDING" --concurrency 256 --hold
echo "controller RSS with $N_PENDING pending: $(rss_mib) MiB"

# 2. squeue at N_PENDING pending.
for fmt in "" "--json"; do
  samples=$(for _ in $(seq 11); do
    t0=$(now_ns); squeue $fmt > /dev/null; t1=$(now_ns); ms $t0 $t1
  done | median)
  echo "squeue ${fmt:-(default)} with $N_PENDING pending: median $samples ms"
done
echo "controller RSS with $N_PENDING pending, after 22 squeue runs: $(rss_mib) MiB"

# 3. scancel of all pending jobs.
t0=$(now_ns)
scancel -u "$(id -un)"
t1=$(now_ns)
echo "scancel of $N_PENDING pending: $(ms $t0 $t1) ms"
clear_queue

# 4. sbatch from a shell loop (held jobs: measures submission, not execution).
t0=$(now_ns)
for _ in $(seq "$N_LOOP"); do sbatch -H -o /dev/null --wrap true > /dev/null; done
t1=$(now_ns)
echo "sbatch loop: $N_LOOP jobs in $(ms $t0 $t1) ms = $(echo "$N_LOOP * 1000000000 / ($t1 - $t0)" | bc) jobs/s"
clear_queue
t0=$(now_ns)
for _ in 1 2; do
  ( for _ in $(seq "$N_LOOP"); do sbatch -H -o /dev/null --wrap true > /dev/null; done ) &
done
wait %2 %3 2>/dev/null || wait
t1=$(now_ns)
echo "sbatch 2 loops: $((2 * N_LOOP)) jobs in $(ms $t0 $t1) ms = $(echo "2 * $N_LOOP * 1000000000 / ($t1 - $t0)" | bc) jobs/s"
clear_queue

# 5. Drain: N_DRAIN trivial jobs, held, released at once, across 4 nodes.
"$BIN/drover" bench submit --count "$N_DRAIN" --concurrency 64 --hold --quiet
ids=$(squeue -h -o %i | paste -sd, -)
t0=$(now_ns)
scontrol release "$ids"
wait_drained
t1=$(now_ns)
echo "drain: $N_DRAIN jobs in $(ms $t0 $t1) ms = $(echo "$N_DRAIN * 1000000000 / ($t1 - $t0)" | bc) jobs/s"

# 6. Submit-to-RUNNING: the script itself stamps when it starts.
samples=$(for i in $(seq 21); do
  f="$DIR/lat.$i"
  t0=$(now_ns)
  sbatch -o /dev/null --wrap "date +%s%N > $f" > /dev/null
  for _ in $(seq 5000); do [ -s "$f" ] && break; sleep 0.001; done
  t1=$(cat "$f")
  ms $t0 $t1
done | median)
echo "submit-to-running (sbatch start to script start): median $samples ms"
