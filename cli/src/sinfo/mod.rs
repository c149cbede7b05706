//! `sinfo`: view partitions and nodes.

pub mod dump;
pub mod fields;
pub mod format;
pub mod group;
pub mod resv;

use std::io::Write;

use drover_proto::{GetNodesRequest, GetPartitionsRequest, NodeInfo, PartitionInfo};

use crate::conn;
use crate::fmtspec::Format;
use crate::nodestate::{state_matches, Base, NodeState};
use crate::opts::{self, opt, Arg, OptDef};
use fields::NodeField;

pub const TABLE: &[OptDef] = &[
    opt("all", Some('a'), Arg::No, "all"),
    opt("dead", Some('d'), Arg::No, "dead"),
    opt("exact", Some('e'), Arg::No, "exact"),
    opt("federation", None, Arg::No, "federation"),
    opt("future", Some('F'), Arg::No, "future"),
    opt("help", None, Arg::No, "help"),
    opt("hide", None, Arg::No, "hide"),
    opt("iterate", Some('i'), Arg::Required, "iterate"),
    opt("json", None, Arg::Optional, "json"),
    opt("yaml", None, Arg::Optional, "yaml"),
    opt("local", None, Arg::No, "local"),
    opt("long", Some('l'), Arg::No, "long"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("nodes", Some('n'), Arg::Required, "nodes"),
    opt("noconvert", None, Arg::No, "noconvert"),
    opt("noheader", Some('h'), Arg::No, "noheader"),
    opt("Node", Some('N'), Arg::No, "Node"),
    opt("format", Some('o'), Arg::Required, "format"),
    opt("Format", Some('O'), Arg::Required, "Format"),
    opt("partition", Some('p'), Arg::Required, "partition"),
    opt("responding", Some('r'), Arg::No, "responding"),
    opt("list-reasons", Some('R'), Arg::No, "list-reasons"),
    opt("summarize", Some('s'), Arg::No, "summarize"),
    opt("sort", Some('S'), Arg::Required, "sort"),
    opt("states", Some('t'), Arg::Required, "states"),
    opt("reservation", Some('T'), Arg::No, "reservation"),
    opt("usage", None, Arg::No, "usage"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
];

/// Options Drover recognises and refuses (`Requested operation not
/// supported on this system`): its own sort order is fixed (partition, then
/// state), there is no YAML output.
pub const REFUSED: &[&str] = &["sort", "yaml"];
/// Their environment variables, refused the same way.
pub const REFUSED_ENV: &[&str] = &["SINFO_SORT"];

const USAGE: &str = "Usage: sinfo [-adelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]
             [-S fields] [-o format] [-O Format] [--federation] [--local]
             [--json] [--noconvert]
";

#[derive(Debug, Clone)]
pub struct Params {
    pub format: Format<NodeField>,
    pub auto_part: bool,
    pub auto_node: bool,
    pub no_header: bool,
    pub long: bool,
    pub node_mode: bool,
    pub json: bool,
    pub all: bool,
    pub dead: bool,
    pub responding: bool,
    pub reservation: bool,
    pub iterate: u64,
    pub partitions: Option<Vec<String>>,
    pub nodes: Option<Vec<String>>,
    pub states: Option<Vec<String>>,
    pub warnings: Vec<String>,
    /// `-F` (or `SINFO_FUTURE`): nodes in the FUTURE state too.
    pub future: bool,
    /// `-M` (or `SLURM_CLUSTERS`): checked against the cluster's name.
    pub clusters: Option<(String, crate::refuse::ClustersFrom)>,
    /// `-v`: Slurm's dump of these parameters, printed first.
    pub verbose_dump: Option<String>,
}

#[derive(Debug)]
pub enum Parsed {
    Run(Box<Params>),
    Help,
    Version,
}

pub fn parse_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Parsed, Vec<String>> {
    let p = opts::parse(TABLE, args, false).map_err(|e| {
        vec![
            format!("sinfo: {e}"),
            "Try \"sinfo --help\" for more information".to_string(),
        ]
    })?;
    if p.has("help") || p.has("usage") {
        return Ok(Parsed::Help);
    }
    if p.has("version") {
        return Ok(Parsed::Version);
    }
    crate::refuse::refuse_options("sinfo", &p, REFUSED)?;
    crate::refuse::refuse_env("sinfo", env, REFUSED_ENV)?;
    if let Some(extra) = p.positional.first() {
        return Err(vec![
            format!("sinfo: error: Unrecognized option: {extra}"),
            USAGE.trim_end().to_string(),
        ]);
    }
    if p.has("all") && p.has("partition") {
        return Err(vec![
            "sinfo: error: Conflicting options, -a and -p, specified. Please choose one or the other."
                .into(),
        ]);
    }
    let long = p.has("long");
    let node_mode = p.has("Node");
    let summarize = p.has("summarize");
    let reasons = p.has("list-reasons");
    let mut warnings = Vec::new();
    let (mut auto_part, mut auto_node) = (false, false);
    let user_fmt = p.value("format").map(str::to_string);
    let user_long = p.value("Format").map(str::to_string);
    let (format, format_text) = if let Some(f) = user_long {
        let (fmt, bad) = fields::parse_long_format(&f);
        for b in bad {
            warnings.push(format!("Invalid node format specification: {b}"));
        }
        (fmt, None)
    } else {
        let f = match user_fmt {
            Some(f) => f,
            None => {
                if summarize {
                    auto_part = true;
                    fields::SUMMARIZE_FORMAT.to_string()
                } else if node_mode {
                    auto_part = true;
                    auto_node = true;
                    if long {
                        fields::NODE_LONG_FORMAT.to_string()
                    } else {
                        fields::NODE_FORMAT.to_string()
                    }
                } else if reasons {
                    if long {
                        fields::REASON_LONG_FORMAT.to_string()
                    } else {
                        fields::REASON_FORMAT.to_string()
                    }
                } else if let Some(f) = env("SINFO_FORMAT") {
                    f
                } else {
                    auto_part = true;
                    if long {
                        fields::LONG_FORMAT.to_string()
                    } else {
                        fields::DEFAULT_FORMAT.to_string()
                    }
                }
            }
        };
        let (fmt, bad) = fields::parse_format(&f);
        for b in bad {
            warnings.push(format!("Invalid node format specification: {b}"));
        }
        (fmt, Some(f))
    };
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect()
    };
    let nodes = match p.value("nodes") {
        Some(n) => match drover_conf::hostlist::expand(n) {
            Ok(h) => Some(h),
            Err(_) => {
                return Err(vec![format!(
                    "sinfo: error: '{n}' invalid entry for --nodes"
                )])
            }
        },
        None => None,
    };
    let mut states = p.value("states").map(list);
    if let Some(st) = &states {
        let probe = NodeState {
            base: Base::Idle,
            drain: false,
            completing: false,
            no_respond: false,
            powered_down: false,
            powering_up: false,
            powering_down: false,
            power_down: false,
            cloud: false,
            reboot: false,
            maint: false,
            reserved: false,
        };
        for s in st {
            if !s.eq_ignore_ascii_case("all") && state_matches(s, &probe).is_none() {
                return Err(vec![
                    format!("sinfo: error: Bad state string: \"{s}\""),
                    "sinfo: error: valid states: unknown,down,idle,allocated,error,mixed,future,drain,drained,draining,no_respond,reserved,completing,cloud,powered_down,powering_down,power_down,powering_up,power_up,fail,maint,reboot"
                        .into(),
                ]);
            }
        }
        if st.iter().any(|s| s.eq_ignore_ascii_case("all")) {
            states = None;
        }
    } else if reasons {
        states = Some(vec!["down".into(), "fail".into(), "drain".into()]);
    }
    let iterate = match p.value("iterate") {
        Some(s) => match s.trim().parse::<i64>() {
            Ok(n) if n > 0 => n as u64,
            _ => {
                return Err(vec![format!(
                    "sinfo: error: Error: invalid entry for --iterate={s}"
                )])
            }
        },
        None => 0,
    };
    let partitions = p
        .value("partition")
        .map(list)
        .or_else(|| env("SINFO_PARTITION").map(|s| list(&s)));
    // The last of -a/--hide wins; SINFO_ALL unless either is given.
    let all = partitions.is_some()
        || match (
            p.opts.iter().rposition(|f| f.key == "all"),
            p.opts.iter().rposition(|f| f.key == "hide"),
        ) {
            (Some(a), Some(h)) => a > h,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => env("SINFO_ALL").is_some(),
        };
    let partition_text = p
        .value("partition")
        .map(str::to_string)
        .or_else(|| env("SINFO_PARTITION"));
    let verbose_dump = (p.count("verbose") > 0).then(|| {
        dump::Dump {
            dead: p.has("dead"),
            exact: p.has("exact"),
            format: format_text.as_deref(),
            fields: format.fields.iter().map(|f| f.kind).collect(),
            iterate,
            long,
            no_header: p.has("noheader"),
            node_format: node_mode,
            nodes: p.value("nodes"),
            partition: partition_text.as_deref(),
            responding: p.has("responding"),
            states: p.value("states"),
            summarize,
            verbose: p.count("verbose"),
            all,
            reservation: p.has("reservation"),
        }
        .text()
    });
    Ok(Parsed::Run(Box::new(Params {
        format,
        auto_part,
        auto_node,
        no_header: p.has("noheader"),
        long,
        node_mode,
        json: p.has("json"),
        all,
        verbose_dump,
        future: p.has("future") || env("SINFO_FUTURE").is_some(),
        clusters: crate::refuse::clusters_asked(p.value("clusters"), env),
        dead: p.has("dead"),
        responding: p.has("responding"),
        reservation: p.has("reservation"),
        iterate,
        partitions,
        nodes,
        states,
        warnings,
    })))
}

/// Does a node pass the node filters?
pub fn node_passes(n: &NodeInfo, p: &Params) -> bool {
    let st = NodeState::of(n);
    if let Some(names) = &p.nodes {
        if !names.iter().any(|x| x == &n.name) {
            return false;
        }
    }
    if p.responding && st.no_respond {
        return false;
    }
    // FUTURE nodes only with -F (Slurm's SHOW_FUTURE).
    if !p.future && st.base == Base::Future {
        return false;
    }
    if p.dead && !(st.no_respond || st.base == Base::Down) {
        return false;
    }
    if let Some(states) = &p.states {
        if !states
            .iter()
            .any(|s| state_matches(s, &st).unwrap_or(false))
        {
            return false;
        }
    }
    true
}

/// Partitions to show, each with its (filtered) nodes.
pub fn select<'a>(
    p: &Params,
    parts: &'a [PartitionInfo],
    nodes: &'a [NodeInfo],
) -> Vec<(&'a PartitionInfo, Vec<&'a NodeInfo>)> {
    let by_name: std::collections::HashMap<&str, &NodeInfo> =
        nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let mut out = Vec::new();
    for part in parts {
        if let Some(want) = &p.partitions {
            if !want.iter().any(|w| w == &part.name) {
                continue;
            }
        } else if part.hidden && !p.all {
            continue;
        }
        let names: Vec<String> = if part.node_names.is_empty() {
            drover_conf::hostlist::expand(&part.nodes).unwrap_or_default()
        } else {
            part.node_names.clone()
        };
        let members: Vec<&NodeInfo> = names
            .iter()
            .filter_map(|n| by_name.get(n.as_str()).copied())
            .filter(|n| node_passes(n, p))
            .collect();
        let filtering = p.nodes.is_some() || p.states.is_some() || p.responding || p.dead;
        if members.is_empty() && (filtering || p.node_mode) {
            continue;
        }
        out.push((part, members));
    }
    out
}

