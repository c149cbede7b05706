//! `PartitionName=` lines of slurm.conf.

use crate::error::{ConfError, ConfWarning};
use crate::hostlist;
use crate::lexer::Pair;
use crate::nodes::{NodeConf, NodeIndex, NodeSetConf};
use crate::units;
use crate::values::{self, canonical, err, warn, UnknownKeys};

/// One partition (queue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionConf {
    pub name: String,
    /// Expanded node names, in node-definition order.
    pub nodes: Vec<String>,
    /// The `Nodes=` value as written ("" when absent).
    pub nodes_expr: String,
    pub default: bool,
    /// None = UNLIMITED (the default).
    pub max_time_min: Option<u32>,
    /// None = not set.
    pub default_time_min: Option<u32>,
    /// UP, DOWN, DRAIN or INACTIVE.
    pub state: String,
    /// None = ALL.
    pub allow_groups: Option<Vec<String>>,
    /// None = ALL.
    pub allow_accounts: Option<Vec<String>>,
    /// None = none denied.
    pub deny_accounts: Option<Vec<String>>,
    /// None = ALL.
    pub allow_qos: Option<Vec<String>>,
    /// None = none denied.
    pub deny_qos: Option<Vec<String>>,
    /// None = UNLIMITED.
    pub max_nodes: Option<u32>,
    pub min_nodes: u32,
    /// None = UNLIMITED.
    pub max_cpus_per_node: Option<u32>,
    pub priority_tier: u32,
    pub priority_job_factor: u32,
    /// NO, YES, EXCLUSIVE or FORCE, optionally with `:N`.
    pub over_subscribe: String,
    pub exclusive_user: bool,
    pub hidden: bool,
    pub root_only: bool,
    pub lln: bool,
    pub qos: Option<String>,
    /// MB; None = cluster default.
    pub def_mem_per_cpu: Option<u64>,
    pub def_mem_per_node: Option<u64>,
    pub max_mem_per_cpu: Option<u64>,
    pub max_mem_per_node: Option<u64>,
    /// Seconds.
    pub grace_time: u32,
    /// None = cluster-wide PreemptMode.
    pub preempt_mode: Option<String>,
    pub alternate: Option<String>,
    pub tres_billing_weights: Option<String>,
    /// Recognised keys kept verbatim (AllowAllocNodes, DisableRootJobs, ...).
    pub extra: Vec<(String, String)>,
}

impl PartitionConf {
    /// A partition with Slurm's defaults.
    pub fn new(name: &str) -> Self {
        PartitionConf {
            name: name.to_string(),
            nodes: Vec::new(),
            nodes_expr: String::new(),
            default: false,
            max_time_min: None,
            default_time_min: None,
            state: "UP".to_string(),
            allow_groups: None,
            allow_accounts: None,
            deny_accounts: None,
            allow_qos: None,
            deny_qos: None,
            max_nodes: None,
            min_nodes: 0,
            max_cpus_per_node: None,
            priority_tier: 1,
            priority_job_factor: 1,
            over_subscribe: "NO".to_string(),
            exclusive_user: false,
            hidden: false,
            root_only: false,
            lln: false,
            qos: None,
            def_mem_per_cpu: None,
            def_mem_per_node: None,
            max_mem_per_cpu: None,
            max_mem_per_node: None,
            grace_time: 0,
            preempt_mode: None,
            alternate: None,
            tres_billing_weights: None,
            extra: Vec::new(),
        }
    }

    pub fn has_node(&self, node: &str) -> bool {
        self.nodes.iter().any(|n| n == node)
    }
}

pub(crate) const PARTITION_KEYS: &[&str] = &[
    "PartitionName",
    "Nodes",
    "Default",
    "MaxTime",
    "DefaultTime",
    "State",
    "AllowGroups",
    "AllowAccounts",
    "DenyAccounts",
    "AllowQos",
    "DenyQos",
    "MaxNodes",
    "MinNodes",
    "MaxCPUsPerNode",
    "PriorityTier",
    "PriorityJobFactor",
    "Priority",
    "OverSubscribe",
    "Shared",
    "ExclusiveUser",
    "Hidden",
    "RootOnly",
    "LLN",
    "QOS",
    "DefMemPerCPU",
    "DefMemPerNode",
    "MaxMemPerCPU",
    "MaxMemPerNode",
    "GraceTime",
    "PreemptMode",
    "Alternate",
    "TRESBillingWeights",
];

