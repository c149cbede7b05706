//! Configless hosts (`SlurmctldParameters=enable_configless`): the files
//! served to agents and login hosts that have none of their own, and
//! `scontrol reconfigure` reaching every agent.

use std::collections::HashMap;
use std::path::Path;

use drover_conf::slurmconf::Config;
use drover_proto::{AgentReconfigureRequest, ConfigFile, ConfigFilesResponse};

use crate::ctld::Ctld;

/// The refusal when the config does not allow it.
pub const NOT_ENABLED: &str =
    "configless mode is not enabled on the controller (SlurmctldParameters=enable_configless)";

/// Files beside the main config that agents read when they are there.
const SIDE_FILES: [&str; 2] = ["gres.conf", "cgroup.conf"];

/// Does the config let hosts fetch it?
pub fn enabled(cfg: &Config) -> bool {
    cfg.get("SlurmctldParameters").is_some_and(|v| {
        v.split(',')
            .any(|p| p.trim().eq_ignore_ascii_case("enable_configless"))
    })
}

/// The files as they are now: the main config with its `Include`s spliced
/// in (as `drover.conf`, whatever its own name), and gres.conf and
/// cgroup.conf when they exist beside it. Blocking.
pub fn files(config_path: &Path) -> Result<ConfigFilesResponse, String> {
    let main = drover_conf::include::flatten(config_path).map_err(|e| e.to_string())?;
    let mut files = vec![ConfigFile {
        name: drover_conf::locate::CACHED_CONF.into(),
        text: main,
    }];
    let dir = config_path.parent().unwrap_or_else(|| Path::new("."));
    for name in SIDE_FILES {
        let p = dir.join(name);
        match std::fs::read_to_string(&p) {
            Ok(text) => files.push(ConfigFile {
                name: name.into(),
                text,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Ok(ConfigFilesResponse { files })
}

/// The files to serve for `cfg` read from `config_path`: None unless
/// configless mode is on. Blocking.
pub fn snapshot(
    cfg: &Config,
    config_path: &Path,
) -> Result<Option<std::sync::Arc<ConfigFilesResponse>>, String> {
    if !enabled(cfg) {
        return Ok(None);
    }
    files(config_path).map(|f| Some(std::sync::Arc::new(f)))
}

impl Ctld {
    /// Ask every registered agent (once per agent, however many nodes it
    /// serves) to re-read its config; failures are logged, the nodes that
    /// do not answer are handled as ever (SlurmdTimeout).
    pub fn reconfigure_agents(&mut self) {
        let nodes: Vec<String> = self
            .cluster
            .nodes
            .iter()
            .filter(|n| n.registered && n.responding)
            .map(|n| n.name().to_string())
            .collect();
        let mut by_agent: HashMap<String, (String, drover_proto::client::Agent)> = HashMap::new();
        for node in nodes {
            let Some(addr) = self.agent_addr(&node) else {
                continue;
            };
            if by_agent.contains_key(&addr) {
                continue;
            }
            if let Some(agent) = self.agent_for(&node) {
                by_agent.insert(addr, (node, agent));
            }
        }
        tracing::info!(
            "reconfigure: asking {} agent(s) to re-read their config",
            by_agent.len()
        );
        for (addr, (node, mut agent)) in by_agent {
            tokio::spawn(async move {
                let mut req = tonic::Request::new(AgentReconfigureRequest {});
                req.set_timeout(std::time::Duration::from_secs(10));
                if let Err(s) = agent.reconfigure(req).await {
                    tracing::warn!(
                        "reconfigure: the agent of {node} ({addr}) refused: {}",
                        s.message()
                    );
                }
            });
        }
    }
}
