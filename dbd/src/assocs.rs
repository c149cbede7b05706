//! Reading and writing the association set (clusters, accounts, users,
//! QOS, associations) as a whole: it is small, and a change rewrites it in
//! one transaction together with a new version number.

use drover_proto::acct::{Account, Assoc, AssocSet, Cluster, Limits, Qos, User};
use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, Row};

use crate::store::Store;

fn s(r: &AnyRow, i: usize) -> String {
    r.try_get::<String, _>(i).unwrap_or_default()
}
fn n(r: &AnyRow, i: usize) -> i64 {
    r.try_get::<i64, _>(i).unwrap_or(0)
}
fn u(r: &AnyRow, i: usize) -> u32 {
    n(r, i).clamp(0, u32::MAX as i64) as u32
}
fn list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

const LIMIT_COLS: &str = "grp_tres, grp_jobs, grp_submit_jobs, max_jobs, max_submit_jobs, \
                          max_tres_per_job, max_tres_per_user, max_wall_min";

fn limits_at(r: &AnyRow, i: usize) -> Limits {
    Limits {
        grp_tres: s(r, i),
        grp_jobs: n(r, i + 1),
        grp_submit_jobs: n(r, i + 2),
        max_jobs: n(r, i + 3),
        max_submit_jobs: n(r, i + 4),
        max_tres_per_job: s(r, i + 5),
        max_tres_per_user: s(r, i + 6),
        max_wall_min: n(r, i + 7),
    }
}

/// Load everything.
pub async fn load(store: &Store) -> Result<AssocSet, sqlx::Error> {
    let mut set = AssocSet::default();
    for r in sqlx::query(
        "SELECT name, control_host, control_port, cpus, nodes, tres, registered FROM clusters \
         ORDER BY name",
    )
    .fetch_all(&store.pool)
    .await?
    {
        set.clusters.push(Cluster {
            name: s(&r, 0),
            control_host: s(&r, 1),
            control_port: u(&r, 2),
            cpus: u(&r, 3),
            nodes: u(&r, 4),
            tres: s(&r, 5),
            registered: n(&r, 6),
        });
    }
    for r in sqlx::query("SELECT name, description, organization FROM accounts ORDER BY name")
        .fetch_all(&store.pool)
        .await?
    {
        set.accounts.push(Account {
            name: s(&r, 0),
            description: s(&r, 1),
            organization: s(&r, 2),
        });
    }
    for r in sqlx::query("SELECT name, default_account, admin_level FROM users ORDER BY name")
        .fetch_all(&store.pool)
        .await?
    {
        set.users.push(User {
            name: s(&r, 0),
            default_account: s(&r, 1),
            admin_level: s(&r, 2),
        });
    }
    let sql = format!(
        "SELECT name, id, description, priority, preempt, preempt_mode, grace_time, \
         usage_factor, {LIMIT_COLS} FROM qos ORDER BY id"
    );
    for r in sqlx::query(AssertSqlSafe(sql))
        .fetch_all(&store.pool)
        .await?
    {
        set.qos.push(Qos {
            name: s(&r, 0),
            id: u(&r, 1),
            description: s(&r, 2),
            priority: u(&r, 3),
            preempt: list(&s(&r, 4)),
            preempt_mode: s(&r, 5),
            grace_time: u(&r, 6),
            usage_factor: r.try_get::<f64, _>(7).unwrap_or(1.0),
            limits: Some(limits_at(&r, 8)),
        });
    }
    let sql = format!(
        "SELECT id, cluster, account, user_name, part, parent, shares, qos, default_qos, \
         {LIMIT_COLS} FROM assocs ORDER BY id"
    );
    for r in sqlx::query(AssertSqlSafe(sql))
        .fetch_all(&store.pool)
        .await?
    {
        set.assocs.push(Assoc {
            id: u(&r, 0),
            cluster: s(&r, 1),
            account: s(&r, 2),
            user: s(&r, 3),
            partition: s(&r, 4),
            parent: s(&r, 5),
            shares: u(&r, 6),
            qos: list(&s(&r, 7)),
            default_qos: s(&r, 8),
            limits: Some(limits_at(&r, 9)),
        });
    }
    set.version = store.counter("assoc_version").await?.max(0) as u64;
    Ok(set)
}

