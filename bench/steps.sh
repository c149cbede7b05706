#!/usr/bin/env bash
# Job step launch benchmarks (issue 6) on a `drover up` cluster of 4
# emulated nodes with 16 CPUs each (release build). Prints one line per
# figure; docs/benchmarks.md records the latest run.
#
#   bench/steps.sh            # N=21 samples each
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-21}
cargo build --release -q
BIN=$PWD/target/release
DIR=$(mktemp -d /tmp/drover-bench-steps.XXXXXX)
trap 'scancel -u "$(id -un)" 2>/dev/null || true; kill $UP 2>/dev/null; wait $UP 2>/dev/null; rm -rf "$DIR"' EXIT
"$BIN/drover" up --dir "$DIR" --nodes 4 --cpus-per-node 16 --mem-per-node 8000 > "$DIR/up.out" 2>&1 &
UP=$!
for _ in $(seq 600); do grep -q '^export' "$DIR/up.out" 2>/dev/null && break; sleep 0.05; done
eval "$(grep '^export' "$DIR/up.out")"

now_ns() { date +%s%N; }
ms() { echo "scale=1; ($2 - $1) / 1000000" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

JOB=$(sbatch --parsable -N4 -n64 -o /dev/null --wrap "sleep 600")
for _ in $(seq 600); do [ "$(squeue -h -j "$JOB" -o %T)" = RUNNING ] && break; sleep 0.05; done
export SLURM_JOB_ID=$JOB

srun -n1 true # warm up
for spec in "-n1" "-n 64 -N 4"; do
  samples=$(for _ in $(seq "$N"); do
    t0=$(now_ns); srun $spec true; t1=$(now_ns); ms $t0 $t1
  done | median)
  echo "srun $spec true inside an allocation (4 nodes): median $samples ms"
done
# A whole srun outside an allocation: allocate, run the step, release.
unset SLURM_JOB_ID
scancel "$JOB"
for _ in $(seq 600); do [ -z "$(squeue -h -o %i)" ] && break; sleep 0.05; done
samples=$(for _ in $(seq "$N"); do
  t0=$(now_ns); srun -n1 true; t1=$(now_ns); ms $t0 $t1
done | median)
echo "srun -n1 true outside an allocation (allocate + step + release): median $samples ms"
