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
pub mod configless;
pub mod gpu;
pub mod ha;
pub mod hosts;
pub mod procs;
pub mod rest;
/// Every `unsafe` block of the harness (namespaces, terminals).
#[allow(unsafe_code)]
pub mod sys;
pub mod webdriver;

pub use gpu::{can_bind_devices, fake_gpus, gpu_cluster, gpu_cluster_with};
pub use procs::{cpu_seconds, pids_mentioning};

use std::fs;
use std::net::TcpListener;
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

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
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

    pub(crate) fn log(&self, name: &str) -> Stdio {
        let f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path().join(format!("{name}.log")))
            .expect("log file");
        Stdio::from(f)
    }

    pub fn log_text(&self, name: &str) -> String {
        fs::read_to_string(self.path().join(format!("{name}.log"))).unwrap_or_default()
    }

    /// A daemon's command line, with the spec's umask (on the controller
    /// host in multi-host mode).
    pub(crate) fn daemon(&self, name: &str) -> Command {
        self.daemon_on("ctl", name)
    }

    /// A daemon's command line on `host` (multi-host mode), with the
    /// spec's umask.
    pub(crate) fn daemon_on(&self, host: &str, name: &str) -> Command {
        let mut cmd = match &self.net {
            Some(net) => net.command(host, bin_dir().join(name)),
            None => Command::new(bin_dir().join(name)),
        };
        if let Some(mask) = self.spec.umask {
            crate::sys::umask_in_child(&mut cmd, mask);
        }
        cmd
    }

    /// The pids of the running daemons, by binary name.
    pub fn daemon_pids(&self) -> Vec<(&'static str, u32)> {
        [
            ("droverctld", &self.ctld),
            ("droverd", &self.agent),
            ("droverdbd", &self.dbd),
        ]
        .into_iter()
        .filter_map(|(n, c)| c.as_ref().map(|c| (n, c.id())))
        .collect()
    }

    pub fn start_ctld(&mut self) -> Result<(), String> {
        let child = self
            .daemon("droverctld")
            .arg("-f")
            .arg(&self.conf)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(self.log("droverctld"))
            .stderr(self.log("droverctld"))
            .spawn()
            .map_err(|e| e.to_string())?;
        self.ctld = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = self.run("scontrol", &["ping"]);
            if out.status.success() {
                return Ok(());
            }
            if let Some(c) = self.ctld.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    return Err(format!(
                        "droverctld exited {st}: {}",
                        self.log_text("droverctld")
                    ));
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "controller not up: {}",
                    self.log_text("droverctld")
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn start_agent(&mut self) -> Result<(), String> {
        if self.net.is_some() {
            for i in 1..=self.spec.nodes {
                if self.spec.configless {
                    self.start_host_agent_configless(&format!("node{i}"))?;
                } else {
                    self.start_host_agent(&format!("node{i}"))?;
                }
            }
            return Ok(());
        }
        let nodes = format!("node[1-{}]", self.spec.nodes);
        let child = self
            .daemon("droverd")
            .arg("-f")
            .arg(&self.conf)
            .arg("-N")
            .arg(&nodes)
            .arg("-D")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(self.log("droverd"))
            .stderr(self.log("droverd"))
            .spawn()
            .map_err(|e| e.to_string())?;
        self.agent = Some(child);
        Ok(())
    }

    /// Multi-host mode: start the agent of host `host` (it serves the
    /// nodes whose NodeHostname is that host); its log is `droverd-HOST`.
    pub fn start_host_agent(&mut self, host: &str) -> Result<(), String> {
        let conf = self.conf.clone();
        self.start_host_agent_with(host, &conf)
    }

    /// [`Cluster::start_host_agent`] with another config file (a host
    /// whose files differ from the controller's).
    pub fn start_host_agent_with(&mut self, host: &str, conf: &Path) -> Result<(), String> {
        let log = format!("droverd-{host}");
        let child = self
            .daemon_on(host, "droverd")
            .arg("-f")
            .arg(conf)
            .arg("-D")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(self.log(&log))
            .stderr(self.log(&log))
            .spawn()
            .map_err(|e| format!("droverd on {host}: {e}"))?;
        self.host_agents.push((host.to_string(), child));
        Ok(())
    }

    /// Multi-host mode: send `sig` to host `host`'s agent (and forget it
    /// unless the signal only pauses, resumes or reconfigures it).
    pub fn signal_host_agent(&mut self, host: &str, sig: i32) {
        let keep = sig == libc::SIGSTOP || sig == libc::SIGCONT || sig == libc::SIGHUP;
        let mut i = 0;
        while i < self.host_agents.len() {
            if self.host_agents[i].0 != host {
                i += 1;
                continue;
            }
            let pid = self.host_agents[i].1.id() as i32;
            let _ = crate::sys::kill(pid, sig);
            if keep {
                i += 1;
            } else {
                let (_, mut c) = self.host_agents.remove(i);
                let _ = c.wait();
            }
        }
    }

    fn kill(child: &mut Option<Child>, sig: i32) {
        if let Some(mut c) = child.take() {
            let _ = crate::sys::kill(c.id() as i32, sig);
            let _ = c.wait();
        }
    }

    /// Stop the controller with SIGTERM (a clean shutdown).
    pub fn stop_ctld(&mut self) {
        Cluster::kill(&mut self.ctld, libc::SIGTERM);
    }

    /// `kill -9` the controller.
    pub fn kill_ctld(&mut self) {
        Cluster::kill(&mut self.ctld, libc::SIGKILL);
    }

    /// `kill -9` the node agent (its jobs' supervisors live on).
    pub fn kill_agent(&mut self) {
        Cluster::kill(&mut self.agent, libc::SIGKILL);
    }

    /// Freeze the agent (SIGSTOP: calls to it hang, as to a node that
    /// stopped answering) or let it go on (SIGCONT).
    pub fn pause_agent(&self, pause: bool) {
        if let Some(c) = &self.agent {
            let sig = if pause { libc::SIGSTOP } else { libc::SIGCONT };
            let _ = crate::sys::kill(c.id() as i32, sig);
        }
    }

    /// Stop the agent with SIGTERM.
    pub fn stop_agent(&mut self) {
        Cluster::kill(&mut self.agent, libc::SIGTERM);
    }

    pub fn wait_nodes_idle(&self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.run("sinfo", &["-h", "-N", "-o", "%N %t"]);
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let lines: Vec<&str> = text.lines().collect();
            if out.status.success()
                && lines.len() as u32 >= self.spec.nodes
                && lines.iter().all(|l| l.ends_with(" idle"))
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "nodes not idle: {text}\n{}\n{}",
                    String::from_utf8_lossy(&out.stderr),
                    self.log_text("droverd")
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A command as a user would type it (`sbatch`, `squeue`, ...); on
    /// the controller host in multi-host mode.
    pub fn cmd(&self, prog: &str) -> Command {
        self.cmd_on("ctl", prog)
    }

    /// A command typed on host `host` (multi-host mode; the one host
    /// otherwise).
    pub fn cmd_on(&self, host: &str, prog: &str) -> Command {
        let mut c = match &self.net {
            Some(net) => net.command(host, self.bin.join(prog)),
            None => Command::new(self.bin.join(prog)),
        };
        c.env("DROVER_CONF", &self.conf)
            .env_remove("SLURM_CONF")
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display()),
            )
            .current_dir(self.path());
        c
    }

    pub fn run(&self, prog: &str, args: &[&str]) -> Output {
        self.cmd(prog).args(args).output().expect("run command")
    }

    /// Run a command on host `host` (multi-host mode).
    pub fn run_on(&self, host: &str, prog: &str, args: &[&str]) -> Output {
        self.cmd_on(host, prog)
            .args(args)
            .output()
            .expect("run command")
    }

    /// Run as another user (uid = gid = `uid`).
    pub fn run_as(&self, uid: u32, prog: &str, args: &[&str]) -> Output {
        let mut c = self.cmd(prog);
        c.args(args).uid(uid).gid(uid);
        c.output().expect("run command as user")
    }

    /// Run and require success; stdout as text.
    pub fn ok(&self, prog: &str, args: &[&str]) -> String {
        let out = self.run(prog, args);
        assert!(
            out.status.success(),
            "{prog} {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Write a script file in the cluster dir and return its path.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.path().join(name);
        fs::write(&p, body).expect("write script");
        p
    }

    /// `sbatch --parsable ARGS SCRIPT` -> job id.
    pub fn sbatch(&self, args: &[&str], script: &str) -> u32 {
        self.sbatch_env(args, script, &[])
    }

    /// Same, with extra variables in the submitting environment.
    pub fn sbatch_env(&self, args: &[&str], script: &str, env: &[(&str, &str)]) -> u32 {
        let p = self.script(&format!("job-{}.sh", unique()), script);
        let mut all: Vec<&str> = vec!["--parsable"];
        all.extend_from_slice(args);
        let ps = p.display().to_string();
        all.push(&ps);
        let mut cmd = self.cmd("sbatch");
        cmd.args(&all);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = cmd.output().expect("run sbatch");
        assert!(
            o.status.success(),
            "sbatch {all:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.trim()
            .split(';')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("sbatch printed {out:?}"))
    }

    /// A job field from `scontrol show job -o ID` (`JobState`, `ExitCode`, ...).
    pub fn job_field(&self, id: &str, key: &str) -> Option<String> {
        let out = self.run("scontrol", &["show", "job", "-o", id]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        field(&text, key)
    }

    /// Wait until the job's state is one of `states` (Slurm long names).
    pub fn wait_state(&self, id: &str, states: &[&str], timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        loop {
            if let Some(s) = self.job_field(id, "JobState") {
                if states.contains(&s.as_str()) {
                    return s;
                }
                last = s;
            }
            if Instant::now() > deadline {
                panic!(
                    "job {id} did not reach {states:?} (last {last}):\n{}\n--- ctld\n{}\n--- agent\n{}",
                    self.ok("scontrol", &["show", "job", id]),
                    tail(&self.log_text("droverctld")),
                    tail(&self.log_text("droverd"))
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn wait_done(&self, id: u32) -> String {
        self.wait_state(
            &id.to_string(),
            &[
                "COMPLETED",
                "FAILED",
                "CANCELLED",
                "TIMEOUT",
                "NODE_FAIL",
                "OUT_OF_MEMORY",
            ],
            Duration::from_secs(60),
        )
    }

    /// Wait for the end and require a final state, with diagnostics if not.
    pub fn expect_end(&self, id: u32, want: &str) {
        let got = self.wait_done(id);
        if got != want {
            panic!(
                "job {id} ended {got}, expected {want}:\n{}\n--- ctld\n{}\n--- agent\n{}",
                self.ok("scontrol", &["show", "job", &id.to_string()]),
                tail(&self.log_text("droverctld")),
                tail(&self.log_text("droverd"))
            );
        }
    }

    /// Wait for a file to exist with content matching `pred`.
    pub fn wait_file(&self, path: &Path, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(t) = fs::read_to_string(path) {
                if pred(&t) {
                    return t;
                }
            }
            if Instant::now() > deadline {
                panic!(
                    "{} never matched; content: {:?}",
                    path.display(),
                    fs::read_to_string(path).ok()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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
            let _ = c.wait();
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