/// Partition keys recognised and kept verbatim in `PartitionConf::extra`.
pub(crate) const PARTITION_EXTRA_KEYS: &[&str] = &[
    "AllowAllocNodes",
    "CpuBind",
    "DefCpuPerGPU",
    "DefMemPerGPU",
    "DisableRootJobs",
    "ExclusiveTopo",
    "JobDefaults",
    "MaxCPUsPerSocket",
    "OverTimeLimit",
    "PowerDownOnIdle",
    "ReqResv",
    "ResumeTimeout",
    "SelectTypeParameters",
    "SuspendTime",
    "SuspendTimeout",
];

const PREEMPT_MODES: &[&str] = &[
    "OFF", "CANCEL", "GANG", "REQUEUE", "SUSPEND", "WITHIN", "PRIORITY",
];

/// Validate and upper-case a PreemptMode value (`SUSPEND,GANG`).
pub(crate) fn parse_preempt_mode(v: &str) -> Result<String, String> {
    let up = v.trim().to_ascii_uppercase();
    let words: Vec<&str> = up.split(',').map(str::trim).collect();
    if up.is_empty() || !words.iter().all(|w| PREEMPT_MODES.contains(w)) {
        return Err(format!("invalid PreemptMode '{}'", v.trim()));
    }
    Ok(words.join(","))
}

/// NO | YES[:N] | EXCLUSIVE | FORCE[:N], upper-cased.
pub(crate) fn parse_over_subscribe(v: &str) -> Result<String, String> {
    let t = v.trim();
    let (word, count) = match t.split_once(':') {
        Some((w, c)) => (w, Some(c)),
        None => (t, None),
    };
    let word = word.to_ascii_uppercase();
    let bad = || format!("invalid OverSubscribe '{t}' (NO, YES[:N], EXCLUSIVE or FORCE[:N])");
    match (word.as_str(), count) {
        ("NO" | "EXCLUSIVE", None) | ("YES" | "FORCE", None) => Ok(word),
        ("YES" | "FORCE", Some(c)) => {
            let n = values::parse_u32(c).map_err(|_| bad())?;
            Ok(format!("{word}:{n}"))
        }
        _ => Err(bad()),
    }
}

