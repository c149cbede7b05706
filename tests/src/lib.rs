//! Test harness: a real Drover cluster (droverctld + droverd with emulated
//! nodes) on loopback ports in a temporary directory, driven through the real
//! commands (`sbatch`, `squeue`, ... as symlinks to the `drover` binary).
//!
//! The binaries come from the same cargo target directory as the test
//! executable; `cargo test --workspace` builds them (each daemon crate,
//! restd included, has integration tests of its own, which makes cargo build
//! its binaries).

#![deny(unsafe_code)]

pub mod acct;
mod commands;
pub mod configless;
mod daemons;
pub mod gpu;
pub mod ha;
pub mod hosts;
pub mod procs;
pub mod rest;
/// Every `unsafe` block of the harness (namespaces, terminals).
#[allow(unsafe_code)]
pub mod sys;
pub mod users;
pub mod webdriver;

pub use gpu::{can_bind_devices, fake_gpus, gpu_cluster, gpu_cluster_with};
pub use procs::{cpu_seconds, pids_mentioning};

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const COMMANDS: &[&str] = &[
    "sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct", "sstat", "sprio", "sshare",
    "sacctmgr", "sreport", "seff", "srun", "salloc", "sdiag", "sbcast", "sattach",
];

/// Directory holding `drover`, `droverctld`, `droverd`.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps dir");
    let dir = if deps.ends_with("deps") {
        deps.parent().expect("target dir").to_path_buf()
    } else {
        deps.to_path_buf()
    };
    for b in [
        "drover",
        "droverctld",
        "droverd",
        "droverdbd",
        "droverrestd",
        "droversim",
    ] {
        assert!(
            dir.join(b).exists(),
            "{} missing: run the suite with `cargo test --workspace` so the binaries are built",
            dir.join(b).display()
        );
    }
    dir
}

/// A loopback port no one listens on, for a daemon to bind later (below
/// the kernel's ephemeral range: see `drover_proto::ports`).
pub fn free_port() -> u16 {
    drover_proto::ports::pick().expect("free port").1
}

/// How to build a test cluster.
#[derive(Clone)]
pub struct Spec {
    pub nodes: u32,
    pub cpus: u32,
    pub mem_mb: u64,
    pub slurmd_timeout: u32,
    /// Extra drover.conf lines (before the node and partition lines).
    pub extra: Vec<String>,
    /// Replace the default node/partition lines (use `{AGENT_PORT}`).
    pub topology: Option<String>,
    /// Extra files written into the cluster directory before the daemons
    /// start (`gres.conf`, `cgroup.conf`, prolog scripts; `{DIR}` in the
    /// contents is the cluster directory). Names ending in `.sh` are made
    /// executable.
    pub files: Vec<(String, String)>,
    /// Run droverdbd and configure accounting: `sqlite`, or a PostgreSQL /
    /// MySQL server URL (a fresh database is made on it and dropped after).
    pub accounting: Option<String>,
    /// Reach the accounting database through a proxy the test can cut
    /// ([`Cluster::db_outage`]) to simulate a database outage.
    pub db_proxy: bool,
    /// Start the daemons with this umask (a careless init script's 0).
    pub umask: Option<u32>,
    /// Several hosts: every node on a host of its own and the controller
    /// (with droverdbd) on host `ctl`, each a network namespace with its own
    /// address, hostname and auth socket (see [`hosts::Net`] and
    /// [`Cluster::start_hosts`]). Commands run on `ctl` unless a test says
    /// otherwise ([`Cluster::run_on`]).
    pub hosts: bool,
    /// Multi-host mode: agents start configless (`droverd --conf-server`,
    /// no config file; the config needs `SlurmctldParameters=enable_configless`).
    pub configless: bool,
    /// Multi-host mode: hosts that are not nodes (login hosts), after the nodes.
    pub other_hosts: Vec<String>,
    /// Multi-host mode: a backup controller on host `ctl2` (second
    /// `SlurmctldHost`, same StateSaveLocation), started by
    /// [`Cluster::start_backup_ctld`].
    pub backup_ctld: bool,
    /// `SlurmUser` of the controller and droverdbd (default root): they
    /// start as root and switch to this user.
    pub slurm_user: Option<String>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            nodes: 2,
            cpus: 4,
            mem_mb: 4000,
            slurmd_timeout: 30,
            extra: Vec::new(),
            topology: None,
            files: Vec::new(),
            accounting: None,
            db_proxy: false,
            umask: None,
            hosts: false,
            configless: false,
            other_hosts: Vec::new(),
            backup_ctld: false,
            slurm_user: None,
        }
    }
}

pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    pub bin: PathBuf,
    pub spec: Spec,
    pub ctld_port: u16,
    pub agent_port: u16,
    ctld: Option<Child>,
    agent: Option<Child>,
    dbd: Option<Child>,
    /// droverdbd.conf when accounting is on.
    pub dbd_conf: Option<PathBuf>,
    pub dbd_port: u16,
    pub proxy: Option<crate::acct::Proxy>,
    /// Multi-host mode: one agent per node host, by host name.
    host_agents: Vec<(String, Child)>,
    /// Multi-host mode: the hosts (dropped last, after the daemons).
    pub net: Option<hosts::Net>,
    /// The backup controller on `ctl2` ([`Spec::backup_ctld`]).
    backup: Option<Child>,
}

impl Cluster {
    pub fn start(spec: Spec) -> Cluster {
        Cluster::start_waiting(spec, true)
    }

    /// A multi-host cluster ([`Spec::hosts`]), or None where this machine
    /// cannot make network namespaces: then the reason is printed, so a
    /// skipped test says so.
    pub fn start_hosts(spec: Spec) -> Option<Cluster> {
        if let Some(why) = hosts::Net::unavailable() {
            eprintln!("SKIPPED (multi-host): {why}");
            return None;
        }
        let c = Cluster::start(Spec {
            hosts: true,
            ..spec
        });
        // The controller may count a node before its agent has logged the
        // reply, and the agent serves its host's auth socket after that;
        // tests start once every agent has done both.
        let hosts: Vec<String> = c.host_agents.iter().map(|(h, _)| h.clone()).collect();
        for h in hosts {
            let log = format!("droverd-{h}");
            let deadline = Instant::now() + Duration::from_secs(30);
            let ready = |t: &str| {
                t.contains("registered 1 node(s)") && t.contains("serving the auth socket")
            };
            while !ready(&c.log_text(&log)) {
                assert!(
                    Instant::now() < deadline,
                    "{h}'s agent never registered and served its auth socket:\n{}",
                    c.log_text(&log)
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Some(c)
    }

    /// Start the daemons without waiting for the nodes to be idle (a test
    /// of nodes that come up drained).
    pub fn start_any(spec: Spec) -> Cluster {
        Cluster::start_waiting(spec, false)
    }

    fn start_waiting(spec: Spec, idle: bool) -> Cluster {
        let mut last_err = String::new();
        for _ in 0..3 {
            match Cluster::try_start(spec.clone(), idle) {
                Ok(c) => return c,
                Err(e) => last_err = e,
            }
        }
        panic!("cluster did not start: {last_err}");
    }

    fn try_start(spec: Spec, idle: bool) -> Result<Cluster, String> {
        let dir = tempfile::Builder::new()
            .prefix("drover-it-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        // Other users (the permission tests) must reach the auth socket and binaries.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        let bin = dir.path().join("bin");
        fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
        let real = bin_dir();
        for c in COMMANDS {
            std::os::unix::fs::symlink(real.join("drover"), bin.join(c))
                .map_err(|e| e.to_string())?;
        }
        let key = dir.path().join("drover.key");
        fs::write(&key, "0123456789abcdef0123456789abcdef-test-key\n")
            .map_err(|e| e.to_string())?;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).map_err(|e| e.to_string())?;
        let ctld_port = free_port();
        let agent_port = free_port();
        let d = dir.path().display().to_string();
        let net = if spec.hosts {
            let mut names = vec!["ctl".to_string()];
            if spec.backup_ctld {
                names.push("ctl2".to_string());
            }
            names.extend((1..=spec.nodes).map(|i| format!("node{i}")));
            names.extend(spec.other_hosts.iter().cloned());
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            Some(hosts::Net::new(dir.path(), &names)?)
        } else {
            None
        };
        let (ctld_host, spool, auth) = match &net {
            Some(n) if spec.backup_ctld => (
                format!(
                    "ctl({})\nSlurmctldHost=ctl2({})",
                    n.host("ctl").addr,
                    n.host("ctl2").addr
                ),
                format!("{d}/spool-%n"),
                format!("{d}/run/auth.sock"),
            ),
            Some(n) => (
                format!("ctl({})", n.host("ctl").addr),
                format!("{d}/spool-%n"),
                format!("{d}/run/auth.sock"),
            ),
            None => (
                "localhost(127.0.0.1)".to_string(),
                format!("{d}/spool"),
                format!("{d}/auth.sock"),
            ),
        };
        let slurm_user = spec.slurm_user.as_deref().unwrap_or("root");
        let mut conf = format!(
            "# drover integration test\nClusterName=test\nSlurmctldHost={ctld_host}\n\
             SlurmctldPort={ctld_port}\nSlurmdPort={agent_port}\nSlurmUser={slurm_user}\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={spool}\nAuthInfo=socket={auth}\n\
             AuthKeyFile={d}/drover.key\nSlurmdTimeout={}\nMinJobAge=300\nKillWait=2\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU_Memory\n",
            spec.slurmd_timeout
        );
        let mut acct = None;
        if let Some(backend) = &spec.accounting {
            let a = crate::acct::prepare(dir.path(), backend, spec.db_proxy)?;
            for f in ["droverdbd.conf", "droverdbd-direct.conf"] {
                let p = dir.path().join(f);
                let text = fs::read_to_string(&p).map_err(|e| e.to_string())?;
                fs::write(
                    &p,
                    text.replace("SlurmUser=root\n", &format!("SlurmUser={slurm_user}\n")),
                )
                .map_err(|e| e.to_string())?;
            }
            conf.push_str(&format!(
                "AccountingStorageType=accounting_storage/slurmdbd\n\
                 AccountingStorageHost=127.0.0.1\nAccountingStoragePort={}\n",
                a.port
            ));
            acct = Some(a);
        }
        for l in &spec.extra {
            conf.push_str(l);
            conf.push('\n');
        }
        match &spec.topology {
            Some(t) => conf.push_str(&t.replace("{AGENT_PORT}", &agent_port.to_string())),
            None if net.is_some() => {
                let net = net.as_ref().expect("hosts");
                for i in 1..=spec.nodes {
                    let name = format!("node{i}");
                    conf.push_str(&format!(
                        "NodeName={name} NodeHostname={name} NodeAddr={} Port={agent_port} \
                         CPUs={} RealMemory={}\n",
                        net.host(&name).addr,
                        spec.cpus,
                        spec.mem_mb
                    ));
                }
                conf.push_str(
                    "PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n",
                );
            }
            None => conf.push_str(&format!(
                "NodeName=node[1-{}] NodeAddr=127.0.0.1 Port={agent_port} CPUs={} RealMemory={}\n\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n",
                spec.nodes, spec.cpus, spec.mem_mb
            )),
        }
        let conf = conf.replace("{DIR}", &d);
        for (name, text) in &spec.files {
            let p = dir.path().join(name);
            fs::write(&p, text.replace("{DIR}", &d)).map_err(|e| e.to_string())?;
            if name.ends_with(".sh") {
                fs::set_permissions(&p, fs::Permissions::from_mode(0o755))
                    .map_err(|e| e.to_string())?;
            }
        }
        let conf_path = dir.path().join("drover.conf");
        fs::write(&conf_path, conf).map_err(|e| e.to_string())?;
        let forced = spec
            .extra
            .iter()
            .any(|l| l.eq_ignore_ascii_case("TLSType=tls/rustls"));
        if net.is_some() || forced {
            // Daemons listen on the hosts' own addresses (or TLS is forced
            // on loopback): a cluster CA and a certificate per host.
            make_certificates(&conf_path, net.is_none())?;
        }
        let mut c = Cluster {
            dir,
            conf: conf_path,
            bin,
            spec,
            ctld_port,
            agent_port,
            ctld: None,
            agent: None,
            dbd: None,
            dbd_conf: acct.as_ref().map(|a| a.conf.clone()),
            dbd_port: acct.as_ref().map(|a| a.port).unwrap_or(0),
            proxy: acct.and_then(|a| a.proxy),
            host_agents: Vec::new(),
            net,
            backup: None,
        };
        if c.dbd_conf.is_some() {
            c.start_dbd()?;
        }
        c.start_ctld()?;
        c.start_agent()?;
        if idle {
            c.wait_nodes_idle(Duration::from_secs(30))?;
        }
        Ok(c)
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// `drover ca init` and `drover ca issue` (every host of the config) for
/// the cluster whose config is `conf`: files in `tls/` beside it. With
/// `loopback`, also one for this machine's own name (the daemons' files)
/// valid for 127.0.0.1.
pub fn make_certificates(conf: &Path, loopback: bool) -> Result<(), String> {
    let host = fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string();
    let local = ["ca", "issue", host.as_str(), "--san", "127.0.0.1"];
    let mut steps = vec![&["ca", "init"][..], &["ca", "issue"][..]];
    if loopback {
        steps.push(&local[..]);
    }
    for args in steps {
        let out = Command::new(bin_dir().join("drover"))
            .args(args)
            .env("DROVER_CONF", conf)
            .output()
            .map_err(|e| format!("drover: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "drover {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

pub(crate) fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// `Key=Value` from scontrol's one-line output.
pub fn field(text: &str, key: &str) -> Option<String> {
    let pat = format!("{key}=");
    text.split_whitespace()
        .find_map(|tok| tok.strip_prefix(&pat).map(str::to_string))
}

pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.pause_agent(false); // a test that failed while it was paused
        if std::thread::panicking() {
            // The test failed: its daemons' last words go with the report
            // (the cluster directory is removed below).
            let hosts = self.host_agents.iter().map(|(h, _)| format!("droverd-{h}"));
            let names: Vec<String> = ["droverctld", "droverctld-ctl2", "droverd", "droverdbd"]
                .iter()
                .map(|s| s.to_string())
                .chain(hosts)
                .collect();
            for d in &names {
                let t = self.log_text(d);
                if !t.is_empty() {
                    eprintln!("--- {d} log (tail) ---\n{}", tail(&t));
                }
            }
        }
        // Cancel what is left so no job outlives its test, then stop the daemons.
        if self.ctld.is_some() && (self.agent.is_some() || !self.host_agents.is_empty()) {
            let _ = self
                .cmd("scancel")
                .args(["--state=RUNNING", "-u", "root"])
                .output();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                let out = self.run("squeue", &["-h", "-t", "R,CG", "-o", "%i"]);
                if !out.status.success() || out.stdout.iter().all(|b| b.is_ascii_whitespace()) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Cluster::kill(&mut self.agent, libc::SIGTERM);
        for (_, mut c) in std::mem::take(&mut self.host_agents) {
            let _ = crate::sys::kill(c.id() as i32, libc::SIGTERM);
            daemons::reap(&mut c, libc::SIGTERM);
        }
        Cluster::kill(&mut self.ctld, libc::SIGTERM);
        Cluster::kill(&mut self.backup, libc::SIGTERM);
        Cluster::kill(&mut self.dbd, libc::SIGTERM);
        self.drop_accounting_db();
        let me = self.path().display().to_string();
        for pid in pids_mentioning(&me) {
            let _ = crate::sys::kill(pid, libc::SIGKILL);
        }
    }
}
