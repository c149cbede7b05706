//! `sstat`: live usage of running jobs (`-j ID[.STEP],...`), read by the
//! node agents from the jobs' cgroups.

pub mod format;

use drover_proto::JobStatsRequest;

use crate::conn;
use crate::opts::{self, opt, Arg, OptDef};
use format::{Style, DEFAULT_FORMAT, PID_FORMAT};

pub const TABLE: &[OptDef] = &[
    opt("allsteps", Some('a'), Arg::No, "allsteps"),
    opt("format", Some('o'), Arg::Required, "format"),
    opt("fields", None, Arg::Required, "format"),
    opt("helpformat", Some('e'), Arg::No, "helpformat"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("usage", None, Arg::No, "help"),
    opt("pidformat", Some('i'), Arg::No, "pidformat"),
    opt("jobs", Some('j'), Arg::Required, "jobs"),
    opt("noheader", Some('n'), Arg::No, "noheader"),
    opt("noconvert", None, Arg::No, "noconvert"),
    opt("parsable", Some('p'), Arg::No, "parsable"),
    opt("parsable2", Some('P'), Arg::No, "parsable2"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
];

const USAGE: &str = "Usage: sstat [options] -j <job(.stepid)>
  -a, --allsteps     all running steps of the job(s)
  -e, --helpformat   list the fields --format accepts
  -i, --pidformat    JobID,Nodelist,Pids
  -j, --jobs         comma-separated job(.step) ids (required)
  -n, --noheader     no header lines
  -o, --format       comma-separated fields (name%width allowed)
  -p, --parsable     '|' after every field
  -P, --parsable2    '|' between fields
";

/// `ID` or `ID.STEP` (STEP a number, `batch` or `extern`).
pub fn parse_job_list(s: &str) -> Result<Vec<(u32, Option<String>)>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, step) = match part.split_once('.') {
            Some((i, st)) => (i, Some(st.to_string())),
            None => (part, None),
        };
        let id: u32 = id.parse().map_err(|_| format!("Invalid job id: {part}"))?;
        if let Some(st) = &step {
            if st != "batch" && st != "extern" && st.parse::<u32>().is_err() {
                return Err(format!("Invalid job step id: {part}"));
            }
        }
        out.push((id, step));
    }
    if out.is_empty() {
        return Err("You must specify a job id with -j".into());
    }
    Ok(out)
}

pub fn run(args: &[String]) -> i32 {
    let p = match opts::parse(TABLE, args, false) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sstat: {e}");
            eprint!("{USAGE}");
            return 1;
        }
    };
    if p.has("help") {
        print!("{USAGE}");
        return 0;
    }
    if p.has("version") {
        crate::print_version();
        return 0;
    }
    if p.has("helpformat") {
        let names: Vec<&str> = format::FIELDS.iter().map(|(n, _)| *n).collect();
        for chunk in names.chunks(4) {
            println!(
                "{}",
                chunk
                    .iter()
                    .map(|n| format!("{n:<20}"))
                    .collect::<String>()
                    .trim_end()
            );
        }
        return 0;
    }
    let jobs_text = p
        .value("jobs")
        .map(str::to_string)
        .or_else(|| p.positional.first().cloned());
    let Some(jobs_text) = jobs_text else {
        eprintln!("sstat: error: You must specify a job id with -j");
        return 1;
    };
    let jobs = match parse_job_list(&jobs_text) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("sstat: error: {e}");
            return 1;
        }
    };
    let spec = if p.has("pidformat") {
        PID_FORMAT.to_string()
    } else {
        p.value("format").unwrap_or(DEFAULT_FORMAT).to_string()
    };
    let cols = match format::parse_format(&spec) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sstat: error: {e}");
            return 1;
        }
    };
    let style = if p.has("parsable2") {
        Style::Parsable2
    } else if p.has("parsable") {
        Style::Parsable
    } else {
        Style::Table
    };
    let (cfg, rt) = match conn::setup("sstat") {
        Ok(x) => x,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let mut client = match conn::client_for("sstat", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let mut rows = Vec::new();
        let mut rc = 0;
        for (id, step) in jobs {
            match client
                .job_stats(JobStatsRequest {
                    job_id: id,
                    node: String::new(),
                })
                .await
            {
                Ok(resp) => {
                    let resp = resp.into_inner();
                    for e in &resp.errors {
                        eprintln!("sstat: error: {e}");
                    }
                    let steps: Vec<_> = resp
                        .steps
                        .into_iter()
                        .filter(|s| step.as_ref().is_none_or(|want| *want == s.step))
                        .collect();
                    if steps.is_empty() {
                        eprintln!(
                            "sstat: error: no steps running for job {id}{}",
                            step.as_ref().map(|s| format!(".{s}")).unwrap_or_default()
                        );
                        rc = 1;
                    }
                    rows.extend(format::rows(&steps));
                }
                Err(st) => {
                    conn::report("sstat", "sstat: error: ", &st);
                    rc = 1;
                }
            }
        }
        print!(
            "{}",
            format::render(&rows, &cols, style, !p.has("noheader"))
        );
        rc
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_lists() {
        assert_eq!(
            parse_job_list("5,6.batch, 7.2").unwrap(),
            vec![(5, None), (6, Some("batch".into())), (7, Some("2".into()))]
        );
        assert!(parse_job_list("x").is_err());
        assert!(parse_job_list("5.zz").is_err());
        assert!(parse_job_list("").is_err());
    }
}
