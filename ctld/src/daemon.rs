//! Start-up: arguments, config, logging, listeners, the owner task.

use std::net::SocketAddr;
use std::path::PathBuf;

use drover_proto::auth::ClusterKey;
use drover_proto::controller_server::ControllerServer;
use tokio::sync::mpsc;

use crate::ctld::Ctld;
use crate::rpc::controller::Svc;
use crate::runtime::fence::Fence;
use crate::runtime::ha::Ha;
use crate::runtime::{AgentPool, Runtime};
use std::sync::Arc;

const USAGE: &str = "usage: droverctld [-f CONFIG] [-D] [-v...] [-V]\n\
  -f CONFIG  configuration file (default: $DROVER_CONF, $SLURM_CONF, /etc/drover/drover.conf)\n\
  -D         run in the foreground (always; accepted for Slurm compatibility)\n\
  -R         recover state (always; accepted for Slurm compatibility)\n\
  -c         Slurm's \"start with no jobs\": not supported, said at startup\n\
  -v         more logging (repeat for more); RUST_LOG overrides\n\
  -V         print the version";

/// Calls in flight on one client connection; more wait in the client.
const MAX_STREAMS_PER_CONNECTION: u32 = 256;
/// Request headers (the credential is about 300 bytes).
const MAX_HEADER_BYTES: u32 = 16 * 1024;

/// Config path as every Drover program finds it.
pub fn default_config_path() -> PathBuf {
    for var in ["DROVER_CONF", "SLURM_CONF"] {
        if let Ok(p) = std::env::var(var) {
            if !p.is_empty() {
                return PathBuf::from(p);
            }
        }
    }
    PathBuf::from("/etc/drover/drover.conf")
}

pub fn main_entry() -> i32 {
    let mut args = std::env::args().skip(1);
    let mut config = None;
    let mut verbosity = 0u8;
    let mut clear_asked = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "-f" => match args.next() {
                Some(p) => config = Some(PathBuf::from(p)),
                None => {
                    eprintln!("droverctld: -f needs a file\n{USAGE}");
                    return 2;
                }
            },
            // -D: always in the foreground; -R: state is always recovered.
            "-D" | "-R" => {}
            "-c" => clear_asked = true,
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
                eprintln!("droverctld: unknown option {other}\n{USAGE}");
                return 2;
            }
        }
    }
    drover_proto::logging::init(verbosity, "");
    if clear_asked {
        tracing::warn!(
            "-c (start with no jobs) is not supported: the state in StateSaveLocation \
             is recovered; move that directory away to start empty"
        );
    }
    // One malloc arena: the controller's state lives in one task anyway, and
    // per-thread arenas keep freed reply buffers from going back to the system.
    // A fixed mmap threshold: glibc's adaptive one rises to the size of
    // the largest block freed (a big squeue reply), after which such
    // buffers come from the heap and leave it fragmented; mapped, they go
    // back to the system as soon as they are freed.
    drover_proto::sys::mallopt(libc::M_ARENA_MAX, 1);
    drover_proto::sys::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    let path = config.unwrap_or_else(default_config_path);
    let (cfg, warnings) = match drover_conf::slurmconf::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("droverctld: error: {e}");
            return 1;
        }
    };
    for w in &warnings {
        tracing::warn!("{w}");
    }
    let key = match ClusterKey::load(std::path::Path::new(&cfg.auth_key_file)) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("droverctld: error: {e}");
            return 1;
        }
    };
    // The auth socket's directory may be root's: bind it first.
    let auth_path = PathBuf::from(cfg.auth_socket());
    let auth_listener = match drover_proto::authsock::bind_auth_socket(&auth_path) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::error!("auth socket {}: {e}", auth_path.display());
            None
        }
    };
    // The local socket too (commands on this host: identity from the kernel).
    let local_listener = cfg
        .local_socket()
        .and_then(|p| match drover_proto::localsock::bind(&p) {
            Ok(l) => Some((p, l)),
            Err(e) => {
                tracing::error!("local socket {}: {e}; commands use TCP", p.display());
                None
            }
        });
    // What needs root is read and bound: from here on run as SlurmUser.
    let state_dir = std::path::Path::new(&cfg.state_save_location);
    match drover_proto::slurmuser::become_slurm_user(
        "droverctld",
        &cfg.slurm_user,
        &[("StateSaveLocation", state_dir)],
    ) {
        Ok(Some(pw)) => tracing::info!("running as SlurmUser {}({})", pw.name, pw.uid),
        Ok(None) => {}
        Err(e) => {
            eprintln!("droverctld: error: {e}");
            return 1;
        }
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("droverctld: error: cannot start runtime: {e}");
            return 1;
        }
    };
    rt.block_on(serve(cfg, path, key, auth_listener, local_listener))
}

