//! drover.conf / slurm.conf: the typed main configuration.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::error::{ConfError, ConfWarning};
use crate::general::{apply_general, finish_general, General};
use crate::include::{self, Resolver};
use crate::lexer::Pair;
use crate::nodes::{self, NodeIndex, NodeSpec};
pub use crate::nodes::{parse_gres_count, parse_gres_list, GresSpec, NodeConf, NodeSetConf};
pub use crate::partitions::PartitionConf;
use crate::partitions::{self, PartitionSpec};
use crate::values::{self, canonical, err, warn, UnknownKeys};

/// A `SlurmctldHost` entry: `host` or `host(addr)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtldHost {
    pub name: String,
    pub addr: Option<String>,
}

impl CtldHost {
    /// Address to connect to (`addr`, else `name`).
    pub fn address(&self) -> &str {
        self.addr.as_deref().unwrap_or(&self.name)
    }
}

/// An entity line kept verbatim (`FrontendName=...`, `SwitchName=...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityLine {
    /// `FrontendName` or `SwitchName`.
    pub kind: String,
    pub pairs: Vec<(String, String)>,
}

/// The whole main configuration. Durations are in seconds unless the name
/// ends in `_min`; memory sizes are in MB.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub cluster_name: String,
    /// First entry is the primary controller.
    pub slurmctld_host: Vec<CtldHost>,
    pub slurmctld_port: u16,
    /// How many ports from `slurmctld_port` on ("6817-6818" -> 2).
    pub slurmctld_port_count: u16,
    pub slurmd_port: u16,
    pub slurm_user: String,
    pub slurmd_user: String,
    pub state_save_location: String,
    pub slurmd_spool_dir: String,
    pub auth_type: String,
    pub auth_info: Vec<(String, String)>,
    pub auth_key_file: String,
    /// `TLSType` and `TLSParameters`.
    pub tls: crate::tls::TlsConf,

    pub first_job_id: u32,
    pub max_job_id: u32,
    pub max_job_count: u32,
    pub max_array_size: u32,
    pub min_job_age: u64,
    pub slurmd_timeout: u64,
    pub slurmctld_timeout: u64,
    pub kill_wait: u64,
    /// Minutes; UNLIMITED = `u32::MAX`.
    pub over_time_limit_min: u32,
    pub inactive_limit: u64,
    pub message_timeout: u64,
    pub batch_start_timeout: u64,
    pub unkillable_step_timeout: u64,
    pub return_to_service: u32,

    pub scheduler_type: String,
    pub scheduler_parameters: Vec<(String, Option<String>)>,
    pub select_type: String,
    pub select_type_parameters: Vec<String>,
    pub priority_type: String,
    /// PriorityWeight*, PriorityMaxAge, PriorityDecayHalfLife, ... as
    /// (canonical key, value), last setting of each key only.
    pub priority_params: Vec<(String, String)>,
    pub preempt_type: String,
    pub preempt_mode: String,

    pub def_mem_per_cpu: Option<u64>,
    pub def_mem_per_node: Option<u64>,
    pub max_mem_per_cpu: Option<u64>,
    pub max_mem_per_node: Option<u64>,

    pub gres_types: Vec<String>,
    pub proctrack_type: String,
    pub task_plugin: Vec<String>,
    pub job_acct_gather_type: String,
    pub job_acct_gather_frequency: String,
    pub prolog: Option<String>,
    pub epilog: Option<String>,
    pub task_prolog: Option<String>,
    pub task_epilog: Option<String>,
    pub prolog_flags: Vec<String>,
    pub accounting_storage_type: String,
    pub accounting_storage_host: Option<String>,
    pub accounting_storage_port: u16,
    pub accounting_storage_user: Option<String>,
    pub accounting_storage_pass: Option<String>,
    pub accounting_storage_loc: Option<String>,
    pub accounting_storage_enforce: Vec<String>,
    pub accounting_storage_tres: Vec<String>,
    pub job_comp_type: String,
    pub private_data: Vec<String>,
    pub slurmctld_log_file: Option<String>,
    pub slurmd_log_file: Option<String>,
    pub slurmctld_debug: String,
    pub slurmd_debug: String,
    pub mpi_default: String,
    pub tmp_fs: String,
    pub enforce_part_limits: String,
    pub kill_on_bad_exit: u32,
    pub propagate_resource_limits: String,
    pub switch_type: String,
    pub mail_prog: String,
    pub health_check_program: Option<String>,
    pub health_check_interval: u64,
    pub tree_width: u32,
    pub max_tasks_per_node: u32,
    pub max_step_count: u32,
    pub job_requeue: u32,
    /// Power saving and cloud nodes (SuspendTime, ResumeProgram, ...).
    pub power: crate::power::PowerConf,

    /// One entry per expanded node name, in configuration order.
    pub nodes: Vec<NodeConf>,
    pub partitions: Vec<PartitionConf>,
    pub nodesets: Vec<NodeSetConf>,
    /// FrontendName= and SwitchName= lines, verbatim.
    pub other_entities: Vec<EntityLine>,
    /// Every general (non-entity) Key=Value seen, in file order, with the
    /// key's canonical spelling (unknown keys as written).
    pub raw: Vec<(String, String)>,
    /// Digest of the configuration as parsed (`Include`s spliced in):
    /// agents send it at registration (Slurm's slurm.conf hash).
    pub conf_hash: u64,
}

