//! What the agent takes from the configuration: which nodes it serves,
//! where it listens, where the controller is, the spool directory.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use drover_conf::slurmconf::Config;
use drover_conf::NodeConf;
use drover_proto::{GresInventory, NodeRegistration};

use crate::args::Args;

/// Resources of one node this agent serves, as configured.
#[derive(Debug, Clone)]
pub struct ServedNode {
    pub name: String,
    pub addr: String,
    pub hostname: String,
    pub cpus: u32,
    pub boards: u32,
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    pub real_memory: u64,
    pub tmp_disk: u64,
    pub gres: Vec<GresInventory>,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub config_path: PathBuf,
    pub cluster_name: String,
    pub nodes: Vec<ServedNode>,
    /// More than one node, or --emulate: report configured resources as is.
    pub emulated: bool,
    pub listen: SocketAddr,
    pub spool_dir: PathBuf,
    /// `host:port` of the primary controller.
    pub controller: String,
    pub auth_socket: PathBuf,
    pub auth_ttl: i64,
    /// `AuthInfo=skew`: seconds of clock difference tolerated.
    pub auth_skew: u64,
    pub key_file: PathBuf,
    /// `TLSType`/`TLSParameters`, this host's TLS files, and the host
    /// names of the addresses it dials (see `drover_proto::tls`).
    pub tls: drover_conf::tls::TlsConf,
    pub tls_files: drover_conf::tls::TlsFiles,
    pub tls_names: Vec<(String, String)>,
    pub kill_wait: u32,
    pub log_file: Option<PathBuf>,
    pub pid_file: Option<PathBuf>,
    /// cgroup.conf (beside the main config; Slurm's defaults without one).
    pub cgroup_conf: drover_conf::CgroupConf,
    /// Set at start-up when cgroups are usable (see `startup::setup_cgroups`).
    pub cgroup: Option<crate::cgroup::System>,
    /// Prolog, Epilog, TaskProlog and their timeout.
    pub hooks: crate::stepd::hooks::Hooks,
    /// How often GPU usage is sampled (JobAcctGatherFrequency).
    pub gpu_sample: Option<std::time::Duration>,
    /// This host's short name.
    pub host: String,
    /// Set at start-up when the node cannot run jobs as configured (cgroups
    /// asked for but unusable): it registers drained with this reason and
    /// refuses launches.
    pub drain_reason: Option<String>,
    /// `TaskPlugin` includes task/affinity: srun tasks are bound to CPUs.
    pub task_affinity: bool,
    /// Digest of the config file as parsed, sent at registration.
    pub conf_hash: u64,
    /// uid of `SlurmUser`: with root, may act on any job here (listpids,
    /// sbcast, sattach).
    pub slurm_user_uid: u32,
    /// Configless: the controller the config comes from (`--conf-server`).
    pub conf_server: Option<String>,
}

/// `-f`, else `$DROVER_CONF`, else `$SLURM_CONF`, else `/etc/drover/drover.conf`.
pub fn config_path(args: &Args) -> PathBuf {
    if let Some(p) = &args.config {
        return p.clone();
    }
    drover_conf::locate::config_path()
}

/// A configured node reduced to what node selection looks at.
#[derive(Debug, Clone, Copy)]
pub struct NodeRef<'a> {
    pub name: &'a str,
    pub addr: &'a str,
    pub hostname: &'a str,
}

/// How the agent picks its nodes.
#[derive(Debug, Clone, Copy)]
pub enum Selection<'a> {
    /// `-N hostlist`.
    List(&'a str),
    /// `--emulate N`.
    Emulate(u32),
    /// Neither: nodes whose NodeHostname is this host.
    Host,
}

pub use drover_conf::local::is_local_addr;
use drover_conf::local::{is_this_host, short_host as short};

