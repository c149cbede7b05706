//! `squeue`: view the job queue.

pub mod args;
pub mod fields;
pub mod filter;
pub mod format;
pub mod sort;
pub mod steps;
pub mod wanted;

use std::io::Write;

use drover_proto::joblist::{each_job, get_jobs_encoded};
use drover_proto::{GetJobsRequest, GetJobsResponse, JobFilter, JobInfo};
use prost::Message;

use crate::conn;
pub use args::{parse_args, parse_states, Params, Parsed, TABLE, USAGE};
pub use filter::{expand_arrays, filter};
pub use sort::SortKeys;

/// Render the whole listing (header unless `-h`).
pub fn render(out: &mut String, p: &Params, jobs: &[JobInfo], now: i64) {
    let mut listing = Listing::new(p, now);
    for j in jobs {
        listing.add(j);
    }
    listing.finish(out);
}

/// A listing built as the answer is read, one job at a time: each row is
/// rendered at once (with `-r`, a pending array's tasks as consecutive
/// lines) and its sort keys kept, so the job need not outlive the call;
/// [`Listing::finish`] sorts the rows and writes them.
pub struct Listing<'p> {
    p: &'p Params,
    now: i64,
    /// Every row's lines, in the order they came.
    text: String,
    /// Each row's part of `text`.
    spans: Vec<(usize, usize)>,
    keys: SortKeys,
}

