//! sinfo's rendering: one field's value for a line, the header and the
//! lines. Pure.

use std::fmt::Write as _;

use drover_proto::{NodeInfo, INFINITE};

use super::fields::{header, NodeField, NodeField as F};
use super::group::{node_list, AutoWidth, Group};
use crate::fmtspec::{self, Format};
use crate::nodestate::NodeState;
use crate::timefmt;
use drover_conf::hostlist;

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
                if p.is_default && width > 0 && p.name.chars().count() >= width {
                    // The last visible character replaced.
                    out.extend(p.name.chars().take(width - 1));
                } else {
                    out.push_str(&p.name);
                }
                if p.is_default {
                    out.push('*');
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

pub fn render_line(out: &mut String, fmt: &Format<NodeField>, g: &Group<'_>, aw: &AutoWidth) {
    out.push_str(&fmt.prefix);
    for f in &fmt.fields {
        if f.kind != F::Invalid {
            let w = width_of(f.kind, f.width, aw);
            let start = out.len();
            let cut = value(out, f.kind, g, w);
            fmtspec::fit_cell(out, start, w, f.right, cut);
        }
        out.push_str(&f.suffix);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sinfo::fields::*;
    use crate::sinfo::group::{auto_widths, group, sort_groups};
    use drover_proto::PartitionInfo;

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
        for g in &gs {
            render_line(&mut out, &f, g, &aw);
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
