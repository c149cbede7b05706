//! Configless hosts (`droverd --conf-server HOST[:PORT]`): the config files
//! come from the controller (`SlurmctldParameters=enable_configless`) into
//! the conf cache (`$DROVER_CONF_CACHE`, default `/run/drover/conf`, like
//! Slurm's `/run/slurm/conf`), where this agent and the commands of this
//! host read them. Refreshed at every `scontrol reconfigure`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use drover_proto::auth::ClusterKey;
use drover_proto::client::Credential;
use drover_proto::{ConfigFile, ConfigFilesRequest};
use tracing::{info, warn};

use crate::every::Every;

/// The only names a controller may send (nothing else is written).
const NAMES: [&str; 3] = [drover_conf::locate::CACHED_CONF, "gres.conf", "cgroup.conf"];

/// Where the staged copy is checked before it replaces the cache.
const STAGING: &str = ".staging";

/// The cluster key's place when no config names one yet.
pub const DEFAULT_KEY: &str = "/etc/drover/drover.key";

/// `HOST[:PORT]` as an address to dial (SlurmctldPort's default 6817);
/// a comma-separated list (a primary and its backups, as slurmd's
/// `--conf-server` takes) gives the list of addresses, tried in order.
pub fn server_addr(s: &str) -> String {
    s.split(',')
        .filter(|h| !h.trim().is_empty())
        .map(one_addr)
        .collect::<Vec<_>>()
        .join(",")
}

fn one_addr(s: &str) -> String {
    let s = s.trim();
    if s.parse::<std::net::SocketAddr>().is_ok() {
        return s.to_string();
    }
    if let Some((_, port)) = s.rsplit_once(':') {
        if !s.starts_with('[') && s.matches(':').count() == 1 && port.parse::<u16>().is_ok() {
            return s.to_string();
        }
    }
    if s.contains(':') && !s.starts_with('[') {
        return format!("[{s}]:6817");
    }
    format!("{s}:6817")
}

/// Why a fetch failed, and whether trying again may help.
pub struct FetchError {
    pub message: String,
    pub retry: bool,
}

/// One request for the files.
pub async fn fetch(addr: &str, key: &ClusterKey) -> Result<Vec<ConfigFile>, FetchError> {
    let cred = Credential::daemon(key.clone(), drover_proto::auth::hostname());
    let mut ctl = drover_proto::client::controller(addr, cred).map_err(|e| FetchError {
        message: e,
        retry: false,
    })?;
    let mut req = tonic::Request::new(ConfigFilesRequest {});
    req.set_timeout(Duration::from_secs(10));
    match ctl.get_config_files(req).await {
        Ok(r) => Ok(r.into_inner().files),
        Err(s) => Err(FetchError {
            retry: matches!(
                s.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Unknown
            ),
            message: s.message().to_string(),
        }),
    }
}