/// Pick the served nodes (indices into `nodes`), plus warnings. Pure.
pub fn select_nodes(
    nodes: &[NodeRef<'_>],
    sel: Selection<'_>,
    host_short: &str,
    host_full: &str,
) -> Result<(Vec<usize>, Vec<String>), String> {
    let mut warnings = Vec::new();
    let picked: Vec<usize> = match sel {
        Selection::List(expr) => {
            let names = drover_conf::hostlist::expand(expr)
                .map_err(|e| format!("-N {expr}: {}", e.message))?;
            if names.is_empty() {
                return Err(format!("-N {expr}: no node names"));
            }
            let mut out: Vec<usize> = Vec::new();
            for n in names {
                let i = nodes
                    .iter()
                    .position(|c| c.name == n)
                    .ok_or_else(|| format!("node {n} is not in the configuration"))?;
                if !out.contains(&i) {
                    out.push(i);
                }
            }
            out
        }
        Selection::Emulate(n) => {
            if n == 0 {
                return Err("--emulate needs a node count of at least 1".into());
            }
            let local: Vec<usize> = nodes
                .iter()
                .enumerate()
                .filter(|(_, c)| is_local_addr(c.addr, host_short, host_full))
                .map(|(i, _)| i)
                .take(n as usize)
                .collect();
            if local.is_empty() {
                return Err(
                    "--emulate: no configured node has a loopback NodeAddr or this host's name"
                        .into(),
                );
            }
            if local.len() < n as usize {
                warnings.push(format!(
                    "--emulate {n}: only {} configured node(s) are local; serving those",
                    local.len()
                ));
            }
            local
        }
        Selection::Host => {
            let out: Vec<usize> = nodes
                .iter()
                .enumerate()
                .filter(|(_, c)| is_this_host(c.hostname, c.name, host_short))
                .map(|(i, _)| i)
                .collect();
            if out.is_empty() {
                return Err(format!(
                    "this host ({host_short}) is not a node of the configuration: give -N NODES or --emulate N"
                ));
            }
            out
        }
    };
    Ok((picked, warnings))
}

/// Replace `%n` (first node name) and `%h` (host name) in a spool path, as slurmd does.
pub fn expand_spool(pattern: &str, node: &str, host: &str) -> String {
    pattern.replace("%n", node).replace("%h", host)
}

fn full_hostname() -> String {
    drover_proto::auth::hostname()
}

/// The GRES a node reports: the configured counts, with device files from gres.conf.
fn gres_inventory(node: &NodeConf, gres: Option<&drover_conf::GresConf>) -> Vec<GresInventory> {
    let entries = gres.map(|g| g.for_node(&node.name)).unwrap_or_default();
    node.gres
        .iter()
        .map(|g| {
            let ty = g.r#type.clone().unwrap_or_default();
            let mut files: Vec<String> = entries
                .iter()
                .filter(|e| e.name == g.name && (ty.is_empty() || e.r#type.as_deref() == Some(&ty)))
                .flat_map(|e| e.files.iter().cloned())
                .collect();
            files.truncate(g.count as usize);
            let minors = files.iter().filter_map(|f| device_minor(f)).collect();
            let autodetect = gres
                .and_then(|c| c.auto_detect_for(&node.name))
                .unwrap_or("")
                .to_string();
            GresInventory {
                name: g.name.clone(),
                r#type: ty,
                count: g.count,
                files,
                minors,
                autodetect,
            }
        })
        .collect()
}

/// The trailing number of a device path (`/dev/nvidia3` → 3).
pub fn device_minor(path: &str) -> Option<u32> {
    let digits: String = path
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

/// Turn the loaded configuration and the command line into settings.
pub fn from_config(
    cfg: &Config,
    config_path: &Path,
    args: &Args,
) -> Result<(Settings, Vec<String>), String> {
    let host_full = full_hostname();
    let host = short(&host_full).to_string();
    let refs: Vec<NodeRef<'_>> = cfg
        .nodes
        .iter()
        .map(|n| NodeRef {
            name: &n.name,
            addr: &n.node_addr,
            hostname: &n.node_hostname,
        })
        .collect();
    let sel = match (&args.nodes, args.emulate) {
        (Some(list), _) => Selection::List(list),
        (None, Some(n)) => Selection::Emulate(n),
        (None, None) => Selection::Host,
    };
    let (picked, mut warnings) = select_nodes(&refs, sel, &host, &host_full)?;
    let Some(&first_idx) = picked.first() else {
        return Err("no node to serve".into());
    };
    let first = &cfg.nodes[first_idx];

    let gres_path = config_path
        .parent()
        .unwrap_or(Path::new("/"))
        .join("gres.conf");
    let gres = if gres_path.exists() {
        match drover_conf::gresconf::load(&gres_path) {
            Ok((g, w)) => {
                warnings.extend(w.iter().map(|w| w.to_string()));
                Some(g)
            }
            Err(e) => return Err(e.to_string()),
        }
    } else {
        None
    };

    let cgroup_path = config_path
        .parent()
        .unwrap_or(Path::new("/"))
        .join("cgroup.conf");
    let cgroup_conf = if cgroup_path.exists() {
        match drover_conf::cgroupconf::load(&cgroup_path) {
            Ok((c, w)) => {
                warnings.extend(w.iter().map(|w| w.to_string()));
                c
            }
            Err(e) => return Err(e.to_string()),
        }
    } else {
        drover_conf::CgroupConf::default()
    };
    let hooks = crate::stepd::hooks::Hooks {
        prolog: cfg.prolog.clone().unwrap_or_default(),
        epilog: cfg.epilog.clone().unwrap_or_default(),
        task_prolog: cfg.task_prolog.clone().unwrap_or_default(),
        timeout: match cfg.get("PrologEpilogTimeout") {
            None => 0,
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("PrologEpilogTimeout: \"{v}\" is not a number of seconds"))?,
        },
        cluster: cfg.cluster_name.clone(),
    };

    let nodes: Vec<ServedNode> = picked
        .iter()
        .map(|&i| {
            let n = &cfg.nodes[i];
            ServedNode {
                name: n.name.clone(),
                addr: n.node_addr.clone(),
                hostname: n.node_hostname.clone(),
                cpus: n.cpus,
                boards: n.boards,
                sockets: n.sockets,
                cores_per_socket: n.cores_per_socket,
                threads_per_core: n.threads_per_core,
                real_memory: n.real_memory,
                tmp_disk: n.tmp_disk,
                gres: gres_inventory(n, gres.as_ref()),
            }
        })
        .collect();

    let port = cfg.node_port(first);
    let bind_ip: IpAddr = first
        .node_addr
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    let spool_dir = PathBuf::from(expand_spool(&cfg.slurmd_spool_dir, &first.name, &host));
    let controller = cfg.controller_addrs();

    let settings = Settings {
        conf_server: args.conf_server.clone(),
        config_path: config_path.to_path_buf(),
        cluster_name: cfg.cluster_name.clone(),
        emulated: args.emulate.is_some() || nodes.len() > 1,
        nodes,
        listen: SocketAddr::new(bind_ip, port),
        spool_dir,
        controller,
        auth_socket: PathBuf::from(cfg.auth_socket()),
        auth_ttl: cfg.auth_ttl_secs().min(i64::MAX as u64) as i64,
        auth_skew: cfg.auth_skew_secs(),
        key_file: args
            .key
            .clone()
            .unwrap_or_else(|| PathBuf::from(&cfg.auth_key_file)),
        tls: cfg.tls.clone(),
        // Configless: the TLS files are beside the key (the cached config's
        // directory holds only what the controller serves).
        tls_files: match &args.conf_server {
            Some(_) => {
                let key = args
                    .key
                    .clone()
                    .unwrap_or_else(|| crate::configless::DEFAULT_KEY.into());
                let beside = key.with_file_name(drover_conf::locate::CACHED_CONF);
                drover_proto::tls::files_for(&cfg.tls, &beside)
            }
            None => drover_proto::tls::files_for(&cfg.tls, config_path),
        },
        tls_names: cfg.tls_names(),
        kill_wait: cfg.kill_wait.min(u64::from(u32::MAX)) as u32,
        log_file: cfg.slurmd_log_file.as_ref().map(PathBuf::from),
        pid_file: cfg.get("SlurmdPidFile").map(PathBuf::from),
        cgroup_conf,
        cgroup: None,
        hooks,
        gpu_sample: crate::startup::gpu_sample_period(&cfg.job_acct_gather_frequency),
        host,
        drain_reason: None,
        task_affinity: cfg.task_plugin.iter().any(|p| p == "task/affinity"),
        conf_hash: cfg.conf_hash,
        slurm_user_uid: cfg
            .slurm_user
            .parse()
            .ok()
            .or_else(|| drover_proto::sysdb::passwd_by_name(&cfg.slurm_user).map(|p| p.uid))
            .unwrap_or(0),
    };
    Ok((settings, warnings))
}

impl Settings {
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    pub fn serves(&self, node: &str) -> bool {
        self.nodes.iter().any(|n| n.name == node)
    }

    /// Registration records for the served nodes.
    pub fn registrations(&self, boot_time: i64, os: &str) -> Vec<NodeRegistration> {
        self.nodes
            .iter()
            .map(|n| NodeRegistration {
                name: n.name.clone(),
                cpus: n.cpus,
                boards: n.boards,
                sockets: n.sockets,
                cores_per_socket: n.cores_per_socket,
                threads_per_core: n.threads_per_core,
                real_memory: n.real_memory,
                gres: n.gres.clone(),
                port: u32::from(self.listen.port()),
                addr: n.addr.clone(),
                boot_time,
                os: os.to_string(),
                tmp_disk: n.tmp_disk,
                drain_reason: self.drain_reason.clone().unwrap_or_default(),
                host_cpus: if self.emulated {
                    0
                } else {
                    crate::hostinfo::online_cpus()
                },
                host_memory: if self.emulated {
                    0
                } else {
                    crate::hostinfo::mem_total_mb().unwrap_or(0)
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs() -> Vec<NodeRef<'static>> {
        vec![
            NodeRef {
                name: "ctl",
                addr: "10.0.0.1",
                hostname: "ctl",
            },
            NodeRef {
                name: "node1",
                addr: "127.0.0.1",
                hostname: "node1",
            },
            NodeRef {
                name: "node2",
                addr: "localhost",
                hostname: "node2",
            },
            NodeRef {
                name: "node3",
                addr: "vm.example.org",
                hostname: "vm",
            },
            NodeRef {
                name: "node4",
                addr: "::1",
                hostname: "node4",
            },
        ]
    }

    #[test]
    fn selects_by_list() {
        let (p, w) = select_nodes(&refs(), Selection::List("node[1-2],node1"), "vm", "vm").unwrap();
        assert_eq!(p, vec![1, 2]);
        assert!(w.is_empty());
        assert!(select_nodes(&refs(), Selection::List("node9"), "vm", "vm")
            .unwrap_err()
            .contains("node9"));
        assert!(select_nodes(&refs(), Selection::List("node[1-"), "vm", "vm").is_err());
    }

    #[test]
    fn selects_local_nodes_for_emulation() {
        let (p, w) = select_nodes(&refs(), Selection::Emulate(3), "vm", "vm.example.org").unwrap();
        assert_eq!(p, vec![1, 2, 3]);
        assert!(w.is_empty());
        let (p, w) = select_nodes(&refs(), Selection::Emulate(10), "vm", "vm.example.org").unwrap();
        assert_eq!(p, vec![1, 2, 3, 4]);
        assert_eq!(w.len(), 1);
        assert!(select_nodes(&refs(), Selection::Emulate(0), "vm", "vm").is_err());
        assert!(select_nodes(&refs()[..1], Selection::Emulate(2), "vm", "vm").is_err());
    }

    #[test]
    fn selects_by_host_name() {
        let (p, _) = select_nodes(&refs(), Selection::Host, "vm", "vm.example.org").unwrap();
        assert_eq!(p, vec![3]);
        assert!(select_nodes(&refs(), Selection::Host, "elsewhere", "elsewhere").is_err());
    }

    #[test]
    fn small_helpers() {
        assert_eq!(
            expand_spool("/var/spool/d.%n", "node1", "vm"),
            "/var/spool/d.node1"
        );
        assert_eq!(expand_spool("/s/%h", "node1", "vm"), "/s/vm");
        assert_eq!(
            drover_conf::slurmconf::join_host_port("ctl", 6817),
            "ctl:6817"
        );
        assert_eq!(
            drover_conf::slurmconf::join_host_port("::1", 6817),
            "[::1]:6817"
        );
        assert_eq!(device_minor("/dev/nvidia3"), Some(3));
        assert_eq!(device_minor("/dev/nvidia12"), Some(12));
        assert_eq!(device_minor("/dev/null"), None);
        assert!(is_local_addr("127.0.0.2", "vm", "vm"));
        assert!(is_local_addr("[::1]", "vm", "vm"));
        assert!(!is_local_addr("10.1.1.1", "vm", "vm"));
        assert!(is_local_addr("VM", "vm", "vm"));
    }
}
