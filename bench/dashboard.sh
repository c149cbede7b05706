#!/usr/bin/env bash
# The web dashboard with many jobs, timed in headless Chromium: a
# controller and droverrestd on loopback (no nodes: the jobs are submitted
# held), N_JOBS jobs, then the page's first render of the jobs table and one
# live update (a job submitted from the CLI appearing), both measured in
# the browser with performance.now() (see window.drover.timings in
# restd/web/app.js). docs/benchmarks.md records the latest run.
#
#   bench/dashboard.sh                       # 10,000 jobs, release build
#   PROFILE=debug N_JOBS=1000 bench/dashboard.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-release}
N_JOBS=${N_JOBS:-10000}
command -v chromedriver > /dev/null && command -v chromium > /dev/null || {
  echo "SKIPPED (dashboard bench): chromium and chromedriver are needed (apt-get install chromium chromium-driver)"; exit 0; }
if [ "$PROFILE" = release ]; then
  cargo build --release -q -p drover-ctld -p drover-cli -p drover-restd
else
  cargo build -q -p drover-ctld -p drover-cli -p drover-restd
fi
BIN=$PWD/target/$PROFILE
DIR=$(mktemp -d /tmp/drover-dash-bench.XXXXXX)
mkdir -p "$DIR/bin" "$DIR/state" "$DIR/spool"
for c in scontrol squeue sbatch drover; do ln -s "$BIN/drover" "$DIR/bin/$c"; done
"$BIN/drover" keygen "$DIR/drover.key" > /dev/null
"$BIN/drover" keygen "$DIR/jwt.key" > /dev/null
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CTLD_PORT=$(port); REST_PORT=$(port); DRIVER_PORT=$(port)
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
chromedriver --port="$DRIVER_PORT" > "$DIR/chromedriver.log" 2>&1 &
DRIVER=$!
trap 'kill $DRIVER $REST $CTLD 2>/dev/null || true; wait 2>/dev/null; rm -rf "$DIR"' EXIT
export DROVER_CONF=$DIR/drover.conf PATH=$DIR/bin:$PATH
for _ in $(seq 200); do scontrol ping > /dev/null 2>&1 && break; sleep 0.05; done
for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$REST_PORT) 2>/dev/null && break; sleep 0.05; done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, commit $(git rev-parse --short HEAD), $PROFILE build"
drover bench submit --count "$N_JOBS" --hold --quiet > /dev/null
echo "squeue sees $(squeue -h -t all -o %i | wc -l) jobs"
SLURM_JWT=$(scontrol token lifespan=3600 | sed 's/^SLURM_JWT=//')
export SLURM_JWT REST_ADDR=127.0.0.1:$REST_PORT DRIVER_ADDR=127.0.0.1:$DRIVER_PORT
python3 bench/dashboard_browser.py
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
