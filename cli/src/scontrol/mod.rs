//! `scontrol`: view and change jobs, nodes, partitions and the controller.

mod configkeys;
mod daemons;
mod ha;
pub mod listpids;
pub mod part;
pub mod resv;
pub mod show;
pub mod token;
pub mod unsupported;
pub mod update;
pub mod write;

use std::io::Write;

use drover_proto::client::Controller;
use drover_proto::{
    ConfigRequest, GetJobsRequest, GetNodesRequest, GetPartitionsRequest, JobFilter,
    ReconfigureRequest, ShutdownRequest, UpdateJobRequest,
};

use crate::conn;
use crate::opts::{self, opt, Arg, OptDef};
use show::ShowOpts;

pub const TABLE: &[OptDef] = &[
    opt("all", Some('a'), Arg::No, "all"),
    opt("details", Some('d'), Arg::No, "details"),
    opt("federation", None, Arg::No, "federation"),
    opt("future", Some('F'), Arg::No, "future"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("hide", None, Arg::No, "hide"),
    opt("json", None, Arg::Optional, "json"),
    opt("yaml", None, Arg::Optional, "yaml"),
    opt("local", None, Arg::No, "local"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("oneliner", Some('o'), Arg::No, "oneliner"),
    opt("quiet", Some('Q'), Arg::No, "quiet"),
    opt("sibling", None, Arg::No, "sibling"),
    opt("uid", Some('u'), Arg::Required, "uid"),
    opt("usage", None, Arg::No, "usage"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
];

const USAGE: &str = "Usage: scontrol [<OPTION>] [<COMMAND>]
  Valid <OPTION> values are:
     -a or --all: equivalent to \"all\" command
     -d or --details: equivalent to \"details\" command
     -h or --help: equivalent to \"help\" command
     --json: produce JSON output (show job/node/partition)
     -o or --oneliner: equivalent to \"oneliner\" command
     -Q or --quiet: equivalent to \"quiet\" command
     -V or --version: equivalent to \"version\" command

  Valid <COMMAND> values are:
     show <ENTITY> [<ID>]     ENTITY: job, node, partition, reservation, config,
                              hostnames, hostlist
     create reservation <SPECIFICATIONS>   update ReservationName=<NAME> ...
     delete reservation <NAME>
     create PartitionName=<NAME> <SPECIFICATIONS>
     delete PartitionName=<NAME>
     hold <job_list>          uhold <job_list>      release <job_list>
     requeue <job_list>       requeuehold [State=SpecialExit] <job_list>
     suspend <job_list>       resume <job_list>
     update <SPECIFICATIONS>  (JobId=..., NodeName=... or PartitionName=...)
     write batch_script <job_id> [<file>|-]
     listpids [<job_id>[.<step_id>]] [<NodeName>]
     ping  reconfigure  shutdown  version
";

/// Global flags.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub one_liner: bool,
    pub details: bool,
    pub json: bool,
    pub quiet: bool,
    pub verbose: u32,
    /// `-a` (not undone by a later `--hide`): hidden partitions too.
    pub all: bool,
    /// `-F`: nodes in the FUTURE state too.
    pub future: bool,
    /// `-M` (or `SLURM_CLUSTERS`): checked against the cluster's name.
    pub clusters: Option<(String, crate::refuse::ClustersFrom)>,
}

/// The command words, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    ShowJob(Option<String>),
    ShowStep(Option<String>),
    ShowNode(Option<String>),
    ShowPartition(Option<String>),
    ShowConfig,
    ShowDaemons,
    Hostnames(Option<String>),
    Hostlist(String, bool),
    Action(&'static str, Vec<String>),
    Update(Vec<String>),
    Resv(resv::ResvOp),
    /// `create|update|delete PartitionName=...`
    PartEdit(drover_proto::PartitionEdit),
    /// `write batch_script JOBID [FILE|-]`
    WriteBatchScript(String, Option<String>),
    /// `listpids [JOBID[.STEPID]] [NODENAME]`
    ListPids(Option<String>, Option<String>),
    Ping,
    /// `takeover [INDEX]`: backup INDEX (1 by default) takes control.
    Takeover(usize),
    /// `token [lifespan=S] [username=U]`
    Token(drover_proto::MintTokenRequest),
    Reconfigure,
    Shutdown,
    Version,
    Help,
    /// `exit` / `quit` on the command line: nothing to do.
    Quit,
}

/// Match a keyword allowing unambiguous abbreviations (at least `min` chars).
fn kw(word: &str, full: &str, min: usize) -> bool {
    let w = word.to_ascii_lowercase();
    w.len() >= min.min(full.len()) && full.starts_with(&w)
}

/// Resolve the command words. Errors are stderr lines.
pub fn parse_command(words: &[String]) -> Result<Command, Vec<String>> {
    let Some(first) = words.first() else {
        return Ok(Command::Help);
    };
    let rest = &words[1..];
    let one = |v: &[String]| v.first().cloned();
    let c = first.as_str();
    if kw(c, "show", 3) {
        let Some(what) = rest.first() else {
            return Err(vec![
                "scontrol: error: too few arguments for keyword:show".into()
            ]);
        };
        let arg = one(&rest[1..]);
        let w = what.as_str();
        return Ok(if kw(w, "reservations", 3) {
            Command::Resv(resv::ResvOp::Show(arg))
        } else if kw(w, "steps", 2) {
            Command::ShowStep(arg)
        } else if kw(w, "jobs", 1) {
            Command::ShowJob(arg)
        } else if kw(w, "nodes", 1) {
            Command::ShowNode(arg)
        } else if kw(w, "partitions", 1) {
            Command::ShowPartition(arg)
        } else if kw(w, "daemons", 1) {
            Command::ShowDaemons
        } else if kw(w, "config", 1) {
            Command::ShowConfig
        } else if kw(w, "hostnames", 5) {
            Command::Hostnames(arg)
        } else if w.eq_ignore_ascii_case("hostlistsorted") {
            Command::Hostlist(arg.unwrap_or_default(), true)
        } else if kw(w, "hostlist", 5) {
            Command::Hostlist(arg.unwrap_or_default(), false)
        } else if let Some(e) = unsupported::show_entity(w) {
            return Err(vec![crate::refuse::not_supported(
                "scontrol",
                &format!("show {e}"),
            )]);
        } else {
            return Err(vec![format!(
                "scontrol: error: invalid entity:{w} for keyword:show"
            )]);
        });
    }
    let action = |name: &'static str| -> Result<Command, Vec<String>> {
        if rest.is_empty() {
            return Err(vec![format!(
                "scontrol: error: too few arguments for keyword:{name}"
            )]);
        }
        Ok(Command::Action(name, rest.to_vec()))
    };
    let lc = c.to_ascii_lowercase();
    match lc.as_str() {
        "hold" => action("hold"),
        "uhold" => action("uhold"),
        "release" => action("release"),
        "requeue" => action("requeue"),
        "requeuehold" => action("requeuehold"),
        "suspend" => action("suspend"),
        "resume" => action("resume"),
        "top" => action("top"),
        "ping" => Ok(Command::Ping),
        "takeover" => match rest {
            [] => Ok(Command::Takeover(1)),
            [i] => i.parse().map(Command::Takeover).map_err(|_| {
                vec![format!(
                    "scontrol: error: Invalid backup controller index: {i}"
                )]
            }),
            _ => Err(vec![
                "scontrol: error: too many arguments for keyword:takeover".to_string(),
            ]),
        },
        "token" => token::parse(rest).map(Command::Token),
        "listpids" => match rest {
            [] | [_] | [_, _] => Ok(Command::ListPids(one(rest), rest.get(1).cloned())),
            _ => Err(vec![
                "scontrol: error: too many arguments for keyword:listpids".to_string(),
            ]),
        },
        "write" => match rest {
            [what, job, file @ ..] if kw(what, "batch_script", 5) && file.len() <= 1 => Ok(
                Command::WriteBatchScript(job.clone(), file.first().cloned()),
            ),
            [what] if kw(what, "batch_script", 5) => Err(vec![
                "scontrol: error: too few arguments for keyword:write".to_string(),
            ]),
            [what, ..] if kw(what, "batch_script", 5) => Err(vec![
                "scontrol: error: too many arguments for keyword:write".to_string(),
            ]),
            [what, ..] if kw(what, "config", 1) => Err(vec![crate::refuse::not_supported(
                "scontrol",
                "write config",
            )]),
            _ => Err(vec![
                "scontrol: error: invalid write argument: use batch_script".to_string(),
            ]),
        },
        "reconfigure" | "reconfig" => Ok(Command::Reconfigure),
        "shutdown" => Ok(Command::Shutdown),
        "version" => Ok(Command::Version),
        "help" => Ok(Command::Help),
        _ if kw(c, "create", 2) || kw(c, "delete", 3) => {
            let is_create = kw(c, "create", 2);
            if part::is_partition_words(rest) {
                let op = if is_create { "create" } else { "delete" };
                return part::parse(op, rest).map(Command::PartEdit);
            }
            let mut words = rest.to_vec();
            match words.first() {
                Some(w) if kw(w, "reservation", 3) => {
                    words.remove(0);
                }
                Some(w) if w.to_ascii_lowercase().starts_with("reservationname=") => {}
                _ => {
                    return Err(vec![format!(
                        "scontrol: error: invalid entity for keyword:{}",
                        if is_create { "create" } else { "delete" }
                    )])
                }
            }
            if is_create {
                return Ok(Command::Resv(resv::ResvOp::Create(words)));
            }
            let name = words
                .first()
                .map(|w| match w.split_once('=') {
                    Some((_, v)) => v.to_string(),
                    None => w.clone(),
                })
                .ok_or_else(|| {
                    vec!["scontrol: error: too few arguments for keyword:delete".to_string()]
                })?;
            Ok(Command::Resv(resv::ResvOp::Delete(name)))
        }
        _ if kw(c, "update", 2)
            && rest.first().is_some_and(|w| {
                let l = w.to_ascii_lowercase();
                l.starts_with("reservationname=") || l.starts_with("reservation=")
            }) =>
        {
            Ok(Command::Resv(resv::ResvOp::Update(rest.to_vec())))
        }
        _ if kw(c, "update", 2) => {
            if rest.is_empty() {
                return Err(vec![
                    "scontrol: error: too few arguments for keyword:update".into(),
                ]);
            }
            Ok(Command::Update(rest.to_vec()))
        }
        _ if kw(c, "exit", 2) || kw(c, "quit", 4) => Ok(Command::Quit),
        _ => match unsupported::keyword(c) {
            Some(k) => Err(vec![crate::refuse::not_supported("scontrol", k)]),
            None => Err(vec![format!("invalid keyword: {c}")]),
        },
    }
}

pub fn parse_args(args: &[String]) -> Result<(Flags, Command), Vec<String>> {
    let p = opts::parse(TABLE, args, false).map_err(|e| {
        vec![
            format!("scontrol: {e}"),
            "Try \"scontrol --help\" for more information".to_string(),
        ]
    })?;
    crate::refuse::refuse_options("scontrol", &p, unsupported::REFUSED_OPTIONS)?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let flags = Flags {
        one_liner: p.has("oneliner"),
        details: p.has("details"),
        json: p.has("json"),
        quiet: p.has("quiet"),
        verbose: p.count("verbose") as u32,
        // SCONTROL_ALL under the command line's last -a/--hide.
        all: match (
            p.opts.iter().rposition(|f| f.key == "all"),
            p.opts.iter().rposition(|f| f.key == "hide"),
        ) {
            (None, None) => env("SCONTROL_ALL").is_some(),
            (a, h) => a > h,
        },
        future: p.has("future") || env("SCONTROL_FUTURE").is_some(),
        clusters: crate::refuse::clusters_asked(p.value("clusters"), &env),
    };
    if p.has("help") || p.has("usage") {
        return Ok((flags, Command::Help));
    }
    if p.has("version") {
        return Ok((flags, Command::Version));
    }
    // Words in the positional list keep their order; `details` and
    // `oneliner` may also be given as words before the command.
    let mut words = p.positional.clone();
    let mut flags = flags;
    while let Some(w) = words.first() {
        match w.to_ascii_lowercase().as_str() {
            "details" => flags.details = true,
            "oneliner" => flags.one_liner = true,
            "quiet" => flags.quiet = true,
            "all" => flags.all = true,
            "hide" => flags.all = false,
            _ => break,
        }
        words.remove(0);
    }
    Ok((flags, parse_command(&words)?))
}

/// `show hostnames`: one host per line.
pub fn hostnames(list: &str) -> Result<String, String> {
    let hosts =
        drover_conf::hostlist::expand(list).map_err(|_| format!("Invalid hostlist: {list}"))?;
    let mut s = String::new();
    for h in hosts {
        s.push_str(&h);
        s.push('\n');
    }
    Ok(s)
}

/// `show hostlist`: compressed (a leading `/` names a file of hosts).
pub fn hostlist(arg: &str, sorted: bool) -> Result<String, String> {
    let text = if arg.starts_with('/') {
        std::fs::read_to_string(arg).map_err(|e| format!("{arg}: {e}"))?
    } else {
        arg.to_string()
    };
    let mut hosts = Vec::new();
    for piece in text.split_whitespace() {
        hosts.extend(
            drover_conf::hostlist::expand(piece)
                .map_err(|_| format!("Invalid hostlist: {piece}"))?,
        );
    }
    if hosts.is_empty() {
        return Err("Invalid hostlist: (null)".into());
    }
    let s = if sorted {
        drover_conf::hostlist::compress(&hosts)
    } else {
        drover_conf::hostlist::compress_in_order(&hosts)
    };
    Ok(format!("{s}\n"))
}

fn write_out(s: &str) {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = lock.write_all(s.as_bytes());
    let _ = lock.flush();
}

pub fn run(args: &[String]) -> i32 {
    let (flags, cmd) = match parse_args(args) {
        Ok(x) => x,
        Err(lines) => {
            for l in lines {
                eprintln!("{l}");
            }
            return 1;
        }
    };
    // Commands that need no controller.
    match &cmd {
        Command::Help => {
            print!("{USAGE}");
            return 0;
        }
        Command::Quit => return 0,
        Command::Version => {
            crate::print_version();
            return 0;
        }
        Command::ShowDaemons => {
            let cfg = match crate::conn::load_config("scontrol") {
                Ok(c) => c,
                Err(rc) => return rc,
            };
            let long = drover_proto::auth::hostname();
            println!("{}", daemons::daemons_here(&cfg, &long));
            return 0;
        }
        Command::Hostnames(arg) => {
            let list = arg
                .clone()
                .or_else(|| std::env::var("SLURM_JOB_NODELIST").ok())
                .unwrap_or_default();
            if list.is_empty() {
                if !flags.quiet {
                    eprintln!("scontrol: error: host list is empty");
                }
                return 1;
            }
            return match hostnames(&list) {
                Ok(s) => {
                    write_out(&s);
                    0
                }
                Err(e) => {
                    if !flags.quiet {
                        eprintln!("scontrol: error: {e}");
                    }
                    1
                }
            };
        }
        Command::Hostlist(arg, sorted) => {
            return match hostlist(arg, *sorted) {
                Ok(s) => {
                    write_out(&s);
                    0
                }
                Err(e) => {
                    if !flags.quiet {
                        eprintln!("scontrol: error: {e}");
                    }
                    1
                }
            };
        }
        Command::Update(words) => {
            if let Err(lines) = update::parse_update(words) {
                for l in lines {
                    eprintln!("scontrol: error: {l}");
                }
                return 1;
            }
        }
        _ => {}
    }
    let (cfg, rt) = match conn::setup("scontrol") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    if let Some((list, from)) = &flags.clusters {
        if let Err(m) = crate::refuse::check_clusters(list, *from, &cfg.cluster_name) {
            eprintln!("scontrol: error: {m}");
            return 1;
        }
    }
    rt.block_on(async move {
        if let Command::ListPids(job, node) = &cmd {
            return listpids::run(&cfg, job.as_deref(), node.as_deref()).await;
        }
        if let Command::Resv(op) = cmd {
            return resv::run(&cfg, op, flags.one_liner, flags.quiet).await;
        }
        if cmd == Command::Ping {
            return ha::ping(&cfg).await;
        }
        if let Command::Takeover(i) = cmd {
            return ha::takeover(&cfg, i).await;
        }
        let mut client = match conn::client_for("scontrol", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        if let Command::WriteBatchScript(job, file) = &cmd {
            return write::batch_script(&mut client, job, file.as_deref(), flags.quiet).await;
        }
        execute(&mut client, &flags, cmd, &cfg.cluster_name, args).await
    })
}

fn report(flags: &Flags, prefix: &str, st: &tonic::Status) -> i32 {
    if !flags.quiet {
        conn::report("scontrol", prefix, st);
    }
    1
}

async fn execute(
    client: &mut Controller,
    flags: &Flags,
    cmd: Command,
    cluster: &str,
    args: &[String],
) -> i32 {
    let now = crate::timefmt::now();
    let so = ShowOpts {
        one_liner: flags.one_liner,
        details: flags.details,
        now,
    };
    let mut command = vec!["scontrol".to_string()];
    command.extend(args.iter().cloned());
    match cmd {
        Command::ShowStep(id) => {
            let (job, step) = match &id {
                Some(i) => {
                    let mut parts = i.splitn(2, '.');
                    let j = parts.next().unwrap_or("").to_string();
                    let s = parts.next().map(|x| x.parse::<u32>());
                    if crate::jobids::parse_job_id(&j).is_none() || matches!(s, Some(Err(_))) {
                        eprintln!("slurm_get_job_steps error: Invalid job id specified");
                        return 1;
                    }
                    (Some(j), s.and_then(Result::ok))
                }
                None => (None, None),
            };
            let filter = JobFilter {
                job_ids: job.iter().cloned().collect(),
                ..Default::default()
            };
            let jobs = match client
                .get_jobs(GetJobsRequest {
                    filter: Some(filter),
                    details: false,
                })
                .await
            {
                Ok(r) => r.into_inner().jobs,
                Err(st) => return report(flags, "slurm_get_job_steps error: ", &st),
            };
            let mut out = String::new();
            for j in jobs
                .iter()
                .filter(|j| j.state == drover_proto::JobState::Running as i32)
            {
                for s in j.steps.iter().filter(|s| s.end_time == 0) {
                    if step.is_none_or(|x| x == s.step_id) {
                        out.push_str(&show::step(j, s, &so));
                    }
                }
            }
            if out.is_empty() {
                match &id {
                    Some(i) => println!("Job step {i} not found"),
                    None => println!("No job steps in the system"),
                }
                return 0;
            }
            write_out(&out);
            0
        }
        Command::ShowJob(id) => {
            if let Some(i) = &id {
                if crate::jobids::parse_job_id(i).is_none() {
                    if !flags.quiet {
                        eprintln!("slurm_load_jobs error: Invalid job id specified");
                    }
                    return 1;
                }
            }
            let filter = JobFilter {
                job_ids: id.iter().cloned().collect(),
                all_states: true,
                ..Default::default()
            };
            let jobs = match client
                .get_jobs(GetJobsRequest {
                    filter: Some(filter),
                    details: true,
                })
                .await
            {
                Ok(r) => r.into_inner().jobs,
                Err(st) => return report(flags, "slurm_load_jobs error: ", &st),
            };
            if jobs.is_empty() {
                if id.is_some() {
                    if !flags.quiet {
                        eprintln!("slurm_load_jobs error: Invalid job id specified");
                    }
                    return 1;
                }
                if flags.json {
                    let mut out = String::new();
                    crate::json::squeue(&mut out, &[], now, cluster, &command);
                    write_out(&out);
                } else {
                    println!("No jobs in the system");
                }
                return 0;
            }
            if flags.json {
                let rows: Vec<_> = jobs.iter().map(crate::squeue::format::Row::new).collect();
                let mut out = String::new();
                crate::json::squeue(&mut out, &rows, now, cluster, &command);
                write_out(&out);
                return 0;
            }
            let mut out = String::new();
            for j in &jobs {
                out.push_str(&show::job(j, &so));
            }
            write_out(&out);
            0
        }
        Command::ShowNode(name) => {
            let names = match &name {
                Some(n) => match drover_conf::hostlist::expand(n) {
                    Ok(v) => v,
                    Err(_) => {
                        eprintln!("Node {n} not found");
                        return 1;
                    }
                },
                None => Vec::new(),
            };
            let nodes = match client.get_nodes(GetNodesRequest { names }).await {
                Ok(r) => r.into_inner().nodes,
                Err(st) => return report(flags, "slurm_load_node error: ", &st),
            };
            // FUTURE nodes only with -F (Slurm's SHOW_FUTURE).
            let nodes: Vec<_> = nodes
                .into_iter()
                .filter(|n| {
                    flags.future
                        || crate::nodestate::NodeState::of(n).base != crate::nodestate::Base::Future
                })
                .collect();
            if nodes.is_empty() {
                match &name {
                    Some(n) => {
                        if !flags.quiet {
                            eprintln!("Node {n} not found");
                        }
                        return 1;
                    }
                    None => {
                        println!("No nodes in the system");
                        return 0;
                    }
                }
            }
            if flags.json {
                write_out(
                    &(crate::json::to_pretty(&crate::json::nodes(&nodes, now, cluster, &command))
                        + "\n"),
                );
                return 0;
            }
            let mut out = String::new();
            for n in &nodes {
                out.push_str(&show::node(n, &so));
            }
            write_out(&out);
            0
        }
        Command::ShowPartition(name) => {
            let req = GetPartitionsRequest {
                names: name.iter().cloned().collect(),
            };
            let parts = match client.get_partitions(req).await {
                Ok(r) => r.into_inner().partitions,
                Err(st) => return report(flags, "slurm_load_partitions error: ", &st),
            };
            // Hidden partitions only with -a (or for root), as slurmctld
            // answers without SHOW_ALL.
            let see_hidden = flags.all || crate::users::euid() == 0;
            let parts: Vec<_> = parts
                .into_iter()
                .filter(|p| name.as_ref().is_none_or(|n| &p.name == n))
                .filter(|p| see_hidden || !p.hidden)
                .collect();
            if parts.is_empty() {
                match &name {
                    Some(n) => {
                        if !flags.quiet {
                            eprintln!("Partition {n} not found");
                        }
                        return 1;
                    }
                    None => {
                        println!("No partitions in the system");
                        return 0;
                    }
                }
            }
            if flags.json {
                write_out(
                    &(crate::json::to_pretty(&crate::json::partitions(
                        &parts, now, cluster, &command,
                    )) + "\n"),
                );
                return 0;
            }
            let mut out = String::new();
            for p in &parts {
                out.push_str(&show::partition(p, &so));
            }
            write_out(&out);
            0
        }
        Command::ShowConfig => match client.get_config(ConfigRequest {}).await {
            Ok(r) => {
                let r = r.into_inner();
                let as_of = if r.boot_time != 0 { r.boot_time } else { now };
                write_out(&show::config(&configkeys::complete(&r.entries), as_of));
                0
            }
            Err(st) => report(flags, "slurm_load_ctl_conf error: ", &st),
        },
        Command::Action(action, words) => {
            let (words, fields) = match update::action_state(action, &words) {
                Ok(v) => v,
                Err(lines) => {
                    for l in lines {
                        eprintln!("{l}");
                    }
                    return 1;
                }
            };
            let ids = match update::job_ids(&words) {
                Ok(i) => i,
                Err(e) => {
                    if !flags.quiet {
                        eprintln!("scontrol: error: {e}");
                    }
                    return 1;
                }
            };
            let req = UpdateJobRequest {
                job_ids: ids,
                fields,
                action: action.to_string(),
                reason: String::new(),
            };
            job_update(client, flags, req).await
        }
        Command::PartEdit(edit) => part::run(client, flags, edit).await,
        Command::Update(words) => match update::parse_update(&words) {
            Ok(update::Update::Job(req)) => job_update(client, flags, req).await,
            Ok(update::Update::Partition(edit)) => part::run(client, flags, edit).await,
            Ok(update::Update::Node(req)) => match client.update_node(req).await {
                Ok(r) => {
                    let errors = r.into_inner().errors;
                    if !flags.quiet {
                        for e in &errors {
                            eprintln!("slurm_update error: {e}");
                        }
                    }
                    i32::from(!errors.is_empty())
                }
                Err(st) => report(flags, "slurm_update error: ", &st),
            },
            Err(lines) => {
                for l in lines {
                    eprintln!("scontrol: error: {l}");
                }
                1
            }
        },
        Command::Reconfigure => match client.reconfigure(ReconfigureRequest {}).await {
            Ok(r) => {
                for w in r.into_inner().warnings {
                    eprintln!("scontrol: warning: {w}");
                }
                0
            }
            Err(st) => report(flags, "slurm_reconfigure error: ", &st),
        },
        Command::Shutdown => match client.shutdown(ShutdownRequest {}).await {
            Ok(_) => 0,
            Err(st) => report(flags, "slurm_shutdown error: ", &st),
        },
        Command::Token(req) => token::run(client, req).await,
        Command::Ping
        | Command::Takeover(_)
        | Command::Version
        | Command::Help
        | Command::Quit
        | Command::Hostnames(_)
        | Command::ShowDaemons
        | Command::Resv(_)
        | Command::WriteBatchScript(..)
        | Command::ListPids(..)
        | Command::Hostlist(..) => 0,
    }
}

async fn job_update(client: &mut Controller, flags: &Flags, req: UpdateJobRequest) -> i32 {
    let n = req.job_ids.len();
    // Slurm's scontrol reports suspend/resume errors per job with perror.
    let suspend = matches!(req.action.as_str(), "suspend" | "resume");
    match client.update_job(req).await {
        Ok(r) => {
            let mut rc = 0;
            for res in r.into_inner().results {
                if res.ok {
                    continue;
                }
                rc = 1;
                if flags.quiet {
                    continue;
                }
                if suspend {
                    eprintln!("slurm_suspend error: {}", res.error);
                } else if n == 1 {
                    eprintln!("slurm_update error: {}", res.error);
                } else {
                    eprintln!("scontrol: error: {}: {}", res.job_id, res.error);
                }
            }
            rc
        }
        Err(st) => report(flags, "slurm_update error: ", &st),
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn parse(a: &[&str]) -> Result<(Flags, Command), Vec<String>> {
        let v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        parse_args(&v)
    }

    #[test]
    fn commands() {
        let (f, c) = parse(&["show", "job", "-o", "12"]).unwrap();
        assert!(f.one_liner);
        assert_eq!(c, Command::ShowJob(Some("12".into())));
        assert_eq!(
            parse(&["-d", "show", "jobs"]).unwrap().1,
            Command::ShowJob(None)
        );
        assert!(parse(&["-d", "show", "job"]).unwrap().0.details);
        assert_eq!(
            parse(&["sho", "node", "n1"]).unwrap().1,
            Command::ShowNode(Some("n1".into()))
        );
        assert_eq!(
            parse(&["show", "part"]).unwrap().1,
            Command::ShowPartition(None)
        );
        assert_eq!(parse(&["show", "config"]).unwrap().1, Command::ShowConfig);
        assert_eq!(
            parse(&["show", "hostnames", "n[1-2]"]).unwrap().1,
            Command::Hostnames(Some("n[1-2]".into()))
        );
        assert_eq!(
            parse(&["show", "hostlist", "n1,n2"]).unwrap().1,
            Command::Hostlist("n1,n2".into(), false)
        );
        assert_eq!(
            parse(&["release", "12", "13"]).unwrap().1,
            Command::Action("release", vec!["12".into(), "13".into()])
        );
        assert_eq!(parse(&["ping"]).unwrap().1, Command::Ping);
        assert_eq!(parse(&["takeover"]).unwrap().1, Command::Takeover(1));
        assert_eq!(parse(&["takeover", "2"]).unwrap().1, Command::Takeover(2));
        assert!(parse(&["takeover", "x"]).is_err());
        assert_eq!(
            parse(&["update", "JobId=1", "TimeLimit=5"]).unwrap().1,
            Command::Update(vec!["JobId=1".into(), "TimeLimit=5".into()])
        );
        assert_eq!(
            parse(&["bogus"]).unwrap_err(),
            vec!["invalid keyword: bogus"]
        );
        assert!(parse(&["hold"]).is_err());
        assert!(parse(&["show", "bogus"]).is_err());
        assert!(parse(&["--json", "show", "node"]).unwrap().0.json);
    }

    #[test]
    fn host_texts() {
        assert_eq!(hostnames("n[1-3]").unwrap(), "n1\nn2\nn3\n");
        assert!(hostnames("n[3-1]").is_err());
        assert_eq!(hostlist("n1,n2,n3,x", false).unwrap(), "n[1-3],x\n");
        assert_eq!(hostlist("n3,n1,n2", true).unwrap(), "n[1-3]\n");
        assert!(hostlist("", false).is_err());
    }
}