/// [`fetch`] until the controller answers (it may start after this host);
/// a refusal (configless off, a wrong key) is an error at once.
pub async fn fetch_patiently(addr: &str, key: &ClusterKey) -> Result<Vec<ConfigFile>, String> {
    let mut log = Every::new(Duration::from_secs(30));
    loop {
        match fetch(addr, key).await {
            Ok(f) => return Ok(f),
            Err(e) if e.retry => {
                if log.due() {
                    warn!(
                        "cannot fetch the config from {addr}: {}; retrying every second",
                        e.message
                    );
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => {
                return Err(format!(
                    "the controller at {addr} refused the config: {}",
                    e.message
                ))
            }
        }
    }
}

/// Write `files` into `dir/.staging` (0644 in 0755 directories: a config
/// is for every user of the host) and return the staged main config, for
/// the caller to check before [`commit`].
pub fn stage(dir: &Path, files: &[ConfigFile]) -> Result<PathBuf, String> {
    let staging = dir.join(STAGING);
    let mkdir = |d: &Path| -> Result<(), String> {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", d.display()))
    };
    mkdir(dir)?;
    let _ = std::fs::remove_dir_all(&staging);
    mkdir(&staging)?;
    if !files
        .iter()
        .any(|f| f.name == drover_conf::locate::CACHED_CONF)
    {
        return Err("the controller sent no drover.conf".into());
    }
    for f in files {
        if !NAMES.contains(&f.name.as_str()) {
            return Err(format!(
                "the controller sent an unexpected file {:?}",
                f.name
            ));
        }
        let p = staging.join(&f.name);
        std::fs::write(&p, &f.text).map_err(|e| format!("{}: {e}", p.display()))?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(staging.join(drover_conf::locate::CACHED_CONF))
}

/// Move the staged files into the cache (each by rename, so a reader never
/// sees half a file); a file the controller no longer sends goes. Returns
/// the cached main config.
pub fn commit(dir: &Path) -> Result<PathBuf, String> {
    let staging = dir.join(STAGING);
    for name in NAMES {
        let from = staging.join(name);
        let to = dir.join(name);
        if from.exists() {
            std::fs::rename(&from, &to).map_err(|e| format!("{}: {e}", to.display()))?;
        } else if to.exists() {
            std::fs::remove_file(&to).map_err(|e| format!("{}: {e}", to.display()))?;
        }
    }
    let _ = std::fs::remove_dir(&staging);
    Ok(dir.join(drover_conf::locate::CACHED_CONF))
}

/// Before a configless host has its configuration, its TLS files are
/// where they would be for a config beside the key file (`tls/` in the
/// key's directory: `/etc/drover/tls/` by default).
pub fn tls_files_beside_key(key_file: &Path) -> drover_conf::tls::TlsFiles {
    let beside = key_file.with_file_name(drover_conf::locate::CACHED_CONF);
    drover_proto::tls::files_for(&drover_conf::tls::TlsConf::default(), &beside)
}

/// Commands on a configless host find the cluster CA beside the cached
/// config (`tls/ca.crt`, 0644: a certificate is public), as they would
/// beside a config of their own.
fn cache_ca(dir: &Path, ca: &Path) -> Result<(), String> {
    let Ok(pem) = std::fs::read(ca) else {
        return Ok(()); // no TLS on this cluster's hosts
    };
    let tls = dir.join(drover_conf::tls::TLS_DIR);
    std::fs::create_dir_all(&tls).map_err(|e| format!("{}: {e}", tls.display()))?;
    std::fs::set_permissions(&tls, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", tls.display()))?;
    let to = tls.join("ca.crt");
    let tmp = tls.join(".ca.crt.new");
    std::fs::write(&tmp, pem).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644))
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &to).map_err(|e| format!("{}: {e}", to.display()))
}

/// Start-up of a configless host: fetch (waiting for the controller), check
/// that the main file parses, cache. Returns the cached config's path.
pub fn startup_fetch(server: &str, key_file: &Path) -> Result<PathBuf, String> {
    let key = ClusterKey::load(key_file)?;
    let addr = server_addr(server);
    // No config yet: TLS as by default (wherever the controller is not
    // loopback), with the files beside the key; the config, once read,
    // decides for every later connection.
    // A login host has no certificate of its own (it is no node): it
    // presents none, as commands do.
    let tls = tls_files_beside_key(key_file);
    let identity = tls.cert.exists();
    drover_proto::tls::set_client(
        drover_conf::tls::TlsMode::Auto,
        tls.clone(),
        Vec::new(),
        identity,
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let files = rt.block_on(fetch_patiently(&addr, &key))?;
    let dir = drover_conf::locate::conf_cache_dir();
    let staged = stage(&dir, &files)?;
    drover_conf::slurmconf::load(&staged).map_err(|e| e.to_string())?;
    let path = commit(&dir)?;
    cache_ca(&dir, &tls.ca_cert)?;
    info!(
        "configless: {} file(s) from the controller at {addr} cached in {}",
        files.len(),
        dir.display()
    );
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses() {
        assert_eq!(server_addr("ctl"), "ctl:6817");
        assert_eq!(server_addr("ctl:7000"), "ctl:7000");
        assert_eq!(server_addr("10.0.0.1"), "10.0.0.1:6817");
        assert_eq!(server_addr("10.0.0.1:1"), "10.0.0.1:1");
        assert_eq!(server_addr("fe80::1"), "[fe80::1]:6817");
        assert_eq!(server_addr("[fe80::1]:7"), "[fe80::1]:7");
        assert_eq!(server_addr("ctl,ctl2:7000"), "ctl:6817,ctl2:7000");
    }

    fn file(name: &str, text: &str) -> ConfigFile {
        ConfigFile {
            name: name.into(),
            text: text.into(),
        }
    }

    #[test]
    fn cache_is_staged_then_replaced_and_stale_files_go() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("conf");
        stage(
            &dir,
            &[file("drover.conf", "A=1\n"), file("gres.conf", "g\n")],
        )
        .unwrap();
        let main = commit(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(&main).unwrap(), "A=1\n");
        let mode = std::fs::metadata(&main).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        assert!(dir.join("gres.conf").exists());
        stage(&dir, &[file("drover.conf", "A=2\n")]).unwrap();
        commit(&dir).unwrap();
        assert_eq!(std::fs::read_to_string(&main).unwrap(), "A=2\n");
        assert!(!dir.join("gres.conf").exists());
        assert!(!dir.join(STAGING).exists());
    }

    #[test]
    fn names_other_than_the_config_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        for bad in ["../x", "/etc/passwd", "prolog.sh"] {
            let e = stage(d.path(), &[file("drover.conf", ""), file(bad, "")]).unwrap_err();
            assert!(e.contains("unexpected file"), "{e}");
        }
        let e = stage(d.path(), &[file("gres.conf", "")]).unwrap_err();
        assert!(e.contains("no drover.conf"), "{e}");
    }
}
