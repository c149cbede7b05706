#!/usr/bin/env bash
# Accounting-database outage: droverdbd stores into a PostgreSQL server of
# this script's own (initdb into a temporary directory, its own port; the
# machine's shared server is never touched), which is stopped
# (`pg_ctl stop -m immediate`) for OUTAGE seconds. Meanwhile N jobs are
# submitted and all finish. Then the server is started again and the script
# checks that every job has exactly one accounting record, COMPLETED, in
# the database itself (psql) and through sacct.
#
#   bench/db_outage.sh                     # N=1000 OUTAGE=1800, debug build
#   N=200 OUTAGE=60 bench/db_outage.sh     # a short run
#   BIN=target/release bench/db_outage.sh
#
# Needs root (PostgreSQL runs as the postgres user, through setpriv).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000}
OUTAGE=${OUTAGE:-1800}
if [ -z "${BIN:-}" ]; then
  cargo build -q -p drover-cli -p drover-ctld -p drover-nodeagent -p drover-dbd
  BIN=$PWD/target/debug
fi
BIN=$(cd "$BIN" && pwd)
PG=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
[ -x "$PG/initdb" ] || { echo "db_outage: no PostgreSQL server binaries under /usr/lib/postgresql" >&2; exit 1; }
PGUSER_OS=${PGUSER_OS:-postgres}
DIR=$(mktemp -d /tmp/drover-dboutage.XXXXXX)
chmod 755 "$DIR"
mkdir -p "$DIR/runs" "$DIR/pids"
PGDATA=$DIR/pgdata
PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg() { setpriv --reuid "$PGUSER_OS" --regid "$(id -g "$PGUSER_OS")" --init-groups "$@"; }
pg_start() { as_pg "$PG/pg_ctl" -D "$PGDATA" -l "$DIR/pgsock/pg.log" -w -t 120 -o "-p $PGPORT -k $DIR/pgsock -c listen_addresses=127.0.0.1" start > /dev/null; }
pg_stop() { as_pg "$PG/pg_ctl" -D "$PGDATA" -m immediate -w stop > /dev/null; }
psql_q() { as_pg "$PG/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d drover -At -c "$1"; }
cleanup() {
  for d in ctld agent dbd; do
    [ -f "$DIR/pids/$d" ] && kill "$(cat "$DIR/pids/$d")" 2>/dev/null || true
  done
  as_pg "$PG/pg_ctl" -D "$PGDATA" -m immediate stop > /dev/null 2>&1 || true
  [ -n "${KEEP:-}" ] || rm -rf "$DIR"
}
trap cleanup EXIT
now() { date +%s; }

mkdir -p "$DIR/pgsock"
chown "$PGUSER_OS" "$DIR/pgsock"
mkdir -m 700 "$PGDATA"
chown "$PGUSER_OS" "$PGDATA"
as_pg "$PG/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 > "$DIR/initdb.log"
pg_start
as_pg "$PG/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres drover

# The configuration drover up writes, with accounting on our PostgreSQL,
# then the daemons by hand (as bench/chaos.sh does).
"$BIN/drover" up --dir "$DIR" --nodes 4 --cpus-per-node 4 --mem-per-node 4000 > "$DIR/up.out" 2>&1 &
UP=$!
for _ in $(seq 1200); do grep -q '^export' "$DIR/up.out" 2>/dev/null && break; sleep 0.05; done
eval "$(grep '^export' "$DIR/up.out")"
kill -TERM "$UP"; wait "$UP" || true
sed -i '/^StorageType=/d' "$DIR/droverdbd.conf"
echo "StorageURL=postgres://postgres@127.0.0.1:$PGPORT/drover" >> "$DIR/droverdbd.conf"
. bench/daemons.sh
start dbd; start ctld; start agent
for _ in $(seq 600); do scontrol ping >/dev/null 2>&1 && sinfo -h -o %T | grep -q idle && break; sleep 0.1; done
# One job before the outage: the path works end to end.
first=$(sbatch --parsable -o /dev/null --wrap true)
for _ in $(seq 600); do
  [ "$(psql_q "select count(*) from jobs" 2>/dev/null || echo 0)" -ge 1 ] 2>/dev/null && break
  sleep 0.2
done

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD)"
echo "stopping PostgreSQL (port $PGPORT) for ${OUTAGE}s; submitting $N jobs"
pg_stop
down_at=$(now)
: > "$DIR/acked"
refused=0
for _ in $(seq "$N"); do
  if id=$(sbatch --parsable -o /dev/null \
      --wrap "echo run >> $DIR/runs/\$SLURM_JOB_ID; sleep 0.\$((RANDOM % 3))" 2>/dev/null); then
    echo "${id%%;*}" >> "$DIR/acked"
  else
    refused=$((refused + 1))
  fi
