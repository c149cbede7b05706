//! droverdbd.conf (slurmdbd.conf syntax): where the accounting daemon
//! listens and which database it stores into.

use std::path::Path;

use crate::error::{ConfError, ConfWarning};
use crate::include::{self, Resolver};
use crate::values::{self, canonical, err, UnknownKeys};

/// Which database engine holds the accounting data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    Sqlite,
    Postgres,
    Mysql,
}

impl StorageKind {
    /// `accounting_storage/sqlite`, `accounting_storage/pgsql`,
    /// `accounting_storage/mysql` (the plugin prefix is optional).
    pub fn parse(s: &str) -> Result<StorageKind, String> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("accounting_storage/").unwrap_or(&t);
        Ok(match t {
            "sqlite" | "sqlite3" => StorageKind::Sqlite,
            "pgsql" | "postgres" | "postgresql" => StorageKind::Postgres,
            "mysql" | "mariadb" => StorageKind::Mysql,
            other => {
                return Err(format!(
                    "unknown storage type \"{other}\" (expected accounting_storage/sqlite, \
                     accounting_storage/pgsql or accounting_storage/mysql)"
                ))
            }
        })
    }
}

/// The parsed droverdbd.conf.
#[derive(Debug, Clone, PartialEq)]
pub struct DbdConf {
    /// Host name clients use for the daemon (informational).
    pub dbd_host: String,
    /// Address to listen on.
    pub dbd_addr: String,
    pub dbd_port: u16,
    pub storage_type: StorageKind,
    pub storage_host: String,
    pub storage_port: Option<u16>,
    pub storage_user: Option<String>,
    pub storage_pass: Option<String>,
    /// Database name; for SQLite the database file path.
    pub storage_loc: Option<String>,
    /// A whole connection URL (overrides the Storage* keys).
    pub storage_url: Option<String>,
    /// Directory for the SQLite file when StorageLoc is not given.
    pub state_save_location: String,
    pub auth_key_file: String,
    /// `TLSType` and `TLSParameters`.
    pub tls: crate::tls::TlsConf,
    pub slurm_user: String,
    /// PrivateData=jobs,usage,...: who may see others' records.
    pub private_data: Vec<String>,
    /// Every Key=Value seen, in file order.
    pub raw: Vec<(String, String)>,
}

impl Default for DbdConf {
    fn default() -> Self {
        DbdConf {
            dbd_host: "localhost".into(),
            dbd_addr: "0.0.0.0".into(),
            dbd_port: 6819,
            storage_type: StorageKind::Sqlite,
            storage_host: "localhost".into(),
            storage_port: None,
            storage_user: None,
            storage_pass: None,
            storage_loc: None,
            storage_url: None,
            state_save_location: "/var/spool/drover/dbd".into(),
            auth_key_file: "/etc/drover/drover.key".into(),
            tls: Default::default(),
            slurm_user: "root".into(),
            private_data: Vec::new(),
            raw: Vec::new(),
        }
    }
}

impl DbdConf {
    /// `AuthInfo=skew=N` (seconds of clock difference tolerated in
    /// credentials), default 60 like drover.conf's.
    pub fn auth_skew_secs(&self) -> u64 {
        self.raw
            .iter()
            .filter(|(k, _)| k == "AuthInfo")
            .flat_map(|(_, v)| crate::general::parse_kv_list(v))
            .filter(|(k, _)| k.eq_ignore_ascii_case("skew"))
            .filter_map(|(_, v)| v?.parse().ok())
            .next_back()
            .unwrap_or(60)
    }

