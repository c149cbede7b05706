# Sourced by the drain benchmarks: `wait_drained` returns once no job is
# pending, running or completing.
#
# It polls `squeue`, and each poll is a few processes (a subshell, squeue,
# wc, sleep) taking CPU from the drain being measured: on 2 cores, polling
# every 10 ms took ~10 % of the machine (`perf record -a`, 2026-12-07). So
# the poll waits a quarter of the time the remaining jobs would take at
# 1,000 jobs/s (between 5 and 100 ms): few polls while many jobs remain, a
# fine one near the end, where the measured time is decided.
wait_drained() {
  local n ms
  while :; do
    n=$(squeue -h -t PD,R,CG -o %i | wc -l)
    [ "$n" -eq 0 ] && return
    ms=$((n / 4))
    ((ms < 5)) && ms=5
    ((ms > 100)) && ms=100
    sleep "0.$(printf %03d "$ms")"
  done
}