/// Replace the stored set with `set` and bump the version; returns it.
pub async fn save(store: &Store, set: &AssocSet) -> Result<u64, sqlx::Error> {
    let _w = store.write_lock.lock().await;
    let mut tx = store.pool.begin().await?;
    for t in ["assocs", "qos", "users", "accounts", "clusters"] {
        sqlx::query(AssertSqlSafe(format!("DELETE FROM {t}")))
            .execute(&mut *tx)
            .await?;
    }
    let ins = store.q(
        "INSERT INTO clusters (name, control_host, control_port, cpus, nodes, tres, registered) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    for c in &set.clusters {
        sqlx::query(AssertSqlSafe(ins.clone()))
            .bind(c.name.clone())
            .bind(c.control_host.clone())
            .bind(i64::from(c.control_port))
            .bind(i64::from(c.cpus))
            .bind(i64::from(c.nodes))
            .bind(c.tres.clone())
            .bind(c.registered)
            .execute(&mut *tx)
            .await?;
    }
    let ins = store.q("INSERT INTO accounts (name, description, organization) VALUES (?, ?, ?)");
    for a in &set.accounts {
        sqlx::query(AssertSqlSafe(ins.clone()))
            .bind(a.name.clone())
            .bind(a.description.clone())
            .bind(a.organization.clone())
            .execute(&mut *tx)
            .await?;
    }
    let ins = store.q("INSERT INTO users (name, default_account, admin_level) VALUES (?, ?, ?)");
    for x in &set.users {
        sqlx::query(AssertSqlSafe(ins.clone()))
            .bind(x.name.clone())
            .bind(x.default_account.clone())
            .bind(x.admin_level.clone())
            .execute(&mut *tx)
            .await?;
    }
    let ins = store.q(&format!(
        "INSERT INTO qos (name, id, description, priority, preempt, preempt_mode, grace_time, \
         usage_factor, {LIMIT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ));
    for q in &set.qos {
        let l = q.limits.clone().unwrap_or_else(crate::edit::no_limits);
        sqlx::query(AssertSqlSafe(ins.clone()))
            .bind(q.name.clone())
            .bind(i64::from(q.id))
            .bind(q.description.clone())
            .bind(i64::from(q.priority))
            .bind(q.preempt.join(","))
            .bind(q.preempt_mode.clone())
            .bind(i64::from(q.grace_time))
            .bind(q.usage_factor)
            .bind(l.grp_tres)
            .bind(l.grp_jobs)
            .bind(l.grp_submit_jobs)
            .bind(l.max_jobs)
            .bind(l.max_submit_jobs)
            .bind(l.max_tres_per_job)
            .bind(l.max_tres_per_user)
            .bind(l.max_wall_min)
            .execute(&mut *tx)
            .await?;
    }
    let ins = store.q(&format!(
        "INSERT INTO assocs (id, cluster, account, user_name, part, parent, shares, qos, \
         default_qos, {LIMIT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    ));
    for a in &set.assocs {
        let l = a.limits.clone().unwrap_or_else(crate::edit::no_limits);
        sqlx::query(AssertSqlSafe(ins.clone()))
            .bind(i64::from(a.id))
            .bind(a.cluster.clone())
            .bind(a.account.clone())
            .bind(a.user.clone())
            .bind(a.partition.clone())
            .bind(a.parent.clone())
            .bind(i64::from(a.shares))
            .bind(a.qos.join(","))
            .bind(a.default_qos.clone())
            .bind(l.grp_tres)
            .bind(l.grp_jobs)
            .bind(l.grp_submit_jobs)
            .bind(l.max_jobs)
            .bind(l.max_submit_jobs)
            .bind(l.max_tres_per_job)
            .bind(l.max_tres_per_user)
            .bind(l.max_wall_min)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query("UPDATE counters SET value = value + 1 WHERE name = 'assoc_version'")
        .execute(&mut *tx)
        .await?;
    let v: i64 = sqlx::query("SELECT value FROM counters WHERE name = 'assoc_version'")
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
    tx.commit().await?;
    Ok(v.max(0) as u64)
}
