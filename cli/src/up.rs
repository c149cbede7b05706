//! `drover up` (a whole local cluster in one command) and `drover keygen`.

use std::fs;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use drover_proto::auth::ClusterKey;
use drover_proto::client::Credential;
use drover_proto::{GetNodesRequest, PingRequest};

use crate::opts::{self, opt, Arg, OptDef};

pub const TABLE: &[OptDef] = &[
    opt("dir", None, Arg::Required, "dir"),
    opt("nodes", Some('N'), Arg::Required, "nodes"),
    opt("cpus-per-node", None, Arg::Required, "cpus"),
    opt("mem-per-node", None, Arg::Required, "mem"),
    opt("gpus-per-node", None, Arg::Required, "gpus"),
    opt("partition", Some('p'), Arg::Required, "partition"),
    opt("help", Some('h'), Arg::No, "help"),
];

const USAGE: &str = "Usage: drover up --dir DIR [--nodes N] [--cpus-per-node C] [--mem-per-node MB]
                 [--gpus-per-node G] [--partition NAME]

Starts a controller, a node agent serving N emulated nodes and the
accounting daemon (SQLite) on loopback, with everything (configuration, key, state, logs) under DIR. Stays in the
foreground; Ctrl-C stops the cluster. Running it again reuses DIR.
";

/// The cluster's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    pub dir: String,
    pub name: String,
    pub nodes: u32,
    pub cpus: u32,
    pub mem_mb: u64,
    pub gpus: u32,
    pub partition: String,
    pub user: String,
    pub ctld_port: u16,
    pub agent_port: u16,
    pub dbd_port: u16,
}

/// `node[1-N]` (or `node1`).
pub fn node_expr(n: u32) -> String {
    if n == 1 {
        "node1".into()
    } else {
        format!("node[1-{n}]")
    }
}

/// The drover.conf `drover up` writes.
pub fn config_text(s: &Shape) -> String {
    let d = &s.dir;
    let mut c = String::new();
    c.push_str("# Written by drover up\n");
    c.push_str(&format!("ClusterName={}\n", s.name));
    c.push_str("SlurmctldHost=localhost(127.0.0.1)\n");
    c.push_str(&format!("SlurmctldPort={}\n", s.ctld_port));
    c.push_str(&format!("SlurmdPort={}\n", s.agent_port));
    c.push_str(&format!("SlurmUser={}\n", s.user));
    c.push_str(&format!("StateSaveLocation={d}/state\n"));
    c.push_str(&format!("SlurmdSpoolDir={d}/spool\n"));
    c.push_str(&format!("AuthInfo=socket={d}/run/auth.sock\n"));
    c.push_str(&format!("AuthKeyFile={d}/drover.key\n"));
    c.push_str("SlurmdTimeout=30\n");
    c.push_str("MinJobAge=300\n");
    c.push_str("MaxJobCount=200000\n");
    c.push_str("KillWait=5\n");
    c.push_str("SelectType=select/cons_tres\n");
    c.push_str("SelectTypeParameters=CR_CPU_Memory\n");
    c.push_str(&format!(
        "DefMemPerCPU={}\n",
        (s.mem_mb / u64::from(s.cpus.max(1))).max(1)
    ));
    c.push_str("AccountingStorageType=accounting_storage/slurmdbd\n");
    c.push_str("AccountingStorageHost=127.0.0.1\n");
    c.push_str(&format!("AccountingStoragePort={}\n", s.dbd_port));
    if s.gpus > 0 {
        c.push_str("GresTypes=gpu\n");
    }
    c.push_str(&format!(
        "NodeName={} NodeAddr=127.0.0.1 Port={} CPUs={} RealMemory={}{} State=UNKNOWN\n",
        node_expr(s.nodes),
        s.agent_port,
        s.cpus,
        s.mem_mb,
        if s.gpus > 0 {
            format!(" Gres=gpu:{}", s.gpus)
        } else {
            String::new()
        }
    ));
    c.push_str(&format!(
        "PartitionName={} Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n",
        s.partition
    ));
    c
}