impl Default for Config {
    fn default() -> Self {
        let s = |x: &str| x.to_string();
        Config {
            cluster_name: s("cluster"),
            slurmctld_host: Vec::new(),
            slurmctld_port: 6817,
            slurmctld_port_count: 1,
            slurmd_port: 6818,
            slurm_user: s("root"),
            slurmd_user: s("root"),
            state_save_location: s("/var/spool/drover/ctld"),
            slurmd_spool_dir: s("/var/spool/drover/d"),
            auth_type: s("auth/drover"),
            auth_info: Vec::new(),
            auth_key_file: s("/etc/drover/drover.key"),
            tls: Default::default(),
            first_job_id: 1,
            max_job_id: 0x03ff_0000,
            max_job_count: 10000,
            max_array_size: 1001,
            min_job_age: 300,
            slurmd_timeout: 300,
            slurmctld_timeout: 120,
            kill_wait: 30,
            over_time_limit_min: 0,
            inactive_limit: 0,
            message_timeout: 10,
            batch_start_timeout: 10,
            unkillable_step_timeout: 60,
            return_to_service: 0,
            scheduler_type: s("sched/backfill"),
            scheduler_parameters: Vec::new(),
            select_type: s("select/cons_tres"),
            select_type_parameters: Vec::new(),
            priority_type: s("priority/basic"),
            priority_params: Vec::new(),
            preempt_type: s("preempt/none"),
            preempt_mode: s("OFF"),
            def_mem_per_cpu: None,
            def_mem_per_node: None,
            max_mem_per_cpu: None,
            max_mem_per_node: None,
            gres_types: Vec::new(),
            proctrack_type: s("proctrack/cgroup"),
            task_plugin: Vec::new(),
            job_acct_gather_type: s("jobacct_gather/none"),
            job_acct_gather_frequency: s("30"),
            prolog: None,
            epilog: None,
            task_prolog: None,
            task_epilog: None,
            prolog_flags: Vec::new(),
            accounting_storage_type: s("accounting_storage/none"),
            accounting_storage_host: None,
            accounting_storage_port: 6819,
            accounting_storage_user: None,
            accounting_storage_pass: None,
            accounting_storage_loc: None,
            accounting_storage_enforce: Vec::new(),
            accounting_storage_tres: Vec::new(),
            job_comp_type: s("jobcomp/none"),
            private_data: Vec::new(),
            slurmctld_log_file: None,
            slurmd_log_file: None,
            slurmctld_debug: s("info"),
            slurmd_debug: s("info"),
            mpi_default: s("none"),
            tmp_fs: s("/tmp"),
            enforce_part_limits: s("NO"),
            kill_on_bad_exit: 0,
            propagate_resource_limits: s("ALL"),
            switch_type: s("switch/none"),
            mail_prog: s("/bin/mail"),
            health_check_program: None,
            health_check_interval: 0,
            tree_width: 16,
            max_tasks_per_node: 512,
            max_step_count: 40000,
            job_requeue: 1,
            power: Default::default(),
            nodes: Vec::new(),
            partitions: Vec::new(),
            nodesets: Vec::new(),
            other_entities: Vec::new(),
            raw: Vec::new(),
            conf_hash: 0,
        }
    }
}

