//! `droverd` start-up: configuration, key, listener, detaching, then the
//! async agent until SIGTERM/SIGINT (which leaves every job running).

use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use drover_proto::auth::ClusterKey;
use drover_proto::client::Credential;
use drover_proto::node_agent_server::NodeAgentServer;

use crate::agent::{AgentService, Shared};
use crate::args::Args;
use crate::settings::{self, Settings};

/// Run the agent; returns the process exit code.
pub fn run(args: Args) -> i32 {
    crate::daemon::ensure_std_fds();
    // Logging first: start-up checks (the spool's modes) have things to say.
    drover_proto::logging::init(args.verbose, "");
    let path = match &args.conf_server {
        Some(server) => {
            let key = args
                .key
                .clone()
                .unwrap_or_else(|| crate::configless::DEFAULT_KEY.into());
            match crate::configless::startup_fetch(server, &key) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("droverd: configless: {e}");
                    return 1;
                }
            }
        }
        None => settings::config_path(&args),
    };
    if args.login {
        return crate::login::run(&args, &path);
    }
    let (cfg, conf_warnings) = match drover_conf::slurmconf::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("droverd: {e}");
            return 1;
        }
    };
    let (mut settings, warnings) = match settings::from_config(&cfg, &path, &args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("droverd: {}: {e}", path.display());
            return 1;
        }
    };
    let key = match ClusterKey::load(&settings.key_file) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("droverd: {e}");
            return 1;
        }
    };
    if let Err(e) = crate::jobdir::ensure_spool(&settings.spool_dir) {
        eprintln!("droverd: SlurmdSpoolDir: {e}");
        return 1;
    }
    let listener = match std::net::TcpListener::bind(settings.listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("droverd: cannot listen on {}: {e}", settings.listen);
            return 1;
        }
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("droverd: cannot find its own executable: {e}");
            return 1;
        }
    };

    if !args.foreground {
        if let Err(e) = crate::daemon::detach(settings.log_file.as_deref()) {
            eprintln!("droverd: {e}");
            return 1;
        }
    }
    if let Some(p) = &settings.pid_file {
        if let Err(e) = crate::daemon::write_pid_file(p) {
            warn!("{e}");
        }
    }
    for w in &conf_warnings {
        warn!("{w}");
    }
    for w in &warnings {
        warn!("{w}");
    }
    info!(
        "droverd {} starting: config {}, port {} (listening on {}), spool dir {}, controller {}, serving {} node(s): {}",
        env!("CARGO_PKG_VERSION"),
        settings.config_path.display(),
        settings.listen.port(),
        settings.listen,
        settings.spool_dir.display(),
        settings.controller,
        settings.nodes.len(),
        drover_conf::hostlist::compress(&settings.node_names()),
    );
    check_host_resources(&settings);
    apply_gpu_autodetect(&mut settings);
    if let Err(e) = setup_cgroups(&mut settings) {
        // Running jobs without the limits cgroup.conf asks for would be
        // wrong, and exiting would leave the admin guessing: the node comes
        // up drained with the reason, as `sinfo -R` shows it.
        tracing::error!("{e}: the node registers drained with this reason");
        settings.drain_reason = Some(crate::cgroup::plain(&e));
    }

    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("droverd: cannot start the runtime: {e}");
            return 1;
        }
    };
    let release = settings.cgroup.clone().map(|sys| {
        let port = settings.listen.port();
        (sys, settings.node_names(), port)
    });
    let code = rt.block_on(serve(settings, key, exe, listener, args.verbose > 0));
    rt.shutdown_timeout(Duration::from_secs(1));
    if let Some((sys, nodes, port)) = release {
        for n in nodes {
            sys.release_node(&n, port);
        }
    }
    code
}

