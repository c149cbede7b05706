//! `scontrol`: view and change jobs, nodes, partitions and the controller.

mod args;
mod arraytask;
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
use show::ShowOpts;

use args::{kw, USAGE};
pub use args::{parse_args, parse_command, Command, Flags, TABLE};

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

pub(super) fn report(flags: &Flags, prefix: &str, st: &tonic::Status) -> i32 {
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
                    fields: Vec::new(),
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
            // `A_i`: Slurm prints a pending task still in its array's meta
            // record as that record with ArrayTaskId=i.
            let task = match id.as_deref().and_then(crate::jobids::parse_job_id) {
                Some(crate::jobids::JobIdArg::Task(a, t)) => Some((a, t)),
                _ => None,
            };
            let mut jobs = match client
                .get_jobs(GetJobsRequest {
                    filter: Some(filter),
                    details: true,
                    fields: Vec::new(),
                })
                .await
            {
                Ok(r) => r.into_inner().jobs,
                Err(st) if st.code() == tonic::Code::NotFound && task.is_some() => {
                    let (a, t) = task.unwrap_or_default();
                    return arraytask::show_missing_task(client, flags, a, t).await;
                }
                Err(st) => return report(flags, "slurm_load_jobs error: ", &st),
            };
            if let Some((_, t)) = task {
                arraytask::as_task(&mut jobs, t);
            }
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
