#!/usr/bin/env bash
# Many connections at once: CONNS (10,000) TCP connections held open to the
# controller from many source addresses (127.0.1.x, 400 each: below the
# per-address limit, so many hosts' worth), first as idle HTTP/2 clients,
# then as slowloris clients (the HTTP/2 preface one byte every 5 s, never
# finished). Meanwhile, every 2 s: another user's squeue is timed, the
# agents' heartbeat ages are read from /metrics (droverrestd), sinfo is
# checked for NOT_RESPONDING nodes (`*`), and the controller's open file
# descriptors are counted. SlurmdTimeout=30 (heartbeats every 10 s).
# Needs root (squeue as uid 1 through setpriv).
#
#   bench/connections.sh                   # CONNS=10000 HOLD=60, debug build
#   BIN=target/release CONNS=2000 HOLD=30 bench/connections.sh
#   CTLD_NOFILE=4096 bench/connections.sh  # the cluster under a lower open files limit
set -euo pipefail
cd "$(dirname "$0")/.."
CONNS=${CONNS:-10000}
HOLD=${HOLD:-60}
if [ -z "${BIN:-}" ]; then
  cargo build -q -p drover-cli -p drover-ctld -p drover-nodeagent -p drover-dbd -p drover-restd
  BIN=$PWD/target/debug
fi
BIN=$(cd "$BIN" && pwd)
DIR=$(mktemp -d /tmp/drover-conns.XXXXXX)
chmod 755 "$DIR"
UP=
stop_up() { if [ -n "$UP" ]; then kill -INT "$UP" 2>/dev/null || true; wait "$UP" 2>/dev/null || true; UP=; fi; }
trap 'stop_up; [ -n "${KEEP:-}" ] || rm -rf "$DIR"' EXIT
start_up() {
  rm -f "$DIR/up.out"
  if [ -n "${CTLD_NOFILE:-}" ]; then
    (ulimit -n "$CTLD_NOFILE"; exec "$BIN/drover" up --dir "$DIR" --nodes 4) > "$DIR/up.out" 2>&1 &
  else
    "$BIN/drover" up --dir "$DIR" --nodes 4 > "$DIR/up.out" 2>&1 &
  fi
  UP=$!
  for _ in $(seq 6000); do grep -q '^export' "$DIR/up.out" 2>/dev/null && return; sleep 0.05; done
  echo "drover up did not come up:"; cat "$DIR/up.out"; exit 1
}
start_up
stop_up
echo "SlurmdTimeout=30" >> "$DIR/drover.conf"
start_up
eval "$(grep '^export' "$DIR/up.out")"
PORT=$(sed -n 's/^SlurmctldPort=//p' "$DIR/drover.conf" | tail -n1)
CTLD=$(pgrep -f "droverctld.*$DIR" | head -n1)
for _ in $(seq 300); do sinfo -h -o %t | grep -q idle && break; sleep 0.1; done
[ -n "${SLURM_RESTD_URL:-}" ] || { echo "no droverrestd (build drover-restd)"; exit 1; }

now_ns() { date +%s%N; }
# One sample: squeue ms as uid 1, max heartbeat age, nodes not responding, controller fds.
sample() {
  local t0 t1 ms ok=1 age nr fds
  t0=$(now_ns)
  setpriv --reuid 1 --regid 1 --clear-groups "$BIN/drover" squeue > /dev/null 2>&1 || ok=0
  t1=$(now_ns)
  ms=$(( (t1 - t0) / 1000000 ))
  age=$(curl -s -m 20 "$SLURM_RESTD_URL/metrics" | awk '/^drover_node_heartbeat_age_seconds/ {if ($2 > m) m = $2} END {print m + 0}')
  nr=$(sinfo -h -N -o %t 2>/dev/null | grep -c '\*' || true)
  fds=$(ls "/proc/$CTLD/fd" 2>/dev/null | wc -l)
  echo "$ms $ok $age $nr $fds"
}
# Sample every 2 s for $1 seconds; then a summary line named $2.
watch_for() {
  local until=$(( $(date +%s) + $1 )) out="$DIR/samples.$2"
  : > "$out"
  while [ "$(date +%s)" -lt "$until" ]; do sample >> "$out"; sleep 2; done
  sort -n "$out" | awk -v name="$2" '
    {ms[NR]=$1; if (!$2) fail++; if ($3 > age) age=$3; nr+=$4; if ($5 > fds) fds=$5}
    END {printf "%s: %d samples; squeue (uid 1) median %d ms, max %d ms, failed %d; max heartbeat age %d s; NOT_RESPONDING sightings %d; controller fds up to %d\n",
      name, NR, ms[int((NR+1)/2)], ms[NR], fail, age, nr, fds}'
}
flood() {
  local mode=$1
  python3 bench/conn_flood.py "$PORT" "$CONNS" "$HOLD" "$mode" > "$DIR/flood.$mode" &
  local f=$!
  watch_for "$((HOLD + 10))" "$mode flood ($CONNS connections, ${HOLD}s)"
  wait "$f" || true
  echo "$mode client: $(cat "$DIR/flood.$mode")"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD); controller pid $CTLD, RLIMIT_NOFILE $(awk '/Max open files/ {print $4"/"$5}' /proc/$CTLD/limits)"
watch_for 10 "no flood"
flood h2
sleep 5
flood slowloris
sleep 5
watch_for 10 "after"
grep -E 'accept:|refused connection|connections are open|open files' "$DIR/log/droverctld.log" \
  | sed 's/^[^ ]* *[A-Z]* //; s/from 127\.0\.[0-9.:]*/from ADDR/' | sort | uniq -c | sort -rn | head -n 6 || true
echo "jobs still start: $(sbatch --parsable -o /dev/null --wrap true) submitted"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
