#!/usr/bin/env bash
# Drain benchmark with CPU accounting: `drover up` (release build), N held
# `true` jobs released at once, ROUNDS times; prints the rate and the CPU
# ticks (1/100 s) each daemon and the whole machine used during the drain
# (the supervisors and jobs are in "machine" only: the fork server lets the
# kernel reap them, so their CPU is added to no process; `perf record -a`
# shows it). Then LAT submissions one at a time, each timed from sbatch's
# start to the first line of its script.
#
#   bench/drain.sh                       # N=1000, drover up's cgroup.conf
#   CG=off N=2000 bench/drain.sh         # without cgroups
#   BIN=/work/base-release bench/drain.sh   # another build (no cargo build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/drained.sh
N=${N:-1000}
ROUNDS=${ROUNDS:-2}
LAT=${LAT:-21}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q
  BIN=$PWD/target/release
fi
DIR=$(mktemp -d /tmp/drover-drain.XXXXXX)
trap 'kill $UP 2>/dev/null; wait $UP 2>/dev/null; rm -rf "$DIR"' EXIT
# The build is timed from a fresh copy (bench/fresh_copy.sh).
. bench/fresh_copy.sh
fresh_copy "$BIN" "$DIR/build"
BIN=$DIR/build
if [ "${CG:-on}" = off ]; then echo "CgroupPlugin=disabled" > "$DIR/cgroup.conf"; fi
"$BIN/drover" up --dir "$DIR" --nodes 4 --cpus-per-node 8 --mem-per-node 8000 > "$DIR/up.out" 2>&1 &
UP=$!
for _ in $(seq 600); do grep -q '^export' "$DIR/up.out" 2>/dev/null && break; sleep 0.05; done
eval "$(grep '^export' "$DIR/up.out")"
ticks() { awk '{print $14+$15+$16+$17}' "/proc/$1/stat"; }
machine() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
P_C=$(pgrep -f "droverctld.*$DIR" | head -n1)
P_D=$(pgrep -f "droverd .*$DIR" | head -n1)
P_B=$(pgrep -f "droverdbd.*$DIR" | head -n1)
echo "build: $BIN; cgroups: ${CG:-on}; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  "$BIN/drover" bench submit --count "$N" --concurrency 64 --hold --quiet
  ids=$(squeue -h -o %i | paste -sd, -)
  c0=$(ticks "$P_C"); d0=$(ticks "$P_D"); b0=$(ticks "$P_B"); m0=$(machine)
  t0=$(date +%s%N)
  scontrol release "$ids"
  wait_drained
  t1=$(date +%s%N)
  echo "drain $round: $N jobs in $(( (t1 - t0) / 1000000 )) ms = $(( N * 1000000000 / (t1 - t0) )) jobs/s;" \
    "CPU ticks: droverctld $(( $(ticks "$P_C") - c0 )), droverd $(( $(ticks "$P_D") - d0 ))," \
    "droverdbd $(( $(ticks "$P_B") - b0 )), machine $(( $(machine) - m0 ))"
done
if [ "$LAT" -gt 0 ]; then
  samples=$(for i in $(seq "$LAT"); do
    f="$DIR/lat.$i"
    t0=$(date +%s%N)
    sbatch -o /dev/null --wrap "date +%s%N > $f" > /dev/null
    for _ in $(seq 5000); do [ -s "$f" ] && break; sleep 0.001; done
    echo "scale=1; ($(cat "$f") - $t0) / 1000000" | bc
  done | sort -n)
  echo "submit-to-running ($LAT samples): median $(echo "$samples" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') ms," \
    "min $(echo "$samples" | head -n1) ms, max $(echo "$samples" | tail -n1) ms"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
