#!/usr/bin/env bash
# Drover at scale: one `drover up` cluster whose agent emulates N_NODES
# nodes (one droverd process serving them all), N_PENDING held jobs queued
# through the API. Prints one line per figure; docs/benchmarks.md records
# the runs.
#
#   bench/scale.sh                     # N_NODES=1000 N_PENDING=100000 N_DRAIN=3000
#   BIN=/path/to/release/bins bench/scale.sh   # another build (A/B)
#   BENCH_CGROUP=off bench/scale.sh    # the drained jobs without cgroups
#   N_NODES=4 N_PENDING=10000 N_MORE=0 N_DRAIN=0 bench/scale.sh   # issue 19's 10,000-job figures
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/drained.sh
N_NODES=${N_NODES:-1000}
N_PENDING=${N_PENDING:-100000}
N_MORE=${N_MORE:-10000}
N_DRAIN=${N_DRAIN:-3000}
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p drover-cli -p drover-ctld -p drover-nodeagent -p drover-dbd
  BIN=$PWD/target/release
fi
DIR=$(mktemp -d /tmp/drover-scale.XXXXXX)
UP=
stop_up() { if [ -n "$UP" ]; then kill -INT "$UP" 2>/dev/null || true; wait "$UP" 2>/dev/null || true; UP=; fi; }
trap 'stop_up; rm -rf "$DIR"' EXIT
# The build is timed from a fresh copy (bench/fresh_copy.sh).
. bench/fresh_copy.sh
fresh_copy "$BIN" "$DIR/build"
BIN=$DIR/build
if [ "${BENCH_CGROUP:-on}" = off ]; then echo "CgroupPlugin=disabled" > "$DIR/cgroup.conf"; fi

start_up() {
  rm -f "$DIR/up.out"
  "$BIN/drover" up --dir "$DIR" --nodes "$N_NODES" --cpus-per-node 8 --mem-per-node 8000 > "$DIR/up.out" 2>&1 &
  UP=$!
  for _ in $(seq 6000); do grep -q '^export' "$DIR/up.out" 2>/dev/null && return; sleep 0.05; done
  echo "drover up did not come up:"; cat "$DIR/up.out"; exit 1
}
now_ns() { date +%s%N; }
ms() { echo "scale=1; ($2 - $1) / 1000000" | bc; }
ctld_pid() { pgrep -f "droverctld -D -f $DIR/" | head -n1; }
rss_mib() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$(ctld_pid)/status"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Median wall time (ms) of N runs of a command, output discarded.
timed() {
  local n=$1; shift
  for _ in $(seq "$n"); do
    t0=$(now_ns); "$@" > /dev/null; t1=$(now_ns); ms "$t0" "$t1"
  done | median
}
# User+system CPU seconds the controller has used so far.
ctld_cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$(ctld_pid)/stat"; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(now_ns)
start_up
t1=$(now_ns)
eval "$(grep '^export' "$DIR/up.out")"
echo "drover up with $N_NODES nodes: $(ms "$t0" "$t1") ms; controller RSS idle $(rss_mib) MiB"

# 1. The queue: N_PENDING held jobs through the API, then N_MORE with them queued.
"$BIN/drover" bench submit --count "$N_PENDING" --concurrency 256 --hold
echo "controller RSS with $N_PENDING pending: $(rss_mib) MiB"
if [ "$N_MORE" -gt 0 ]; then
  echo -n "at $N_PENDING queued: "
  "$BIN/drover" bench submit --count "$N_MORE" --concurrency 256 --hold
fi
TOTAL=$((N_PENDING + N_MORE))
MID=$(squeue -h -o %i --sort=i | sed -n "$((TOTAL / 2))p")

# What the queue costs the controller at rest: its scheduling passes
# (a full one every second) over the held jobs.
cpu0=$(ctld_cpu); sleep 5
echo "controller CPU over 5 s at rest with $TOTAL held: $(echo "$(ctld_cpu) - $cpu0" | bc) s"

# 2. Queries: filtered ones return few or no rows; the full listing all.
cpu0=$(ctld_cpu)
echo "squeue -j $MID: median $(timed 11 squeue -j "$MID") ms"
echo "squeue -u nobody (no rows): median $(timed 11 squeue -u nobody) ms"
echo "squeue -t R (no rows): median $(timed 11 squeue -t R) ms"
echo "squeue -u $(id -un) -t R (no rows): median $(timed 11 squeue -u "$(id -un)" -t R) ms"
echo "squeue (all $TOTAL rows): median $(timed 5 squeue) ms"
t0=$(now_ns); bytes=$(squeue --json | wc -c); t1=$(now_ns)
echo "squeue --json (all $TOTAL rows): $(ms "$t0" "$t1") ms, $bytes bytes"
echo "controller CPU for these 50 queries: $(echo "$(ctld_cpu) - $cpu0" | bc) s"
echo "controller RSS with $TOTAL pending after the queries: $(rss_mib) MiB"

