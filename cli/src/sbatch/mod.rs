//! `sbatch`: submit a batch script.

pub mod directives;
pub mod envvars;
pub mod options;
pub mod spec;
pub mod table;

use std::io::Read;

use drover_proto::{JobState, SubmitRequest, WaitJobRequest};

use crate::conn;
use crate::opts;
use crate::support::{self, Given};
use options::SbatchOpts;

const USAGE: &str = "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]\n";

fn err(msg: &str) -> i32 {
    eprintln!("sbatch: error: {msg}");
    support::error_exit()
}

/// Map a finished job to sbatch --wait's exit status.
pub fn wait_exit_code(state: JobState, exit_code: i32) -> i32 {
    if state == JobState::Completed {
        0
    } else if exit_code != 0 {
        exit_code
    } else {
        1
    }
}

pub fn run(args: &[String]) -> i32 {
    let timer = conn::Timer::new();
    let now = crate::timefmt::now();
    let cmdline = match opts::parse(options::TABLE, args, true) {
        Ok(p) => p,
        Err(e) => return err(&e.to_string()),
    };
    if cmdline.has("help") || cmdline.has("usage") {
        print!("{USAGE}");
        return 0;
    }
    if cmdline.has("version") {
        crate::print_version();
        return 0;
    }
    if opts::het_separator(&cmdline.positional, false) {
        return err(&opts::hetjob_refused());
    }
    let env: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();

    // The script: --wrap, a file, or standard input.
    let wrap = cmdline.value("wrap").map(str::to_string);
    let cwd = match std::env::current_dir() {
        Ok(d) => d.to_string_lossy().into_owned(),
        Err(e) => return err(&format!("getcwd failed: {e}")),
    };
    let (script, default_name, script_args, command) = if let Some(cmd) = &wrap {
        if !cmdline.positional.is_empty() {
            return err("Script arguments not permitted with --wrap option");
        }
        (
            spec::wrap_script(cmd).into_bytes(),
            "wrap".to_string(),
            Vec::new(),
            cmd.clone(),
        )
    } else if let Some(path) = cmdline.positional.first() {
        match std::fs::read(path) {
            Ok(b) => {
                let base = std::path::Path::new(path)
                    .file_name()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.clone());
                let abs = if path.starts_with('/') {
                    path.clone()
                } else {
                    format!(
                        "{}/{}",
                        cwd.trim_end_matches('/'),
                        path.trim_start_matches("./")
                    )
                };
                (b, base, cmdline.positional[1..].to_vec(), abs)
            }
            Err(_) => return err(&format!("Unable to open file {path}")),
        }
    } else {
        let mut buf = Vec::new();
        if std::io::stdin().read_to_end(&mut buf).is_err() {
            return err("Unable to read the batch script from standard input");
        }
        (buf, "sbatch".to_string(), Vec::new(), String::new())
    };
    if let Err(lines) = spec::check_script(&script) {
        for l in lines {
            eprintln!("sbatch: error: {l}");
        }
        return 1;
    }

    // Options: directives < environment < command line (sbatch(1): "environment
    // variables will override any options set in a batch script, and command
    // line options will override any environment variables").
    let mut given: Vec<Given> = Vec::new();
    if wrap.is_none() {
        let text = String::from_utf8_lossy(&script);
        match directives::parse(&text) {
            Ok(found) => given.extend(found.into_iter().map(|(line, f)| {
                let at = format!(" (in #SBATCH directive on line {line} of the batch script)");
                Given::new(f.key, f.value, at)
            })),
            Err(e) => {
                return err(&format!(
                    "{} (in #SBATCH directive on line {} of the batch script)",
                    e.message, e.line
                ))
            }
        }
    }
    for (k, v, var) in options::env_options(&env) {
        given.push(Given::new(k, v, Given::from_env(var)));
    }
    for f in &cmdline.opts {
        given.push(Given::new(f.key, f.value.clone(), String::new()));
    }
    // What Drover does not support is refused, as finally set.
    if let Some(refused) = support::final_refusal(&given, support::job_refusal) {
        return err(&refused);
    }
    let mut o = SbatchOpts::default();
    let mut set: Vec<(&str, Option<String>)> = Vec::new();
    for (i, g) in given.iter().enumerate() {
        if support::overridden(&given, i)
            && support::job_refusal(g.key, g.value.as_deref()).is_some()
        {
            continue;
        }
        if let Err(e) = o.apply(g.key, g.value.as_deref(), now) {
            return err(&e);
        }
        set.push((g.key, g.value.clone()));
    }
    if o.quiet && o.verbose > 0 {
        return err("don't specify both --verbose (-v) and --quiet (-Q)");
    }
    if o.verbose > 0 {
        for l in crate::optdump::defined_options(options::TABLE, &set, o.verbose) {
            eprintln!("sbatch: {l}");
        }
    }
    if let Err(e) = o.read_nodefile() {
        return err(&e);
    }

    // The job learns a non-default --export (sbatch sets it, unless set).
    let mut env = env;
    if let Some(x) = o
        .export
        .as_deref()
        .filter(|x| !x.eq_ignore_ascii_case("ALL"))
    {
        if !env.iter().any(|(k, _)| k == "SLURM_EXPORT_ENV") {
            env.push(("SLURM_EXPORT_ENV".into(), x.to_string()));
        }
    }
    let ctx = spec::Context {
        env,
        cwd,
        host: drover_proto::auth::hostname(),
        script,
        script_args,
        default_name,
        command,
    };
    let job = spec::build(&o, &ctx);
    timer.mark("options and script");

    let (cfg, rt) = match conn::setup("sbatch") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    timer.mark("configuration and runtime");
    // -M: this cluster is the only one a Drover command reaches.
    let from_env = given
        .iter()
        .rev()
        .find(|g| g.key == "clusters")
        .is_some_and(|g| !g.origin.is_empty());
    if let Some(names) = &o.clusters {
        if let Some(e) = support::cluster_refusal(names, &cfg.cluster_name, from_env) {
            return err(&e);
        }
    }
    // With -M, Slurm names the cluster the job went to.
    let on_cluster = o.clusters.is_some().then(|| cfg.cluster_name.clone());
    rt.block_on(async move {
        let mut client = match conn::client_for("sbatch", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let partition = job.partition.clone();
        let resp = match client.submit(SubmitRequest { spec: Some(job) }).await {
            Ok(r) => {
                timer.mark("answered");
                r.into_inner()
            }
            Err(st) => {
                if let Some(note) = conn::partition_note(&st, &partition, &cfg) {
                    err(&note);
                }
                return err(&format!(
                    "Batch job submission failed: {}",
                    conn::classify(&st).message()
                ));
            }
        };
        // -Q: errors only (sbatch(1): "Suppress informational messages
        // from sbatch such as Job ID").
        if !o.quiet {
            for w in &resp.warnings {
                eprintln!("sbatch: warning: {w}");
            }
            match (o.parsable, &on_cluster) {
                (true, None) => println!("{}", resp.job_id),
                (true, Some(c)) => println!("{};{c}", resp.job_id),
                (false, None) => println!("Submitted batch job {}", resp.job_id),
                (false, Some(c)) => println!("Submitted batch job {} on cluster {c}", resp.job_id),
            }
        }
        if !o.wait {
            return 0;
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        match client
            .wait_job(WaitJobRequest {
                job_id: resp.job_id,
            })
            .await
        {
            Ok(r) => match r.into_inner().job {
                Some(j) => wait_exit_code(j.state(), j.exit_code),
                None => 1,
            },
            Err(st) => {
                conn::report("sbatch", "sbatch: error: ", &st);
                1
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_codes() {
        assert_eq!(wait_exit_code(JobState::Completed, 0), 0);
        assert_eq!(wait_exit_code(JobState::Failed, 3), 3);
        assert_eq!(wait_exit_code(JobState::Cancelled, 0), 1);
        assert_eq!(wait_exit_code(JobState::Timeout, 0), 1);
    }
}
