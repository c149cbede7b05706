#!/usr/bin/env bash
# drover sim: a synthetic workload (100,000 jobs) replayed through the real
# controller core on a 1,000-node cluster (800 CPU nodes of 64 CPUs, 200 GPU
# nodes of 64 CPUs and 8 GPUs), release build. Prints the wall time, the
# simulated span and how much faster than real time it ran.
# docs/benchmarks.md records the latest run.
#
#   bench/sim.sh                       # 100,000 jobs, 1,000 nodes
#   N_JOBS=20000 N_NODES=200 bench/sim.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N_JOBS=${N_JOBS:-100000}
N_NODES=${N_NODES:-1000}
SEED=${SEED:-1}
cargo build --release -q -p drover-sim
BIN=$PWD/target/release/droversim
DIR=$(mktemp -d /tmp/drover-sim-bench.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
GPU=$((N_NODES / 5)); CPU=$((N_NODES - GPU))
cat > "$DIR/slurm.conf" <<CONF
ClusterName=bench
SlurmctldHost=ctl
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightAge=1000
GresTypes=gpu
NodeName=c[1-$CPU] CPUs=64 RealMemory=256000
NodeName=g[1-$GPU] CPUs=64 RealMemory=512000 Gres=gpu:a100:8
PartitionName=batch Nodes=c[1-$CPU] Default=YES MaxTime=2-00:00:00
PartitionName=gpu Nodes=g[1-$GPU] MaxTime=2-00:00:00
CONF
echo "loadavg before: $(cat /proc/loadavg)"
t0=$(date +%s%N)
/usr/bin/time -o "$DIR/time.txt" -f "%U %S %M" \
  "$BIN" -c "$DIR/slurm.conf" --synthetic "$N_JOBS" --seed "$SEED" --csv "$DIR/jobs.csv" > "$DIR/summary.txt"
t1=$(date +%s%N)
echo "loadavg after:  $(cat /proc/loadavg)"
wall=$(echo "scale=2; ($t1 - $t0) / 1000000000" | bc)
span=$(awk '/^makespan/ {print $2}' "$DIR/summary.txt")
grep -E '^(jobs|started|makespan|utilisation|wait (mean|median|p95)|bounded|scheduling passes)' "$DIR/summary.txt"
read -r user sys rss < "$DIR/time.txt"
echo "drover sim: $N_JOBS jobs, $N_NODES nodes: ${wall} s wall, ${user} s user CPU, max RSS $((rss / 1024)) MiB; simulated span ${span} s: $(echo "scale=0; $span / $wall" | bc)x real time"
