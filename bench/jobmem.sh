#!/usr/bin/env bash
# Controller memory per pending job: `drover up` with 4 nodes, N held jobs
# through the API, VmRSS idle, with them, and after 10 squeue.
#   bench/jobmem.sh BIN_DIR [N]     (docs/benchmarks.md, "Shared job specs")
set -u
BIN=$1; N=${2:-5000}
DIR=$(mktemp -d /tmp/s100k-mem.XXXXXX)
"$BIN/drover" up --dir "$DIR" --nodes 4 --cpus-per-node 8 --mem-per-node 8000 > "$DIR/up.out" 2>&1 &
UP=$!
for _ in $(seq 6000); do grep -q '^export' "$DIR/up.out" 2>/dev/null && break; sleep 0.05; done
eval "$(grep '^export' "$DIR/up.out")"
pid=$(pgrep -f "droverctld -D -f $DIR/" | head -n1)
rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' /proc/$pid/status; }
echo "idle RSS $(rss) MiB"
"$BIN/drover" bench submit --count "$N" --concurrency 256 --hold
echo "RSS with $N pending: $(rss) MiB"
for _ in $(seq 10); do squeue > /dev/null; done
echo "RSS after 10 squeue: $(rss) MiB"
kill -INT $UP; wait $UP 2>/dev/null; rm -rf "$DIR"
