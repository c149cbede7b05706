//! Where a program finds its configuration: `$DROVER_CONF`, then
//! `$SLURM_CONF`, then `/etc/drover/drover.conf`, and on a configless host
//! (no file there) the copy its agent keeps in the conf cache, as Slurm's
//! commands fall back to `/run/slurm/conf/slurm.conf`.

use std::path::{Path, PathBuf};

/// The config file of an installed cluster.
pub const DEFAULT_CONF: &str = "/etc/drover/drover.conf";
/// Where a configless agent keeps the files it fetched (`$DROVER_CONF_CACHE`
/// overrides it, for the agent and the commands alike).
pub const DEFAULT_CONF_CACHE: &str = "/run/drover/conf";
/// The main config's name in the cache (whatever the controller calls it).
pub const CACHED_CONF: &str = "drover.conf";

/// The conf cache directory.
pub fn conf_cache_dir() -> PathBuf {
    match std::env::var_os("DROVER_CONF_CACHE").filter(|v| !v.is_empty()) {
        Some(v) => PathBuf::from(v),
        None => PathBuf::from(DEFAULT_CONF_CACHE),
    }
}

/// The config file a command or agent reads when not told one.
pub fn config_path() -> PathBuf {
    for var in ["DROVER_CONF", "SLURM_CONF"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return PathBuf::from(v);
        }
    }
    choose(Path::new(DEFAULT_CONF), &conf_cache_dir().join(CACHED_CONF))
}

/// The installed file if there is one, else the cached copy if there is
/// one, else the installed file's name (for the error message).
fn choose(installed: &Path, cached: &Path) -> PathBuf {
    if !installed.exists() && cached.exists() {
        cached.to_path_buf()
    } else {
        installed.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_used_only_without_an_installed_file() {
        let d = tempfile::tempdir().unwrap();
        let installed = d.path().join("etc.conf");
        let cached = d.path().join("cache.conf");
        assert_eq!(choose(&installed, &cached), installed);
        std::fs::write(&cached, "").unwrap();
        assert_eq!(choose(&installed, &cached), cached);
        std::fs::write(&installed, "").unwrap();
        assert_eq!(choose(&installed, &cached), installed);
    }
}