/// `host:port`, bracketing IPv6 literals.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl Config {
    /// Last value of a general key (case-insensitive) as written.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.raw
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// Is `flag` among `DebugFlags` (comma-separated, any case)?
    pub fn debug_flag(&self, flag: &str) -> bool {
        self.get("DebugFlags")
            .is_some_and(|v| v.split(',').any(|f| f.trim().eq_ignore_ascii_case(flag)))
    }

    pub fn node(&self, name: &str) -> Option<&NodeConf> {
        self.nodes.iter().find(|n| n.name == name)
    }

    pub fn partition(&self, name: &str) -> Option<&PartitionConf> {
        self.partitions.iter().find(|p| p.name == name)
    }

    /// The `Default=YES` partition, if any.
    pub fn default_partition(&self) -> Option<&PartitionConf> {
        self.partitions.iter().find(|p| p.default)
    }

    /// `socket=` of AuthInfo, default `/run/drover/auth.sock`.
    pub fn auth_socket(&self) -> String {
        self.auth_info_value("socket")
            .unwrap_or("/run/drover/auth.sock")
            .to_string()
    }

    /// `ttl=` of AuthInfo in seconds, default 300.
    pub fn auth_ttl_secs(&self) -> u64 {
        self.auth_info_value("ttl")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(300)
    }

    /// `skew=` of AuthInfo: seconds a credential's issue time may differ
    /// from the verifier's clock, default 60.
    pub fn auth_skew_secs(&self) -> u64 {
        self.auth_info_value("skew")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(60)
    }

    /// `AuthAltParameters=jwt_key=PATH`: the HS256 key of the REST API's
    /// tokens (`scontrol token`, droverrestd); None when not set.
    pub fn jwt_key_path(&self) -> Option<String> {
        let v = self
            .raw
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case("AuthAltParameters"))?;
        crate::general::parse_kv_list(&v.1)
            .into_iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("jwt_key"))
            .and_then(|(_, v)| v)
            .filter(|v| !v.is_empty())
    }

    fn auth_info_value(&self, key: &str) -> Option<&str> {
        self.auth_info
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// A SchedulerParameters entry: `Some(Some(v))` for `k=v`,
    /// `Some(None)` for a bare flag, `None` when absent.
    pub fn scheduler_param(&self, key: &str) -> Option<Option<&str>> {
        self.scheduler_parameters
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_deref())
    }

    /// The backfill settings of `SchedulerParameters` (checked at load).
    pub fn sched_params(&self) -> crate::sched::SchedParams {
        crate::sched::SchedParams::from_list(&self.scheduler_parameters).unwrap_or_default()
    }

    /// A priority_params value by key (case-insensitive).
    pub fn priority_param(&self, key: &str) -> Option<&str> {
        self.priority_params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// Primary controller host name (`localhost` when none is configured).
    pub fn control_host(&self) -> &str {
        self.slurmctld_host
            .first()
            .map_or("localhost", |h| h.name.as_str())
    }

    /// Primary controller address (its `(addr)`, else its name).
    pub fn control_addr(&self) -> &str {
        self.slurmctld_host
            .first()
            .map_or("localhost", |h| h.address())
    }

    /// `host:port` of the primary controller.
    pub fn controller_addr(&self) -> String {
        join_host_port(self.control_addr(), self.slurmctld_port)
    }

    /// `host:port` of every controller, primary first, comma-separated
    /// (what clients try in turn).
    pub fn controller_addrs(&self) -> String {
        if self.slurmctld_host.is_empty() {
            return self.controller_addr();
        }
        self.slurmctld_host
            .iter()
            .map(|h| join_host_port(h.address(), self.slurmctld_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `host:port` of the accounting daemon: AccountingStorageHost (default:
    /// the controller's host) and AccountingStoragePort (default 6819).
    pub fn dbd_addr(&self) -> String {
        let host = self
            .accounting_storage_host
            .as_deref()
            .unwrap_or(self.control_addr());
        join_host_port(host, self.accounting_storage_port)
    }

    /// (address, host name) for each address the file names a host by:
    /// `SlurmctldHost=name(addr)`, `NodeAddr` with `NodeHostname`. A TLS
    /// client dialling the address checks that the certificate is the
    /// host's. An address given to several hosts (emulated nodes sharing
    /// one) is left out: its certificate is checked by address.
    pub fn tls_names(&self) -> Vec<(String, String)> {
        let mut by_addr: HashMap<&str, Option<&str>> = HashMap::new();
        let pairs = self
            .slurmctld_host
            .iter()
            .filter_map(|h| h.addr.as_deref().map(|a| (a, h.name.as_str())))
            .chain(
                self.nodes
                    .iter()
                    .map(|n| (n.node_addr.as_str(), n.node_hostname.as_str())),
            );
        for (addr, name) in pairs {
            if addr == name {
                continue;
            }
            by_addr
                .entry(addr)
                .and_modify(|seen| {
                    if *seen != Some(name) {
                        *seen = None;
                    }
                })
                .or_insert(Some(name));
        }
        let mut out: Vec<(String, String)> = by_addr
            .into_iter()
            .filter_map(|(a, n)| n.map(|n| (a.to_string(), n.to_string())))
            .collect();
        out.sort();
        out
    }

    /// Port slurmd of `node` listens on (its Port, else SlurmdPort).
    pub fn node_port(&self, node: &NodeConf) -> u16 {
        if node.port == 0 {
            self.slurmd_port
        } else {
            node.port
        }
    }

    /// Nodes of the partition called `name`, in node order.
    pub fn partition_nodes(&self, name: &str) -> Vec<&NodeConf> {
        match self.partition(name) {
            None => Vec::new(),
            Some(p) => {
                let names: HashSet<&str> = p.nodes.iter().map(String::as_str).collect();
                self.nodes
                    .iter()
                    .filter(|n| names.contains(n.name.as_str()))
                    .collect()
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntityKind {
    Node,
    Partition,
    DownNodes,
    NodeSet,
    Frontend,
    Switch,
}

fn entity_kind(key: &str) -> Option<EntityKind> {
    let table = [
        ("NodeName", EntityKind::Node),
        ("PartitionName", EntityKind::Partition),
        ("DownNodes", EntityKind::DownNodes),
        ("NodeSet", EntityKind::NodeSet),
        ("FrontendName", EntityKind::Frontend),
        ("SwitchName", EntityKind::Switch),
    ];
    table
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, e)| *e)
}

/// Everything after `include` expansion: split lines into general pairs and
/// entity records, then build nodes, node sets, partitions.
fn build(
    lines: Vec<Vec<Pair>>,
    file: &str,
    mut warnings: Vec<ConfWarning>,
) -> Result<(Config, Vec<ConfWarning>), ConfError> {
    let mut cfg = Config::default();
    let mut g = General::default();
    let mut unknown = UnknownKeys::default();
    let mut entities: Vec<(EntityKind, Vec<Pair>)> = Vec::new();
    for line in lines {
        let mut current: Option<(EntityKind, Vec<Pair>)> = None;
        for p in line {
            if let Some(kind) = entity_kind(&p.key) {
                entities.extend(current.take());
                current = Some((kind, vec![p]));
                continue;
            }
            match &mut current {
                Some((_, v)) => v.push(p),
                None => apply_general(&mut cfg, &mut g, &p, &mut unknown, &mut warnings)?,
            }
        }
        entities.extend(current);
    }
    let power_refs = std::mem::take(&mut g.power_refs);
    finish_general(&mut cfg, g, file, &mut warnings);

    // Nodes
    let mut node_default = NodeSpec::default();
    let mut index = NodeIndex::default();
    let mut warned_gres = HashSet::new();
    for (_, pairs) in entities.iter().filter(|(k, _)| *k == EntityKind::Node) {
        let Some(name_pair) = pairs.first() else {
            continue;
        };
        let spec = nodes::parse_node_spec(
            pairs,
            &cfg.gres_types,
            &mut unknown,
            &mut warned_gres,
            &mut warnings,
        )?;
        if name_pair.value.trim().eq_ignore_ascii_case("DEFAULT") {
            node_default = node_default.overlay(&spec);
            continue;
        }
        let merged = node_default.overlay(&spec);
        let count = crate::hostlist::count(&name_pair.value)
            .map_err(|e| err(name_pair, "NodeName", e.to_string()))?;
        if cfg.nodes.len().saturating_add(count) > nodes::MAX_NODES {
            return Err(err(
                name_pair,
                "NodeName",
                format!(
                    "more than {} nodes in the configuration ({} before this line, {count} on it)",
                    nodes::MAX_NODES,
                    cfg.nodes.len()
                ),
            ));
        }
        let built = nodes::build_nodes(name_pair, &merged, &mut warnings)?;
        index.reserve(built.len());
        for (i, node) in built.iter().enumerate() {
            if index
                .insert(node.name.clone(), cfg.nodes.len() + i)
                .is_some()
            {
                return Err(err(
                    name_pair,
                    "NodeName",
                    format!("duplicate node name '{}'", node.name),
                ));
            }
        }
        if cfg.nodes.is_empty() {
            cfg.nodes = built; // the usual single line: no copy
        } else {
            cfg.nodes.extend(built);
        }
    }

    // Node sets
    for (_, pairs) in entities.iter().filter(|(k, _)| *k == EntityKind::NodeSet) {
        let set = build_nodeset(pairs, &cfg.nodes, &index, &mut unknown, &mut warnings)?;
        if let Some(set) = set {
            cfg.nodesets.push(set);
        }
    }

    // Partitions
    let mut part_default = PartitionSpec::default();
    let mut default_line: Option<Pair> = None;
    for (_, pairs) in entities.iter().filter(|(k, _)| *k == EntityKind::Partition) {
        let Some(name_pair) = pairs.first() else {
            continue;
        };
        let spec = partitions::parse_partition_spec(pairs, &mut unknown, &mut warnings)?;
        if name_pair.value.trim().eq_ignore_ascii_case("DEFAULT") {
            part_default = part_default.overlay(&spec);
            continue;
        }
        let merged = part_default.overlay(&spec);
        let part =
            partitions::build_partition(name_pair, &merged, &cfg.nodes, &index, &cfg.nodesets)?;
        if cfg.partition(&part.name).is_some() {
            return Err(err(
                name_pair,
                "PartitionName",
                format!("duplicate partition name '{}'", part.name),
            ));
        }
        if part.default {
            let here = merged.is_default().unwrap_or(name_pair).clone();
            if let Some(prev) = &default_line {
                warnings.push(warn(
                    &here,
                    "Default",
                    format!(
                        "more than one default partition ({}:{} and here); using '{}'",
                        prev.file, prev.line, part.name
                    ),
                ));
                cfg.partitions.iter_mut().for_each(|p| p.default = false);
            }
            default_line = Some(here);
        }
        cfg.partitions.push(part);
    }

    crate::power::check_names(
        &cfg.power,
        &power_refs,
        |n| index.contains_key(n),
        |p| cfg.partition(p).is_some(),
    )?;

    warnings.extend(crate::power::disabled_warning(
        &cfg.power,
        &cfg.partitions,
        file,
    ));

    // DownNodes
    for (_, pairs) in entities.iter().filter(|(k, _)| *k == EntityKind::DownNodes) {
        apply_down_nodes(&mut cfg, &index, pairs, &mut unknown, &mut warnings)?;
    }

    // FrontendName / SwitchName: kept verbatim
    for (kind, pairs) in &entities {
        let kind = match kind {
            EntityKind::Frontend => "FrontendName",
            EntityKind::Switch => "SwitchName",
            _ => continue,
        };
        cfg.other_entities.push(EntityLine {
            kind: kind.to_string(),
            pairs: pairs
                .iter()
                .map(|p| (p.key.clone(), p.value.clone()))
                .collect(),
        });
    }
    Ok((cfg, warnings))
}

fn build_nodeset(
    pairs: &[Pair],
    all: &[NodeConf],
    index: &NodeIndex,
    unknown: &mut UnknownKeys,
    warnings: &mut Vec<ConfWarning>,
) -> Result<Option<NodeSetConf>, ConfError> {
    let Some(name_pair) = pairs.first() else {
        return Ok(None);
    };
    let name = name_pair.value.trim();
    if name.is_empty() {
        return Err(err(name_pair, "NodeSet", "empty name"));
    }
    let mut selected = vec![false; all.len()];
    for p in &pairs[1..] {
        match canonical(&["Nodes", "Feature"], &p.key) {
            Some("Nodes") => {
                for piece in crate::hostlist::split_top_level(&p.value) {
                    if piece.eq_ignore_ascii_case("ALL") {
                        selected.iter_mut().for_each(|s| *s = true);
                        continue;
                    }
                    let names = crate::hostlist::expand_at_most(piece, nodes::MAX_NODES)
                        .map_err(|e| err(p, "Nodes", e.to_string()))?;
                    for n in names {
                        match index.get(&n) {
                            Some(&i) => selected[i] = true,
                            None => return Err(err(p, "Nodes", format!("undefined node '{n}'"))),
                        }
                    }
                }
            }
            Some(_) => {
                let feat = p.value.trim();
                for (i, n) in all.iter().enumerate() {
                    if n.has_feature(feat) {
                        selected[i] = true;
                    }
                }
            }
            None => unknown.note("NodeSet", p, warnings),
        }
    }
    Ok(Some(NodeSetConf {
        name: name.to_string(),
        nodes: all
            .iter()
            .zip(selected)
            .filter(|(_, s)| *s)
            .map(|(n, _)| n.name.clone())
            .collect(),
    }))
}

fn apply_down_nodes(
    cfg: &mut Config,
    index: &NodeIndex,
    pairs: &[Pair],
    unknown: &mut UnknownKeys,
    warnings: &mut Vec<ConfWarning>,
) -> Result<(), ConfError> {
    let Some(name_pair) = pairs.first() else {
        return Ok(());
    };
    let mut state = "DOWN".to_string();
    let mut reason = None;
    for p in &pairs[1..] {
        match canonical(&["State", "Reason"], &p.key) {
            Some("State") => {
                state = nodes::parse_node_state(&p.value).map_err(|m| err(p, "State", m))?
            }
            Some(_) => reason = values::opt_string(&p.value),
            None => unknown.note("DownNodes", p, warnings),
        }
    }
    let names = crate::hostlist::expand_at_most(&name_pair.value, nodes::MAX_NODES)
        .map_err(|e| err(name_pair, "DownNodes", e.to_string()))?;
    for n in names {
        let Some(node) = index.get(&n).and_then(|&i| cfg.nodes.get_mut(i)) else {
            return Err(err(name_pair, "DownNodes", format!("undefined node '{n}'")));
        };
        node.state = state.clone();
        if reason.is_some() {
            node.reason = reason.clone();
        }
    }
    Ok(())
}

/// Parse slurm.conf text with a custom resolver for `Include` that also
/// gets the including file's name and may return several files (globs).
pub(crate) fn parse_with(
    text: &str,
    file_name: &str,
    resolver: &mut Resolver<'_>,
) -> Result<(Config, Vec<ConfWarning>), ConfError> {
    let mut warnings = Vec::new();
    let lines = include::collect(text, file_name, resolver, &mut warnings)?;
    let hash = crate::digest::of_lines(&lines);
    let (mut cfg, warnings) = build(lines, file_name, warnings)?;
    cfg.conf_hash = hash;
    Ok((cfg, warnings))
}

/// Slurm's largest `MaxArraySize` (a larger value is refused): no array
/// task id reaches it.
pub const MAX_ARRAY_SIZE_LIMIT: u32 = 4_000_001;

/// The `Include` callback of [`parse_str`]: path as written ->
/// (resolved name, text).
pub type IncludeFn<'a> = dyn FnMut(&str) -> Result<(String, String), String> + 'a;

/// Parse slurm.conf text. `include` maps an `Include` path (as written) to
/// the (resolved name, text) of the file.
pub fn parse_str(
    text: &str,
    file_name: &str,
    include: &mut IncludeFn<'_>,
) -> Result<(Config, Vec<ConfWarning>), ConfError> {
    let mut resolver = |path: &str, _including: &str| include(path).map(|f| vec![f]);
    parse_with(text, file_name, &mut resolver)
}

/// Read and parse a slurm.conf/drover.conf file and its `Include`s
/// (relative to the including file's directory; `*` allowed in the last
/// path component).
pub fn load(path: &Path) -> Result<(Config, Vec<ConfWarning>), ConfError> {
    let text = include::read_file(path)?;
    parse_with(
        &text,
        &path.display().to_string(),
        &mut include::fs_resolver,
    )
}

#[cfg(test)]
#[path = "slurmconf_tests.rs"]
mod tests;
