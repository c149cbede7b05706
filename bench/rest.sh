#!/usr/bin/env bash
# The REST API under load (release build): a controller and droverrestd on
# loopback (no nodes needed: the jobs are submitted held), N_JOBS
# submissions over HTTP keep-alive connections, then GET /jobs over all of
# them. docs/benchmarks.md records the latest run.
#
#   bench/rest.sh                          # 10,000 jobs, 4 x 16 connections
#   N_JOBS=2000 PROCS=2 THREADS=8 bench/rest.sh
#   PROFILE=debug N_JOBS=500 bench/rest.sh   # a quick check of the script
#   BIN=/work/base-release bench/rest.sh     # another build, not rebuilt
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-release}
if [ -n "${BIN:-}" ]; then
  BIN=$(cd "$BIN" && pwd)   # a build to measure (A/B: BIN=/work/base-release)
elif [ "$PROFILE" = release ]; then
  cargo build --release -q -p drover-ctld -p drover-cli -p drover-restd
  BIN=$PWD/target/release
else
  cargo build -q -p drover-ctld -p drover-cli -p drover-restd
  BIN=$PWD/target/$PROFILE
fi
DIR=$(mktemp -d /tmp/drover-rest-bench.XXXXXX)
mkdir -p "$DIR/bin" "$DIR/state" "$DIR/spool"
for c in scontrol squeue drover; do ln -s "$BIN/drover" "$DIR/bin/$c"; done
"$BIN/drover" keygen "$DIR/drover.key" > /dev/null
"$BIN/drover" keygen "$DIR/jwt.key" > /dev/null
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CTLD_PORT=$(port); REST_PORT=$(port)
cat > "$DIR/drover.conf" <<CONF
ClusterName=bench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLD_PORT
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
AuthInfo=socket=$DIR/auth.sock
AuthKeyFile=$DIR/drover.key
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$DIR/jwt.key
MaxJobCount=200000
NodeName=node[1-64] NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000
PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP
CONF
"$BIN/droverctld" -f "$DIR/drover.conf" 2> "$DIR/ctld.log" &
CTLD=$!
"$BIN/droverrestd" -f "$DIR/drover.conf" "127.0.0.1:$REST_PORT" 2> "$DIR/restd.log" &
REST=$!
trap 'kill $REST $CTLD 2>/dev/null || true; wait 2>/dev/null; rm -rf "$DIR"' EXIT
export DROVER_CONF=$DIR/drover.conf PATH=$DIR/bin:$PATH
for _ in $(seq 200); do scontrol ping > /dev/null 2>&1 && break; sleep 0.05; done
for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$REST_PORT) 2>/dev/null && break; sleep 0.05; done
SLURM_JWT=$(scontrol token lifespan=3600 | sed 's/^SLURM_JWT=//')
export SLURM_JWT REST_ADDR=127.0.0.1:$REST_PORT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, commit $(git rev-parse --short HEAD)"
CTLD_PID=$CTLD REST_PID=$REST python3 bench/rest_load.py
# A second client: curl, time to the last byte (body discarded, not parsed).
if command -v curl > /dev/null; then
  for _ in 1 2 3 4 5 6 7; do
    curl -s -o /dev/null -w '%{time_total}\n' -H "X-SLURM-USER-TOKEN: $SLURM_JWT" "http://$REST_ADDR/slurm/v0.0.40/jobs"
  done | sort -n | awk '{t[NR]=$1*1000} END {printf "curl GET /slurm/v0.0.40/jobs: median %.1f ms (min %.1f) to the last byte\n", t[int((NR+1)/2)], t[1]}'
fi
echo "squeue sees $(squeue -h -t all -o %i | wc -l) jobs"
t0=$(date +%s%N); squeue --json > /dev/null; t1=$(date +%s%N)
echo "squeue --json over the same jobs (for comparison): $(( (t1 - t0) / 1000000 )) ms"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
