#!/usr/bin/env bash
# Cloud nodes on one machine (`drover up --cloud-nodes N`): how long a job
# given powered-down nodes stays CONFIGURING (ResumeProgram starts an agent
# per node, each registers, the job runs), against the same job once the
# nodes are up. docs/benchmarks.md records the latest run.
#
#   bench/cloud.sh                    # release build, N=4
#   BIN=target/debug N=8 bench/cloud.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-4}
if [ -z "${BIN:-}" ]; then cargo build --release -q; BIN=$PWD/target/release; fi
BIN=$(cd "$BIN" && pwd)
DIR=$(mktemp -d /tmp/drover-cloud-bench.XXXXXX)
"$BIN/drover" up --dir "$DIR/c" --nodes 1 --cpus-per-node 2 --mem-per-node 1000 \
  --cloud-nodes "$N" > "$DIR/up.out" 2> "$DIR/up.err" &
UP=$!
trap 'kill $UP 2>/dev/null; wait $UP 2>/dev/null || true; rm -rf "$DIR"' EXIT
until grep -q '^export ' "$DIR/up.out" 2>/dev/null; do sleep 0.1; done
export SLURM_CONF=$DIR/c/slurm.conf PATH=$DIR/c/bin:$PATH
printf '#!/bin/sh\ntrue\n' > "$DIR/job.sh"
now_ms() { date +%s%3N; }
state() { scontrol show job -o "$1" | tr ' ' '\n' | sed -n 's/^JobState=//p'; }

# One job on all N cloud nodes: submit -> RUNNING (or done) -> COMPLETED.
run() {
  local t0 t1 t2 id st
  t0=$(now_ms)
  id=$(sbatch --parsable -p cloud -N "$N" -o /dev/null "$DIR/job.sh")
  while :; do
    st=$(state "$id")
    case $st in PENDING|CONFIGURING) sleep 0.01 ;; *) break ;; esac
  done
  t1=$(now_ms)
  while [ "$(state "$id")" != COMPLETED ]; do sleep 0.01; done
  t2=$(now_ms)
  echo "$1: submit->running $((t1 - t0)) ms, submit->completed $((t2 - t0)) ms"
}
echo "cloud nodes: $N  ($(sinfo -h -N -p cloud -o %t | sort | uniq -c | xargs))"
run "powered down"
echo "after: $(sinfo -h -N -p cloud -o %t | sort | uniq -c | xargs)"
run "already up  "
echo "load: $(cat /proc/loadavg)"