# 3. Restart: stop the cluster, start it again on the same state; time
# from the controller's start to its first answer (its log), and from the
# relaunch until squeue -j answers.
stop_up
t0=$(now_ns)
start_up
until squeue -h -j "$MID" -o %i > /dev/null 2>&1; do sleep 0.01; done
t1=$(now_ns)
eval "$(grep '^export' "$DIR/up.out")"
start_line=$(grep 'droverctld .* starting' "$DIR/log/droverctld.log" | tail -n1 | cut -d' ' -f1)
# The controller listens before it recovers (calls are refused until it is
# in control): recovery ends at the "in control" line.
control_line=$(grep 'in control' "$DIR/log/droverctld.log" | tail -n1 | cut -d' ' -f1)
echo "controller restart with $TOTAL jobs: $(ms "$(date -d "$start_line" +%s%N)" "$(date -d "$control_line" +%s%N)") ms to in control (recovery); whole cluster relaunch to squeue answering $(ms "$t0" "$t1") ms"
echo "controller RSS after restart: $(rss_mib) MiB"

# 4. Cancel the queue.
t0=$(now_ns); scancel -u "$(id -un)"; t1=$(now_ns)
echo "scancel of $TOTAL pending: $(ms "$t0" "$t1") ms"
for _ in $(seq 3000); do [ -z "$(squeue -h -o %i | head -n1)" ] && break; sleep 0.1; done

# 5. Arrays at Slurm's largest MaxArraySize: a 100,000-task held array.
echo "MaxArraySize=4000001" >> "$DIR/slurm.conf"
scontrol reconfigure
t0=$(now_ns); sbatch -H -o /dev/null --array=0-99999 --wrap true > /dev/null; t1=$(now_ns)
echo "sbatch of a 100,000-task array (MaxArraySize=4000001): $(ms "$t0" "$t1") ms"
echo "squeue -r (its 100,000 tasks, one row each): median $(timed 3 squeue -r) ms"
scancel -u "$(id -un)"
for _ in $(seq 3000); do [ -z "$(squeue -h -o %i | head -n1)" ] && break; sleep 0.1; done
if [ "$N_DRAIN" -eq 0 ]; then echo "controller RSS at the end: $(rss_mib) MiB"; exit 0; fi
# 6. Drain: N_DRAIN trivial jobs released at once over N_NODES nodes,
# three times. A node keeps a finished job's cgroups for its next job
# (nodeagent/src/cgroup/pool.rs) and makes new ones only when it runs more
# jobs at once than it has kept: the first burst after the agent started
# makes every job's groups (and directory); the second still makes those
# the first did not leave (its jobs started and ended in waves, so the
# nodes kept fewer than they run at once); the third is a node's steady
# state. Each line says by how many the kept groups (cgroup v1) grew:
# the groups the round had to make.
kept_groups() {
  { find /sys/fs/cgroup/freezer/drover -mindepth 2 -maxdepth 2 -name 'spare_*' 2>/dev/null || true; } | wc -l
}
drain() {
  "$BIN/drover" bench submit --count "$N_DRAIN" --concurrency 64 --hold --quiet
  ids=$(squeue -h -o %i | paste -sd, -)
  cpu0=$(ctld_cpu)
  kept0=$(kept_groups)
  t0=$(now_ns)
  scontrol release "$ids"
  wait_drained
  t1=$(now_ns)
  echo "drain ($1): $N_DRAIN jobs over $N_NODES nodes in $(ms "$t0" "$t1") ms = $(echo "$N_DRAIN * 1000000000 / ($t1 - $t0)" | bc) jobs/s;" \
    "controller CPU $(echo "$(ctld_cpu) - $cpu0" | bc) s; kept groups grew by $(( $(kept_groups) - kept0 ))"
}
# The cancelled queue's accounting records (two per job) reach droverdbd
# over the next seconds: let it catch up first, so that the drains below
# do not share the machine with that backlog.
dbd_pid() { pgrep -f "droverdbd .*$DIR/" | head -n1; }
# (A cluster without droverdbd: the controller's alone.)
busy_ticks() {
  for p in $(ctld_pid) $(dbd_pid); do cat "/proc/$p/stat"; done | awk '{s += $14 + $15} END {print s + 0}'
}
t0=$(now_ns)
for _ in $(seq 600); do
  b0=$(busy_ticks); sleep 0.5
  [ $(( $(busy_ticks) - b0 )) -le 2 ] && break
done
echo "accounting caught up with the cancelled jobs in $(ms "$t0" "$(now_ns)") ms"
drain "first after start"
drain "second"
drain "third, steady state"
echo "nodes not responding or down after the drains: $(scontrol show node | grep -c 'NOT_RESPONDING\|State=DOWN' || true)"
echo "controller RSS at the end: $(rss_mib) MiB"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