    /// The sqlx connection URL these settings describe.
    pub fn url(&self) -> String {
        if let Some(u) = &self.storage_url {
            return u.clone();
        }
        match self.storage_type {
            StorageKind::Sqlite => {
                let path = self.storage_loc.clone().unwrap_or_else(|| {
                    format!(
                        "{}/drover_acct.db",
                        self.state_save_location.trim_end_matches('/')
                    )
                });
                format!("sqlite://{path}?mode=rwc")
            }
            StorageKind::Postgres | StorageKind::Mysql => {
                let (scheme, port, user) = if self.storage_type == StorageKind::Postgres {
                    ("postgres", 5432, "postgres")
                } else {
                    ("mysql", 3306, "root")
                };
                let user = self.storage_user.clone().unwrap_or_else(|| user.into());
                let auth = match &self.storage_pass {
                    Some(p) => format!("{}:{}", pct(&user), pct(p)),
                    None => pct(&user),
                };
                format!(
                    "{scheme}://{auth}@{}:{}/{}",
                    self.storage_host,
                    self.storage_port.unwrap_or(port),
                    self.storage_loc.as_deref().unwrap_or("drover_acct_db")
                )
            }
        }
    }

    /// The URL with the password replaced, for logs.
    pub fn url_for_log(&self) -> String {
        let u = self.url();
        match (u.find("://"), u.find('@')) {
            (Some(s), Some(at)) if at > s => {
                let cred = &u[s + 3..at];
                match cred.split_once(':') {
                    Some((user, _)) => format!("{}{user}:****{}", &u[..s + 3], &u[at..]),
                    None => u,
                }
            }
            _ => u,
        }
    }
}

/// Percent-encode the characters that would break a URL's user info.
fn pct(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) const DBD_KEYS: &[&str] = &[
    "DbdHost",
    "DbdAddr",
    "DbdPort",
    "StorageType",
    "StorageHost",
    "StoragePort",
    "StorageUser",
    "StoragePass",
    "StorageLoc",
    "StorageURL",
    "StateSaveLocation",
    "AuthKeyFile",
    "TLSType",
    "TLSParameters",
    "SlurmUser",
    "PrivateData",
];

/// Accepted and kept in `raw`, not acted on.
pub(crate) const DBD_RAW_KEYS: &[&str] = &[
    "AuthType",
    "AuthInfo",
    "DbdBackupHost",
    "DebugLevel",
    "LogFile",
    "PidFile",
    "PurgeEventAfter",
    "PurgeJobAfter",
    "PurgeResvAfter",
    "PurgeStepAfter",
    "PurgeSuspendAfter",
    "PurgeTXNAfter",
    "PurgeUsageAfter",
    "ArchiveDir",
    "ArchiveEvents",
    "ArchiveJobs",
    "ArchiveSteps",
    "ArchiveUsage",
    "TrackWCKey",
    "TrackSlurmctldDown",
    "MessageTimeout",
    "CommitDelay",
];

fn parse_with(
    text: &str,
    file_name: &str,
    resolver: &mut Resolver<'_>,
) -> Result<(DbdConf, Vec<ConfWarning>), ConfError> {
    let mut warnings = Vec::new();
    let lines = include::collect(text, file_name, resolver, &mut warnings)?;
    let mut c = DbdConf::default();
    let mut addr_given = false;
    let mut unknown = UnknownKeys::default();
    for p in lines.iter().flatten() {
        let Some(key) = canonical(DBD_KEYS, &p.key) else {
            match canonical(DBD_RAW_KEYS, &p.key) {
                Some(k) => c.raw.push((k.to_string(), p.value.clone())),
                None => {
                    unknown.note("", p, &mut warnings);
                    c.raw.push((p.key.clone(), p.value.clone()));
                }
            }
            continue;
        };
        c.raw.push((key.to_string(), p.value.clone()));
        let v = p.value.trim();
        let e = |m: String| err(p, key, m);
        let nonempty = || {
            if v.is_empty() {
                Err(e("empty value".to_string()))
            } else {
                Ok(v.to_string())
            }
        };
        match key {
            "DbdHost" => c.dbd_host = nonempty()?,
            "DbdAddr" => {
                c.dbd_addr = nonempty()?;
                addr_given = true;
            }
            "DbdPort" => c.dbd_port = values::parse_u16(v).map_err(e)?,
            "StorageType" => c.storage_type = StorageKind::parse(v).map_err(e)?,
            "StorageHost" => c.storage_host = nonempty()?,
            "StoragePort" => c.storage_port = Some(values::parse_u16(v).map_err(e)?),
            "StorageUser" => c.storage_user = values::opt_string(v),
            "StoragePass" => c.storage_pass = values::opt_string(v),
            "StorageLoc" => c.storage_loc = values::opt_string(v),
            "StorageURL" => {
                let u = nonempty()?;
                let scheme = u.split("://").next().unwrap_or("");
                c.storage_type = StorageKind::parse(scheme).map_err(e)?;
                c.storage_url = Some(u);
            }
            "StateSaveLocation" => c.state_save_location = nonempty()?,
            "AuthKeyFile" => c.auth_key_file = nonempty()?,
            "TLSType" => c.tls.mode = crate::tls::parse_type(v).map_err(e)?,
            "TLSParameters" => crate::tls::parse_parameters(v, &mut c.tls).map_err(e)?,
            "SlurmUser" => c.slurm_user = nonempty()?,
            "PrivateData" => {
                c.private_data = crate::private::check(&values::parse_list(v))
                    .map_err(e)?
                    .into_iter()
                    .map(|s| s.to_ascii_lowercase())
                    .collect()
            }
            _ => {}
        }
    }
    if !addr_given && (c.dbd_host == "localhost" || c.dbd_host.starts_with("127.")) {
        c.dbd_addr = "127.0.0.1".into();
    }
    Ok((c, warnings))
}

