//! `drover up` (a whole local cluster in one command) and `drover keygen`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use drover_proto::auth::ClusterKey;
use drover_proto::client::Credential;
use drover_proto::{GetNodesRequest, PingRequest};

use crate::opts::{self, opt, Arg, OptDef};

pub mod cloud;
pub mod config;
pub mod daemons;

pub use config::{
    config_text, dbd_config_text, gres_text, node_expr, read_existing, Existing, Shape, CGROUP_CONF,
};
use daemons::{Daemons, Halt};

pub const TABLE: &[OptDef] = &[
    opt("dir", None, Arg::Required, "dir"),
    opt("nodes", Some('N'), Arg::Required, "nodes"),
    opt("cpus-per-node", None, Arg::Required, "cpus"),
    opt("mem-per-node", None, Arg::Required, "mem"),
    opt("gpus-per-node", None, Arg::Required, "gpus"),
    opt("partition", Some('p'), Arg::Required, "partition"),
    opt("cloud-nodes", None, Arg::Required, "cloud"),
    opt("help", Some('h'), Arg::No, "help"),
];

const USAGE: &str = "Usage: drover up --dir DIR [--nodes N] [--cpus-per-node C] [--mem-per-node MB]
                 [--gpus-per-node G] [--partition NAME] [--cloud-nodes N]

Starts a controller, a node agent serving N emulated nodes and the
accounting daemon (SQLite) on loopback, with everything (configuration, key, state, logs) under DIR. Stays in the
foreground; Ctrl-C stops the cluster. Running it again reuses DIR.

--cloud-nodes N adds N emulated cloud nodes (partition cloud, State=CLOUD):
powered down until a job needs them, started by their ResumeProgram (an
agent each) and stopped by their SuspendProgram after 30 idle seconds.
";

fn err(msg: &str) -> i32 {
    eprintln!("drover up: error: {msg}");
    1
}

/// A port for a daemon, held until dropped (below the ephemeral range, so
/// that no client's connection holds it when the cluster starts again).
fn free_port() -> Result<(std::net::TcpListener, u16), String> {
    drover_proto::ports::pick().map_err(|e| format!("cannot pick a port: {e}"))
}

fn host_mem_mb() -> u64 {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb / 1024)
        .unwrap_or(4096)
}

fn num<T: std::str::FromStr>(v: Option<&str>, what: &str, default: T) -> Result<T, String> {
    match v {
        None => Ok(default),
        Some(s) => s.trim().parse().map_err(|_| format!("invalid {what}: {s}")),
    }
}

fn symlink(target: &Path, link: &Path) -> Result<(), String> {
    let _ = fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).map_err(|e| {
        format!(
            "cannot link {} -> {}: {e}",
            link.display(),
            target.display()
        )
    })
}

