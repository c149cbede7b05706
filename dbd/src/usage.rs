//! Usage roll-up: allocated CPU/GPU/memory seconds per association and
//! hour, added when a job run ends; read by sreport and (over gRPC) by the
//! scheduler's fair-share.

use std::collections::BTreeMap;

use drover_proto::acct::{ClusterCapacity, JobRecord, UsageRequest, UsageResponse, UsageRow};
use sqlx::{Any, AssertSqlSafe, Row, Transaction};

use crate::store::Store;

pub const HOUR: i64 = 3600;

/// A count from a TRES text (`cpu=4,mem=8G,gres/gpu=2`): `gres/gpu` sums
/// every typed entry when no untyped one is present; `mem` in MiB.
pub fn tres_count(tres: &str, name: &str) -> u64 {
    let mut plain = None;
    let mut typed = 0u64;
    for part in tres.split(',') {
        let Some((k, v)) = part.split_once('=') else {
            continue;
        };
        let k = k.trim();
        let n = if name == "mem" {
            drover_conf::units::parse_mem_mb(v.trim()).unwrap_or(0)
        } else {
            v.trim().parse::<u64>().unwrap_or(0)
        };
        if k == name {
            plain = Some(n);
        } else if k.starts_with(name) && k[name.len()..].starts_with(':') {
            typed += n;
        }
    }
    plain.unwrap_or(typed)
}

/// Split `[start, end)` into the hours it touches: (hour start, seconds).
pub fn split_hours(start: i64, end: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut t = start;
    while t < end {
        let h = t - t.rem_euclid(HOUR);
        let next = (h + HOUR).min(end);
        out.push((h, next - t));
        t = next;
    }
    out
}

/// Add a finished run's allocation to the hourly table (inside the
/// transaction that stores its final record).
pub async fn add_job(
    store: &Store,
    tx: &mut Transaction<'static, Any>,
    j: &JobRecord,
) -> Result<(), sqlx::Error> {
    let cpus = if j.ncpus > 0 {
        u64::from(j.ncpus)
    } else {
        tres_count(&j.alloc_tres, "cpu")
    } as i64;
    let gpus = tres_count(&j.alloc_tres, "gres/gpu") as i64;
    let mem = tres_count(&j.alloc_tres, "mem") as i64;
    let sel = store.q(
        "SELECT cpu_secs FROM usage_hour WHERE cluster = ? AND account = ? AND user_name = ? \
         AND hour_start = ?",
    );
    let upd = store.q(
        "UPDATE usage_hour SET cpu_secs = cpu_secs + ?, gpu_secs = gpu_secs + ?, \
         mem_mb_secs = mem_mb_secs + ? WHERE cluster = ? AND account = ? AND user_name = ? \
         AND hour_start = ?",
    );
    let ins = store.q(
        "INSERT INTO usage_hour (cluster, account, user_name, hour_start, cpu_secs, gpu_secs, \
         mem_mb_secs) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    for (h, secs) in split_hours(j.start_time, j.end_time) {
        let exists = sqlx::query(AssertSqlSafe(sel.clone()))
            .bind(j.cluster.clone())
            .bind(j.account.clone())
            .bind(j.user.clone())
            .bind(h)
            .fetch_optional(&mut **tx)
            .await?
            .is_some();
        let q = if exists {
            sqlx::query(AssertSqlSafe(upd.clone()))
                .bind(cpus * secs)
                .bind(gpus * secs)
                .bind(mem * secs)
                .bind(j.cluster.clone())
                .bind(j.account.clone())
                .bind(j.user.clone())
                .bind(h)
        } else {
            sqlx::query(AssertSqlSafe(ins.clone()))
                .bind(j.cluster.clone())
                .bind(j.account.clone())
                .bind(j.user.clone())
                .bind(h)
                .bind(cpus * secs)
                .bind(gpus * secs)
                .bind(mem * secs)
        };
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

/// Usage per association in `[start, end)` (whole hours), plus each
/// cluster's capacity over the same window.
pub async fn query(
    store: &Store,
    r: &UsageRequest,
    now: i64,
) -> Result<UsageResponse, sqlx::Error> {
    let mut sql = String::from(
        "SELECT cluster, account, user_name, cpu_secs, gpu_secs, mem_mb_secs FROM usage_hour \
         WHERE hour_start >= ? AND hour_start < ?",
    );
    if !r.cluster.is_empty() {
        sql.push_str(" AND cluster = ?");
    }
    let mut q = sqlx::query(AssertSqlSafe(store.q(&sql)))
        .bind(r.start)
        .bind(r.end);
    if !r.cluster.is_empty() {
        q = q.bind(r.cluster.clone());
    }
    let rows = q.fetch_all(&store.pool).await?;
    let mut sums: BTreeMap<(String, String, String), UsageRow> = BTreeMap::new();
    for row in &rows {
        let key = (
            row.try_get::<String, _>(0).unwrap_or_default(),
            row.try_get::<String, _>(1).unwrap_or_default(),
            row.try_get::<String, _>(2).unwrap_or_default(),
        );
        let e = sums.entry(key.clone()).or_insert_with(|| UsageRow {
            cluster: key.0.clone(),
            account: key.1.clone(),
            user: key.2.clone(),
            ..Default::default()
        });
        e.cpu_secs += row.try_get::<i64, _>(3).unwrap_or(0).max(0) as u64;
        e.gpu_secs += row.try_get::<i64, _>(4).unwrap_or(0).max(0) as u64;
        e.mem_mb_secs += row.try_get::<i64, _>(5).unwrap_or(0).max(0) as u64;
    }
    let crow = sqlx::query("SELECT name, cpus, tres, registered FROM clusters")
        .fetch_all(&store.pool)
        .await?;
    let mut capacity = Vec::new();
    for row in &crow {
        let name: String = row.try_get(0).unwrap_or_default();
        if !r.cluster.is_empty() && name != r.cluster {
            continue;
        }
        let cpus = row.try_get::<i64, _>(1).unwrap_or(0).max(0) as u64;
        let tres: String = row.try_get(2).unwrap_or_default();
        let registered = row.try_get::<i64, _>(3).unwrap_or(0);
        let from = r.start.max(registered - registered.rem_euclid(HOUR));
        let to = r.end.min(now);
        let secs = (to - from).max(0) as u64;
        capacity.push(ClusterCapacity {
            cluster: name,
            cpu_secs: cpus * secs,
            gpu_secs: tres_count(&tres, "gres/gpu") * secs,
        });
    }
    Ok(UsageResponse {
        rows: sums.into_values().collect(),
        capacity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tres_counts() {
        let t = "cpu=4,mem=8G,node=1,billing=4,gres/gpu:a100=2,gres/gpu:v100=1";
        assert_eq!(tres_count(t, "cpu"), 4);
        assert_eq!(tres_count(t, "mem"), 8192);
        assert_eq!(tres_count(t, "gres/gpu"), 3);
        assert_eq!(tres_count("gres/gpu=2,gres/gpu:a100=2", "gres/gpu"), 2);
        assert_eq!(tres_count("", "cpu"), 0);
    }

    #[test]
    fn hours() {
        assert_eq!(split_hours(3590, 3700), vec![(0, 10), (3600, 100)]);
        assert_eq!(split_hours(7200, 7200), vec![]);
        let total: i64 = split_hours(100, 20000).iter().map(|x| x.1).sum();
        assert_eq!(total, 19900);
    }
}
