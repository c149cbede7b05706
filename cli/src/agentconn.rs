//! Talking to node agents directly (scontrol listpids, sbcast, sattach),
//! with the caller's own credential: the agent checks that the job is
//! theirs.

use std::path::Path;

use drover_conf::Config;
use drover_proto::client::{Agent, Credential};

/// `host:port` of the agent serving `node`.
pub fn agent_addr(cfg: &Config, node: &drover_conf::nodes::NodeConf) -> String {
    drover_conf::slurmconf::join_host_port(&node.node_addr, cfg.node_port(node))
}

/// A client of the agent serving the configured node `name` (errors printed
/// as `<cmd>: error: ...`).
pub fn agent_for(cmd: &str, cfg: &Config, name: &str) -> Result<Agent, i32> {
    let Some(node) = cfg.node(name) else {
        eprintln!("{cmd}: error: node {name} is not in the configuration");
        return Err(1);
    };
    let socket = cfg.auth_socket();
    drover_proto::auth::probe_socket(Path::new(&socket)).map_err(|e| {
        eprintln!("{cmd}: error: {e}");
        1
    })?;
    drover_proto::client::agent(&agent_addr(cfg, node), Credential::user(socket.into())).map_err(
        |e| {
            eprintln!("{cmd}: error: {e}");
            1
        },
    )
}

/// The node standing for this host (see `drover_conf::local`).
pub fn local_node_name(cfg: &Config) -> Option<String> {
    let full = drover_proto::auth::hostname();
    let short = drover_conf::local::short_host(&full).to_string();
    drover_conf::local::local_node(&cfg.nodes, &short, &full).map(|n| n.name.clone())
}