/// Decide how jobs are confined. Cgroups are used whenever the host has
/// them and the agent runs as root (tracking, kill, usage, OOM detection);
/// cgroup.conf's Constrain* keys add the limits. An error is fatal only
/// when cgroup.conf asks for a constraint the agent cannot apply.
fn setup_cgroups(settings: &mut Settings) -> Result<(), String> {
    let conf = &settings.cgroup_conf;
    let wanted = conf.constrain_ram_space || conf.constrain_cores || conf.constrain_devices;
    if !drover_proto::sys::is_root() {
        if wanted {
            warn!("cgroup.conf asks for Constrain* but droverd is not root: jobs run without cgroup limits");
        }
        return Ok(());
    }
    let system = match crate::cgroup::System::detect(conf) {
        Ok(Some(s)) => s,
        Ok(None) => {
            info!("cgroups disabled (CgroupPlugin=disabled)");
            return Ok(());
        }
        Err(e) if wanted => return Err(format!("cgroup.conf: {e}")),
        Err(e) => {
            warn!("cgroups not used: {e}");
            return Ok(());
        }
    };
    for n in &settings.nodes {
        if let Err(e) = system.prepare_node(&n.name, settings.listen.port()) {
            if wanted {
                return Err(format!("cannot prepare cgroups for node {}: {e}", n.name));
            }
            warn!("cgroups not used: {e}");
            return Ok(());
        }
    }
    info!(
        "cgroups: {}; ConstrainRAMSpace={} ConstrainSwapSpace={} ConstrainCores={} ConstrainDevices={}",
        system.describe(),
        yes_no(conf.constrain_ram_space),
        yes_no(conf.constrain_swap_space),
        yes_no(conf.constrain_cores),
        yes_no(conf.constrain_devices)
    );
    // Groups of jobs whose supervisor is gone (a crash): kill and remove.
    for n in &settings.nodes {
        for job_id in system.job_groups(&n.name, settings.listen.port()) {
            let dir = crate::jobdir::job_dir(&settings.spool_dir, job_id);
            let alive = crate::stepd_socket::connect(&dir).is_ok();
            if !alive {
                warn!("job {job_id}: cgroup on {} has no supervisor: killing what is left and removing it", n.name);
                system.reap_orphan(&n.name, settings.listen.port(), job_id);
            }
        }
    }
    settings.cgroup = Some(system);
    Ok(())
}

/// `AutoDetect=nvml`: take the node's GPUs (device files, types, order)
/// from the driver. Without NVML the configured inventory stays, with a
/// clear log line, and the agent runs on.
fn apply_gpu_autodetect(settings: &mut Settings) {
    let wants = |n: &settings::ServedNode| {
        n.gres
            .iter()
            .any(|g| g.name == "gpu" && g.autodetect.eq_ignore_ascii_case("nvml"))
    };
    if !settings.nodes.iter().any(wants) {
        return;
    }
    let detected = match crate::gpu::detect() {
        Ok(d) => d,
        Err(e) => {
            warn!("gres.conf AutoDetect=nvml: {e}; using the configured GPU count without device files");
            return;
        }
    };
    info!("NVML found {} GPU(s)", detected.len());
    for n in settings.nodes.iter_mut().filter(|n| wants(n)) {
        let (inv, warnings) = crate::gpu::autodetect_inventory(&n.gres, &detected, "/dev");
        for w in warnings {
            warn!("node {}: {w}", n.name);
        }
        n.gres = inv;
    }
}

