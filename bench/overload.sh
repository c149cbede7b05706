#!/usr/bin/env bash
# One user floods the controller with squeue while another user's squeue is
# timed, without and with Slurm's per-user rate limit
# (SlurmctldParameters=rl_enable, Slurm's defaults: 30 tokens, 2 a second).
# Needs root (the two users are uid 65534 and uid 1, through setpriv). User
# B runs N=12 squeue (2 calls each): within the 30-token burst.
#
#   bench/overload.sh                  # debug build in target/debug
#   BIN=/path/to/bins FLOODERS=16 N=30 bench/overload.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FLOODERS=${FLOODERS:-8}
N=${N:-12}
if [ -z "${BIN:-}" ]; then
  cargo build -q -p drover-cli -p drover-ctld -p drover-nodeagent -p drover-dbd
  BIN=$PWD/target/debug
fi
DIR=$(mktemp -d /tmp/drover-overload.XXXXXX)
chmod 755 "$DIR"
UP=
FLOOD=()
stop_flood() { for p in "${FLOOD[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; for p in "${FLOOD[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done; FLOOD=(); }
stop_up() { if [ -n "$UP" ]; then kill -INT "$UP" 2>/dev/null || true; wait "$UP" 2>/dev/null || true; UP=; fi; }
trap 'stop_flood; stop_up; rm -rf "$DIR"' EXIT
start_up() {
  rm -f "$DIR/up.out"
  "$BIN/drover" up --dir "$DIR" --nodes 4 > "$DIR/up.out" 2>&1 &
  UP=$!
  for _ in $(seq 6000); do grep -q '^export' "$DIR/up.out" 2>/dev/null && return; sleep 0.05; done
  echo "drover up did not come up:"; cat "$DIR/up.out"; exit 1
}
now_ns() { date +%s%N; }
as() { local u=$1; shift; setpriv --reuid "$u" --regid "$u" --clear-groups "$@"; }
# One flooding loop: squeue as uid 65534, as fast as it goes.
flooder() { while :; do as 65534 "$BIN/drover" squeue > /dev/null 2>&1 || true; done; }
# N squeue as uid 1, one after another: median and max wall time (ms).
measure() {
  for _ in $(seq "$N"); do
    t0=$(now_ns); as 1 "$BIN/drover" squeue > /dev/null; t1=$(now_ns)
    echo "scale=1; ($t1 - $t0) / 1000000" | bc
  done | sort -n | awk '{a[NR]=$1} END {printf "median %s ms, max %s ms", a[int((NR+1)/2)], a[NR]}'
}
run_case() {
  local name=$1
  start_up
  eval "$(grep '^export' "$DIR/up.out")"
  echo "$name: user B alone: $(measure)"
  for _ in $(seq "$FLOODERS"); do flooder & FLOOD+=($!); done
  sleep 2
  echo "$name: user B while user A floods ($FLOODERS loops): $(measure)"
  stop_flood
  local refused
  refused=$(cat "$DIR"/log/droverctld.log 2>/dev/null | grep -c 'RPC rate limit exceeded by uid 65534' || true)
  echo "$name: refusals of user A logged: $refused"
  stop_up
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD)"
run_case "rl off"
CONF=$(ls "$DIR"/*.conf | grep -v -e gres -e cgroup | head -n1)
echo "SlurmctldParameters=rl_enable" >> "$CONF"
run_case "rl_enable"
cat "$DIR"/log/droverctld.log | grep -q 'RPC rate limiting enabled' || { echo "rl_enable was not read (drover up rewrote $CONF?)"; exit 1; }
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