fn make_gpu_devices(dir: &Path, gpus: u32) -> Result<(), String> {
    let dev = dir.join("dev");
    fs::create_dir_all(&dev).map_err(|e| format!("{}: {e}", dev.display()))?;
    for i in 0..gpus {
        let p = dev.join(format!("nvidia{i}"));
        if p.exists() {
            continue;
        }
        let mut made = false;
        if crate::users::euid() == 0 {
            // A character device 195:i.
            made = drover_proto::sys::mknod_char(&p, 195, i).is_ok();
        }
        if !made {
            fs::write(&p, b"").map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    Ok(())
}

/// Does the controller answer a ping?
async fn ctld_answers(addr: &str, socket: &str) -> bool {
    if drover_proto::auth::probe_socket(Path::new(socket)).is_err() {
        return false;
    }
    let Ok(mut c) = drover_proto::client::controller(addr, Credential::user(socket.into())) else {
        return false;
    };
    c.ping(PingRequest {}).await.is_ok()
}

/// Is the cluster up: controller answers and all nodes respond?
async fn cluster_ready(addr: &str, socket: &str, nodes: u32) -> bool {
    if drover_proto::auth::probe_socket(Path::new(socket)).is_err() {
        return false;
    }
    let Ok(mut c) = drover_proto::client::controller(addr, Credential::user(socket.into())) else {
        return false;
    };
    if c.ping(PingRequest {}).await.is_err() {
        return false;
    }
    match c.get_nodes(GetNodesRequest::default()).await {
        Ok(r) => {
            let list = r.into_inner().nodes;
            list.len() as u32 >= nodes && list.iter().all(|n| n.responding)
        }
        Err(_) => false,
    }
}

pub fn run(args: &[String]) -> i32 {
    // First of all: a Ctrl-C at any moment must stop what was started.
    daemons::catch_signals();
    // Whatever the caller's umask, nothing drover up writes is writable by
    // others (the config names programs the daemons run as root); private
    // files get 0600 explicitly.
    drover_proto::sys::umask(0o022);
    let p = match opts::parse(TABLE, args, false) {
        Ok(p) => p,
        Err(e) => return err(&e.to_string()),
    };
    if p.has("help") {
        print!("{USAGE}");
        return 0;
    }
    if let Some(x) = p.positional.first() {
        return err(&format!("unexpected argument '{x}'"));
    }
    let Some(dir) = p.value("dir") else {
        eprint!("{USAGE}");
        return err("--dir DIR is required");
    };
    if let Err(e) = fs::create_dir_all(dir) {
        return err(&format!("cannot create {dir}: {e}"));
    }
    let dir: PathBuf = match fs::canonicalize(dir) {
        Ok(d) => d,
        Err(e) => return err(&format!("{dir}: {e}")),
    };
    let d = dir.display().to_string();
    let host_cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let nodes: u32 = match num(p.value("nodes"), "--nodes", 2) {
        Ok(n) if n >= 1 => n,
        Ok(_) => return err("--nodes must be at least 1"),
        Err(e) => return err(&e),
    };
    let cpus: u32 = match num(p.value("cpus"), "--cpus-per-node", host_cpus) {
        Ok(c) if c >= 1 => c,
        Ok(_) => return err("--cpus-per-node must be at least 1"),
        Err(e) => return err(&e),
    };
    let mem: u64 = match num(
        p.value("mem"),
        "--mem-per-node",
        (host_mem_mb() / u64::from(nodes)).max(1),
    ) {
        Ok(m) if m >= 1 => m,
        Ok(_) => return err("--mem-per-node must be at least 1"),
        Err(e) => return err(&e),
    };
    let gpus: u32 = match num(p.value("gpus"), "--gpus-per-node", 0) {
        Ok(g) => g,
        Err(e) => return err(&e),
    };
    let partition = p.value("partition").unwrap_or("debug").to_string();
    let cloud: u32 = match num(p.value("cloud"), "--cloud-nodes", 0) {
        Ok(n) => n,
        Err(e) => return err(&e),
    };
    for sub in ["bin", "spool", "run"] {
        if let Err(e) = fs::create_dir_all(dir.join(sub)) {
            return err(&format!("cannot create {d}/{sub}: {e}"));
        }
    }
    // State, accounting and logs hold other users' data.
    for sub in ["state", "log", "dbd"] {
        if let Err(e) = drover_proto::private::ensure_dir(&dir.join(sub)) {
            return err(&e);
        }
    }

    // Binaries.
    let exe = match std::env::current_exe().and_then(fs::canonicalize) {
        Ok(e) => e,
        Err(e) => return err(&format!("cannot find the drover binary: {e}")),
    };
    let exe_dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let ctld_bin = exe_dir.join("droverctld");
    let agent_bin = exe_dir.join("droverd");
    let dbd_bin = exe_dir.join("droverdbd");
    // The REST daemon is optional: without it the cluster still starts.
    let restd_bin = exe_dir.join("droverrestd");
    let restd = restd_bin.exists().then_some(restd_bin.as_path());
    for b in [&ctld_bin, &agent_bin, &dbd_bin] {
        if !b.exists() {
            return err(&format!(
                "{} not found next to {}",
                b.display(),
                exe.display()
            ));
        }
    }
    for c in crate::COMMANDS
        .iter()
        .chain([&"drover", &crate::mailfile::LINK_NAME])
    {
        if let Err(e) = symlink(&exe, &dir.join("bin").join(c)) {
            return err(&e);
        }
    }
    for (name, target) in [
        ("droverctld", &ctld_bin),
        ("droverd", &agent_bin),
        ("droverdbd", &dbd_bin),
    ] {
        if let Err(e) = symlink(target, &dir.join("bin").join(name)) {
            return err(&e);
        }
    }
    if let Some(r) = restd {
        if let Err(e) = symlink(r, &dir.join("bin").join("droverrestd")) {
            return err(&e);
        }
    }

    // Key and configuration (kept across runs).
    let key = dir.join("drover.key");
    if !key.exists() {
        if let Err(e) = ClusterKey::generate(&key) {
            return err(&e);
        }
    }
    // The REST API's HS256 key (random, 0600, like the cluster key).
    let jwt_key = dir.join("jwt.key");
    if !jwt_key.exists() {
        if let Err(e) = ClusterKey::generate(&jwt_key) {
            return err(&e);
        }
    }
    // The config is slurm.conf (tools look for it beside $SLURM_CONF);
    // drover.conf names it too. A cluster made before keeps its drover.conf
    // as the file, with slurm.conf naming it.
    let legacy = dir.join("drover.conf");
    let conf = if !dir.join("slurm.conf").exists() && legacy.exists() && !legacy.is_symlink() {
        legacy
    } else {
        dir.join("slurm.conf")
    };
    let existing = if conf.exists() {
        match fs::read_to_string(&conf) {
            Ok(t) => {
                if p.has("nodes")
                    || p.has("cpus")
                    || p.has("mem")
                    || p.has("gpus")
                    || p.has("partition")
                    || p.has("cloud")
                {
                    eprintln!(
                        "drover up: note: {} exists and is used as is; remove it to change the cluster's shape",
                        conf.display()
                    );
                }
                read_existing(&t)
            }
            Err(e) => return err(&format!("{}: {e}", conf.display())),
        }
    } else {
        // Lower case, as Slurm keeps a ClusterName (else every command
        // reading the file warns that it converted it).
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .filter(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
            })
            .unwrap_or_else(|| "drover".to_string());
        let (l1, ctld_port) = match free_port() {
            Ok(x) => x,
            Err(e) => return err(&e),
        };
        let (l2, agent_port) = match free_port() {
            Ok(x) => x,
            Err(e) => return err(&e),
        };
        let (l3, dbd_port) = match free_port() {
            Ok(x) => x,
            Err(e) => return err(&e),
        };
        let mut held = Vec::new();
        let mut cloud_ports = Vec::new();
        for _ in 0..cloud {
            match free_port() {
                Ok((l, p)) => {
                    held.push(l);
                    cloud_ports.push(p);
                }
                Err(e) => return err(&e),
            }
        }
        drop((l1, l2, l3, held));
        let shape = Shape {
            dir: d.clone(),
            name,
            nodes,
            cpus,
            mem_mb: mem,
            gpus,
            partition,
            user: crate::users::user_name(crate::users::euid()),
            ctld_port,
            agent_port,
            dbd_port,
            cloud_ports,
        };
        if let Err(e) = fs::write(dir.join("droverdbd.conf"), dbd_config_text(&shape)) {
            return err(&format!("{d}/droverdbd.conf: {e}"));
        }
        if gpus > 0 {
            if let Err(e) = make_gpu_devices(&dir, gpus) {
                return err(&e);
            }
            if let Err(e) = fs::write(dir.join("gres.conf"), gres_text(&shape)) {
                return err(&format!("{d}/gres.conf: {e}"));
            }
        }
        // An existing cgroup.conf (the admin's, or a benchmark's) is kept.
        if !dir.join("cgroup.conf").exists() {
            if let Err(e) = fs::write(dir.join("cgroup.conf"), CGROUP_CONF) {
                return err(&format!("{d}/cgroup.conf: {e}"));
            }
        }
        if cloud > 0 {
            if let Err(e) = write_power_scripts(&dir, &conf) {
                return err(&e);
            }
        }
        let text = config_text(&shape);
        if let Err(e) = fs::write(&conf, &text) {
            return err(&format!("{}: {e}", conf.display()));
        }
        read_existing(&text)
    };
    if let Err(e) = link_other_name(&dir, &conf) {
        return err(&e);
    }
    let conf_s = conf.display().to_string();
    // The config may say TLSType=tls/rustls: drover up's own calls follow it.
    if let Ok((cfg, _)) = drover_conf::slurmconf::load(&conf) {
        drover_proto::tls::set_client_from(&cfg, &conf, false);
    }
    let nodes = existing.nodes.max(1);
    let cpus_each = if existing.cpus > 0 {
        existing.cpus
    } else {
        cpus
    };
    let bins = Bins {
        exe: &exe,
        ctld: &ctld_bin,
        agent: &agent_bin,
        dbd: &dbd_bin,
        restd,
    };
    run_cluster(&dir, &conf_s, &existing, nodes, cpus_each, &bins)
}

/// The cloud nodes' ResumeProgram and SuspendProgram (DIR/power, 0755).
fn write_power_scripts(dir: &Path, conf: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let d = dir.display().to_string();
    let c = conf.display().to_string();
    let power = dir.join("power");
    fs::create_dir_all(&power).map_err(|e| format!("{}: {e}", power.display()))?;
    for (name, text) in [
        ("resume.sh", cloud::resume_script(&d, &c)),
        ("suspend.sh", cloud::suspend_script(&d, &c)),
    ] {
        let p = power.join(name);
        fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

struct Bins<'a> {
    exe: &'a Path,
    ctld: &'a Path,
    agent: &'a Path,
    dbd: &'a Path,
    restd: Option<&'a Path>,
}

/// Say why the start-up stopped; the caller's `Daemons` stops the rest.
fn halted(h: Halt, what: &str, ds: &Daemons) -> i32 {
    match h {
        Halt::Signal(s) => {
            eprintln!(
                "drover up: {} while starting: stopping what was started",
                daemons::signal_name(s)
            );
            1
        }
        Halt::Died(msg) => err(&msg),
        Halt::Timeout => {
            eprintln!("drover up: error: {what} within 60 seconds");
            eprintln!("{}", ds.logs());
            1
        }
    }
}

/// Run a readiness probe, at most 2 s (a signal is looked at in between).
fn probe(rt: &tokio::runtime::Runtime, fut: impl std::future::Future<Output = bool>) -> bool {
    rt.block_on(async { tokio::time::timeout(Duration::from_secs(2), fut).await })
        .unwrap_or(false)
}

fn port_open(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(500),
    )
    .is_ok()
}

/// Put the user in the demo account (idempotent: sacctmgr answers "Nothing
/// new added" the second time), so fair-share has an association to show.
fn ensure_demo_account(exe: &Path, conf: &str, user: &str) -> Result<(), String> {
    let run = |args: &[&str]| -> Result<(), String> {
        let o = Command::new(exe)
            .arg("sacctmgr")
            .args(args)
            .env("DROVER_CONF", conf)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("sacctmgr: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!(
                "sacctmgr {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
    };
    let acct = config::DEMO_ACCOUNT;
    run(&[
        "-i",
        "add",
        "account",
        acct,
        "Description=drover up demo",
        "Organization=demo",
    ])?;
    run(&[
        "-i",
        "add",
        "user",
        user,
        &format!("Account={acct}"),
        &format!("DefaultAccount={acct}"),
    ])
}

/// Start the daemons one by one with a progress line each, then stay in the
/// foreground until a signal or a daemon's death.
fn run_cluster(
    dir: &Path,
    conf_s: &str,
    existing: &Existing,
    nodes: u32,
    cpus_each: u32,
    bins: &Bins<'_>,
) -> i32 {
    let d = dir.display().to_string();
    let node_list = node_expr(nodes);
    let ctld_log = dir.join("log/droverctld.log");
    let agent_log = dir.join("log/droverd.log");
    let dbd_log = dir.join("log/droverdbd.log");
    let dbd_conf = dir.join("droverdbd.conf").display().to_string();
    let startup = Duration::from_secs(60);
    // Dropping `ds` (every return below) stops whatever was started.
    let mut ds = Daemons::default();

    if let Some(port) = existing.dbd_port {
        eprintln!(
            "drover up: starting droverdbd (log {})...",
            dbd_log.display()
        );
        if let Err(e) = ds.start("droverdbd", bins.dbd, &["-D", "-f", &dbd_conf], &dbd_log) {
            return err(&e);
        }
        if let Err(h) = ds.wait_for(startup, || port_open(port)) {
            return halted(h, "droverdbd did not listen", &ds);
        }
        eprintln!("drover up: droverdbd listening on 127.0.0.1:{port}");
    }

    eprintln!(
        "drover up: starting droverctld (log {})...",
        ctld_log.display()
    );
    if let Err(e) = ds.start("droverctld", bins.ctld, &["-D", "-f", conf_s], &ctld_log) {
        return err(&e);
    }
    let rt = match crate::conn::runtime() {
        Ok(r) => r,
        Err(rc) => return rc,
    };
    let addr = format!("127.0.0.1:{}", existing.ctld_port);
    let socket = if existing.auth_socket.is_empty() {
        format!("{d}/run/auth.sock")
    } else {
        existing.auth_socket.clone()
    };
    if let Err(h) = ds.wait_for(startup, || probe(&rt, ctld_answers(&addr, &socket))) {
        return halted(h, "droverctld did not answer", &ds);
    }
    eprintln!("drover up: droverctld listening on {addr}");

    eprintln!(
        "drover up: starting droverd for {node_list} (log {})...",
        agent_log.display()
    );
    if let Err(e) = ds.start(
        "droverd",
        bins.agent,
        &["-D", "-f", conf_s, "-N", &node_list],
        &agent_log,
    ) {
        return err(&e);
    }
    if let Err(h) = ds.wait_for(startup, || probe(&rt, cluster_ready(&addr, &socket, nodes))) {
        return halted(h, "the nodes did not respond", &ds);
    }
    eprintln!("drover up: droverd serving {node_list}: {nodes} nodes responding");

    if existing.dbd_port.is_some() {
        let user = crate::users::user_name(crate::users::euid());
        match ensure_demo_account(bins.exe, conf_s, &user) {
            Ok(()) => eprintln!(
                "drover up: fair-share: user {user} in account {}",
                config::DEMO_ACCOUNT
            ),
            Err(e) => eprintln!("drover up: warning: no demo account: {e}"),
        }
    }
    let mut rest_env = String::new();
    if let Some(restd) = bins.restd {
        let port = match free_port() {
            Ok((l, p)) => {
                drop(l);
                p
            }
            Err(e) => return err(&e),
        };
        let log = dir.join("log/droverrestd.log");
        let listen = format!("127.0.0.1:{port}");
        let sock = format!("unix:{d}/run/rest.sock");
        eprintln!("drover up: starting droverrestd (log {})...", log.display());
        if let Err(e) = ds.start("droverrestd", restd, &["-f", conf_s, &listen, &sock], &log) {
            return err(&e);
        }
        if let Err(h) = ds.wait_for(startup, || port_open(port)) {
            return halted(h, "droverrestd did not listen", &ds);
        }
        eprintln!("drover up: droverrestd listening on http://{listen} and {sock}");
        eprintln!(
            "drover up: dashboard at http://{listen}/ (log in with the output of `scontrol token`)"
        );
        rest_env = format!(" SLURM_RESTD_URL=http://{listen}");
    }
    if let Some(s) = daemons::interrupted() {
        return halted(Halt::Signal(s), "", &ds);
    }
    if fs::read_to_string(conf_s).is_ok_and(|t| t.contains(crate::mailfile::LINK_NAME)) {
        eprintln!("drover up: job mail (sbatch --mail-type) is written to {d}/mail.log");
    }
    eprintln!("drover up: ready");
    println!(
        "Drover cluster \"{}\" is up: {nodes} nodes, {cpus_each} CPUs each.",
        existing.name
    );
    if existing.cloud > 0 {
        println!(
            "{} cloud nodes ({}, partition cloud) are powered down until a job needs them.",
            existing.cloud,
            cloud::cloud_expr(existing.cloud)
        );
    }
    println!("export DROVER_CONF={conf_s} SLURM_CONF={conf_s} PATH={d}/bin:$PATH{rest_env}");
    let _ = std::io::stdout().flush();

    // Foreground until a signal or a daemon dies.
    match ds.wait_for(Duration::from_secs(100 * 365 * 86400), || false) {
        Err(Halt::Signal(_)) | Err(Halt::Timeout) | Ok(()) => {
            eprintln!("drover up: stopping");
            ds.stop_all(Duration::from_secs(15));
            cloud::stop_instances(dir);
            0
        }
        Err(Halt::Died(msg)) => {
            cloud::stop_instances(dir);
            err(&msg)
        }
    }
}

/// `drover keygen [PATH]`.
pub fn keygen(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("Usage: drover keygen [PATH]   (default /etc/drover/drover.key)");
        return 0;
    }
    if args.len() > 1 {
        eprintln!("drover keygen: error: too many arguments");
        return 1;
    }
    let path = PathBuf::from(
        args.first()
            .map(String::as_str)
            .unwrap_or("/etc/drover/drover.key"),
    );
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Err(e) = fs::create_dir_all(parent) {
            eprintln!(
                "drover keygen: error: cannot create {}: {e}",
                parent.display()
            );
            return 1;
        }
    }
    match ClusterKey::generate(&path) {
        Ok(()) => {
            println!("Wrote a new cluster key to {}", path.display());
            0
        }
        Err(e) => {
            eprintln!("drover keygen: error: {e}");
            1
        }
    }
}

/// The config's other name (`drover.conf` for `slurm.conf` and back), a
/// relative symbolic link, unless that name is taken already.
fn link_other_name(dir: &Path, conf: &Path) -> Result<(), String> {
    let file = conf.file_name().map(|f| f.to_string_lossy().into_owned());
    let other = if file.as_deref() == Some("slurm.conf") {
        "drover.conf"
    } else {
        "slurm.conf"
    };
    let link = dir.join(other);
    if link.exists() || link.is_symlink() {
        return Ok(());
    }
    symlink(Path::new(&file.unwrap_or_default()), &link)
}
