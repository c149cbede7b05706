//! `sacct`: job accounting from droverdbd, with Slurm's flags, fields,
//! widths, truncation and defaults.

pub mod args;
pub mod fields;
pub mod filter;
pub mod json;
pub mod output;

use std::io::Write;

use drover_proto::acct::JobQuery;

use self::args::{Opts, Parsed};
use self::fields::{Ctx, Row};
pub use crate::acctconn::accounting_disabled;

const HELP: &str = "Usage: sacct [options]
  -a, --allusers        all users' jobs
  -A, --accounts=LIST   only these accounts
  -b, --brief           JobID,State,ExitCode
  -D, --duplicates      every record of a requeued job, not just its newest
      --delimiter=TEXT  separator for -p/-P (default '|')
  -E, --endtime=TIME    jobs submitted before TIME (default: now)
  -e, --helpformat      list the fields -o accepts
  -g, --gid=LIST        only these groups' jobs
  -i, --nnodes=N[-M]    jobs that ran on this many nodes
  -I, --ncpus=N[-M]     jobs that had this many CPUs
  -j, --jobs=LIST       only these jobs (ID, ID_TASK)
  -l, --long            many fields
  -L, --allclusters     every cluster's jobs
  -M, --clusters=LIST   these clusters (all = every cluster)
  -n, --noheader        no header
  -N, --nodelist=LIST   jobs that ran on these nodes
  -o, --format=LIST     fields (name[%width],...)
  -p, --parsable        '|' after every field
  -P, --parsable2       '|' between fields
  -q, --qos=LIST        only these QOS
  -R, --reason=LIST     only jobs with these (last pending) reasons
  -r, --partition=LIST  only these partitions
  -s, --state=LIST      only jobs in these states
  -S, --starttime=TIME  jobs not ended before TIME (default: midnight)
  -u, --user=LIST       these users' jobs
  -W, --wckeys=LIST     only jobs with these wckeys
  -X, --allocations     no steps
      --name=LIST       only jobs with these names
      --json            JSON output
  -V, --version         print the version";

pub fn run(args: &[String]) -> i32 {
    let euid = drover_proto::sys::geteuid();
    let now = crate::timefmt::now();
    let parsed = match args::parse(args, euid, now, &crate::users::uid_of) {
        Ok(p) => p,
        Err(lines) => {
            for l in lines {
                eprintln!("{l}");
            }
            return 1;
        }
    };
    let opts = match parsed {
        Parsed::Help => {
            println!("{HELP}");
            return 0;
        }
        Parsed::Version => {
            crate::print_version();
            return 0;
        }
        Parsed::HelpFormat => {
            let names: Vec<&str> = fields::FIELDS.iter().map(|f| f.0).collect();
            for chunk in names.chunks(6) {
                let line: Vec<String> = chunk.iter().map(|n| format!("{n:<19}")).collect();
                println!("{}", line.join(" ").trim_end());
            }
            return 0;
        }
        Parsed::Run(o) => *o,
    };
    for l in &opts.verbose_lines {
        eprintln!("{l}");
    }
    let (cfg, rt) = match crate::conn::setup("sacct") {
        Ok(x) => x,
        Err(rc) => return rc,
    };
    rt.block_on(query_and_print(cfg, opts, now))
}

async fn query_and_print(cfg: drover_conf::Config, mut opts: Opts, now: i64) -> i32 {
    let mut client = match crate::acctconn::client("sacct", &cfg) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    if opts.query.cluster.is_empty() {
        opts.query.cluster = cfg.cluster_name.clone();
    }
    let mut q: JobQuery = opts.query.clone();
    if !opts.json {
        // Only the columns the fields need (much less to read and send).
        let mut cols: Vec<String> = Vec::new();
        for c in &opts.cols {
            for n in fields::columns(c.name()) {
                if !cols.iter().any(|x| x == n) {
                    cols.push(n.to_string());
                }
            }
        }
        for n in opts.local.columns() {
            if !cols.iter().any(|x| x == n) {
                cols.push(n.to_string());
            }
        }
        if cols.is_empty() {
            cols.push("state".into());
        }
        q.columns = cols;
    }
    let timer = crate::conn::Timer::new();
    let jobs = match client.get_jobs(q).await {
        Ok(r) => r.into_inner().jobs,
        Err(e) => {
            crate::acctconn::report("sacct", &e);
            return 1;
        }
    };
    let jobs = opts.local.apply(jobs);
    timer.mark("query");
    let mut out = String::with_capacity(64 * (jobs.len() + 2));
    if opts.json {
        out = json::render(&jobs, now);
        out.push('\n');
    } else {
        if !opts.noheader {
            output::header_delim(&mut out, &opts.cols, opts.mode, &opts.delimiter);
        }
        let group = |g: u32| crate::users::group_name(g);
        let ctx = Ctx {
            now,
            group: &group,
            noconvert: opts.noconvert,
        };
        let d = opts.delimiter.as_str();
        for j in &jobs {
            // -j J.S: only the steps asked for (none when there is no such
            // step), not the job's own line.
            let ids = [j.job_id.to_string(), fields::job_id_text(j)];
            let picked: Vec<&str> = opts
                .steps
                .iter()
                .filter(|(b, _)| ids.contains(b))
                .map(|(_, s)| s.as_str())
                .collect();
            if !picked.is_empty() {
                for s in &j.steps {
                    if picked.contains(&fields::step_suffix(s.step_id).as_str()) {
                        output::line_delim(
                            &mut out,
                            &opts.cols,
                            Row::Step(j, s),
                            &ctx,
                            opts.mode,
                            d,
                        );
                    }
                }
                continue;
            }
            output::line_delim(&mut out, &opts.cols, Row::Job(j), &ctx, opts.mode, d);
            if !opts.query.no_steps {
                for s in &j.steps {
                    output::line_delim(&mut out, &opts.cols, Row::Step(j, s), &ctx, opts.mode, d);
                }
            }
        }
    }
    timer.mark("format");
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(out.as_bytes()).is_err() {
        return 1;
    }
    0
}
