//! sinfo's fields, grouping of nodes into lines and rendering. Pure.

use std::fmt::Write as _;

use drover_proto::{NodeInfo, PartitionInfo, INFINITE};

use crate::fmtspec::{self, Format};
use crate::nodestate::NodeState;
use crate::timefmt;
use drover_conf::hostlist;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeField {
    Avail,
    NodesAI,
    FeaturesAct,
    MaxCpusPerNode,
    Cpus,
    CpusAIOT,
    Disk,
    Nodes,
    FreeMem,
    Reason,
    Features,
    NodesAIOT,
    Groups,
    Gres,
    GresUsed,
    OverSubscribe,
    Timestamp,
    PrioJobFactor,
    TimeLimit,
    DefaultTime,
    Memory,
    AllocMem,
    PreemptMode,
    Hostnames,
    NodeList,
    NodeAddr,
    CpuLoad,
    PrioTier,
    Partition,
    Root,
    PartitionName,
    JobSize,
    AllocNodes,
    StateCompact,
    StateLong,
    User,
    UserLong,
    Version,
    Cluster,
    Weight,
    Sockets,
    Cores,
    Threads,
    Sct,
    Port,
    /// `-O statecomplete`: base state and every flag, lower case.
    StateComplete,
    /// Node comment, extra data and reservation (`-O comment|extra|
    /// reservation`): Drover's nodes have none, shown as Slurm shows unset.
    Comment,
    Extra,
    ResvName,
    Invalid,
}

use NodeField as F;

pub fn by_letter(c: char) -> Option<NodeField> {
    Some(match c {
        'a' => F::Avail,
        'A' => F::NodesAI,
        'b' => F::FeaturesAct,
        'B' => F::MaxCpusPerNode,
        'c' => F::Cpus,
        'C' => F::CpusAIOT,
        'd' => F::Disk,
        'D' => F::Nodes,
        'e' => F::FreeMem,
        'E' => F::Reason,
        'f' => F::Features,
        'F' => F::NodesAIOT,
        'g' => F::Groups,
        'G' => F::Gres,
        'h' => F::OverSubscribe,
        'H' => F::Timestamp,
        'I' => F::PrioJobFactor,
        'l' => F::TimeLimit,
        'L' => F::DefaultTime,
        'm' => F::Memory,
        'M' => F::PreemptMode,
        'n' => F::Hostnames,
        'N' => F::NodeList,
        'o' => F::NodeAddr,
        'O' => F::CpuLoad,
        'p' => F::PrioTier,
        'P' => F::Partition,
        'r' => F::Root,
        'R' => F::PartitionName,
        's' => F::JobSize,
        'S' => F::AllocNodes,
        't' => F::StateCompact,
        'T' => F::StateLong,
        'u' => F::User,
        'U' => F::UserLong,
        'v' => F::Version,
        'V' => F::Cluster,
        'w' => F::Weight,
        'X' => F::Sockets,
        'Y' => F::Cores,
        'Z' => F::Threads,
        'z' => F::Sct,
        _ => return None,
    })
}

pub fn by_name(n: &str) -> Option<NodeField> {
    Some(match n {
        "allocmem" => F::AllocMem,
        "allocnodes" => F::AllocNodes,
        "available" => F::Avail,
        "cluster" => F::Cluster,
        "cpus" => F::Cpus,
        "cpusload" => F::CpuLoad,
        "freemem" => F::FreeMem,
        "cpusstate" => F::CpusAIOT,
        "cores" => F::Cores,
        "defaulttime" => F::DefaultTime,
        "disk" => F::Disk,
        "features" => F::Features,
        "features_act" => F::FeaturesAct,
        "groups" => F::Groups,
        "gres" => F::Gres,
        "gresused" => F::GresUsed,
        "maxcpuspernode" => F::MaxCpusPerNode,
        "memory" => F::Memory,
        "nodeai" => F::NodesAI,
        "nodeaiot" => F::NodesAIOT,
        "nodehost" => F::Hostnames,
        "nodelist" => F::NodeList,
        "nodeaddr" => F::NodeAddr,
        "nodes" => F::Nodes,
        "oversubscribe" => F::OverSubscribe,
        "partition" => F::Partition,
        "partitionname" => F::PartitionName,
        "port" => F::Port,
        "preemptmode" => F::PreemptMode,
        "priorityjobfactor" => F::PrioJobFactor,
        "prioritytier" => F::PrioTier,
        "reason" => F::Reason,
        "root" => F::Root,
        "size" => F::JobSize,
        "statecompact" => F::StateCompact,
        "statecomplete" => F::StateComplete,
        "share" => F::OverSubscribe,
        "comment" => F::Comment,
        "extra" => F::Extra,
        "reservation" => F::ResvName,
        "statelong" => F::StateLong,
        "sockets" => F::Sockets,
        "socketcorethread" => F::Sct,
        "time" => F::TimeLimit,
        "timestamp" => F::Timestamp,
        "threads" => F::Threads,
        "user" => F::User,
        "userlong" => F::UserLong,
        "version" => F::Version,
        "weight" => F::Weight,
        _ => return None,
    })
}

