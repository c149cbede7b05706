#!/usr/bin/env bash
# Chaos under load: N jobs flow through an emulated 4-node cluster with
# accounting (SQLite) while the controller, the node agent and the
# accounting daemon are each killed with SIGKILL KILLS times at random
# moments and restarted. Then it checks what Drover promises:
#   - every job sbatch acknowledged exists and ran exactly once;
#   - every one of them has exactly one accounting record, COMPLETED;
#   - no process of a finished job is left.
# Prints the figures; docs/reliability.md records the latest run.
#
#   bench/chaos.sh                       # N=1000 KILLS=5, debug build
#   N=2000 KILLS=10 PROFILE=release bench/chaos.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000}
KILLS=${KILLS:-5}
PROFILE=${PROFILE:-debug}
if [ "$PROFILE" = release ]; then cargo build --release -q; else cargo build -q; fi
BIN=$PWD/target/$PROFILE
DIR=$(mktemp -d /tmp/drover-chaos.XXXXXX)
mkdir -p "$DIR/runs" "$DIR/pids"
cleanup() {
  for d in ctld agent dbd; do
    [ -f "$DIR/pids/$d" ] && kill "$(cat "$DIR/pids/$d")" 2>/dev/null || true
  done
  pkill -9 -f "$DIR" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$DIR"
}
trap cleanup EXIT

# The configuration drover up writes, then the daemons by hand (drover up
# stops the whole cluster when one daemon dies; here they die on purpose).
"$BIN/drover" up --dir "$DIR" --nodes 4 --cpus-per-node 4 --mem-per-node 4000 > "$DIR/up.out" 2>&1 &
UP=$!
for _ in $(seq 1200); do grep -q '^export' "$DIR/up.out" 2>/dev/null && break; sleep 0.05; done
eval "$(grep '^export' "$DIR/up.out")"
kill -TERM "$UP"; wait "$UP" || true

. bench/daemons.sh
start dbd; start ctld; start agent
for _ in $(seq 600); do scontrol ping >/dev/null 2>&1 && break; sleep 0.05; done

# Submitter: N acknowledged jobs; each appends one line to its own file.
submit() {
  local acked=0 refused=0
  while [ "$acked" -lt "$N" ]; do
    if id=$(sbatch --parsable -o /dev/null \
        --wrap "echo run >> $DIR/runs/\$SLURM_JOB_ID; sleep 0.\$((RANDOM % 3))" 2>/dev/null); then
      echo "${id%%;*}" >> "$DIR/acked"
      acked=$((acked + 1))
    else
      refused=$((refused + 1))
      sleep 0.1
    fi
  done
  echo "$refused" > "$DIR/refused"
}
submit &
SUBMITTER=$!

# Killer: KILLS rounds; each daemon once per round, in random order, at
# random moments, restarted after a random pause.
kills=0
for _ in $(seq "$KILLS"); do
  for d in $(printf 'ctld\nagent\ndbd\n' | shuf); do
    sleep "$(shuf -i 5-30 -n1 | sed 's/\(.\)$/.\1/')"
    kill -9 "$(cat "$DIR/pids/$d")" 2>/dev/null || true
    wait "$(cat "$DIR/pids/$d")" 2>/dev/null || true
    kills=$((kills + 1))
    sleep "$(shuf -i 2-15 -n1 | sed 's/\(.\)$/.\1/')"
    start "$d"
  done
done
wait "$SUBMITTER"

# Everything acknowledged must end.
for _ in $(seq 6000); do
  [ -z "$(squeue -h -t PD,R,CG,S -o %i 2>/dev/null | head -n1)" ] && scontrol ping >/dev/null 2>&1 && break
  sleep 0.1
done

missing=0; twice=0
while read -r id; do
  n=$( [ -f "$DIR/runs/$id" ] && wc -l < "$DIR/runs/$id" || echo 0)
  [ "$n" -eq 0 ] && missing=$((missing + 1))
  [ "$n" -gt 1 ] && twice=$((twice + 1))
done < "$DIR/acked"

# One COMPLETED accounting record per acknowledged job (delivery may lag).
sort -n "$DIR/acked" > "$DIR/acked.sorted"
for _ in $(seq 600); do
  sacct -X -n -P -a -S 2000-01-01 -o JobID,State > "$DIR/sacct" 2>/dev/null || true
  recs=$(awk -F'|' 'NR==FNR {want[$1]=1; next} ($1 in want) && $2=="COMPLETED" {print $1}' \
    "$DIR/acked.sorted" "$DIR/sacct" | sort -u | wc -l)
  [ "$recs" -ge "$N" ] && break
  sleep 0.2
done
dup_recs=$(awk -F'|' '{c[$1]++} END {n=0; for (k in c) if (c[k] > 1) n++; print n}' "$DIR/sacct")
not_completed=$(awk -F'|' 'NR==FNR {want[$1]=1; next} ($1 in want) && $2!="COMPLETED"' \
  "$DIR/acked.sorted" "$DIR/sacct" | wc -l)
left=$(pgrep -f "$DIR/runs" | wc -l || true)

echo "chaos: $N jobs acknowledged ($(cat "$DIR/refused") submissions refused while the controller was down)," \
  "$kills kills (KILLS=$KILLS per daemon: droverctld, droverd, droverdbd)"
echo "jobs: missing $missing, ran twice $twice"
echo "accounting: $recs of $N with a COMPLETED record, $dup_recs with more than one, $not_completed not COMPLETED"
echo "leftover job processes: $left"
[ "$missing" -eq 0 ] && [ "$twice" -eq 0 ] && [ "$recs" -ge "$N" ] && [ "$dup_recs" -eq 0 ] && [ "$left" -eq 0 ]