impl<'p> Listing<'p> {
    pub fn new(p: &'p Params, now: i64) -> Listing<'p> {
        Listing {
            p,
            now,
            text: String::with_capacity(1 << 16),
            spans: Vec::new(),
            keys: SortKeys::new(&p.sort),
        }
    }

    /// The rows `job` contributes, if the filters keep it.
    pub fn add(&mut self, job: &JobInfo) {
        let mut rows = Vec::new();
        filter(job, self.p, &mut rows);
        for r in rows {
            self.keys.push(&r, self.now);
            let start = self.text.len();
            if self.p.array {
                for x in expand_arrays(vec![r]) {
                    self.line(&x);
                }
            } else {
                self.line(&r);
            }
            self.spans.push((start, self.text.len()));
        }
    }

    fn line(&mut self, r: &format::Row<'_>) {
        let fmt = &self.p.format;
        format::render_row(&mut self.text, fmt, r, self.now);
        self.text.push('\n');
    }

    /// The header (unless `-h`) and the rows in `--sort` order.
    pub fn finish(self, out: &mut String) {
        if !self.p.no_header {
            format::render_header(out, &self.p.format);
            out.push('\n');
        }
        out.reserve(self.text.len());
        for i in self.keys.order() {
            let (a, b) = self.spans[i];
            out.push_str(&self.text[a..b]);
        }
    }
}

/// The request sent to the controller (filters it can apply cheaply).
pub fn request(p: &Params) -> GetJobsRequest {
    let mut f = JobFilter::default();
    if p.jobs.is_some() {
        f.job_ids = p.job_texts.clone();
        // State filtering happens here, so an id that exists but is
        // finished is told apart from an unknown id.
        f.all_states = true;
    } else if p.all_states {
        f.all_states = true;
    } else if let Some(states) = &p.states {
        // The controller applies -t and -p from its indexes: the answer
        // (and its cost) is the jobs shown, not the queue.
        f.states = states.iter().map(|s| *s as i32).collect();
        if f.states.is_empty() {
            f.all_states = true;
        }
    }
    if p.jobs.is_none() {
        if let Some(parts) = &p.partitions {
            f.partitions = parts.clone();
        }
    }
    if let Some(u) = &p.users {
        if !u.is_empty() {
            f.user_ids = u.clone();
        }
    }
    // Rarely shown fields (paths, command, group, features, ...) cost the
    // controller time and the wire bytes: ask for them only when the output,
    // a client-side filter or the sort order uses them.
    let details =
        p.json || p.sort.contains('g') || p.format.fields.iter().any(|f| needs_details(f.kind));
    GetJobsRequest {
        filter: Some(f),
        details,
        // Only what the format, sort and filters read goes on the wire.
        fields: wanted::wanted(p),
    }
}

/// Format fields whose values the controller sends only with `details`.
fn needs_details(f: format::JobField) -> bool {
    use format::JobField as F;
    !matches!(
        f,
        F::JobId
            | F::JobIdRaw
            | F::ArrayJobId
            | F::ArrayTaskId
            | F::Name
            | F::UserName
            | F::UserId
            | F::StateCompact
            | F::State
            | F::Reason
            | F::ReasonList
            | F::NodeList
            | F::Partition
            | F::TimeUsed
            | F::TimeLimit
            | F::TimeLeft
            | F::NumNodes
            | F::NumCpus
            | F::NumTasks
            | F::MinCpus
            | F::MinMemory
            | F::MinMemoryExact
            | F::Priority
            | F::PriorityLong
            | F::SubmitTime
            | F::StartTime
            | F::EndTime
            | F::EligibleTime
            | F::CpusPerTask
            | F::ExitCode
            | F::RestartCnt
            | F::Nice
            | F::PendingTime
            | F::TimeMin
            | F::MaxNodes
            | F::NtasksPerNode
            | F::Requeue
            | F::BatchFlag
            | F::Contiguous
            | F::Account
            | F::Qos
            | F::Reservation
            | F::ExecHost
    )
}

/// The partitions slurm.conf marks `Hidden=YES`.
pub fn hidden_partitions(cfg: &drover_conf::Config) -> Vec<String> {
    cfg.partitions
        .iter()
        .filter(|p| p.hidden)
        .map(|p| p.name.clone())
        .collect()
}

pub fn run(args: &[String]) -> i32 {
    let timer = conn::Timer::new();
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let parsed = parse_args(args, &env, &crate::users::uid_of, crate::users::euid());
    let p = match parsed {
        Ok(Parsed::Run(p)) => p,
        Ok(Parsed::Help) | Ok(Parsed::Usage) => {
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
        eprintln!("squeue: error: {w}");
    }
    for l in &p.dump {
        println!("{l}");
    }
    let cfg = match conn::load_config("squeue") {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    timer.mark("config");
    if let Some((list, from)) = &p.clusters {
        if let Err(m) = crate::refuse::check_clusters(list, *from, &cfg.cluster_name) {
            eprintln!("squeue: error: {m}");
            return 1;
        }
    }
    let mut p = p;
    if !p.all && crate::users::euid() != 0 {
        p.hidden_partitions = hidden_partitions(&cfg);
    }
    let rt = match conn::runtime() {
        Ok(r) => r,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let signed = match conn::signed_for("squeue", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let mut client = drover_proto::client::controller_of(signed.clone());
        timer.mark("credential");
        // -w: every name must be a node (or its host name; `localhost` is
        // this host), as Slurm's squeue checks.
        if let Some(names) = p.nodes.clone() {
            let nodes = match client
                .get_nodes(drover_proto::GetNodesRequest::default())
                .await
            {
                Ok(r) => r.into_inner().nodes,
                Err(st) => {
                    conn::report("squeue", "slurm_load_node error: ", &st);
                    return 1;
                }
            };
            let mut mapped = Vec::new();
            for name in &names {
                let want = if name.eq_ignore_ascii_case("localhost") {
                    drover_proto::auth::hostname()
                } else {
                    name.clone()
                };
                let by_host = cfg
                    .nodes
                    .iter()
                    .find(|n| n.node_hostname == want)
                    .map(|n| n.name.clone());
                match nodes
                    .iter()
                    .find(|n| n.name == want)
                    .map(|n| n.name.clone())
                    .or(by_host)
                {
                    Some(n) => mapped.push(n),
                    None => {
                        eprintln!("squeue: error: Invalid node name {name}");
                        return 1;
                    }
                }
            }
            p.nodes = Some(mapped);
        }
        let stdout = std::io::stdout();
        loop {
            let answer = match get_jobs_encoded(signed.clone(), request(&p)).await {
                Ok(r) => r,
                Err(st) => {
                    conn::report("squeue", "slurm_load_jobs error: ", &st);
                    return 1;
                }
            };
            timer.mark(&format!("{} bytes received", answer.len()));
            let now = crate::timefmt::now();
            // One id asked for: an unknown one is an error (Slurm's words).
            // (The answer then holds a few records: read them twice.)
            if let Some(want) = p.jobs.as_ref().filter(|j| j.len() == 1).map(|j| j[0].job()) {
                let mut known = false;
                let _ = each_job(&answer, |j| {
                    known |= j.job_id == want || (j.array_job_id != 0 && j.array_job_id == want);
                });
                if !known {
                    eprintln!("slurm_load_jobs error: Invalid job id specified");
                    return 1;
                }
            }
            let mut out = String::new();
            if p.clusters.is_some() && !p.no_header && !p.json {
                out.push_str(&format!("CLUSTER: {}\n", cfg.cluster_name));
            }
            let decoded = if p.steps {
                GetJobsResponse::decode(answer)
                    .map(|resp| {
                        steps::render(
                            &mut out,
                            p.step_format.as_deref(),
                            p.no_header,
                            p.step_list.as_deref(),
                            &resp.jobs,
                            now,
                        );
                    })
                    .map_err(|e| e.to_string())
            } else if p.json {
                let mut cmd = vec!["squeue".to_string()];
                cmd.extend(args.iter().cloned());
                let mut lock = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
                let mut decoded = Ok(0);
                let written =
                    crate::json::squeue_each(&mut lock, now, &cfg.cluster_name, &cmd, |emit| {
                        decoded = each_job(&answer, |j| {
                            let mut rows = Vec::new();
                            filter(j, &p, &mut rows);
                            rows.iter().for_each(&mut *emit);
                        });
                    });
                let _ = written.and_then(|_| lock.flush());
                decoded.map(drop)
            } else {
                if !p.no_header && (p.iterate > 0 || p.verbose > 0 || p.long) {
                    out.push_str(&drover_conf::datetime::fmt_ctime(
                        &crate::timefmt::localtime(now),
                    ));
                    out.push('\n');
                }
                let mut listing = Listing::new(&p, now);
                let decoded = each_job(&answer, |j| listing.add(j));
                timer.mark("decoded and rendered");
                listing.finish(&mut out);
                timer.mark("sorted");
                decoded.map(drop)
            };
            if let Err(e) = decoded {
                eprintln!(
                    "squeue: error: slurm_load_jobs error: the controller's answer is garbled: {e}"
                );
                return 1;
            }
            {
                let mut lock = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
                if lock
                    .write_all(out.as_bytes())
                    .and_then(|_| lock.flush())
                    .is_err()
                {
                    return 0;
                }
            }
            timer.mark("written");
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
    use super::format::tests::job;
    use super::*;
    use drover_proto::JobState;

    pub(super) fn params(args: &[&str]) -> Params {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let lookup = |u: &str| match u {
            "alice" => Some(1000),
            "bob" => Some(1001),
            n => n.parse().ok(),
        };
        match parse_args(&args, &|_| None, &lookup, 1000).unwrap() {
            Parsed::Run(p) => *p,
            other => panic!("{other:?}"),
        }
    }

    fn ids(p: &Params, jobs: &[JobInfo]) -> Vec<String> {
        let mut out = String::new();
        let mut p = p.clone();
        p.no_header = true;
        p.format = format::parse_format("%i").0;
        render(&mut out, &p, jobs, 1_700_000_100);
        out.lines().map(str::to_string).collect()
    }

    fn queue() -> Vec<JobInfo> {
        let mut v = Vec::new();
        let mut r1 = job(1, "a", JobState::Running);
        r1.start_time = 1_700_000_000;
        r1.priority = 10;
        v.push(r1);
        let mut p2 = job(2, "b", JobState::Pending);
        p2.priority = 5;
        v.push(p2);
        let mut p3 = job(3, "c", JobState::Pending);
        p3.priority = 50;
        p3.user_id = 1001;
        p3.user_name = "bob".into();
        v.push(p3);
        let mut done = job(4, "d", JobState::Completed);
        done.start_time = 1_699_999_000;
        v.push(done);
        let mut meta = job(10, "arr", JobState::Pending);
        meta.array_job_id = 10;
        meta.is_array_meta = true;
        meta.array_pending = "2-4".into();
        meta.priority = 1;
        v.push(meta);
        let mut t1 = job(11, "arr", JobState::Running);
        t1.array_job_id = 10;
        t1.array_task_id = 1;
        t1.start_time = 1_700_000_050;
        v.push(t1);
        v
    }

    #[test]
    fn default_sort_and_state_filter() {
        let q = queue();
        // Pending first (PD < R), by priority descending; finished hidden.
        assert_eq!(
            ids(&params(&[]), &q),
            vec!["3", "2", "10_[2-4]", "10_1", "1"]
        );
        assert_eq!(ids(&params(&["-t", "all"]), &q).len(), 6);
        assert_eq!(ids(&params(&["-t", "CD"]), &q), vec!["4"]);
        assert_eq!(ids(&params(&["--states=pd,R"]), &q).len(), 5);
    }

    #[test]
    fn filters() {
        let q = queue();
        assert_eq!(ids(&params(&["-u", "bob"]), &q), vec!["3"]);
        assert_eq!(ids(&params(&["--me"]), &q).len(), 4);
        assert_eq!(ids(&params(&["-j", "2,3"]), &q), vec!["3", "2"]);
        assert_eq!(ids(&params(&["--jobs=1"]), &q), vec!["1"]);
        assert_eq!(ids(&params(&["-j", "4"]), &q), Vec::<String>::new());
        assert_eq!(ids(&params(&["-j", "10"]), &q), vec!["10_[2-4]", "10_1"]);
        assert_eq!(ids(&params(&["-j", "10_3"]), &q), vec!["10_3"]);
        assert_eq!(ids(&params(&["-j", "10_1"]), &q), vec!["10_1"]);
        assert_eq!(ids(&params(&["--name", "B"]), &q), vec!["2"]);
        assert_eq!(ids(&params(&["-p", "other"]), &q), Vec::<String>::new());
        assert_eq!(
            ids(&params(&["-r"]), &q),
            vec!["3", "2", "10_2", "10_3", "10_4", "10_1", "1"]
        );
        assert_eq!(
            ids(&params(&["--sort=i"]), &q),
            vec!["1", "2", "3", "10_1", "10_[2-4]"]
        );
        assert_eq!(
            ids(&params(&["--sort=-i"]), &q),
            vec!["10_[2-4]", "10_1", "3", "2", "1"]
        );
    }

    #[test]
    fn arg_errors() {
        let run = |a: &[&str]| {
            let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            parse_args(&args, &|_| None, &|_| None, 0)
        };
        assert_eq!(
            run(&["-t", "bogus"]).unwrap_err()[0],
            "squeue: error: Invalid job state specified: bogus"
        );
        assert_eq!(
            run(&["--bogus"]).unwrap_err()[0],
            "squeue: unrecognized option '--bogus'"
        );
        assert_eq!(
            run(&["-j", "x"]).unwrap_err()[0],
            "squeue: error: Invalid job id: x"
        );
        assert!(run(&["-o", "%i", "-O", "jobid"]).is_err());
        assert!(run(&["-l", "-o", "%i"]).is_err());
        assert!(run(&["--sort=Z"]).is_err());
        assert!(run(&["-i", "0"]).is_err());
        match run(&["-u", "nobody-here"]).unwrap() {
            Parsed::Run(p) => {
                assert_eq!(p.warnings, vec!["Invalid user: nobody-here"]);
                assert_eq!(p.users, Some(vec![]));
            }
            _ => panic!(),
        }
        assert!(matches!(run(&["--version"]).unwrap(), Parsed::Version));
    }

    #[test]
    fn request_shape() {
        let p = params(&["-j", "5"]);
        let r = request(&p);
        let f = r.filter.unwrap();
        assert_eq!(f.job_ids, vec!["5"]);
        assert!(f.all_states);
        let p = params(&["-u", "alice"]);
        assert_eq!(request(&p).filter.unwrap().user_ids, vec![1000]);
        // -t and -p go to the controller (its indexes answer them).
        let f = request(&params(&["-t", "R,PD", "-p", "a,b"]))
            .filter
            .unwrap();
        assert!(!f.all_states);
        assert_eq!(
            f.states,
            vec![JobState::Running as i32, JobState::Pending as i32]
        );
        assert_eq!(f.partitions, vec!["a", "b"]);
        // With ids the states are checked here (a finished id is no error).
        let f = request(&params(&["-j", "5", "-t", "R", "-p", "a"]))
            .filter
            .unwrap();
        assert!(f.all_states && f.states.is_empty() && f.partitions.is_empty());
        assert!(request(&params(&["-t", "all"])).filter.unwrap().all_states);
    }
}
