//! `scontrol reconfigure` on the agent (the controller's Reconfigure call,
//! or SIGHUP): fetch the files again when configless, read the config,
//! apply what can change while jobs run (Prolog/Epilog/TaskProlog and their
//! timeout, KillWait, task binding, the config digest), name in the log
//! what needs a restart of droverd, and register again so the controller
//! compares the new digest.

use std::path::Path;
use std::sync::Arc;

use tracing::{info, warn};

use crate::agent::{Live, Shared};
use crate::args::{self, Args};
use crate::settings::{self, Settings};

/// Re-read and apply, then register again; the error says why nothing
/// changed.
pub async fn reconfigure(shared: Arc<Shared>) -> Result<(), String> {
    apply(&shared).await?;
    shared.reregister.notify_one();
    Ok(())
}

/// Re-read (re-fetch when configless) and apply what may change live.
pub async fn apply(shared: &Arc<Shared>) -> Result<(), String> {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(args::Command::Run(a)) => a,
        _ => return Err("cannot read droverd's own arguments".into()),
    };
    let path = match &args.conf_server {
        Some(server) => {
            let addr = crate::configless::server_addr(server);
            let files = crate::configless::fetch(&addr, &shared.key)
                .await
                .map_err(|e| format!("cannot fetch the config from {addr}: {}", e.message))?;
            let dir = drover_conf::locate::conf_cache_dir();
            let a = args.clone();
            let staged = tokio::task::spawn_blocking(move || {
                let staged = crate::configless::stage(&dir, &files)?;
                read(&staged, &a)?;
                crate::configless::commit(&dir)
            })
            .await
            .map_err(|e| e.to_string())??;
            info!(
                "configless: the config from {addr} cached as {}",
                staged.display()
            );
            staged
        }
        None => shared.settings.config_path.clone(),
    };
    let p = path.clone();
    let new = tokio::task::spawn_blocking(move || read(&p, &args))
        .await
        .map_err(|e| e.to_string())??;
    for n in restart_needed(&shared.settings, &new) {
        warn!("reconfigure: {n}");
    }
    shared.set_live(Live::of(&new));
    info!("reconfigured from {}", path.display());
    Ok(())
}

/// The config at `path` as this agent's settings (blocking).
fn read(path: &Path, args: &Args) -> Result<Settings, String> {
    let (cfg, conf_warnings) = drover_conf::slurmconf::load(path).map_err(|e| e.to_string())?;
    let (s, warnings) =
        settings::from_config(&cfg, path, args).map_err(|e| format!("{}: {e}", path.display()))?;
    for w in conf_warnings.iter().map(|w| w.to_string()).chain(warnings) {
        warn!("{w}");
    }
    Ok(s)
}

/// What changed that only a restart of droverd applies (its listener,
/// spool, controller link, auth socket and key, the nodes it serves and
/// their cgroups), one line each.
pub fn restart_needed(old: &Settings, new: &Settings) -> Vec<String> {
    let mut v = Vec::new();
    let mut check = |what: &str, a: String, b: String| {
        if a != b {
            v.push(format!(
                "{what} changed ({a} -> {b}): it takes effect when droverd restarts"
            ));
        }
    };
    check(
        "listen address",
        old.listen.to_string(),
        new.listen.to_string(),
    );
    check(
        "SlurmdSpoolDir",
        old.spool_dir.display().to_string(),
        new.spool_dir.display().to_string(),
    );
    check(
        "SlurmctldHost",
        old.controller.clone(),
        new.controller.clone(),
    );
    check(
        "AuthInfo socket",
        old.auth_socket.display().to_string(),
        new.auth_socket.display().to_string(),
    );
    check(
        "AuthKeyFile",
        old.key_file.display().to_string(),
        new.key_file.display().to_string(),
    );
    check(
        "nodes served",
        old.node_names().join(","),
        new.node_names().join(","),
    );
    check(
        "cgroup.conf",
        format!("{:?}", old.cgroup_conf),
        format!("{:?}", new.cgroup_conf),
    );
    v
}
