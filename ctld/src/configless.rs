//! Configless hosts (`SlurmctldParameters=enable_configless`): the files
//! served to agents and login hosts that have none of their own, and
//! `scontrol reconfigure` reaching every agent.

use std::collections::BTreeMap;

use drover_conf::slurmconf::Config;

use crate::ctld::{Ctld, Effect};

/// The refusal when the config does not allow it.
pub const NOT_ENABLED: &str =
    "configless mode is not enabled on the controller (SlurmctldParameters=enable_configless)";

/// Files beside the main config that agents read when they are there.
pub const SIDE_FILES: [&str; 2] = ["gres.conf", "cgroup.conf"];

/// Does the config let hosts fetch it?
pub fn enabled(cfg: &Config) -> bool {
    cfg.get("SlurmctldParameters").is_some_and(|v| {
        v.split(',')
            .any(|p| p.trim().eq_ignore_ascii_case("enable_configless"))
    })
}

impl Ctld {
    /// Ask every registered agent (once per agent, however many nodes it
    /// serves) to re-read its config; failures are logged, the nodes that
    /// do not answer are handled as ever (SlurmdTimeout).
    pub fn reconfigure_agents(&mut self) {
        let mut by_addr: BTreeMap<String, String> = BTreeMap::new();
        for n in self
            .cluster
            .nodes
            .iter()
            .filter(|n| n.registered && n.responding)
        {
            if let Some(addr) = self.agent_addr(n.name()) {
                by_addr.entry(addr).or_insert_with(|| n.name().to_string());
            }
        }
        tracing::info!(
            "reconfigure: asking {} agent(s) to re-read their config",
            by_addr.len()
        );
        let agents = by_addr
            .into_iter()
            .map(|(addr, node)| (node, addr))
            .collect();
        self.effects.push(Effect::ReconfigureAgents { agents });
    }
}