pub fn header(f: NodeField) -> &'static str {
    match f {
        F::Avail => "AVAIL",
        F::NodesAI => "NODES(A/I)",
        F::FeaturesAct => "ACTIVE_FEATURES",
        F::MaxCpusPerNode => "MAX_CPUS_PER_NODE",
        F::Cpus => "CPUS",
        F::CpusAIOT => "CPUS(A/I/O/T)",
        F::Disk => "TMP_DISK",
        F::Nodes => "NODES",
        F::FreeMem => "FREE_MEM",
        F::Reason => "REASON",
        F::Features => "AVAIL_FEATURES",
        F::NodesAIOT => "NODES(A/I/O/T)",
        F::Groups => "GROUPS",
        F::Gres => "GRES",
        F::GresUsed => "GRES_USED",
        F::OverSubscribe => "OVERSUBSCRIBE",
        F::Timestamp => "TIMESTAMP",
        F::PrioJobFactor => "PRIO_JOB_FACTOR",
        F::TimeLimit => "TIMELIMIT",
        F::DefaultTime => "DEFAULTTIME",
        F::Memory => "MEMORY",
        F::AllocMem => "ALLOCMEM",
        F::PreemptMode => "PREEMPT_MODE",
        F::Hostnames => "HOSTNAMES",
        F::NodeList => "NODELIST",
        F::NodeAddr => "NODE_ADDR",
        F::CpuLoad => "CPU_LOAD",
        F::PrioTier => "PRIO_TIER",
        F::Partition | F::PartitionName => "PARTITION",
        F::Root => "ROOT",
        F::JobSize => "JOB_SIZE",
        F::AllocNodes => "ALLOCNODES",
        F::StateCompact | F::StateLong => "STATE",
        F::User | F::UserLong => "USER",
        F::Version => "VERSION",
        F::Cluster => "CLUSTER",
        F::Weight => "WEIGHT",
        F::Sockets => "SOCKETS",
        F::Cores => "CORES",
        F::Threads => "THREADS",
        F::Sct => "S:C:T",
        F::Port => "PORT",
        F::StateComplete => "STATECOMPLETE",
        F::Comment => "COMMENT",
        F::Extra => "EXTRA",
        F::ResvName => "RESERVATION",
        F::Invalid => "",
    }
}

pub fn parse_format(fmt: &str) -> (Format<NodeField>, Vec<char>) {
    if fmt.eq_ignore_ascii_case("%all") {
        return fmtspec::parse_percent(&all_format(), by_letter, F::Invalid);
    }
    fmtspec::parse_percent(fmt, by_letter, F::Invalid)
}

/// `-o %all` (and `-O all`): every field letter, `|`-separated, as Slurm
/// builds it (`%a|%b|...|%z|%A |...|%Z `; letters without a field are
/// left out with their separator, as Slurm's parser drops them).
pub fn all_format() -> String {
    let letters: Vec<char> = ('a'..='z')
        .chain('A'..='Z')
        .filter(|c| by_letter(*c).is_some())
        .collect();
    let mut out = String::new();
    for (i, c) in letters.iter().enumerate() {
        let sep = match (c.is_ascii_uppercase(), i + 1 == letters.len()) {
            (false, _) => "|",
            (true, false) => " |",
            (true, true) => " ",
        };
        out.push('%');
        out.push(*c);
        out.push_str(sep);
    }
    out
}