/// Render the listing.
pub fn render(out: &mut String, p: &Params, parts: &[PartitionInfo], nodes: &[NodeInfo]) {
    let sel = select(p, parts, nodes);
    let mut groups = group::group(&p.format, &sel, p.node_mode);
    // A partition without nodes still gets a line (with n/a state).
    let per_part = p
        .format
        .fields
        .iter()
        .any(|f| fields::partition_field(f.kind));
    if per_part && !p.node_mode {
        for (i, (part, members)) in sel.iter().enumerate() {
            if members.is_empty() {
                groups.push(group::Group::empty(part, i));
            }
        }
    }
    group::sort_groups(&mut groups, p.node_mode);
    let aw = group::auto_widths(&groups, p.auto_part, p.auto_node);
    if !p.no_header {
        format::render_header(out, &p.format, &aw);
        out.push('\n');
    }
    for g in &groups {
        format::render_line(out, &p.format, g, &aw);
        out.push('\n');
    }
}

pub fn json(
    p: &Params,
    parts: &[PartitionInfo],
    nodes: &[NodeInfo],
    cluster: &str,
    args: &[String],
) -> serde_json::Value {
    let sel = select(p, parts, nodes);
    let (fmt, _) = fields::parse_format("%P %t %c %m %f %G");
    let mut groups = group::group(&fmt, &sel, false);
    group::sort_groups(&mut groups, false);
    let entries = groups
        .iter()
        .map(|g| crate::json::sinfo_entry(g.part, &g.nodes, cluster))
        .collect();
    let mut cmd = vec!["sinfo".to_string()];
    cmd.extend(args.iter().cloned());
    crate::json::sinfo(entries, cluster, &cmd)
}

