//! Starting, stopping, pausing and signalling a test cluster's daemons
//! (controller, agents, the backup controller), their logs and command
//! lines.

use super::*;

impl Cluster {
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
                reap(&mut c, sig);
            }
        }
    }

    pub(crate) fn kill(child: &mut Option<Child>, sig: i32) {
        if let Some(mut c) = child.take() {
            let _ = crate::sys::kill(c.id() as i32, sig);
            reap(&mut c, sig);
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
}

/// Wait for a daemon sent `sig` to exit. One still there after a minute
/// ignored it: it is killed, and the test fails (unless it is failing
/// already) instead of waiting for ever.
pub(crate) fn reap(c: &mut Child, sig: i32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while matches!(c.try_wait(), Ok(None)) {
        if std::time::Instant::now() >= deadline {
            let _ = c.kill();
            let _ = c.wait();
            if !std::thread::panicking() {
                panic!("process {} ignored signal {sig} for a minute", c.id());
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