/// Sample GPU usage of running jobs every JobAcctGatherFrequency seconds
/// (task=N form accepted; default 30) while NVML is available.
pub fn gpu_sample_period(freq: &str) -> Option<Duration> {
    let v = freq
        .split(',')
        .find_map(|p| {
            p.strip_prefix("task=")
                .or(Some(p).filter(|p| !p.contains('=')))
        })
        .unwrap_or("30");
    let secs: u64 = v.trim().parse().unwrap_or(30);
    (secs > 0).then(|| Duration::from_secs(secs))
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// Warn when a single real node is configured bigger than this host.
fn check_host_resources(settings: &Settings) {
    if settings.emulated {
        return;
    }
    let Some(n) = settings.nodes.first() else {
        return;
    };
    let cpus = crate::hostinfo::online_cpus();
    if cpus < n.cpus {
        warn!(
            "node {}: configured with CPUs={} but this host has {cpus}",
            n.name, n.cpus
        );
    }
    if let Some(mem) = crate::hostinfo::mem_total_mb() {
        if mem < n.real_memory {
            warn!(
                "node {}: configured with RealMemory={} but this host has {mem} MB",
                n.name, n.real_memory
            );
        }
    }
}

async fn serve(
    settings: Settings,
    key: ClusterKey,
    exe: std::path::PathBuf,
    listener: std::net::TcpListener,
    stepd_debug: bool,
) -> i32 {
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|_| tokio::net::TcpListener::from_std(listener))
    {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("listener: {e}");
            return 1;
        }
    };
    drover_proto::tls::set_client(
        settings.tls.mode,
        settings.tls_files.clone(),
        settings.tls_names.clone(),
        true,
    );
    let tls = match drover_proto::tlsaccept::server_tls(
        "droverd",
        &settings.tls,
        &settings.tls_files,
        settings.listen.ip(),
    ) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!("{e}");
            return 1;
        }
    };
    let cred = Credential::daemon(key.clone(), settings.host.clone());
    let auth = drover_proto::verify::AuthLayer::new(
        "droverd",
        key.clone(),
        settings.auth_skew,
        drover_proto::MAX_MESSAGE_BYTES + 5,
    );
    let ctl = match drover_proto::client::controller(&settings.controller, cred) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!("controller address: {e}");
            return 1;
        }
    };
    let shared = match tokio::task::spawn_blocking(move || {
        Shared::new(settings, key, exe, ctl, stepd_debug)
    })
    .await
    {
        Ok(s) => Arc::new(s),
        Err(e) => {
            tracing::error!("start-up: {e}");
            return 1;
        }
    };
    crate::supervisors::reattach(&shared).await;
    let has_gpus = shared
        .settings
        .nodes
        .iter()
        .any(|n| n.gres.iter().any(|g| g.name == "gpu"));
    if let (true, Some(period)) = (has_gpus, shared.settings.gpu_sample) {
        let s = shared.clone();
        tokio::spawn(async move {
            if !tokio::task::spawn_blocking(|| crate::gpu::nvml().is_some())
                .await
                .unwrap_or(false)
            {
                return;
            }
            let mut tick = tokio::time::interval(period);
            loop {
                tick.tick().await;
                let s2 = s.clone();
                let _ = tokio::task::spawn_blocking(move || s2.gpus.sample()).await;
            }
        });
    }
    tokio::spawn(crate::auth_socket::auth_socket_loop(
        shared.settings.auth_socket.clone(),
        shared.key.clone(),
        shared.settings.auth_ttl,
    ));
    tokio::spawn(crate::registration::control_loop(shared.clone()));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    drover_proto::sdnotify::ready(&format!(
        "serving {} node(s) on {}",
        shared.settings.nodes.len(),
        shared.settings.listen
    ));
    let hup_shared = shared.clone();
    tokio::spawn(async move {
        wait_for_stop_signal(move || {
            let s = hup_shared.clone();
            tokio::spawn(async move {
                if let Err(e) = crate::reconfigure::reconfigure(s).await {
                    warn!("reconfigure: {e}");
                }
            });
        })
        .await;
        let _ = stop_tx.send(true);
    });
    let svc = NodeAgentServer::new(AgentService::new(shared.clone()))
        .max_decoding_message_size(drover_proto::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(drover_proto::MAX_MESSAGE_BYTES);
    let incoming = drover_proto::tlsaccept::incoming(listener, tls);
    let mut stop_server = stop_rx.clone();
    let server = tonic::transport::Server::builder()
        .layer(auth)
        .add_service(svc)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stop_server.wait_for(|s| *s).await;
        });
    let mut stop = stop_rx;
    let grace = async move {
        let _ = stop.wait_for(|s| *s).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let code = tokio::select! {
        r = server => match r {
            Ok(()) => 0,
            Err(e) => {
                tracing::error!("server: {e}");
                1
            }
        },
        _ = grace => 0,
    };
    let n = shared.jobs().len();
    info!("droverd stopping; {n} job(s) left to their supervisors");
    code
}

/// Until SIGTERM or SIGINT; SIGHUP (reconfigure, as slurmd) calls `on_hup`.
pub async fn wait_for_stop_signal(on_hup: impl Fn()) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        warn!("cannot install signal handlers");
        return std::future::pending().await;
    };
    loop {
        tokio::select! {
            _ = term.recv() => { info!("SIGTERM received"); return; }
            _ = int.recv() => { info!("SIGINT received"); return; }
            _ = hup.recv() => { info!("SIGHUP received: re-reading the configuration"); on_hup(); }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_periods() {
        assert_eq!(gpu_sample_period("30"), Some(Duration::from_secs(30)));
        assert_eq!(
            gpu_sample_period("task=15,energy=0"),
            Some(Duration::from_secs(15))
        );
        assert_eq!(gpu_sample_period("energy=5"), Some(Duration::from_secs(30)));
        assert_eq!(gpu_sample_period("0"), None);
    }
}
