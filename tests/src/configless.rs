//! Configless and login hosts in multi-host tests: agents started with
//! `droverd --conf-server` and no config file anywhere in their reach,
//! commands typed on such a host (they find the cached copy), and
//! `droverd --login` hosts that serve no node.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::Cluster;

impl Cluster {
    /// The controller as `--conf-server` names it (multi-host mode).
    pub fn conf_server(&self) -> String {
        let net = self.net.as_ref().expect("multi-host mode");
        format!("{}:{}", net.host("ctl").addr, self.ctld_port)
    }

    /// Host `host`'s conf cache as this test sees it (each host has its
    /// own `run/`, where its agent keeps the cache).
    pub fn conf_cache(&self, host: &str) -> PathBuf {
        self.path()
            .join("hosts")
            .join(host)
            .join("run")
            .join("conf")
    }

    /// The conf cache as the processes of any host see it.
    fn conf_cache_seen(&self) -> PathBuf {
        self.path().join("run").join("conf")
    }

    fn configless_daemon(&self, host: &str, extra: &[&str]) -> Command {
        let mut cmd = self.daemon_on(host, "droverd");
        let log = format!("droverd-{host}");
        cmd.arg("--conf-server")
            .arg(self.conf_server())
            .arg("--key")
            .arg(self.path().join("drover.key"))
            .args(extra)
            .arg("-D")
            .env_remove("DROVER_CONF")
            .env_remove("SLURM_CONF")
            .env("DROVER_CONF_CACHE", self.conf_cache_seen())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(self.log(&log))
            .stderr(self.log(&log));
        cmd
    }

    /// Start host `host`'s agent configless: it is told only the
    /// controller's address and the key file.
    pub fn start_host_agent_configless(&mut self, host: &str) -> Result<(), String> {
        let child = self
            .configless_daemon(host, &[])
            .spawn()
            .map_err(|e| format!("droverd on {host}: {e}"))?;
        self.host_agents.push((host.to_string(), child));
        Ok(())
    }

    /// Start `droverd --login` (configless) on host `host`, a host that is
    /// no node; its log is `droverd-HOST`.
    pub fn start_login_host(&mut self, host: &str) -> Result<(), String> {
        let child = self
            .configless_daemon(host, &["--login"])
            .spawn()
            .map_err(|e| format!("droverd --login on {host}: {e}"))?;
        self.host_agents.push((host.to_string(), child));
        Ok(())
    }

    /// A command typed on configless host `host`: no `DROVER_CONF`, so it
    /// finds the host's cached config.
    pub fn cmd_configless(&self, host: &str, prog: &str) -> Command {
        let mut c = self.cmd_on(host, prog);
        c.env_remove("DROVER_CONF")
            .env_remove("SLURM_CONF")
            .env("DROVER_CONF_CACHE", self.conf_cache_seen());
        c
    }
}