pub fn run(args: &[String]) -> i32 {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let p = match parse_args(args, &env) {
        Ok(Parsed::Run(p)) => p,
        Ok(Parsed::Help) => {
            print!("{USAGE}");
            return 0;
        }
        Ok(Parsed::Version) => {
            crate::print_version();
            return 0;
        }
        Err(lines) => {
            for l in lines {
                eprintln!("{l}");
            }
            return 1;
        }
    };
    for w in &p.warnings {
        eprintln!("sinfo: error: {w}");
    }
    if let Some(d) = &p.verbose_dump {
        print!("{d}");
    }
    let (cfg, rt) = match conn::setup("sinfo") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    if let Some((list, from)) = &p.clusters {
        if let Err(m) = crate::refuse::check_clusters(list, *from, &cfg.cluster_name) {
            eprintln!("sinfo: error: {m}");
            return 1;
        }
    }
    rt.block_on(async move {
        let mut client = match conn::client_for("sinfo", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        loop {
            let parts = match client.get_partitions(GetPartitionsRequest::default()).await {
                Ok(r) => r.into_inner().partitions,
                Err(st) => {
                    conn::report("sinfo", "slurm_load_partitions: ", &st);
                    return 1;
                }
            };
            let nodes = match client.get_nodes(GetNodesRequest::default()).await {
                Ok(r) => r.into_inner().nodes,
                Err(st) => {
                    conn::report("sinfo", "slurm_load_node: ", &st);
                    return 1;
                }
            };
            let now = crate::timefmt::now();
            let mut out = String::new();
            if p.clusters.is_some() && !p.no_header && !p.json {
                out.push_str(&format!("CLUSTER: {}\n", cfg.cluster_name));
            }
            if p.json {
                out.push_str(&crate::json::to_pretty(&json(
                    &p,
                    &parts,
                    &nodes,
                    &cfg.cluster_name,
                    args,
                )));
                out.push('\n');
            } else if p.reservation {
                let mut sched = match conn::scheduler_for("sinfo", &cfg) {
                    Ok(c) => c,
                    Err(rc) => return rc,
                };
                let req = drover_proto::GetReservationsRequest::default();
                match sched.get_reservations(req).await {
                    Ok(r) => {
                        let r = r.into_inner();
                        resv::render(&mut out, &r.reservations, p.no_header, r.now);
                    }
                    Err(st) => {
                        conn::report("sinfo", "slurm_load_reservations: ", &st);
                        return 1;
                    }
                }
            } else {
                if !p.no_header && (p.iterate > 0 || p.long) {
                    out.push_str(&drover_conf::datetime::fmt_ctime(
                        &crate::timefmt::localtime(now),
                    ));
                    out.push('\n');
                }
                render(&mut out, &p, &parts, &nodes);
            }
            {
                let stdout = std::io::stdout();
                let mut lock = std::io::BufWriter::new(stdout.lock());
                if lock
                    .write_all(out.as_bytes())
                    .and_then(|_| lock.flush())
                    .is_err()
                {
                    return 0;
                }
            }
            if p.iterate == 0 {
                return 0;
            }
            println!();
            tokio::time::sleep(std::time::Duration::from_secs(p.iterate)).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::format::tests::{node, part};
    use super::*;
    use drover_proto::INFINITE;

    fn params(args: &[&str]) -> Params {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse_args(&args, &|_| None).unwrap() {
            Parsed::Run(p) => *p,
            other => panic!("{other:?}"),
        }
    }

    fn cluster() -> (Vec<PartitionInfo>, Vec<NodeInfo>) {
        let mut p = part("debug", true, INFINITE);
        p.nodes = "node[1-3]".into();
        let mut empty = part("empty", false, 60);
        empty.nodes = String::new();
        let mut n3 = node("node3", "DOWN", 4, 0);
        n3.responding = false;
        n3.reason = "Not responding".into();
        (
            vec![p, empty],
            vec![
                node("node1", "IDLE", 4, 0),
                node("node2", "ALLOCATED", 4, 4),
                n3,
            ],
        )
    }

    fn out(args: &[&str]) -> String {
        let (parts, nodes) = cluster();
        let mut s = String::new();
        render(&mut s, &params(args), &parts, &nodes);
        s
    }

    #[test]
    fn verbose_dumps_the_parameters_in_force() {
        let p = params(&["-v", "-p", "debug", "-t", "idle"]);
        let d = p.verbose_dump.expect("-v dumps");
        assert!(d.contains("\nfiltering   = true\n"), "{d}");
        assert!(d.contains("\npartition   = debug\n"), "{d}");
        assert!(d.contains("\nstates      = idle\n"), "{d}");
        assert!(
            d.contains(&format!("\nformat      = {}\n", fields::DEFAULT_FORMAT)),
            "{d}"
        );
        assert!(params(&[]).verbose_dump.is_none());
    }

    #[test]
    fn default_listing() {
        assert_eq!(
            out(&[]),
            "\
PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
debug*       up   infinite      1  down* node3
debug*       up   infinite      1  alloc node2
debug*       up   infinite      1   idle node1
empty        up    1:00:00      0    n/a 
"
        );
    }

    #[test]
    fn filters_and_modes() {
        assert_eq!(
            out(&["-h", "-t", "idle"]),
            "debug*       up   infinite      1   idle node1\n"
        );
        assert_eq!(
            out(&["-h", "-N", "-o", "%N %t"]),
            "node1 idle\nnode2 alloc\nnode3 down*\n"
        );
        assert_eq!(out(&["-h", "-r", "-N", "-o", "%N"]), "node1\nnode2\n");
        assert_eq!(out(&["-h", "-d", "-N", "-o", "%N"]), "node3\n");
        assert_eq!(out(&["-h", "-n", "node1", "-o", "%N %D"]), "node1 1\n");
        assert_eq!(
            out(&["-h", "-p", "empty"]),
            "empty        up    1:00:00      0    n/a \n"
        );
        let r = out(&["-R"]);
        assert_eq!(
            r,
            "REASON               USER      TIMESTAMP           NODELIST\nNot responding       root      Unknown             node3\n"
        );
        assert!(out(&["-s"]).contains("1/1/1/3"), "{}", out(&["-s"]));
    }

    #[test]
    fn arg_errors() {
        let e = |a: &[&str]| {
            let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            parse_args(&args, &|_| None).unwrap_err()
        };
        assert_eq!(
            e(&["-t", "bogus"])[0],
            "sinfo: error: Bad state string: \"bogus\""
        );
        assert_eq!(e(&["--nope"])[0], "sinfo: unrecognized option '--nope'");
        assert!(e(&["-a", "-p", "x"])[0].contains("Conflicting"));
    }

    #[test]
    fn future_nodes_only_with_f() {
        let (parts, mut nodes) = cluster();
        nodes[0].state = "FUTURE".into();
        let mut o = String::new();
        render(&mut o, &params(&["-N", "-h", "-o", "%N"]), &parts, &nodes);
        assert_eq!(o, "node2\nnode3\n");
        let mut o = String::new();
        render(
            &mut o,
            &params(&["-F", "-N", "-h", "-o", "%N"]),
            &parts,
            &nodes,
        );
        assert_eq!(o, "node1\nnode2\nnode3\n");
        let env = |k: &str| (k == "SINFO_FUTURE").then(|| "1".to_string());
        let args: Vec<String> = vec![];
        match parse_args(&args, &env).unwrap() {
            Parsed::Run(p) => assert!(p.future),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn all_hide_and_environment() {
        let env_all = |k: &str| (k == "SINFO_ALL").then(|| "1".to_string());
        let run = |a: &[&str], env: &dyn Fn(&str) -> Option<String>| {
            let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            match parse_args(&args, env).unwrap() {
                Parsed::Run(p) => p.all,
                other => panic!("{other:?}"),
            }
        };
        assert!(!run(&[], &|_| None));
        assert!(run(&["-a"], &|_| None));
        assert!(!run(&["-a", "--hide"], &|_| None));
        assert!(run(&[], &env_all));
        assert!(!run(&["--hide"], &env_all));
        for a in ["--federation", "--local", "-e", "--noconvert", "-v"] {
            assert!(parse_args(&[a.to_string()], &|_| None).is_ok(), "{a}");
        }
        // -S / SINFO_SORT and --yaml are refused.
        let args: Vec<String> = vec!["-S".into(), "-P".into()];
        assert_eq!(
            parse_args(&args, &|_| None).unwrap_err(),
            vec!["sinfo: error: -S: Requested operation not supported on this system"]
        );
        let env_sort = |k: &str| (k == "SINFO_SORT").then(|| "P".to_string());
        assert_eq!(
            parse_args(&[], &env_sort).unwrap_err(),
            vec!["sinfo: error: SINFO_SORT: Requested operation not supported on this system"]
        );
    }
}