/// Parse droverdbd.conf text.
pub fn parse_str(text: &str, file_name: &str) -> Result<(DbdConf, Vec<ConfWarning>), ConfError> {
    parse_with(text, file_name, &mut include::no_includes)
}

/// Read and parse a droverdbd.conf file (and its `Include`s).
pub fn load(path: &Path) -> Result<(DbdConf, Vec<ConfWarning>), ConfError> {
    include::load_with(path, parse_with)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_sqlite_under_state_dir() {
        let (c, w) = parse_str("StateSaveLocation=/var/dbd\n", "dbd.conf").unwrap();
        assert!(w.is_empty());
        assert_eq!(c.storage_type, StorageKind::Sqlite);
        assert_eq!(c.url(), "sqlite:///var/dbd/drover_acct.db?mode=rwc");
        assert_eq!(c.dbd_port, 6819);
        assert_eq!(c.dbd_addr, "127.0.0.1");
        assert_eq!(c.auth_skew_secs(), 60);
        let (c, _) = parse_str("AuthInfo=socket=/s,skew=7\n", "dbd.conf").unwrap();
        assert_eq!(c.auth_skew_secs(), 7);
    }

    #[test]
    fn server_urls() {
        let (c, _) = parse_str(
            "StorageType=accounting_storage/pgsql StorageHost=db1 StorageUser=acct \
             StoragePass=p@ss StorageLoc=slurm_acct_db DbdHost=dbhost",
            "dbd.conf",
        )
        .unwrap();
        assert_eq!(c.url(), "postgres://acct:p%40ss@db1:5432/slurm_acct_db");
        assert_eq!(
            c.url_for_log(),
            "postgres://acct:****@db1:5432/slurm_acct_db"
        );
        assert_eq!(c.dbd_addr, "0.0.0.0");
        let (c, _) =
            parse_str("StorageType=accounting_storage/mysql StoragePort=3307", "f").unwrap();
        assert_eq!(c.url(), "mysql://root@localhost:3307/drover_acct_db");
        let (c, _) = parse_str("StorageURL=mysql://root@127.0.0.1:3306/x", "f").unwrap();
        assert_eq!(c.storage_type, StorageKind::Mysql);
        assert_eq!(c.url(), "mysql://root@127.0.0.1:3306/x");
    }

    #[test]
    fn errors_name_file_line_key() {
        let e = parse_str("\nStorageType=oracle", "dbd.conf").unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (2, "StorageType"));
        let e = parse_str("PrivateData=jobs,jobz", "dbd.conf").unwrap_err();
        assert!(e.to_string().contains("invalid value 'jobz'"), "{e}");
        let e = parse_str("DbdPort=70000", "dbd.conf").unwrap_err();
        assert!(e.to_string().starts_with("dbd.conf:1: DbdPort: "), "{e}");
        let (_, w) = parse_str("Bogus=1 PurgeJobAfter=12", "dbd.conf").unwrap();
        assert_eq!(w.len(), 1);
    }
}