done
acked=$(wc -l < "$DIR/acked")
for _ in $(seq 36000); do
  [ -z "$(squeue -h -t PD,R,CG,S -o %i 2>/dev/null | head -n1)" ] && break
  sleep 0.1
done
finished_at=$(now)
still=$(squeue -h -o %i 2>/dev/null | wc -l)
echo "$acked jobs acknowledged ($refused refused), all ended $((finished_at - down_at)) s into the outage ($still still queued)"
remaining=$((OUTAGE - (finished_at - down_at)))
if [ "$remaining" -gt 0 ]; then sleep "$remaining"; fi
# What the controller holds for the database meanwhile.
outbox=$(du -sk "$DIR/state/acct" 2>/dev/null | cut -f1 || echo '?')
errors=$(grep -ci 'error\|fail' "$DIR/log/droverdbd.log" || true)
echo "outage lasted $(( $(now) - down_at )) s; controller outbox ${outbox} KiB; droverdbd log lines with error/fail: $errors"
pg_start
up_at=$(now)

sort -n "$DIR/acked" > "$DIR/acked.sorted"
want=$((acked + 1))
for _ in $(seq 3000); do
  have=$(psql_q "select count(distinct job_id) from jobs" 2>/dev/null || echo 0)
  [ "$have" -ge "$want" ] 2>/dev/null && break
  sleep 0.2
done
echo "all records stored $(( $(now) - up_at )) s after PostgreSQL came back"
psql_q "select job_id, count(*) from jobs group by job_id" | tr '|' ' ' > "$DIR/db"
dup=$(awk '$2 > 1' "$DIR/db" | wc -l)
missing_db=$(awk 'NR==FNR {have[$1]=1; next} !($1 in have)' "$DIR/db" "$DIR/acked.sorted" | wc -l)
sacct -X -n -P -a -S 2000-01-01 -o JobID,State > "$DIR/sacct"
completed=$(awk -F'|' 'NR==FNR {want[$1]=1; next} ($1 in want) && $2=="COMPLETED" {print $1}' \
  "$DIR/acked.sorted" "$DIR/sacct" | sort -u | wc -l)
dup_sacct=$(awk -F'|' '{c[$1]++} END {n=0; for (k in c) if (c[k] > 1) n++; print n}' "$DIR/sacct")
ran=0; twice=0
while read -r id; do
  n=$( [ -f "$DIR/runs/$id" ] && wc -l < "$DIR/runs/$id" || echo 0)
  [ "$n" -ge 1 ] && ran=$((ran + 1))
  [ "$n" -gt 1 ] && twice=$((twice + 1))
done < "$DIR/acked.sorted"
echo "db_outage: $acked jobs finished during a ${OUTAGE} s PostgreSQL outage (first job $first before it)"
echo "jobs: ran $ran, ran twice $twice"
echo "database: $((acked - missing_db)) of $acked have a record, $missing_db missing, $dup with more than one"
echo "sacct: $completed of $acked COMPLETED, $dup_sacct job ids listed more than once"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$missing_db" -eq 0 ] && [ "$dup" -eq 0 ] && [ "$completed" -eq "$acked" ] && [ "$dup_sacct" -eq 0 ] && [ "$twice" -eq 0 ]