/// The local socket's path and listener, when it is bound.
type LocalListener = Option<(PathBuf, std::os::unix::net::UnixListener)>;

async fn serve(
    cfg: drover_conf::slurmconf::Config,
    path: PathBuf,
    key: ClusterKey,
    auth_listener: Option<std::os::unix::net::UnixListener>,
    local_listener: LocalListener,
) -> i32 {
    let host = drover_proto::auth::hostname();
    let slurm_user_uid = crate::users::user_uid(&cfg.slurm_user).unwrap_or(0);
    let ha = match Ha::new(&cfg, &host, slurm_user_uid, crate::runtime::clock()) {
        Ok(h) => Arc::new(h),
        Err(e) => {
            eprintln!("droverctld: error: {e}");
            return 1;
        }
    };
    // Each controller listens on its own SlurmctldHost address.
    let addr_text = cfg
        .slurmctld_host
        .get(ha.index)
        .map(|h| h.address().to_string())
        .unwrap_or_else(|| "0.0.0.0".into());
    let bind_ip: std::net::IpAddr = addr_text
        .parse()
        .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
    let bind = SocketAddr::new(bind_ip, cfg.slurmctld_port);
    tracing::info!(
        "droverctld {} starting: config {}, cluster {}, state {}, {} nodes, {} partitions{}",
        env!("CARGO_PKG_VERSION"),
        path.display(),
        cfg.cluster_name,
        cfg.state_save_location,
        cfg.nodes.len(),
        cfg.partitions.len(),
        if ha.names.len() > 1 {
            format!(", {} controller", Ha::mode(ha.index, ha.names.len()))
        } else {
            String::new()
        }
    );
    let front = match drover_conf::ratelimit::FrontConf::of(cfg.get("SlurmctldParameters")) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("droverctld: error: {}: {e}", path.display());
            return 1;
        }
    };
    let limit = Arc::new(crate::rpc::ratelimit::Limiter::new(
        front.rate_limit,
        slurm_user_uid,
    ));
    let (tx, rx) = mpsc::channel(65536);
    let auth_path = PathBuf::from(cfg.auth_socket());
    let ttl = cfg.auth_ttl_secs() as i64;
    // Requests are bounded by what a submission may hold; replies (a large
    // queue) may be much bigger.
    let max_request =
        crate::fieldlimits::max_request_bytes(cfg.sched_params().max_script_size as usize);
    // Credentials issued before this point are refused (the replay cache
    // starts empty).
    let auth = drover_proto::verify::AuthLayer::new(
        "droverctld",
        key.clone(),
        cfg.auth_skew_secs(),
        max_request.saturating_add(5),
    );
    drover_proto::tls::set_client_from(&cfg, &path, true);
    let tls = match drover_proto::tlsaccept::server_tls(
        "droverctld",
        &cfg.tls,
        &drover_proto::tls::files_for(&cfg.tls, &path),
        bind_ip,
    ) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("droverctld: error: {e}");
            return 1;
        }
    };
    let cred = drover_proto::client::Credential::daemon(key.clone(), host);
    let agents = AgentPool::new(cred.clone());
    // Listen first: in standby and while recovering, calls are refused at
    // once with "not the active controller" (clients try the next).
    let listener = match tokio::net::TcpListener::bind(bind).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("droverctld: error: cannot listen on {bind}: {e}");
            return 1;
        }
    };
    tracing::info!("listening on {bind}");
    if let Some(l) = auth_listener {
        let key = key.clone();
        let path = auth_path.clone();
        tokio::spawn(async move {
            if let Err(e) = drover_proto::authsock::serve_auth_listener(l, key, ttl).await {
                tracing::error!("auth socket {}: {e}", path.display());
            }
        });
        tracing::info!("auth socket {}", auth_path.display());
    }
    let disk = Arc::new(crate::runtime::disk::StateDisk::new(
        &cfg.state_save_location,
    ));
    let base = Svc {
        tx: tx.clone(),
        key,
        agents: agents.clone(),
        ha: ha.clone(),
        limit,
        disk,
    };
    let svc = ControllerServer::new(base.clone())
        .max_decoding_message_size(max_request)
        .max_encoding_message_size(drover_proto::MAX_MESSAGE_BYTES);
    // GetJobs answers with the bytes the owner encodes (`rpc/jobs.rs`).
    let svc = crate::rpc::jobs::Routed::new(svc, base.clone(), max_request);
    let sched =
        drover_proto::scheduler_server::SchedulerServer::new(crate::rpc::scheduler::SchedSvc(base))
            .max_decoding_message_size(max_request)
            .max_encoding_message_size(drover_proto::MAX_MESSAGE_BYTES);
    // Small RPCs must not wait for delayed ACKs (Nagle).
    let nofile = raise_open_files_limit();
    let incoming = crate::rpc::conns::limit(
        drover_proto::tlsaccept::incoming(listener, tls),
        front.conn_per_peer as usize,
        nofile.map_or(0, |n| {
            n.saturating_sub(crate::rpc::conns::RESERVED_FDS).max(n / 2)
        }),
    );
    let layers = front_layers(auth, ha.active.clone());
    let routes = tonic::service::Routes::new(svc).add_service(sched);
    if let Some((local_path, l)) = local_listener {
        // Local calls (no HTTP/2) go through the same layers and services.
        let calls = tower::Layer::layer(&layers, routes.clone());
        match drover_proto::localsock::incoming(l, calls) {
            Ok(local) => {
                let served = serve_on(local, layers.clone(), routes.clone());
                tokio::spawn(async move {
                    if let Err(e) = served.await {
                        tracing::error!("local socket: {e}");
                    }
                });
                tracing::info!("local socket {}", local_path.display());
            }
            Err(e) => tracing::error!("local socket {}: {e}", local_path.display()),
        }
    }
    let server = serve_on(incoming, layers, routes);
    let mut server = tokio::spawn(server);
    crate::runtime::ha::note_stop_signals();
    tokio::spawn(signals(tx.clone(), ha.clone()));
    if ha.is_backup() {
        drover_proto::sdnotify::ready("standby");
        let why = tokio::select! {
            why = crate::runtime::ha::standby(&ha, &cred, std::path::Path::new(&cfg.state_save_location)) => why,
            r = &mut server => return server_ended(r),
        };
        tracing::info!("taking control: {why}");
    }
    let started = std::time::Instant::now();
    crate::runtime::ha::claim(&ha, &cred).await;
    let dir = PathBuf::from(&cfg.state_save_location);
    let fence = match tokio::task::spawn_blocking(move || Fence::take(&dir)).await {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => {
            eprintln!("droverctld: error: {e}");
            return 1;
        }
        Err(e) => {
            eprintln!("droverctld: error: {e}");
            return 1;
        }
    };
    let epoch = fence.epoch;
    let mut runtime = match Runtime::recover(cfg, path, agents.clone(), tx.clone(), Some(fence)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("droverctld: error: {e}");
            return 1;
        }
    };
    match crate::runtime::config_files::snapshot(&runtime.core.cfg, &runtime.core.config_path) {
        Ok(s) => runtime.core.served_files = s,
        Err(e) => {
            eprintln!("droverctld: error: configless: {e}");
            return 1;
        }
    }
    if let Some(s) = &runtime.core.served_files {
        tracing::info!(
            "configless: serving {}",
            s.files
                .iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Err(e) = runtime.start_accounting(cred) {
        eprintln!("droverctld: error: {e}");
        return 1;
    }
    let owner = tokio::spawn(runtime.run(rx));
    ha.epoch.store(epoch, std::sync::atomic::Ordering::Release);
    ha.active.store(true, std::sync::atomic::Ordering::Release);
    tracing::info!(
        "in control (state epoch {epoch}), {} ms after deciding to take it",
        started.elapsed().as_millis()
    );
    drover_proto::sdnotify::ready(&format!("listening on {bind}"));
    tokio::select! {
        r = &mut server => return server_ended(r),
        _ = owner => {}
    }
    if ha.stepping_down.load(std::sync::atomic::Ordering::Acquire) {
        crate::runtime::ha::stepped_down(&ha);
        // Let the answer to the request reach the new controller.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        if ha.is_backup() {
            return crate::runtime::ha::restart_in_standby();
        }
        tracing::info!("control handed over: the primary controller exits");
        return 0;
    }
    // Let the last acknowledgements reach their clients.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    tracing::info!("droverctld stopped");
    0
}

