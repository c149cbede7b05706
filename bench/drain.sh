#!/usr/bin/env bash
# Drain benchmark with CPU accounting: `drover up` (release build), N held
# `true` jobs released at once, twice; prints the rate and the CPU ticks
# (1/100 s) each daemon and the whole machine used during the drain.
#
#   bench/drain.sh                 # N=1000, drover up's cgroup.conf
#   CG=off N=2000 bench/drain.sh   # without cgroups
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000}
cargo build --release -q
BIN=$PWD/target/release
DIR=$(mktemp -d /tmp/drover-drain.XXXXXX)
trap 'kill $UP 2>/dev/null; wait $UP 2>/dev/null; rm -rf "$DIR"' EXIT
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
for round in 1 2; do
  "$BIN/drover" bench submit --count "$N" --concurrency 64 --hold --quiet
  ids=$(squeue -h -o %i | paste -sd, -)
  c0=$(ticks "$P_C"); d0=$(ticks "$P_D"); b0=$(ticks "$P_B"); m0=$(machine)
  t0=$(date +%s%N)
  scontrol release "$ids"
  for _ in $(seq 100000); do [ -z "$(squeue -h -t PD,R,CG -o %i | head -n1)" ] && break; sleep 0.01; done
  t1=$(date +%s%N)
  echo "drain $round: $N jobs in $(( (t1 - t0) / 1000000 )) ms = $(( N * 1000000000 / (t1 - t0) )) jobs/s;" \
    "CPU ticks: droverctld $(( $(ticks "$P_C") - c0 )), droverd $(( $(ticks "$P_D") - d0 ))," \
    "droverdbd $(( $(ticks "$P_B") - b0 )), machine $(( $(machine) - m0 ))"
done
