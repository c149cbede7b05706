//! The database behind droverdbd: one `sqlx::Any` pool for SQLite,
//! PostgreSQL and MySQL/MariaDB, created if missing, migrated at start-up.

use std::borrow::Cow;
use std::time::Duration;

use drover_conf::dbdconf::StorageKind;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AnyPool, AssertSqlSafe, Row};

/// Where the migrations live, one folder per backend (embedded at build time).
const SQLITE: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "submit order index",
        include_str!("../../migrations/sqlite/0002_submit_order_index.sql"),
    ),
    (
        3,
        "system comment",
        include_str!("../../migrations/sqlite/0003_system_comment.sql"),
    ),
];
const POSTGRES: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "submit order index",
        include_str!("../../migrations/postgres/0002_submit_order_index.sql"),
    ),
    (
        3,
        "system comment",
        include_str!("../../migrations/postgres/0003_system_comment.sql"),
    ),
];
const MYSQL: &[(i64, &str, &str)] = &[
    (
        1,
        "init",
        include_str!("../../migrations/mysql/0001_init.sql"),
    ),
    (
        2,
        "submit order index",
        include_str!("../../migrations/mysql/0002_submit_order_index.sql"),
    ),
    (
        3,
        "system comment",
        include_str!("../../migrations/mysql/0003_system_comment.sql"),
    ),
];

/// A connected, migrated database.
#[derive(Clone)]
pub struct Store {
    pub pool: AnyPool,
    pub kind: StorageKind,
    /// Write transactions go one at a time: SQLite allows one writer, and a
    /// deferred transaction that read first fails (SQLITE_BUSY) instead of
    /// waiting when another writer committed meanwhile.
    pub write_lock: std::sync::Arc<tokio::sync::Mutex<()>>,
}

/// The kind of database a URL names.
pub fn kind_of(url: &str) -> Result<StorageKind, String> {
    let scheme = url.split(':').next().unwrap_or("");
    StorageKind::parse(scheme)
}

/// Split `scheme://auth@host:port/db?params` into (URL without db, db name, params).
pub fn split_db(url: &str) -> Option<(String, String, String)> {
    let start = url.find("://")? + 3;
    let (main, params) = match url.find('?') {
        Some(q) => (&url[..q], url[q..].to_string()),
        None => (url, String::new()),
    };
    let slash = main[start..].find('/')? + start;
    Some((
        main[..slash].to_string(),
        main[slash + 1..].to_string(),
        params,
    ))
}

