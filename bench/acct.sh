#!/usr/bin/env bash
# sacct over a big accounting database, on SQLite and PostgreSQL (release
# build). Fills N_JOBS finished jobs through droverdbd's API, then times the
# queries. docs/benchmarks.md records the latest run.
#
#   bench/acct.sh                      # 100,000 jobs, sqlite and postgres
#   N_JOBS=20000 BACKENDS=sqlite bench/acct.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N_JOBS=${N_JOBS:-100000}
BACKENDS=${BACKENDS:-"sqlite postgres"}
PG_URL=${DROVER_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
cargo build --release -q
BIN=$PWD/target/release

now_ns() { date +%s%N; }
ms() { echo "scale=1; ($2 - $1) / 1000000" | bc; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
time_cmd() { # median of 7 runs, in ms
  for _ in $(seq 7); do t0=$(now_ns); "$@" > /dev/null; t1=$(now_ns); ms "$t0" "$t1"; done | median
}

for backend in $BACKENDS; do
  DIR=$(mktemp -d /tmp/drover-acct-bench.XXXXXX)
  mkdir -p "$DIR/bin" "$DIR/state" "$DIR/spool" "$DIR/dbd"
  for c in sacct scontrol drover; do ln -s "$BIN/drover" "$DIR/bin/$c"; done
  "$BIN/drover" keygen "$DIR/drover.key" > /dev/null
  CTLD_PORT=$(port); DBD_PORT=$(port); AGENT_PORT=$(port)
  case $backend in
    sqlite) URL="sqlite://$DIR/dbd/acct.db?mode=rwc" ;;
    postgres) URL="${PG_URL%/*}/drover_bench_$$" ;;
  esac
  cat > "$DIR/drover.conf" <<CONF
ClusterName=bench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$AGENT_PORT
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
AuthInfo=socket=$DIR/auth.sock
AuthKeyFile=$DIR/drover.key
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
NodeName=node[1-64] NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000
PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP
CONF
  cat > "$DIR/droverdbd.conf" <<CONF
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
AuthKeyFile=$DIR/drover.key
StorageURL=$URL
CONF
  RUST_LOG=${DBD_LOG:-info} "$BIN/droverdbd" -f "$DIR/droverdbd.conf" 2> "$DIR/dbd.log" &
  DBD=$!
  "$BIN/droverctld" -f "$DIR/drover.conf" 2> "$DIR/ctld.log" &
  CTLD=$!
  trap 'kill $DBD $CTLD 2>/dev/null || true' EXIT
  export DROVER_CONF=$DIR/drover.conf PATH=$DIR/bin:$PATH
  for _ in $(seq 200); do scontrol ping > /dev/null 2>&1 && break; sleep 0.05; done
  for _ in $(seq 600); do (echo > /dev/tcp/127.0.0.1/$DBD_PORT) 2>/dev/null && break; sleep 0.1; done
  echo "== $backend: $N_JOBS jobs"
  drover bench acct-fill --jobs "$N_JOBS"
  n=$(sacct -X -n -P -o JobID | wc -l)
  # CPU time (daemon + command) of one query: what the wall time would be on
  # an idle machine, whatever the load of this one.
  ticks() { awk '{print $14 + $15}' "/proc/$DBD/stat"; }
  t0=$(ticks); c0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  for _ in 1 2 3 4 5; do sacct -X -n -P -o JobID,State,Elapsed > /dev/null; done
  t1=$(ticks); c1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  hz=$(getconf CLK_TCK)
  echo "CPU per sacct -X -n -P -o JobID,State,Elapsed: daemon $(( (t1 - t0) * 1000 / hz / 5 )) ms, sacct $(( (c1 - c0) * 1000 / hz / 5 )) ms (load average $(cut -d' ' -f1 /proc/loadavg))"
  echo "sacct -X -n -P -o JobID,State,Elapsed ($n jobs): median $(time_cmd sacct -X -n -P -o JobID,State,Elapsed) ms"
  echo "sacct (default format, with steps): median $(time_cmd sacct -n) ms"
  echo "sacct -j ONE: median $(time_cmd sacct -j 1050000 -n -P) ms"
  echo "sacct -u user7 (1/50 of the jobs): median $(time_cmd sacct -X -n -P -u 2007 -o JobID,State) ms"
  S=$(date -d '@'$(( $(date +%s) - 3*3600 + 100 )) +%Y-%m-%dT%H:%M:%S)
  E=$(date -d '@'$(( $(date +%s) - 3*3600 + 200 )) +%Y-%m-%dT%H:%M:%S)
  echo "sacct -S/-E 100 s window: median $(time_cmd sacct -X -n -P -S "$S" -E "$E" -o JobID) ms"
  [ -n "${DBD_LOG:-}" ] && grep -E "sacct query: [0-9]{5,} jobs" "$DIR/dbd.log" | tail -16
  kill $CTLD $DBD; wait $CTLD $DBD 2>/dev/null || true
  trap - EXIT
  "$BIN/droverdbd" -f "$DIR/droverdbd.conf" --drop-database || true
  rm -rf "$DIR"
done
