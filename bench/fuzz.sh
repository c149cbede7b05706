#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of outside input (libFuzzer, built
# by the libfuzzer-sys crate on the stable toolchain with SanitizerCoverage
# flags; see docs/reliability.md, "Fuzzing").
#
#   bench/fuzz.sh [TARGET|all] [RUNS]      default: all, 1000000 runs each
#   MERGE=1 bench/fuzz.sh ...              afterwards, minimise the corpus and
#                                          keep a sample (SAMPLE=200) of it in
#                                          fuzz/corpus/TARGET for cargo test
#   JOBS=N  ...                            run N targets at once (default 1)
#
# Prints one line per target: runs, edges covered (cov), features (ft),
# corpus size and the crash found, if any (its input is kept under
# target-fuzz/artifacts/TARGET/). Exits non-zero when a target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(slurm_conf gres_conf cgroup_conf dbd_conf hostlist mem_size time_limit date
  dependency array_expr grpc_request sbatch_script cli_args json_output agent_files
  wal_recovery local_call)
which="${1:-all}"
runs="${2:-1000000}"
jobs="${JOBS:-1}"
if [ "$which" != all ]; then
  if ! printf '%s\n' "${TARGETS[@]}" | grep -qx "$which"; then
    echo "fuzz.sh: unknown target '$which'; targets: ${TARGETS[*]}" >&2
    exit 2
  fi
  TARGETS=("$which")
fi

host=$(rustc -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR="$PWD/target-fuzz"
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-pc-table"
RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
export RUSTFLAGS
cargo build --quiet --release --target "$host" --manifest-path fuzz/Cargo.toml
bin="$CARGO_TARGET_DIR/$host/release/drover-fuzz"

# Whole files get 4 KiB, single values and messages 512 bytes.
max_len() {
  case $1 in
    *_conf | sbatch_script | wal_recovery) echo 4096 ;;
    *) echo 512 ;;
  esac
}

# Linear but long under the instrumentation: a slurm.conf may define a
# million nodes per line, a job selector name four million array tasks.
timeout_s() {
  case $1 in
    slurm_conf | array_expr) echo 120 ;;
    *) echo 30 ;;
  esac
}

fuzz_one() {
  local t=$1 work="target-fuzz/corpus/$1" art="target-fuzz/artifacts/$1/" log="target-fuzz/logs/$1.log"
  mkdir -p "$work" "$art" "$(dirname "$log")" "fuzz/corpus/$t"
  local rc=0
  DROVER_FUZZ_TARGET=$t "$bin" -runs="$runs" -timeout="$(timeout_s "$t")" -rss_limit_mb=2048 -max_len="$(max_len "$t")" \
    -print_final_stats=1 -artifact_prefix="$art" "$work" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  local done execs cov ft corp crash
  done=$(grep -E '^#[0-9]+' "$log" | tail -n1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$done")
  # slow-unit-* files are only the slowest input seen, not a failure.
  crash=$(sed -n 's/.*Test unit written to \(.*\/\(crash\|timeout\|oom\|leak\)-.*\)/\1/p' "$log" | tail -n1)
  printf '%-14s runs=%-9s cov=%-6s ft=%-6s corpus=%-6s %s\n' "$t" "${execs:-?}" "${cov:-?}" \
    "${ft:-?}" "${corp:-?}" "${crash:+CRASH $crash (log: $log)}"
  if [ "${MERGE:-0}" = 1 ] && [ -z "$crash" ]; then
    # Minimise the working corpus, then keep the seeds (seed*) and a sample
    # of SAMPLE inputs (by name: a hash, so a spread) in fuzz/corpus/TARGET,
    # which `cargo test` replays.
    local fresh="target-fuzz/merged/$t"
    rm -rf "$fresh" && mkdir -p "$fresh"
    DROVER_FUZZ_TARGET=$t "$bin" -merge=1 -timeout="$(timeout_s "$t")" -max_len="$(max_len "$t")" \
      "$fresh" "$work" "fuzz/corpus/$t" >>"$log" 2>&1
    find "fuzz/corpus/$t" -type f ! -name 'seed*' -delete
    ls "$fresh" | head -n "${SAMPLE:-200}" | while read -r f; do cp "$fresh/$f" "fuzz/corpus/$t/"; done
  fi
  [ "$rc" = 0 ]
}

failed=0
running=0
for t in "${TARGETS[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