pub fn parse_long_format(fmt: &str) -> (Format<NodeField>, Vec<String>) {
    if fmt.split(',').any(|t| t.trim().eq_ignore_ascii_case("all")) {
        let (f, _) = parse_format(&all_format());
        return (f, Vec::new());
    }
    fmtspec::parse_long(fmt, by_name, F::Invalid)
}

pub const DEFAULT_FORMAT: &str = "%9P %.5a %.10l %.6D %.6t %N";
pub const LONG_FORMAT: &str = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
pub const NODE_FORMAT: &str = "%N %.6D %.9P %6t";
pub const NODE_LONG_FORMAT: &str = "%N %.6D %.9P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E";
pub const SUMMARIZE_FORMAT: &str = "%9P %.5a %.10l %.16F  %N";
pub const REASON_FORMAT: &str = "%20E %9u %19H %N";
pub const REASON_LONG_FORMAT: &str = "%20E %12U %19H %6t %N";

/// Does the field depend on the partition (so lines are per partition)?
pub fn partition_field(f: NodeField) -> bool {
    matches!(
        f,
        F::Avail
            | F::Groups
            | F::OverSubscribe
            | F::PrioJobFactor
            | F::TimeLimit
            | F::DefaultTime
            | F::PreemptMode
            | F::PrioTier
            | F::Partition
            | F::PartitionName
            | F::Root
            | F::JobSize
            | F::AllocNodes
            | F::MaxCpusPerNode
    )
}

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

fn min_max(out: &mut String, vals: impl Iterator<Item = u64>) {
    let mut mn = u64::MAX;
    let mut mx = 0;
    let mut any = false;
    for v in vals {
        any = true;
        mn = mn.min(v);
        mx = mx.max(v);
    }
    if !any {
        out.push('0');
    } else if mn == mx {
        let _ = write!(out, "{mx}");
    } else {
        let _ = write!(out, "{mn}+");
    }
}

/// Counts of allocated/idle/other nodes and CPUs.
pub fn counts(nodes: &[&NodeInfo]) -> ([u32; 4], [u32; 4]) {
    let mut n = [0u32; 4];
    let mut c = [0u32; 4];
    for node in nodes {
        let st = NodeState::of(node);
        n[3] += 1;
        c[3] += node.cpus;
        if !st.available() {
            n[2] += 1;
            c[2] += node.cpus;
        } else {
            let alloc = node.cpus_alloc.min(node.cpus);
            if alloc > 0
                || matches!(
                    st.base,
                    crate::nodestate::Base::Allocated | crate::nodestate::Base::Mixed
                )
            {
                n[0] += 1;
            } else {
                n[1] += 1;
            }
            c[0] += alloc;
            c[1] += node.cpus - alloc;
        }
    }
    (n, c)
}

fn push_minutes(out: &mut String, m: u32) {
    if m == INFINITE {
        out.push_str("infinite");
    } else {
        timefmt::push_secs_short(out, i64::from(m) * 60, false);
    }
}

