//! sinfo's lines: nodes with equal attributes grouped into one line (per
//! partition when the format shows partition fields), their order and the
//! widths computed from them. Pure.

use std::fmt::Write as _;

use drover_conf::hostlist;
use drover_proto::{NodeInfo, PartitionInfo};

use super::fields::{partition_field, NodeField, NodeField as F};
use crate::fmtspec::Format;
use crate::nodestate::NodeState;

/// A node attribute that splits lines when it differs (Slurm's match flags).
fn push_node_key(key: &mut String, f: NodeField, n: &NodeInfo, st: &NodeState) {
    match f {
        F::StateCompact | F::StateLong | F::StateComplete => {
            let _ = write!(key, "{}", st.number());
        }
        F::Cpus | F::CpusAIOT => {
            let _ = write!(key, "{}", n.cpus);
        }
        F::Memory => {
            let _ = write!(key, "{}", n.real_memory);
        }
        F::Disk => {
            let _ = write!(key, "{}", n.tmp_disk);
        }
        F::Features => key.push_str(&n.features.join(",")),
        F::FeaturesAct => key.push_str(&n.active_features.join(",")),
        F::Gres => key.push_str(&n.gres),
        F::GresUsed => key.push_str(&n.gres_used),
        F::Reason => key.push_str(&n.reason),
        F::Timestamp => {
            let _ = write!(key, "{}", n.reason_time);
        }
        F::User | F::UserLong => {
            let _ = write!(key, "{}", n.reason_uid);
        }
        F::Weight => {
            let _ = write!(key, "{}", n.weight);
        }
        F::Sockets | F::Cores | F::Threads | F::Sct => {
            let _ = write!(
                key,
                "{}:{}:{}",
                n.sockets, n.cores_per_socket, n.threads_per_core
            );
        }
        F::CpuLoad => {
            let _ = write!(key, "{}", n.cpu_load);
        }
        F::FreeMem => {
            let _ = write!(key, "{}", n.free_memory);
        }
        F::Version => key.push_str(&n.version),
        F::Port => {
            let _ = write!(key, "{}", n.port);
        }
        F::AllocMem => {
            let _ = write!(key, "{}", n.alloc_memory);
        }
        _ => return,
    }
    key.push('\u{1}');
}

/// One output line: a partition (or none) and its nodes with equal attributes.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    pub part: Option<&'a PartitionInfo>,
    pub part_index: usize,
    pub nodes: Vec<&'a NodeInfo>,
    pub state: Option<NodeState>,
    key: String,
}

impl<'a> Group<'a> {
    /// A line for a partition without (matching) nodes.
    pub fn empty(part: &'a PartitionInfo, part_index: usize) -> Group<'a> {
        Group {
            part: Some(part),
            part_index,
            nodes: Vec::new(),
            state: None,
            key: String::new(),
        }
    }
}

/// Build the lines. `parts` are in configuration order, each with the nodes
/// (already filtered) that belong to it. Without partition fields in the
/// format each node is counted once.
pub fn group<'a>(
    fmt: &Format<NodeField>,
    parts: &[(&'a PartitionInfo, Vec<&'a NodeInfo>)],
    node_mode: bool,
) -> Vec<Group<'a>> {
    let per_part = fmt.fields.iter().any(|f| partition_field(f.kind)) || node_mode;
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut key = String::new();
    for (pi, (p, nodes)) in parts.iter().enumerate() {
        for n in nodes {
            if !per_part && !seen.insert(n.name.as_str()) {
                continue;
            }
            let st = NodeState::of(n);
            key.clear();
            for f in &fmt.fields {
                push_node_key(&mut key, f.kind, n, &st);
            }
            let part = if per_part { Some(*p) } else { None };
            let existing = if node_mode {
                None
            } else {
                groups.iter_mut().find(|g| {
                    g.key == key
                        && match (g.part, part) {
                            (Some(a), Some(b)) => std::ptr::eq(a, b),
                            (None, None) => true,
                            _ => false,
                        }
                })
            };
            match existing {
                Some(g) => g.nodes.push(n),
                None => groups.push(Group {
                    part,
                    part_index: pi,
                    nodes: vec![n],
                    state: Some(st),
                    key: key.clone(),
                }),
            }
        }
    }
    groups
}

/// Sort lines: `-N` by node name, otherwise partition order then state
/// (Slurm's `#P,-t`).
pub fn sort_groups(groups: &mut [Group<'_>], node_mode: bool) {
    if node_mode {
        groups.sort_by(|a, b| {
            let an = a.nodes.first().map(|n| n.name.as_str()).unwrap_or("");
            let bn = b.nodes.first().map(|n| n.name.as_str()).unwrap_or("");
            hostlist::natural_cmp(an, bn).then(a.part_index.cmp(&b.part_index))
        });
    } else {
        groups.sort_by(|a, b| {
            let sa = a.state.as_ref().map(NodeState::number).unwrap_or(0);
            let sb = b.state.as_ref().map(NodeState::number).unwrap_or(0);
            a.part_index.cmp(&b.part_index).then(sb.cmp(&sa))
        });
    }
}

/// Widths computed from the data (Slurm's part_field_flag / node_field_flag).
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoWidth {
    pub partition: Option<usize>,
    pub nodelist: Option<usize>,
}

pub fn auto_widths(groups: &[Group<'_>], part: bool, node: bool) -> AutoWidth {
    let mut w = AutoWidth::default();
    if part {
        let mut m = 9;
        for g in groups {
            if let Some(p) = g.part {
                m = m.max(p.name.chars().count() + usize::from(p.is_default));
            }
        }
        w.partition = Some(m);
    }
    if node {
        let mut m = 9;
        for g in groups {
            m = m.max(node_list(g).chars().count());
        }
        w.nodelist = Some(m);
    }
    w
}

pub fn node_list(g: &Group<'_>) -> String {
    let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
    hostlist::compress(&names)
}
