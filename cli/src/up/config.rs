//! The files `drover up` writes (pure text builders) and what it reads back.

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
    /// `--cloud-nodes`: one port per emulated cloud node (`up/cloud.rs`).
    pub cloud_ports: Vec<u16>,
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
    if s.cloud_ports.is_empty() {
        c.push_str(&format!("SlurmdSpoolDir={d}/spool\n"));
    } else {
        // An agent per cloud node: a spool directory each.
        c.push_str(&format!("SlurmdSpoolDir={d}/spool/%n\n"));
    }
    c.push_str(&format!("AuthInfo=socket={d}/run/auth.sock\n"));
    c.push_str(&format!("AuthKeyFile={d}/drover.key\n"));
    // The REST API's tokens (scontrol token, droverrestd).
    c.push_str("AuthAltTypes=auth/jwt\n");
    c.push_str(&format!("AuthAltParameters=jwt_key={d}/jwt.key\n"));
    c.push_str("SlurmdTimeout=30\n");
    c.push_str("MinJobAge=300\n");
    c.push_str("MaxJobCount=200000\n");
    c.push_str("KillWait=5\n");
    // Job mail lands in DIR/mail.log (no mail server needed).
    c.push_str(&format!(
        "MailProg={d}/bin/{}\n",
        crate::mailfile::LINK_NAME
    ));
    c.push_str("SelectType=select/cons_tres\n");
    c.push_str("SelectTypeParameters=CR_CPU_Memory\n");
    c.push_str(&format!(
        "DefMemPerCPU={}\n",
        (s.mem_mb / u64::from(s.cpus.max(1))).max(1)
    ));
    // Slurm 23.11's default priority plugin, with fair-share dominating, so
    // `sprio` and `sshare` have something to show on the demo cluster.
    c.push_str(PRIORITY);
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
    let part_nodes = if s.cloud_ports.is_empty() {
        "ALL".to_string()
    } else {
        node_expr(s.nodes)
    };
    c.push_str(&format!(
        "PartitionName={} Nodes={part_nodes} Default=YES MaxTime=UNLIMITED State=UP\n",
        s.partition
    ));
    if !s.cloud_ports.is_empty() {
        c.push_str(&super::cloud::config_lines(
            d,
            &s.cloud_ports,
            s.cpus,
            s.mem_mb,
        ));
    }
    c
}

/// The multifactor priority settings of a local cluster.
pub const PRIORITY: &str = "PriorityType=priority/multifactor\n\
PriorityWeightFairshare=10000\n\
PriorityWeightAge=1000\n\
PriorityWeightJobSize=500\n\
PriorityWeightPartition=1000\n\
PriorityDecayHalfLife=7-0\n\
PriorityMaxAge=7-0\n";

/// The account `drover up` puts its user in (fair-share needs an association).
pub const DEMO_ACCOUNT: &str = "demo";

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
    /// `State=CLOUD` nodes (not in `nodes`: agents of their own).
    pub cloud: u32,
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
        let cloud = line
            .split_whitespace()
            .any(|t| t.eq_ignore_ascii_case("state=cloud"));
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
                    if let Ok(h) = drover_conf::hostlist::expand(v) {
                        if cloud {
                            e.cloud += h.len() as u32;
                        } else {
                            e.nodes += h.len() as u32;
                        }
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
            cloud_ports: Vec::new(),
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
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=/tmp/c/jwt.key
SlurmdTimeout=30
MinJobAge=300
MaxJobCount=200000
KillWait=5
MailProg=/tmp/c/bin/drover-mail
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=2000
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightAge=1000
PriorityWeightJobSize=500
PriorityWeightPartition=1000
PriorityDecayHalfLife=7-0
PriorityMaxAge=7-0
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=7002
NodeName=node[1-2] NodeAddr=127.0.0.1 Port=7001 CPUs=4 RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP
";
        assert_eq!(t, expect);
        // The daemons' parser accepts it, and it is multifactor.
        let (cfg, _) = drover_conf::slurmconf::parse_str(&t, "drover.conf", &mut |p| {
            Err(format!("no include {p}"))
        })
        .expect("valid config");
        assert_eq!(cfg.priority_type, "priority/multifactor");
        assert_eq!(cfg.priority_param("PriorityWeightFairshare"), Some("10000"));
        let e = read_existing(&t);
        assert_eq!(
            e,
            Existing {
                name: "c".into(),
                ctld_port: 7000,
                auth_socket: "/tmp/c/run/auth.sock".into(),
                nodes: 2,
                cloud: 0,
                cpus: 4,
                dbd_port: Some(7002),
            }
        );
    }

    #[test]
    fn cloud_nodes_get_a_partition_and_agents_of_their_own() {
        let mut s = shape(0);
        s.cloud_ports = vec![7100, 7101, 7102];
        let t = config_text(&s);
        assert!(t.contains("SlurmdSpoolDir=/tmp/c/spool/%n\n"));
        assert!(t.contains("PartitionName=debug Nodes=node[1-2] Default=YES"));
        assert!(t.contains("PartitionName=cloud Nodes=cloud[1-3] "));
        let (cfg, _) = drover_conf::slurmconf::parse_str(&t, "drover.conf", &mut |p| {
            Err(format!("no include {p}"))
        })
        .expect("valid config");
        assert_eq!(cfg.nodes.len(), 5);
        let e = read_existing(&t);
        assert_eq!((e.nodes, e.cloud), (2, 3));
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