/// What every call passes before its service, on every transport:
/// authentication outermost, then the standby check.
type FrontLayers =
    tower::layer::util::Stack<drover_proto::standby::StandbyLayer, drover_proto::verify::AuthLayer>;

fn front_layers(
    auth: drover_proto::verify::AuthLayer,
    active: Arc<std::sync::atomic::AtomicBool>,
) -> FrontLayers {
    tower::layer::util::Stack::new(drover_proto::standby::StandbyLayer { active }, auth)
}

/// The gRPC services on the connections of `incoming` (TCP, or the local
/// socket's HTTP/2 connections: the same layers and services on both, and
/// on the local calls). Bounds on what one
/// connection may cost (docs/admin-guide.md, "Overload protection"):
/// streams in flight (tonic's default is no limit), header bytes (hyper's
/// 16 KiB, made explicit), and keep-alive pings that close a connection
/// whose peer stopped answering.
async fn serve_on<I, IO, IE>(
    incoming: I,
    layers: FrontLayers,
    routes: tonic::service::Routes,
) -> Result<(), tonic::transport::Error>
where
    I: tokio_stream::Stream<Item = Result<IO, IE>>,
    IO: tokio::io::AsyncRead
        + tokio::io::AsyncWrite
        + tonic::transport::server::Connected
        + Unpin
        + Send
        + 'static,
    IE: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tonic::transport::Server::builder()
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        .http2_max_header_list_size(MAX_HEADER_BYTES)
        .http2_keepalive_interval(Some(std::time::Duration::from_secs(60)))
        .http2_keepalive_timeout(Some(std::time::Duration::from_secs(20)))
        .tcp_nodelay(true)
        .initial_stream_window_size(Some(8 * 1024 * 1024))
        .initial_connection_window_size(Some(16 * 1024 * 1024))
        .layer(layers)
        .add_routes(routes)
        .serve_with_incoming(incoming)
        .await
}

