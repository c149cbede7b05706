//! Reading the configuration for the core: `scontrol reconfigure` and
//! SIGHUP re-read the files here (above the core's line) and hand the
//! result to [`Ctld::reconfigure`]; configless hosts are served what was
//! read, never a file edited but not yet applied.

use std::path::Path;
use std::sync::Arc;

use drover_conf::slurmconf::Config;
use drover_proto::{ConfigFile, ConfigFilesResponse};

use crate::configless::{enabled, SIDE_FILES};
use crate::reconfig::Reloaded;
use crate::refusal::Refusal;

/// Re-read the config at `path`, and the files configless hosts get.
pub fn reload(path: &Path) -> Result<Reloaded, Refusal> {
    let (cfg, warnings) =
        drover_conf::slurmconf::load(path).map_err(|e| Refusal::invalid_argument(e.to_string()))?;
    let served =
        snapshot(&cfg, path).map_err(|e| Refusal::invalid_argument(format!("configless: {e}")))?;
    Ok(Reloaded {
        cfg,
        warnings,
        served,
    })
}

/// The files as they are now: the main config with its `Include`s spliced
/// in (as `drover.conf`, whatever its own name), and gres.conf and
/// cgroup.conf when they exist beside it. Blocking.
pub fn files(config_path: &Path) -> Result<ConfigFilesResponse, String> {
    let main = drover_conf::include::flatten(config_path).map_err(|e| e.to_string())?;
    let mut files = vec![ConfigFile {
        name: drover_conf::locate::CACHED_CONF.into(),
        text: main,
    }];
    let dir = config_path.parent().unwrap_or_else(|| Path::new("."));
    for name in SIDE_FILES {
        let p = dir.join(name);
        match std::fs::read_to_string(&p) {
            Ok(text) => files.push(ConfigFile {
                name: name.into(),
                text,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Ok(ConfigFilesResponse { files })
}

/// The files to serve for `cfg` read from `config_path`: None unless
/// configless mode is on. Blocking.
pub fn snapshot(
    cfg: &Config,
    config_path: &Path,
) -> Result<Option<Arc<ConfigFilesResponse>>, String> {
    if !enabled(cfg) {
        return Ok(None);
    }
    files(config_path).map(|f| Some(Arc::new(f)))
}
