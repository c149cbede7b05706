//! Start-up: arguments, config, database, listener.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use drover_conf::dbdconf::DbdConf;
use drover_proto::acct::accounting_server::AccountingServer;
use drover_proto::auth::ClusterKey;
use tokio::sync::{watch, Mutex};

use crate::server::{Dbd, Svc};
use crate::store::Store;

const USAGE: &str = "usage: droverdbd [-f CONFIG] [-D] [-v...] [-V] [--drop-database]\n\
  -f CONFIG        daemon configuration (default: $DROVER_DBD_CONF, else droverdbd.conf or\n\
                   slurmdbd.conf beside drover.conf, else /etc/drover/droverdbd.conf)\n\
  -D               run in the foreground (always; accepted for Slurm compatibility)\n\
  -v               more logging (repeat for more); RUST_LOG overrides\n\
  -V               print the version\n\
  --drop-database  delete the configured database and exit (tests, development)";

/// The daemon's configuration file as every Drover program finds it.
pub fn default_config_path() -> PathBuf {
    if let Ok(p) = std::env::var("DROVER_DBD_CONF") {
        if !p.is_empty() {
            return PathBuf::from(p);
        }
    }
    for var in ["DROVER_CONF", "SLURM_CONF"] {
        if let Ok(p) = std::env::var(var) {
            if let Some(dir) = PathBuf::from(p).parent() {
                for name in ["droverdbd.conf", "slurmdbd.conf"] {
                    let c = dir.join(name);
                    if c.exists() {
                        return c;
                    }
                }
            }
        }
    }
    PathBuf::from("/etc/drover/droverdbd.conf")
}

pub fn main_entry() -> i32 {
    let mut args = std::env::args().skip(1);
    let mut config = None;
    let mut verbosity = 0u8;
    let mut drop = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "-f" => match args.next() {
                Some(p) => config = Some(PathBuf::from(p)),
                None => {
                    eprintln!("droverdbd: -f needs a file\n{USAGE}");
                    return 2;
                }
            },
            "-D" => {}
            "--drop-database" => drop = true,
            "-V" | "--version" => {
                println!("drover {}", env!("CARGO_PKG_VERSION"));
                return 0;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            v if v.starts_with("-v") && v[1..].chars().all(|c| c == 'v') => {
                verbosity = verbosity.saturating_add((v.len() - 1) as u8)
            }
            other => {
                eprintln!("droverdbd: unknown option {other}\n{USAGE}");
                return 2;
            }
        }
    }
    drover_proto::logging::init(verbosity, "sqlx=warn");
    let path = config.unwrap_or_else(default_config_path);
    let (cfg, warnings) = match drover_conf::dbdconf::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("droverdbd: error: {e}");
            return 1;
        }
    };
    for w in &warnings {
        tracing::warn!("{w}");
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("droverdbd: error: cannot start runtime: {e}");
            return 1;
        }
    };
    if drop {
        return match rt.block_on(crate::store::drop_database(&cfg.url())) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("droverdbd: error: {e}");
                1
            }
        };
    }
    let key = match ClusterKey::load(std::path::Path::new(&cfg.auth_key_file)) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("droverdbd: error: {e}");
            return 1;
        }
    };
    // What needs root is read: from here on run as SlurmUser (glibc's
    // set*id calls switch the runtime's threads too).
    let state_dir = std::path::Path::new(&cfg.state_save_location);
    match drover_proto::slurmuser::become_slurm_user(
        "droverdbd",
        &cfg.slurm_user,
        &[("StateSaveLocation", state_dir)],
    ) {
        Ok(Some(pw)) => tracing::info!("running as SlurmUser {}({})", pw.name, pw.uid),
        Ok(None) => {}
        Err(e) => {
            eprintln!("droverdbd: error: {e}");
            return 1;
        }
    }
    rt.block_on(serve(cfg, path, key))
}

/// Connect and migrate, retrying while the database server is down.
async fn open_store(cfg: &DbdConf) -> Store {
    let mut delay = Duration::from_millis(500);
    loop {
        match Store::open(&cfg.url()).await {
            Ok(s) => return s,
            Err(e) => {
                tracing::error!("{}: {e}; retrying in {delay:?}", cfg.url_for_log());
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(10));
            }
        }
    }
}

async fn serve(cfg: DbdConf, path: PathBuf, key: ClusterKey) -> i32 {
    tracing::info!(
        "droverdbd {} starting: config {}, storage {}",
        env!("CARGO_PKG_VERSION"),
        path.display(),
        cfg.url_for_log()
    );
    let ip: std::net::IpAddr = match cfg.dbd_addr.parse() {
        Ok(ip) => ip,
        Err(_) => match tokio::net::lookup_host((cfg.dbd_addr.as_str(), cfg.dbd_port))
            .await
            .ok()
            .and_then(|mut a| a.next())
        {
            Some(a) => a.ip(),
            None => {
                eprintln!("droverdbd: error: cannot resolve DbdAddr {}", cfg.dbd_addr);
                return 1;
            }
        },
    };
    let bind = SocketAddr::new(ip, cfg.dbd_port);
    let store = open_store(&cfg).await;
    let set = loop {
        match crate::assocs::load(&store).await {
            Ok(s) => break s,
            Err(e) => {
                tracing::error!("cannot load associations: {e}; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    };
    // Receivers come and go with long polls; `send_replace` keeps the value
    // current even while none is waiting.
    let (vtx, _) = watch::channel(set.version);
    let slurm_user_uid = if let Ok(n) = cfg.slurm_user.parse() {
        n
    } else {
        uid_of(&cfg.slurm_user).unwrap_or(0)
    };
    let auth = drover_proto::verify::AuthLayer::new(
        "droverdbd",
        key.clone(),
        cfg.auth_skew_secs(),
        drover_proto::MAX_MESSAGE_BYTES + 5,
    );
    let dbd = Arc::new(Dbd {
        job_sql: crate::jobs::JobSql::new(&store),
        store,
        key,
        assocs: Mutex::new(set),
        version: vtx,
        slurm_user_uid,
        private_data: cfg.private_data.clone(),
        storage: format!("{:?}", cfg.storage_type).to_ascii_lowercase(),
        start_time: drover_proto::auth::now_secs(),
    });
    let listener = match tokio::net::TcpListener::bind(bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("droverdbd: error: cannot listen on {bind}: {e}");
            return 1;
        }
    };
    tracing::info!("listening on {bind}");
    let tls = match drover_proto::tlsaccept::server_tls(
        "droverdbd",
        &cfg.tls,
        &drover_proto::tls::files_for(&cfg.tls, &path),
        bind.ip(),
    ) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("droverdbd: error: {e}");
            return 1;
        }
    };
    drover_proto::sdnotify::ready(&format!("listening on {bind}"));
    let svc = AccountingServer::new(Svc(dbd))
        .max_decoding_message_size(drover_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(drover_proto::MAX_MESSAGE_BYTES);
    let incoming = drover_proto::tlsaccept::incoming(listener, tls);
    let shutdown = async {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("signal received, shutting down");
    };
    let r = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .initial_stream_window_size(Some(8 * 1024 * 1024))
        .initial_connection_window_size(Some(16 * 1024 * 1024))
        .layer(auth)
        .add_service(svc)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    if let Err(e) = r {
        tracing::error!("server: {e}");
        return 1;
    }
    tracing::info!("droverdbd stopped");
    0
}

fn uid_of(name: &str) -> Option<u32> {
    drover_proto::sysdb::passwd_by_name(name).map(|p| p.uid)
}