/// Migrations of one backend.
pub fn migrator(kind: StorageKind) -> Migrator {
    let list = match kind {
        StorageKind::Sqlite => SQLITE,
        StorageKind::Postgres => POSTGRES,
        StorageKind::Mysql => MYSQL,
    };
    let migrations = list
        .iter()
        .map(|(v, d, sql)| {
            Migration::new(
                *v,
                Cow::Borrowed(*d),
                MigrationType::Simple,
                AssertSqlSafe(*sql).into_sql_str(),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

use sqlx::SqlSafeStr;

impl Store {
    /// Connect (creating the database when the server has none of that
    /// name, like slurmdbd) and run the migrations.
    pub async fn open(url: &str) -> Result<Store, String> {
        sqlx::any::install_default_drivers();
        let kind = kind_of(url)?;
        if kind == StorageKind::Sqlite {
            if let Some(path) = sqlite_path(url) {
                make_sqlite_private(std::path::Path::new(&path))?;
            }
        } else {
            create_database(url, kind).await?;
        }
        let pool = AnyPoolOptions::new()
            .max_connections(if kind == StorageKind::Sqlite { 4 } else { 8 })
            .acquire_timeout(Duration::from_secs(5))
            .connect(url)
            .await
            .map_err(|e| format!("cannot connect to the database: {e}"))?;
        let store = Store {
            pool,
            kind,
            write_lock: Default::default(),
        };
        if kind == StorageKind::Sqlite {
            store
                .exec("PRAGMA journal_mode=WAL")
                .await
                .map_err(|e| format!("cannot switch SQLite to WAL mode: {e}"))?;
        }
        migrator(kind)
            .run(&store.pool)
            .await
            .map_err(|e| format!("database migration failed: {e}"))?;
        Ok(store)
    }

    /// Write `?` placeholders the way the backend wants them.
    pub fn q(&self, sql: &str) -> String {
        placeholders(self.kind, sql)
    }

    pub async fn exec(&self, sql: &str) -> Result<(), sqlx::Error> {
        sqlx::query(AssertSqlSafe(sql.to_string()))
            .execute(&self.pool)
            .await
            .map(|_| ())
    }

    /// A counter's value (`assoc_version`, `next_id`).
    pub async fn counter(&self, name: &str) -> Result<i64, sqlx::Error> {
        let row: AnyRow = sqlx::query(AssertSqlSafe(
            self.q("SELECT value FROM counters WHERE name = ?"),
        ))
        .bind(name.to_string())
        .fetch_one(&self.pool)
        .await?;
        row.try_get::<i64, _>(0)
    }
}

/// Rewrite `?` as `$1, $2, ...` for PostgreSQL (no `?` appears in our literals).
pub fn placeholders(kind: StorageKind, sql: &str) -> String {
    if kind != StorageKind::Postgres {
        return sql.to_string();
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// Every job's name, user and directory is in the database: its directory
/// is made 0700 when Drover creates it, and the file with its `-wal`,
/// `-shm` and `-journal` companions 0600 (SQLite gives the companions the
/// database file's mode), whatever the umask and whatever an older version
/// left.
fn make_sqlite_private(path: &std::path::Path) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            drover_proto::private::ensure_dir(dir)?;
        }
    }
    drover_proto::private::open_rw(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut companion = path.as_os_str().to_owned();
        companion.push(suffix);
        drover_proto::private::tighten_file(std::path::Path::new(&companion))?;
    }
    Ok(())
}

fn sqlite_path(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or("");
    if path.is_empty() || path == ":memory:" {
        None
    } else {
        Some(path.to_string())
    }
}

/// Create the database named in `url` when the server lacks it.
async fn create_database(url: &str, kind: StorageKind) -> Result<(), String> {
    let Some((server, db, params)) = split_db(url) else {
        return Ok(());
    };
    if db.is_empty() || !db.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Ok(());
    }
    let admin_url = match kind {
        StorageKind::Postgres => format!("{server}/postgres{params}"),
        _ => format!("{server}/{params}"),
    };
    let Ok(pool) = AnyPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&admin_url)
        .await
    else {
        // No admin access: the database must exist already; the real
        // connection below reports what is wrong.
        return Ok(());
    };
    let exists = match kind {
        StorageKind::Postgres => sqlx::query("SELECT 1 FROM pg_database WHERE datname = $1")
            .bind(db.clone())
            .fetch_optional(&pool)
            .await
            .map_err(|e| e.to_string())?
            .is_some(),
        _ => false,
    };
    if !exists {
        let sql = match kind {
            StorageKind::Postgres => format!("CREATE DATABASE {db}"),
            _ => format!("CREATE DATABASE IF NOT EXISTS {db}"),
        };
        if let Err(e) = sqlx::query(AssertSqlSafe(sql)).execute(&pool).await {
            // Two daemons racing to create it: fine if it exists now.
            tracing::debug!("create database {db}: {e}");
        } else {
            tracing::info!("created database {db}");
        }
    }
    pool.close().await;
    Ok(())
}

/// Drop the database named in `url` (test clean-up and `droverdbd --drop`).
pub async fn drop_database(url: &str) -> Result<(), String> {
    sqlx::any::install_default_drivers();
    let kind = kind_of(url)?;
    if kind == StorageKind::Sqlite {
        if let Some(p) = sqlite_path(url) {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{p}{suffix}"));
            }
        }
        return Ok(());
    }
    let (server, db, params) = split_db(url).ok_or("URL names no database")?;
    let admin_url = match kind {
        StorageKind::Postgres => format!("{server}/postgres{params}"),
        _ => format!("{server}/{params}"),
    };
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&admin_url)
        .await
        .map_err(|e| e.to_string())?;
    let sql = match kind {
        StorageKind::Postgres => format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
        _ => format!("DROP DATABASE IF EXISTS {db}"),
    };
    sqlx::query(AssertSqlSafe(sql))
        .execute(&pool)
        .await
        .map_err(|e| e.to_string())?;
    pool.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_rewrite() {
        assert_eq!(
            placeholders(StorageKind::Postgres, "a = ? AND b = ?"),
            "a = $1 AND b = $2"
        );
        assert_eq!(placeholders(StorageKind::Mysql, "a = ?"), "a = ?");
    }

    #[test]
    fn url_parts() {
        assert_eq!(
            split_db("postgres://postgres@127.0.0.1:5432/test?sslmode=disable"),
            Some((
                "postgres://postgres@127.0.0.1:5432".into(),
                "test".into(),
                "?sslmode=disable".into()
            ))
        );
        assert_eq!(
            sqlite_path("sqlite:///tmp/x.db?mode=rwc").as_deref(),
            Some("/tmp/x.db")
        );
        assert_eq!(kind_of("mysql://root@h/x").unwrap(), StorageKind::Mysql);
    }
}
