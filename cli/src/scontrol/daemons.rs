//! `scontrol show daemons` (pure).

/// `scontrol show daemons`: the daemons this host should run, in Slurm's
/// order and spacing (`slurmctld slurmd`), by Drover's names: the
/// controller where a `SlurmctldHost` is this host (or `localhost`), the
/// node agent where a node is this host (by name, by `NodeHostname`, or
/// `localhost`).
pub fn daemons_here(cfg: &drover_conf::Config, hostname: &str) -> String {
    let short = hostname.split('.').next().unwrap_or(hostname);
    let here = |n: &str| n == short || n == hostname;
    let ctld = cfg.slurmctld_host.iter().any(|h| {
        h.name
            .split(',')
            .any(|t| here(t) || t.eq_ignore_ascii_case("localhost"))
    });
    let node = cfg
        .nodes
        .iter()
        .any(|n| here(&n.name) || here(&n.node_hostname))
        || cfg.nodes.iter().any(|n| n.name == "localhost");
    let any = !cfg.slurmctld_host.is_empty();
    let mut out = String::new();
    if any && ctld {
        out.push_str("droverctld ");
    }
    if any && node {
        out.push_str("droverd");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemons_of_this_host() {
        let (cfg, _) = drover_conf::slurmconf::parse_str(
            "SlurmctldHost=ctl\nNodeName=n1 NodeHostname=box1\nNodeName=n2\nPartitionName=p Nodes=ALL\n",
            "slurm.conf",
            &mut |_| Err("no includes".into()),
        )
        .unwrap();
        assert_eq!(daemons_here(&cfg, "ctl.example.org"), "droverctld ");
        assert_eq!(daemons_here(&cfg, "box1"), "droverd");
        assert_eq!(daemons_here(&cfg, "n2"), "droverd");
        assert_eq!(daemons_here(&cfg, "other"), "");
    }
}