/// cgroup.conf of a local cluster: every limit enforced by the kernel (when
/// the agent runs as root; otherwise it warns and runs jobs unconfined).
pub const CGROUP_CONF: &str = "# Written by drover up\nCgroupPlugin=autodetect\nConstrainRAMSpace=yes\nConstrainCores=yes\nConstrainDevices=yes\n";

/// droverdbd.conf: accounting on SQLite under DIR/dbd.
pub fn dbd_config_text(s: &Shape) -> String {
    let d = &s.dir;
    format!(
        "# Written by drover up\nDbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort={}\n\
         StorageType=accounting_storage/sqlite\nStateSaveLocation={d}/dbd\n\
         AuthKeyFile={d}/drover.key\nSlurmUser={}\n",
        s.dbd_port, s.user
    )
}

/// gres.conf for fake GPUs.
pub fn gres_text(s: &Shape) -> String {
    let files = if s.gpus == 1 {
        format!("{}/dev/nvidia0", s.dir)
    } else {
        format!("{}/dev/nvidia[0-{}]", s.dir, s.gpus - 1)
    };
    format!(
        "# Written by drover up\nNodeName={} Name=gpu File={files}\n",
        node_expr(s.nodes)
    )
}

/// What `drover up` needs back from an existing drover.conf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Existing {
    pub name: String,
    pub ctld_port: u16,
    pub auth_socket: String,
    pub nodes: u32,
    pub cpus: u32,
    /// AccountingStoragePort when accounting is on (slurmdbd type).
    pub dbd_port: Option<u16>,
}

/// Read the few keys `drover up` relies on (the real parser is the daemons').
pub fn read_existing(text: &str) -> Existing {
    let mut e = Existing {
        ctld_port: 6817,
        ..Default::default()
    };
    let mut acct = false;
    let mut acct_port = 6819;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        for tok in line.split_whitespace() {
            let Some((k, v)) = tok.split_once('=') else {
                continue;
            };
            match k.to_ascii_lowercase().as_str() {
                "clustername" => e.name = v.to_string(),
                "slurmctldport" => e.ctld_port = v.parse().unwrap_or(6817),
                "authinfo" => {
                    for part in v.split(',') {
                        if let Some(s) = part.strip_prefix("socket=") {
                            e.auth_socket = s.to_string();
                        }
                    }
                }
                "nodename" => {
                    if let Ok(h) = crate::hostlist::expand(v) {
                        e.nodes += h.len() as u32;
                    }
                }
                "cpus" if e.cpus == 0 => e.cpus = v.parse().unwrap_or(0),
                "accountingstoragetype" => acct = v.ends_with("slurmdbd"),
                "accountingstorageport" => acct_port = v.parse().unwrap_or(6819),
                _ => {}
            }
        }
    }
    if acct {
        e.dbd_port = Some(acct_port);
    }
    e
}

fn err(msg: &str) -> i32 {
    eprintln!("drover up: error: {msg}");
    1
}

fn free_port() -> Result<(std::net::TcpListener, u16), String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot pick a port: {e}"))?;
    let p = l.local_addr().map_err(|e| e.to_string())?.port();
    Ok((l, p))
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
            if let Ok(c) = std::ffi::CString::new(p.as_os_str().to_string_lossy().as_bytes()) {
                // SAFETY: mknod with a valid path; a character device 195:i.
                let rc = unsafe {
                    libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(195, i))
                };
                made = rc == 0;
            }
        }
        if !made {
            fs::write(&p, b"").map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    Ok(())
}

fn log_tail(path: &Path, n: usize) -> String {
    let Ok(f) = fs::File::open(path) else {
        return String::new();
    };
    let lines: Vec<String> = std::io::BufReader::new(f)
        .lines()
        .map_while(Result::ok)
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn spawn(bin: &Path, args: &[&str], log: &Path) -> Result<Child, String> {
    // Daemon logs name other users' jobs: 0600.
    let f = drover_proto::private::append(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let f2 = f.try_clone().map_err(|e| e.to_string())?;
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(f2))
        .stderr(Stdio::from(f))
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))
}