/// Write a field's value; returns whether long values are cut.
pub fn value(out: &mut String, f: NodeField, g: &Group<'_>, width: usize) -> bool {
    let first = g.nodes.first().copied();
    let p = g.part;
    match f {
        F::Avail => match p {
            None => out.push_str("n/a"),
            Some(p) => out.push_str(&p.state.to_ascii_lowercase()),
        },
        F::NodesAI => {
            let (n, _) = counts(&g.nodes);
            let _ = write!(out, "{}/{}", n[0], n[1]);
        }
        F::NodesAIOT => {
            let (n, _) = counts(&g.nodes);
            let _ = write!(out, "{}/{}/{}/{}", n[0], n[1], n[2], n[3]);
        }
        F::CpusAIOT => {
            let (_, c) = counts(&g.nodes);
            let _ = write!(out, "{}/{}/{}/{}", c[0], c[1], c[2], c[3]);
        }
        F::FeaturesAct => {
            let v = first
                .map(|n| n.active_features.join(","))
                .unwrap_or_default();
            out.push_str(if v.is_empty() { "(null)" } else { &v });
        }
        F::Features => {
            let v = first.map(|n| n.features.join(",")).unwrap_or_default();
            out.push_str(if v.is_empty() { "(null)" } else { &v });
        }
        F::MaxCpusPerNode => out.push_str("UNLIMITED"),
        F::Cpus => min_max(out, g.nodes.iter().map(|n| u64::from(n.cpus))),
        F::Disk => min_max(out, g.nodes.iter().map(|n| n.tmp_disk)),
        F::Nodes => {
            let _ = write!(out, "{}", g.nodes.len());
        }
        F::FreeMem => min_max(out, g.nodes.iter().map(|n| n.free_memory)),
        F::AllocMem => min_max(out, g.nodes.iter().map(|n| n.alloc_memory)),
        F::Reason => {
            let r = first.map(|n| n.reason.as_str()).unwrap_or("");
            out.push_str(if r.is_empty() { "none" } else { r });
        }
        F::Groups => match p {
            None => out.push_str("n/a"),
            Some(p) => {
                let g = p.allow_groups.as_str();
                out.push_str(if g.is_empty() || g.eq_ignore_ascii_case("ALL") {
                    "all"
                } else {
                    g
                });
            }
        },
        F::Gres => {
            let v = first.map(|n| n.gres.as_str()).unwrap_or("");
            out.push_str(if v.is_empty() { "(null)" } else { v });
        }
        F::GresUsed => {
            let v = first.map(|n| n.gres_used.as_str()).unwrap_or("");
            out.push_str(if v.is_empty() { "(null)" } else { v });
        }
        F::OverSubscribe => match p {
            None => out.push_str("n/a"),
            Some(p) => out.push_str(if p.over_subscribe.is_empty() {
                "NO"
            } else {
                &p.over_subscribe
            }),
        },
        F::Timestamp => match first.filter(|n| n.reason_time != 0) {
            Some(n) => out.push_str(&timefmt::make_time_str(n.reason_time)),
            None => out.push_str("Unknown"),
        },
        F::PrioJobFactor => match p {
            None => out.push_str("n/a"),
            Some(p) => {
                let _ = write!(out, "{}", p.priority_job_factor);
            }
        },
        F::PrioTier => match p {
            None => out.push_str("n/a"),
            Some(p) => {
                let _ = write!(out, "{}", p.priority_tier);
            }
        },
        F::TimeLimit => match p {
            None => out.push_str("n/a"),
            Some(p) => push_minutes(out, p.max_time),
        },
        F::DefaultTime => match p {
            Some(p) if p.default_time != 0 => push_minutes(out, p.default_time),
            _ => out.push_str("n/a"),
        },
        F::Memory => min_max(out, g.nodes.iter().map(|n| n.real_memory)),
        F::PreemptMode => match p {
            Some(p) if !p.preempt_mode.is_empty() => out.push_str(&p.preempt_mode),
            _ => out.push_str("OFF"),
        },
        F::Hostnames => {
            let names: Vec<&str> = g
                .nodes
                .iter()
                .map(|n| {
                    if n.node_hostname.is_empty() {
                        n.name.as_str()
                    } else {
                        n.node_hostname.as_str()
                    }
                })
                .collect();
            out.push_str(&hostlist::compress(&names));
        }
        F::NodeAddr => {
            let names: Vec<&str> = g
                .nodes
                .iter()
                .map(|n| {
                    if n.node_addr.is_empty() {
                        n.name.as_str()
                    } else {
                        n.node_addr.as_str()
                    }
                })
                .collect();
            out.push_str(&hostlist::compress_in_order(&names));
        }
        F::NodeList => out.push_str(&node_list(g)),
        F::CpuLoad => {
            let mn = g.nodes.iter().map(|n| n.cpu_load).min().unwrap_or(0);
            let mx = g.nodes.iter().map(|n| n.cpu_load).max().unwrap_or(0);
            if mn == mx {
                let _ = write!(out, "{:.2}", f64::from(mx) / 100.0);
            } else {
                let _ = write!(out, "{:.2}+", f64::from(mn) / 100.0);
            }
        }
        F::Partition => match p {
            None => out.push_str("n/a"),
            Some(p) => {
                out.push_str(&p.name);
                if p.is_default {
                    let len = p.name.chars().count();
                    if width == 0 || len < width {
                        out.push('*');
                    } else {
                        // Replace the last visible character.
                        let keep: String = p.name.chars().take(width - 1).collect();
                        out.clear();
                        out.push_str(&keep);
                        out.push('*');
                    }
                }
            }
        },
        F::PartitionName => match p {
            None => out.push_str("n/a"),
            Some(p) => out.push_str(&p.name),
        },
        F::Root => match p {
            None => out.push_str("n/a"),
            Some(p) => out.push_str(if p.root_only { "yes" } else { "no" }),
        },
        F::JobSize => match p {
            None => out.push_str("n/a"),
            Some(p) => {
                let min = if p.min_nodes < 1 && p.max_nodes > 0 {
                    1
                } else {
                    p.min_nodes
                };
                if p.max_nodes == min {
                    let _ = write!(out, "{min}");
                } else if p.max_nodes == INFINITE {
                    let _ = write!(out, "{min}-infinite");
                } else {
                    let _ = write!(out, "{min}-{}", p.max_nodes);
                }
            }
        },
        F::AllocNodes => out.push_str(if p.is_some() { "all" } else { "n/a" }),
        F::StateCompact => match (&g.state, g.nodes.is_empty()) {
            (Some(s), false) => out.push_str(&s.compact()),
            _ => out.push_str("n/a"),
        },
        F::StateLong => match (&g.state, g.nodes.is_empty()) {
            (Some(s), false) => out.push_str(&s.long()),
            _ => out.push_str("n/a"),
        },
        F::StateComplete => match (&g.state, g.nodes.is_empty()) {
            (Some(s), false) => out.push_str(&s.complete().to_ascii_lowercase()),
            _ => out.push_str("n/a"),
        },
        F::Comment | F::Extra | F::ResvName => out.push_str("(null)"),
        F::User | F::UserLong => match first.filter(|n| !n.reason.is_empty()) {
            Some(n) => {
                let name = crate::users::user_name(n.reason_uid);
                if f == F::UserLong {
                    let _ = write!(out, "{name}({})", n.reason_uid);
                } else {
                    out.push_str(&name);
                }
            }
            None => out.push_str("Unknown"),
        },
        F::Version => out.push_str(first.map(|n| n.version.as_str()).unwrap_or("")),
        F::Cluster => {}
        F::Weight => min_max(out, g.nodes.iter().map(|n| u64::from(n.weight))),
        F::Sockets => min_max(out, g.nodes.iter().map(|n| u64::from(n.sockets))),
        F::Cores => min_max(out, g.nodes.iter().map(|n| u64::from(n.cores_per_socket))),
        F::Threads => min_max(out, g.nodes.iter().map(|n| u64::from(n.threads_per_core))),
        F::Sct => {
            min_max(out, g.nodes.iter().map(|n| u64::from(n.sockets)));
            out.push(':');
            min_max(out, g.nodes.iter().map(|n| u64::from(n.cores_per_socket)));
            out.push(':');
            min_max(out, g.nodes.iter().map(|n| u64::from(n.threads_per_core)));
        }
        F::Port => min_max(out, g.nodes.iter().map(|n| u64::from(n.port))),
        F::Invalid => {}
    }
    true
}