/// Raise the open files limit to its hard limit, as slurmctld does, and
/// say what it is (every client connection holds a descriptor). Returns
/// the limit now in force (None: unlimited or unknown).
fn raise_open_files_limit() -> Option<usize> {
    let (mut soft, hard) = drover_proto::sys::nofile_limit().ok()?;
    let before = soft;
    if soft < hard {
        match drover_proto::sys::set_nofile_soft(hard, hard) {
            Ok(()) => soft = hard,
            Err(e) => {
                tracing::warn!("cannot raise the open files limit from {before} to {hard}: {e}")
            }
        }
    }
    if soft == libc::RLIM_INFINITY {
        tracing::info!("open files limit (RLIMIT_NOFILE): unlimited");
        return None;
    }
    if soft != before {
        tracing::info!("open files limit (RLIMIT_NOFILE): {soft} (raised from {before})");
    } else {
        tracing::info!("open files limit (RLIMIT_NOFILE): {soft}");
    }
    usize::try_from(soft).ok()
}

fn server_ended(r: Result<Result<(), tonic::transport::Error>, tokio::task::JoinError>) -> i32 {
    match r {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            tracing::error!("server: {e}");
            1
        }
        Err(e) => {
            tracing::error!("server: {e}");
            1
        }
    }
}

/// SIGTERM/SIGINT: stop (in standby at once, else after the log is
/// written); SIGHUP: reconfigure, as slurmctld's.
async fn signals(stop_tx: mpsc::Sender<crate::ctld::Op>, ha: Arc<Ha>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return;
    };
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            // slurmctld's SIGHUP: scontrol reconfigure.
            _ = hup.recv() => {
                tracing::info!("SIGHUP received: reconfiguring");
                let op = Box::new(|c: &mut Ctld| {
                    let loaded = crate::runtime::config_files::reload(&c.config_path);
                    if let Err(e) = c.reconfigure(loaded) {
                        tracing::error!("reconfigure refused: {}", e.words());
                    }
                });
                if stop_tx.send(op).await.is_err() {
                    return;
                }
            }
        }
    }
    tracing::info!("signal received, shutting down");
    if !ha.active.load(std::sync::atomic::Ordering::Acquire) {
        // Standby (or taking control): nothing of ours to write yet.
        std::process::exit(0);
    }
    let _ = stop_tx
        .send(Box::new(|c: &mut Ctld| c.shutdown = true))
        .await;
}