fn stop(child: &mut Child, grace: Duration) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Is the cluster up: controller answers and all nodes respond?
async fn cluster_ready(addr: &str, socket: &str, nodes: u32) -> bool {
    let Ok(token) = drover_proto::auth::fetch_token(Path::new(socket)) else {
        return false;
    };
    let Ok(mut c) = drover_proto::client::controller(addr, Credential::user(token)) else {
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
    for b in [&ctld_bin, &agent_bin, &dbd_bin] {
        if !b.exists() {
            return err(&format!(
                "{} not found next to {}",
                b.display(),
                exe.display()
            ));
        }
    }
    for c in crate::COMMANDS.iter().chain(std::iter::once(&"drover")) {
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

    // Key and configuration (kept across runs).
    let key = dir.join("drover.key");
    if !key.exists() {
        if let Err(e) = ClusterKey::generate(&key) {
            return err(&e);
        }
    }
    let conf = dir.join("drover.conf");
    let existing = if conf.exists() {
        match fs::read_to_string(&conf) {
            Ok(t) => {
                if p.has("nodes")
                    || p.has("cpus")
                    || p.has("mem")
                    || p.has("gpus")
                    || p.has("partition")
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
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
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
        drop((l1, l2, l3));
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
        let text = config_text(&shape);
        if let Err(e) = fs::write(&conf, &text) {
            return err(&format!("{}: {e}", conf.display()));
        }
        read_existing(&text)
    };
    let conf_s = conf.display().to_string();
    let nodes = existing.nodes.max(1);
    let node_list = node_expr(nodes);

    // Start the daemons (in the foreground: `-D`, so they stay our children).
    let ctld_log = dir.join("log/droverctld.log");
    let agent_log = dir.join("log/droverd.log");
    let dbd_log = dir.join("log/droverdbd.log");
    let dbd_conf = dir.join("droverdbd.conf").display().to_string();
    let mut dbd = match existing.dbd_port {
        Some(_) => match spawn(&dbd_bin, &["-D", "-f", &dbd_conf], &dbd_log) {
            Ok(c) => Some(c),
            Err(e) => return err(&e),
        },
        None => None,
    };
    let stop_dbd = |dbd: &mut Option<Child>| {
        if let Some(c) = dbd.as_mut() {
            stop(c, Duration::from_secs(10));
        }
    };
    let mut ctld = match spawn(&ctld_bin, &["-D", "-f", &conf_s], &ctld_log) {
        Ok(c) => c,
        Err(e) => {
            stop_dbd(&mut dbd);
            return err(&e);
        }
    };
    let mut agent = match spawn(
        &agent_bin,
        &["-D", "-f", &conf_s, "-N", &node_list],
        &agent_log,
    ) {
        Ok(c) => c,
        Err(e) => {
            stop(&mut ctld, Duration::from_secs(10));
            stop_dbd(&mut dbd);
            return err(&e);
        }
    };
    let rt = match crate::conn::runtime() {
        Ok(r) => r,
        Err(rc) => {
            stop(&mut agent, Duration::from_secs(10));
            stop(&mut ctld, Duration::from_secs(10));
            stop_dbd(&mut dbd);
            return rc;
        }
    };
    let addr = format!("127.0.0.1:{}", existing.ctld_port);
    let socket = if existing.auth_socket.is_empty() {
        format!("{d}/run/auth.sock")
    } else {
        existing.auth_socket.clone()
    };
    let died = |name: &str, log: &Path| {
        eprintln!(
            "drover up: error: {name} exited; last lines of {}:",
            log.display()
        );
        eprintln!("{}", log_tail(log, 30));
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(_)) = ctld.try_wait() {
            died("droverctld", &ctld_log);
            stop(&mut agent, Duration::from_secs(10));
            stop_dbd(&mut dbd);
            return 1;
        }
        if let Ok(Some(_)) = agent.try_wait() {
            died("droverd", &agent_log);
            stop(&mut ctld, Duration::from_secs(10));
            stop_dbd(&mut dbd);
            return 1;
        }
        if let Some(Ok(Some(_))) = dbd.as_mut().map(|c| c.try_wait()) {
            died("droverdbd", &dbd_log);
            stop(&mut agent, Duration::from_secs(10));
            stop(&mut ctld, Duration::from_secs(10));
            return 1;
        }
        if rt.block_on(cluster_ready(&addr, &socket, nodes)) {
            break;
        }
        if Instant::now() > deadline {
            eprintln!("drover up: error: the cluster did not come up within 60 seconds");
            eprintln!("--- {}\n{}", ctld_log.display(), log_tail(&ctld_log, 20));
            eprintln!("--- {}\n{}", agent_log.display(), log_tail(&agent_log, 20));
            stop(&mut agent, Duration::from_secs(10));
            stop(&mut ctld, Duration::from_secs(10));
            stop_dbd(&mut dbd);
            return 1;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let cpus_each = if existing.cpus > 0 {
        existing.cpus
    } else {
        cpus
    };
    println!(
        "Drover cluster \"{}\" is up: {nodes} nodes, {cpus_each} CPUs each.",
        existing.name
    );
    println!("export DROVER_CONF={conf_s} PATH={d}/bin:$PATH");
    let _ = std::io::stdout().flush();

    // Foreground until a signal or a daemon dies.
    let outcome = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return Err("cannot install signal handlers".to_string());
        };
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                _ = int.recv() => return Ok(()),
                _ = term.recv() => return Ok(()),
                _ = tick.tick() => {
                    if let Ok(Some(_)) = ctld.try_wait() {
                        return Err("droverctld".to_string());
                    }
                    if let Ok(Some(_)) = agent.try_wait() {
                        return Err("droverd".to_string());
                    }
                    if let Some(Ok(Some(_))) = dbd.as_mut().map(|c| c.try_wait()) {
                        return Err("droverdbd".to_string());
                    }
                }
            }
        }
    });
    match outcome {
        Ok(()) => {
            eprintln!("drover up: stopping");
            stop(&mut agent, Duration::from_secs(15));
            stop(&mut ctld, Duration::from_secs(15));
            stop_dbd(&mut dbd);
            0
        }
        Err(which) => {
            if which == "droverctld" {
                died("droverctld", &ctld_log);
            } else if which == "droverd" {
                died("droverd", &agent_log);
            } else if which == "droverdbd" {
                died("droverdbd", &dbd_log);
            } else {
                eprintln!("drover up: error: {which}");
            }
            stop(&mut agent, Duration::from_secs(10));
            stop(&mut ctld, Duration::from_secs(10));
            stop_dbd(&mut dbd);
            1
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(gpus: u32) -> Shape {
        Shape {
            dir: "/tmp/c".into(),
            name: "c".into(),
            nodes: 2,
            cpus: 4,
            mem_mb: 8000,
            gpus,
            partition: "debug".into(),
            user: "alice".into(),
            ctld_port: 7000,
            agent_port: 7001,
            dbd_port: 7002,
        }
    }

    #[test]
    fn config_has_exactly_the_keys() {
        let t = config_text(&shape(0));
        let expect = "# Written by drover up
ClusterName=c
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=7000
SlurmdPort=7001
SlurmUser=alice
StateSaveLocation=/tmp/c/state
SlurmdSpoolDir=/tmp/c/spool
AuthInfo=socket=/tmp/c/run/auth.sock
AuthKeyFile=/tmp/c/drover.key
SlurmdTimeout=30
MinJobAge=300
MaxJobCount=200000
KillWait=5
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=2000
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=7002
NodeName=node[1-2] NodeAddr=127.0.0.1 Port=7001 CPUs=4 RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP
";
        assert_eq!(t, expect);
        let e = read_existing(&t);
        assert_eq!(
            e,
            Existing {
                name: "c".into(),
                ctld_port: 7000,
                auth_socket: "/tmp/c/run/auth.sock".into(),
                nodes: 2,
                cpus: 4,
                dbd_port: Some(7002),
            }
        );
    }

    #[test]
    fn gpu_config() {
        let s = shape(2);
        let t = config_text(&s);
        assert!(t.contains("\nGresTypes=gpu\n"));
        assert!(t.contains("RealMemory=8000 Gres=gpu:2 State=UNKNOWN\n"));
        assert_eq!(
            gres_text(&s),
            "# Written by drover up\nNodeName=node[1-2] Name=gpu File=/tmp/c/dev/nvidia[0-1]\n"
        );
        let mut one = s.clone();
        one.gpus = 1;
        one.nodes = 1;
        assert!(gres_text(&one).contains("NodeName=node1 Name=gpu File=/tmp/c/dev/nvidia0\n"));
    }
}
