//! Which configured nodes are this host: the agent picks the nodes it
//! serves with these rules, and the commands that talk to the local agent
//! (`scontrol listpids`) find it the same way. Pure.

use std::net::IpAddr;

use crate::nodes::NodeConf;

/// A host name without its domain.
pub fn short_host(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Whether an address names this host (loopback, `localhost`, our host name).
pub fn is_local_addr(addr: &str, host_short: &str, host_full: &str) -> bool {
    let a = addr.trim().trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = a.parse::<IpAddr>() {
        return ip.is_loopback();
    }
    a.eq_ignore_ascii_case("localhost")
        || a.eq_ignore_ascii_case(host_full)
        || short_host(a).eq_ignore_ascii_case(host_short)
}

/// Whether a node's NodeHostname (else its name) is this host.
pub fn is_this_host(node_hostname: &str, node_name: &str, host_short: &str) -> bool {
    let h = if node_hostname.is_empty() {
        node_name
    } else {
        node_hostname
    };
    short_host(h).eq_ignore_ascii_case(host_short)
}

/// The node standing for this host: the first whose NodeHostname is this
/// host, else the first with a local NodeAddr (emulated nodes).
pub fn local_node<'a>(
    nodes: &'a [NodeConf],
    host_short: &str,
    host_full: &str,
) -> Option<&'a NodeConf> {
    nodes
        .iter()
        .find(|n| is_this_host(&n.node_hostname, &n.name, host_short))
        .or_else(|| {
            nodes
                .iter()
                .find(|n| is_local_addr(&n.node_addr, host_short, host_full))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, host: &str, addr: &str) -> NodeConf {
        let mut n = NodeConf::new(name);
        n.node_hostname = host.into();
        n.node_addr = addr.into();
        n
    }

    #[test]
    fn host_name_first_then_a_local_address() {
        let nodes = vec![
            node("a", "a", "10.0.0.1"),
            node("b", "vm", "10.0.0.2"),
            node("c", "c", "127.0.0.1"),
        ];
        assert_eq!(local_node(&nodes, "vm", "vm.example").unwrap().name, "b");
        assert_eq!(local_node(&nodes, "other", "other").unwrap().name, "c");
        assert!(local_node(&nodes[..1], "other", "other").is_none());
        assert!(is_local_addr("[::1]", "vm", "vm"));
        assert!(!is_local_addr("10.1.1.1", "vm", "vm"));
    }
}