/// `ALL` -> None, else Some(list).
fn all_or_list(v: &str) -> Option<Vec<String>> {
    if v.trim().eq_ignore_ascii_case("ALL") {
        None
    } else {
        Some(values::parse_list(v))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemLimit {
    PerCpu(Option<u64>),
    PerNode(Option<u64>),
}

/// Values of one `PartitionName=` line (or the DEFAULT line).
#[derive(Debug, Clone, Default)]
pub(crate) struct PartitionSpec {
    nodes: Option<(String, Pair)>,
    default: Option<(bool, Pair)>,
    max_time: Option<Option<u32>>,
    default_time: Option<Option<u32>>,
    state: Option<String>,
    allow_groups: Option<Option<Vec<String>>>,
    allow_accounts: Option<Option<Vec<String>>>,
    deny_accounts: Option<Option<Vec<String>>>,
    allow_qos: Option<Option<Vec<String>>>,
    deny_qos: Option<Option<Vec<String>>>,
    max_nodes: Option<Option<u32>>,
    min_nodes: Option<u32>,
    max_cpus_per_node: Option<Option<u32>>,
    priority_tier: Option<u32>,
    priority_job_factor: Option<u32>,
    over_subscribe: Option<String>,
    exclusive_user: Option<bool>,
    hidden: Option<bool>,
    root_only: Option<bool>,
    lln: Option<bool>,
    qos: Option<Option<String>>,
    def_mem: Option<MemLimit>,
    max_mem: Option<MemLimit>,
    grace_time: Option<u32>,
    preempt_mode: Option<String>,
    alternate: Option<Option<String>>,
    tres_billing_weights: Option<Option<String>>,
    extra: Vec<(String, String)>,
}

macro_rules! pick {
    ($line:expr, $dflt:expr, $($f:ident),*) => {
        PartitionSpec {
            $($f: $line.$f.clone().or_else(|| $dflt.$f.clone()),)*
            extra: {
                let mut extra = $dflt.extra.clone();
                for (k, v) in &$line.extra {
                    extra.retain(|(ek, _)| ek != k);
                    extra.push((k.clone(), v.clone()));
                }
                extra
            },
        }
    };
}

impl PartitionSpec {
    /// `self` (DEFAULT) with every value `line` sets replaced.
    pub(crate) fn overlay(&self, line: &PartitionSpec) -> PartitionSpec {
        pick!(
            line,
            self,
            nodes,
            default,
            max_time,
            default_time,
            state,
            allow_groups,
            allow_accounts,
            deny_accounts,
            allow_qos,
            deny_qos,
            max_nodes,
            min_nodes,
            max_cpus_per_node,
            priority_tier,
            priority_job_factor,
            over_subscribe,
            exclusive_user,
            hidden,
            root_only,
            lln,
            qos,
            def_mem,
            max_mem,
            grace_time,
            preempt_mode,
            alternate,
            tres_billing_weights
        )
    }

    /// Whether this line says `Default=YES`.
    pub(crate) fn is_default(&self) -> Option<&Pair> {
        match &self.default {
            Some((true, p)) => Some(p),
            _ => None,
        }
    }
}

/// Parse the pairs of a `PartitionName=` line (the name pair is skipped).
pub(crate) fn parse_partition_spec(
    pairs: &[Pair],
    unknown: &mut UnknownKeys,
    warnings: &mut Vec<ConfWarning>,
) -> Result<PartitionSpec, ConfError> {
    let mut s = PartitionSpec::default();
    for p in pairs {
        let Some(key) = canonical(PARTITION_KEYS, &p.key) else {
            match canonical(PARTITION_EXTRA_KEYS, &p.key) {
                Some(k) => {
                    crate::power::check_partition_key(k, &p.value).map_err(|m| err(p, k, m))?;
                    s.extra.retain(|(ek, _)| ek != k);
                    s.extra.push((k.to_string(), p.value.clone()));
                }
                None => unknown.note("PartitionName", p, warnings),
            }
            continue;
        };
        let v = p.value.as_str();
        let e = |m: String| err(p, key, m);
        let boolv = || values::parse_bool(v).map_err(e);
        let u32v = || values::parse_u32(v).map_err(e);
        let memv = || values::parse_mem_limit(v).map_err(e);
        let timev = || units::parse_time_minutes(v).map_err(e);
        let mut mem = |slot: &mut Option<MemLimit>, new: MemLimit, other: &str| {
            if let Some(old) = *slot {
                if std::mem::discriminant(&old) != std::mem::discriminant(&new) {
                    warnings.push(warn(
                        p,
                        key,
                        format!("{key} and {other} are mutually exclusive; using {key}"),
                    ));
                }
            }
            *slot = Some(new);
        };
        match key {
            "PartitionName" => {}
            "Nodes" => s.nodes = Some((v.trim().to_string(), p.clone())),
            "Default" => s.default = Some((boolv()?, p.clone())),
            "MaxTime" => s.max_time = Some(timev()?),
            "DefaultTime" => s.default_time = Some(timev()?),
            "State" => {
                let up = v.trim().to_ascii_uppercase();
                if !["UP", "DOWN", "DRAIN", "INACTIVE"].contains(&up.as_str()) {
                    return Err(e(format!(
                        "invalid partition state '{}' (UP, DOWN, DRAIN or INACTIVE)",
                        v.trim()
                    )));
                }
                s.state = Some(up);
            }
            "AllowGroups" => s.allow_groups = Some(all_or_list(v)),
            "AllowAccounts" => s.allow_accounts = Some(all_or_list(v)),
            "DenyAccounts" => s.deny_accounts = Some(Some(values::parse_list(v))),
            "AllowQos" => s.allow_qos = Some(all_or_list(v)),
            "DenyQos" => s.deny_qos = Some(Some(values::parse_list(v))),
            "MaxNodes" => s.max_nodes = Some(values::parse_u32_or_unlimited(v).map_err(e)?),
            "MinNodes" => s.min_nodes = Some(u32v()?),
            "MaxCPUsPerNode" => {
                s.max_cpus_per_node = Some(values::parse_u32_or_unlimited(v).map_err(e)?)
            }
            "PriorityTier" => s.priority_tier = Some(u32v()?),
            "PriorityJobFactor" => s.priority_job_factor = Some(u32v()?),
            "Priority" => {
                let n = u32v()?;
                s.priority_tier = Some(n);
                s.priority_job_factor = Some(n);
            }
            "OverSubscribe" | "Shared" => {
                s.over_subscribe = Some(parse_over_subscribe(v).map_err(e)?)
            }
            "ExclusiveUser" => s.exclusive_user = Some(boolv()?),
            "Hidden" => s.hidden = Some(boolv()?),
            "RootOnly" => s.root_only = Some(boolv()?),
            "LLN" => s.lln = Some(boolv()?),
            "QOS" => s.qos = Some(values::opt_string(v)),
            "DefMemPerCPU" => {
                let m = memv()?;
                mem(&mut s.def_mem, MemLimit::PerCpu(m), "DefMemPerNode")
            }
            "DefMemPerNode" => {
                let m = memv()?;
                mem(&mut s.def_mem, MemLimit::PerNode(m), "DefMemPerCPU")
            }
            "MaxMemPerCPU" => {
                let m = memv()?;
                mem(&mut s.max_mem, MemLimit::PerCpu(m), "MaxMemPerNode")
            }
            "MaxMemPerNode" => {
                let m = memv()?;
                mem(&mut s.max_mem, MemLimit::PerNode(m), "MaxMemPerCPU")
            }
            "GraceTime" => s.grace_time = Some(u32v()?),
            "PreemptMode" => s.preempt_mode = Some(parse_preempt_mode(v).map_err(e)?),
            "Alternate" => s.alternate = Some(values::opt_string(v)),
            "TRESBillingWeights" => s.tres_billing_weights = Some(values::opt_string(v)),
            _ => unknown.note("PartitionName", p, warnings),
        }
    }
    Ok(s)
}

/// Resolve a `Nodes=` value: hostlist elements, node-set names and `ALL`.
fn resolve_nodes(
    expr: &str,
    p: &Pair,
    nodes: &[NodeConf],
    index: &NodeIndex,
    nodesets: &[NodeSetConf],
) -> Result<Vec<String>, ConfError> {
    let mut selected = vec![false; nodes.len()];
    for piece in hostlist::split_top_level(expr) {
        if piece.eq_ignore_ascii_case("ALL") {
            selected.iter_mut().for_each(|s| *s = true);
            continue;
        }
        if let Some(set) = nodesets.iter().find(|s| s.name == piece) {
            for n in &set.nodes {
                if let Some(&i) = index.get(n) {
                    selected[i] = true;
                }
            }
            continue;
        }
        let names = hostlist::expand_at_most(piece, crate::nodes::MAX_NODES)
            .map_err(|e| err(p, "Nodes", e.to_string()))?;
        for n in names {
            match index.get(&n) {
                Some(&i) => selected[i] = true,
                None => return Err(err(p, "Nodes", format!("undefined node '{n}'"))),
            }
        }
    }
    Ok(nodes
        .iter()
        .zip(selected)
        .filter(|(_, s)| *s)
        .map(|(n, _)| n.name.clone())
        .collect())
}

impl PartitionSpec {
    /// Set on `part` every value this spec gives (the others stay).
    fn apply_to(
        &self,
        part: &mut PartitionConf,
        nodes: &[NodeConf],
        index: &NodeIndex,
        nodesets: &[NodeSetConf],
    ) -> Result<(), ConfError> {
        if let Some((expr, p)) = &self.nodes {
            part.nodes = resolve_nodes(expr, p, nodes, index, nodesets)?;
            part.nodes_expr = expr.clone();
        }
        if let Some((d, _)) = &self.default {
            part.default = *d;
        }
        if let Some(v) = &self.max_time {
            part.max_time_min = *v;
        }
        if let Some(v) = &self.default_time {
            part.default_time_min = *v;
        }
        if let Some(st) = &self.state {
            part.state = st.clone();
        }
        if let Some(v) = &self.allow_groups {
            part.allow_groups = v.clone();
        }
        if let Some(v) = &self.allow_accounts {
            part.allow_accounts = v.clone();
        }
        if let Some(v) = &self.deny_accounts {
            part.deny_accounts = v.clone();
        }
        if let Some(v) = &self.allow_qos {
            part.allow_qos = v.clone();
        }
        if let Some(v) = &self.deny_qos {
            part.deny_qos = v.clone();
        }
        if let Some(v) = &self.max_nodes {
            part.max_nodes = *v;
        }
        if let Some(v) = &self.min_nodes {
            part.min_nodes = *v;
        }
        if let Some(v) = &self.max_cpus_per_node {
            part.max_cpus_per_node = *v;
        }
        if let Some(v) = &self.priority_tier {
            part.priority_tier = *v;
        }
        if let Some(v) = &self.priority_job_factor {
            part.priority_job_factor = *v;
        }
        if let Some(o) = &self.over_subscribe {
            part.over_subscribe = o.clone();
        }
        if let Some(v) = &self.exclusive_user {
            part.exclusive_user = *v;
        }
        if let Some(v) = &self.hidden {
            part.hidden = *v;
        }
        if let Some(v) = &self.root_only {
            part.root_only = *v;
        }
        if let Some(v) = &self.lln {
            part.lln = *v;
        }
        if let Some(v) = &self.qos {
            part.qos = v.clone();
        }
        match self.def_mem {
            Some(MemLimit::PerCpu(m)) => part.def_mem_per_cpu = m,
            Some(MemLimit::PerNode(m)) => part.def_mem_per_node = m,
            None => {}
        }
        match self.max_mem {
            Some(MemLimit::PerCpu(m)) => part.max_mem_per_cpu = m,
            Some(MemLimit::PerNode(m)) => part.max_mem_per_node = m,
            None => {}
        }
        if let Some(v) = &self.grace_time {
            part.grace_time = *v;
        }
        if self.preempt_mode.is_some() {
            part.preempt_mode = self.preempt_mode.clone();
        }
        if let Some(v) = &self.alternate {
            part.alternate = v.clone();
        }
        if let Some(v) = &self.tres_billing_weights {
            part.tres_billing_weights = v.clone();
        }
        for (k, v) in &self.extra {
            part.extra.retain(|(ek, _)| ek != k);
            part.extra.push((k.clone(), v.clone()));
        }
        Ok(())
    }
}

/// `scontrol create|update PartitionName=...`: lay the `Key=Value` words
/// (the `PartitionName` word left out) over `part`, as a slurm.conf line
/// would set them; unknown keys are refused (`Update of this parameter is
/// not supported: KEY`).
pub fn apply_partition_words(
    part: &mut PartitionConf,
    words: &[(String, String)],
    cfg: &crate::Config,
) -> Result<(), String> {
    let pairs: Vec<Pair> = words
        .iter()
        .map(|(k, v)| Pair {
            key: k.clone(),
            value: v.clone(),
            file: "scontrol".into(),
            line: 0,
        })
        .collect();
    for p in &pairs {
        if canonical(PARTITION_KEYS, &p.key).is_none()
            && canonical(PARTITION_EXTRA_KEYS, &p.key).is_none()
        {
            return Err(format!(
                "Update of this parameter is not supported: {}={}",
                p.key, p.value
            ));
        }
    }
    let index: NodeIndex = cfg
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let msg = |e: ConfError| format!("Invalid {}: {}", e.key, e.message);
    let spec =
        parse_partition_spec(&pairs, &mut UnknownKeys::default(), &mut Vec::new()).map_err(msg)?;
    spec.apply_to(part, &cfg.nodes, &index, &cfg.nodesets)
        .map_err(msg)
}

/// Build one partition from its name pair and (DEFAULT-overlaid) values.
pub(crate) fn build_partition(
    name_pair: &Pair,
    s: &PartitionSpec,
    nodes: &[NodeConf],
    index: &NodeIndex,
    nodesets: &[NodeSetConf],
) -> Result<PartitionConf, ConfError> {
    let name = name_pair.value.trim();
    if name.is_empty() || name.contains([',', '[', ']']) {
        return Err(err(
            name_pair,
            "PartitionName",
            format!("invalid partition name '{name}'"),
        ));
    }
    let mut part = PartitionConf::new(name);
    s.apply_to(&mut part, nodes, index, nodesets)?;
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_subscribe_values() {
        assert_eq!(parse_over_subscribe("no"), Ok("NO".to_string()));
        assert_eq!(parse_over_subscribe("Yes:4"), Ok("YES:4".to_string()));
        assert_eq!(parse_over_subscribe("FORCE"), Ok("FORCE".to_string()));
        assert_eq!(
            parse_over_subscribe("exclusive"),
            Ok("EXCLUSIVE".to_string())
        );
        for bad in ["maybe", "NO:2", "YES:x", "EXCLUSIVE:1", ""] {
            assert!(parse_over_subscribe(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn preempt_modes() {
        assert_eq!(
            parse_preempt_mode("suspend,gang"),
            Ok("SUSPEND,GANG".to_string())
        );
        assert_eq!(parse_preempt_mode("OFF"), Ok("OFF".to_string()));
        assert!(parse_preempt_mode("nice").is_err());
        assert!(parse_preempt_mode("").is_err());
    }

    #[test]
    fn defaults() {
        let p = PartitionConf::new("x");
        assert_eq!(p.state, "UP");
        assert_eq!(p.over_subscribe, "NO");
        assert_eq!(p.priority_tier, 1);
        assert!(p.max_time_min.is_none());
        assert!(!p.has_node("n1"));
    }
}