fn width_of(f: NodeField, width: usize, aw: &AutoWidth) -> usize {
    match f {
        F::Partition | F::PartitionName => aw.partition.unwrap_or(width),
        F::NodeList | F::Hostnames => aw.nodelist.unwrap_or(width),
        _ => width,
    }
}

pub fn render_header(out: &mut String, fmt: &Format<NodeField>, aw: &AutoWidth) {
    out.push_str(&fmt.prefix);
    for f in &fmt.fields {
        if f.kind != F::Invalid {
            let w = width_of(f.kind, f.width, aw);
            let cut = !matches!(f.kind, F::NodeList | F::Hostnames | F::NodeAddr);
            fmtspec::push_cell(out, header(f.kind), w, f.right, cut);
        }
        out.push_str(&f.suffix);
    }
}

pub fn render_line(
    out: &mut String,
    scratch: &mut String,
    fmt: &Format<NodeField>,
    g: &Group<'_>,
    aw: &AutoWidth,
) {
    out.push_str(&fmt.prefix);
    for f in &fmt.fields {
        if f.kind != F::Invalid {
            let w = width_of(f.kind, f.width, aw);
            scratch.clear();
            let cut = value(scratch, f.kind, g, w);
            fmtspec::push_cell(out, scratch, w, f.right, cut);
        }
        out.push_str(&f.suffix);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn node(name: &str, state: &str, cpus: u32, alloc: u32) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            state: state.into(),
            responding: true,
            cpus,
            cpus_alloc: alloc,
            real_memory: 4000,
            sockets: 1,
            cores_per_socket: cpus,
            threads_per_core: 1,
            weight: 1,
            partitions: vec!["debug".into()],
            ..Default::default()
        }
    }

    pub fn part(name: &str, default: bool, max_time: u32) -> PartitionInfo {
        PartitionInfo {
            name: name.into(),
            is_default: default,
            state: "UP".into(),
            max_time,
            max_nodes: INFINITE,
            allow_groups: "ALL".into(),
            ..Default::default()
        }
    }

    fn render(
        fmt: &str,
        parts: &[(&PartitionInfo, Vec<&NodeInfo>)],
        node_mode: bool,
        auto: bool,
    ) -> String {
        let (f, _) = parse_format(fmt);
        let mut gs = group(&f, parts, node_mode);
        sort_groups(&mut gs, node_mode);
        let aw = auto_widths(&gs, auto, auto && node_mode);
        let mut out = String::new();
        render_header(&mut out, &f, &aw);
        out.push('\n');
        let mut s = String::new();
        for g in &gs {
            render_line(&mut out, &mut s, &f, g, &aw);
            out.push('\n');
        }
        out
    }

    #[test]
    fn default_layout() {
        let p = part("debug", true, INFINITE);
        let g = part("gpu", false, 300);
        let n1 = node("node1", "IDLE", 4, 0);
        let n2 = node("node2", "IDLE", 4, 0);
        let n3 = node("node3", "MIXED", 4, 2);
        let n4 = node("node4", "DOWN", 4, 0);
        let parts = vec![(&p, vec![&n1, &n2, &n3, &n4]), (&g, vec![&n3])];
        let out = render(DEFAULT_FORMAT, &parts, false, true);
        let expect = "\
PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
debug*       up   infinite      1    mix node3
debug*       up   infinite      2   idle node[1-2]
debug*       up   infinite      1   down node4
gpu          up    5:00:00      1    mix node3
";
        assert_eq!(out, expect);
    }

    #[test]
    fn node_oriented_and_summary() {
        let p = part("debug", true, 60);
        let n1 = node("node1", "ALLOCATED", 4, 4);
        let n2 = node("node2", "IDLE", 4, 0);
        let parts = vec![(&p, vec![&n2, &n1])];
        let out = render(NODE_FORMAT, &parts, true, true);
        let expect = "\
NODELIST   NODES PARTITION STATE 
node1          1    debug* alloc 
node2          1    debug* idle  
";
        assert_eq!(out, expect);
        let out = render("%N %t %C", &parts, true, false);
        assert_eq!(out.lines().nth(1).unwrap(), "node1 alloc 4/0/0/4");
        let out = render(SUMMARIZE_FORMAT, &parts, false, true);
        let expect = "\
PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T)  NODELIST
debug*       up    1:00:00          1/1/0/2  node[1-2]
";
        assert_eq!(out, expect);
    }

    #[test]
    fn reasons_and_fields() {
        let p = part("debug", true, 30);
        let mut n1 = node("node1", "IDLE", 4, 0);
        n1.state_flags = "+DRAIN".into();
        n1.reason = "bad disk".into();
        n1.reason_uid = 0;
        let n2 = node("node2", "IDLE", 8, 0);
        let parts = vec![(&p, vec![&n1, &n2])];
        let out = render("%P %l %c %m %E %t %f %G %z", &parts, false, false);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "PARTITION TIMELIMIT CPUS MEMORY REASON STATE AVAIL_FEATURES GRES S:C:T"
        );
        assert_eq!(
            lines[1],
            "debug* 30:00 4 4000 bad disk drain (null) (null) 1:4:1"
        );
        assert_eq!(
            lines[2],
            "debug* 30:00 8 4000 none idle (null) (null) 1:8:1"
        );
        let out = render("%9P|%.3P|", &parts, false, false);
        assert_eq!(out.lines().nth(1).unwrap(), "debug*   |de*|");
        let out = render("%s %r %h %g %L", &parts, false, false);
        assert_eq!(out.lines().nth(1).unwrap(), "1-infinite no NO all n/a");
    }
}
