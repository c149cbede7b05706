//! `droverd --login`: a login (submit) host that is not a node. It serves
//! the local auth socket, so the commands typed here get credentials for
//! the uid the kernel reports (`SO_PEERCRED`), exactly as on a node, and
//! with `--conf-server` keeps the conf cache fresh (every minute and on
//! SIGHUP) for them. No NodeName entry is needed; the host needs the
//! cluster key, like every host of the cluster.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use drover_proto::auth::ClusterKey;
use tracing::{info, warn};

use crate::args::Args;

/// How often a configless login host fetches the config again.
const REFRESH: Duration = Duration::from_secs(60);

/// Run until SIGTERM/SIGINT; returns the exit code.
pub fn run(args: &Args, path: &Path) -> i32 {
    let (cfg, warnings) = match drover_conf::slurmconf::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("droverd: {e}");
            return 1;
        }
    };
    let key_file = args
        .key
        .clone()
        .unwrap_or_else(|| PathBuf::from(&cfg.auth_key_file));
    let key = match ClusterKey::load(&key_file) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("droverd: {e}");
            return 1;
        }
    };
    if !args.foreground {
        if let Err(e) = crate::daemon::detach(cfg.slurmd_log_file.as_deref().map(Path::new)) {
            eprintln!("droverd: {e}");
            return 1;
        }
    }
    for w in &warnings {
        warn!("{w}");
    }
    let socket = PathBuf::from(cfg.auth_socket());
    info!(
        "droverd {} starting as a login host: config {}, auth socket {}, controller {}",
        env!("CARGO_PKG_VERSION"),
        path.display(),
        socket.display(),
        cfg.control_addr()
    );
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("droverd: cannot start the runtime: {e}");
            return 1;
        }
    };
    let ttl = cfg.auth_ttl_secs().min(i64::MAX as u64) as i64;
    let server = args.conf_server.clone();
    rt.block_on(async move {
        tokio::spawn(crate::auth_socket::auth_socket_loop(
            socket,
            key.clone(),
            ttl,
        ));
        let refresh = Arc::new(tokio::sync::Notify::new());
        if let Some(server) = server {
            tokio::spawn(keep_fresh(server, key, refresh.clone()));
        }
        drover_proto::sdnotify::ready("login host: auth socket served");
        crate::startup::wait_for_stop_signal(move || refresh.notify_one()).await;
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    info!("droverd (login host) stopped");
    0
}

/// Fetch the config every [`REFRESH`] and when notified (SIGHUP).
async fn keep_fresh(server: String, key: ClusterKey, now: Arc<tokio::sync::Notify>) {
    let addr = crate::configless::server_addr(&server);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(REFRESH) => {}
            _ = now.notified() => {}
        }
        let files = match crate::configless::fetch(&addr, &key).await {
            Ok(f) => f,
            Err(e) => {
                warn!("cannot fetch the config from {addr}: {}", e.message);
                continue;
            }
        };
        let dir = drover_conf::locate::conf_cache_dir();
        let done = tokio::task::spawn_blocking(move || {
            let staged = crate::configless::stage(&dir, &files)?;
            drover_conf::slurmconf::load(&staged).map_err(|e| e.to_string())?;
            crate::configless::commit(&dir)
        })
        .await;
        match done {
            Ok(Ok(p)) => info!("configless: config refreshed in {}", p.display()),
            Ok(Err(e)) => warn!("configless: new config not used: {e}"),
            Err(e) => warn!("configless: {e}"),
        }
    }
}
