#!/usr/bin/env bash
# The `sbatch` shell loop (issue 19), A/B: for each build a fresh `drover up`
# cluster (accounting on: droverdbd on SQLite), N_LOOP held
# `sbatch -H -o /dev/null --wrap true` from a shell loop, with the CPU time
# the controller, droverdbd and the loop's own processes (the commands)
# spent over it; then N_VERSION `drover version` runs (the cost of starting
# the binary at all) and as many `/bin/true` (of starting any process).
# ROUNDS rounds, each running A and B one after the other, alternating
# which goes first. Release builds. TCP_TOO=1 adds a run of B with the
# controller's local socket removed (`B-tcp`: the commands fall back to TCP
# and the auth socket, as before it existed), so the same build shows what
# the local socket alone gives.
#
#   A=/work/base-release B=target/release N_LOOP=1000 ROUNDS=2 bench/sbatchloop.sh
#   N_NODES=1000 A=... bench/sbatchloop.sh   # a 1,000-node slurm.conf (every command parses it)
#
# One line per run:
#   build=B loop=1000 jobs/s=812 ms/job=1.23 ctld_cpu_ms/job=0.21 dbd_cpu_ms/job=0.02 client_cpu_ms/job=0.90 version_ms=0.71 true_ms=0.52
set -euo pipefail
cd "$(dirname "$0")/.."
A=${A:?A=dir of the baseline build (drover, droverctld, droverd, droverdbd)}
B=${B:-$PWD/target/release}
N_LOOP=${N_LOOP:-1000}
N_VERSION=${N_VERSION:-300}
ROUNDS=${ROUNDS:-2}
N_NODES=${N_NODES:-4}

. bench/fresh_copy.sh
# Each build timed from a fresh copy (bench/fresh_copy.sh).
COPIES=$(mktemp -d /tmp/drover-sbl-bin.XXXXXX)
trap 'rm -rf "$COPIES"' EXIT
A_COPY=$COPIES/A B_COPY=$COPIES/B
fresh_copy "$A" "$A_COPY"
fresh_copy "$B" "$B_COPY"

now_ns() { date +%s%N; }
# utime+stime of a process, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)

run_one() {
  local label=$1 bin=$2 tcp=${3:-} dir up ctld dbd
  dir=$(mktemp -d /tmp/drover-sbl.XXXXXX)
  "$bin/drover" up --dir "$dir" --nodes "$N_NODES" --cpus-per-node 8 --mem-per-node 8000 > "$dir/up.out" 2>&1 &
  up=$!
  for _ in $(seq 1200); do grep -q '^export' "$dir/up.out" 2>/dev/null && break; sleep 0.05; done
  if ! grep -q '^export' "$dir/up.out"; then
    echo "build=$label: drover up did not start:" >&2; cat "$dir/up.out" >&2
    kill $up 2>/dev/null || true; wait $up 2>/dev/null || true; rm -rf "$dir"; return 1
  fi
  if [ -n "$tcp" ]; then rm -f "$dir/run/ctld.sock"; fi
  (
    eval "$(grep '^export' "$dir/up.out")"
    ctld=$(pgrep -f "droverctld -D -f $dir/" | head -n1 || true)
    dbd=$(pgrep -f "droverdbd .*$dir/" | head -n1 || true)
    sbatch -H -o /dev/null --wrap true > /dev/null   # warm the page cache
    c0=$(ticks "$ctld"); d0=$(ticks "${dbd:-0}")
    t0=$(now_ns)
    client=$(
      for _ in $(seq "$N_LOOP"); do sbatch -H -o /dev/null --wrap true > /dev/null; done
      # cutime + cstime: the commands this subshell waited for.
      awk '{print $16 + $17}' "/proc/$BASHPID/stat"
    )
    t1=$(now_ns)
    c1=$(ticks "$ctld"); d1=$(ticks "${dbd:-0}")
    v0=$(now_ns)
    for _ in $(seq "$N_VERSION"); do "$bin/drover" version > /dev/null; done
    v1=$(now_ns)
    for _ in $(seq "$N_VERSION"); do /bin/true; done
    v2=$(now_ns)
    per_job() { echo "scale=3; $1 * 1000 / $hz / $N_LOOP" | bc; }
    echo "build=$label nodes=$N_NODES loop=$N_LOOP jobs/s=$(echo "$N_LOOP * 1000000000 / ($t1 - $t0)" | bc)" \
      "ms/job=$(echo "scale=3; ($t1 - $t0) / 1000000 / $N_LOOP" | bc)" \
      "ctld_cpu_ms/job=$(per_job $((c1 - c0)))" \
      "dbd_cpu_ms/job=$(per_job $((d1 - d0)))" \
      "client_cpu_ms/job=$(per_job "$client")" \
      "version_ms=$(echo "scale=3; ($v1 - $v0) / 1000000 / $N_VERSION" | bc)" \
      "true_ms=$(echo "scale=3; ($v2 - $v1) / 1000000 / $N_VERSION" | bc)" \
      "load=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)"
  )
  kill $up 2>/dev/null || true
  wait $up 2>/dev/null || true
  rm -rf "$dir"
}

echo "# A=$A B=$B commit $(git rev-parse --short HEAD) $(date -u +%FT%TZ)"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then run_one A "$A_COPY"; run_one B "$B_COPY"; else run_one B "$B_COPY"; run_one A "$A_COPY"; fi
  if [ -n "${TCP_TOO:-}" ]; then run_one B-tcp "$B_COPY" tcp; fi
done
