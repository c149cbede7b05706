//! A job description as slurmrestd takes it (data_parser v0.0.40
//! `job_desc_msg`: `{"script": "...", "job": {...}}`) turned into the same
//! [`JobSpec`] sbatch sends: the script's `#SBATCH` directives first, then
//! the description's fields, each through sbatch's own option checks (so a
//! bad value gets sbatch's words). Pure.

use drover_cli::sbatch::options::SbatchOpts;
use drover_cli::sbatch::{directives, spec};
use drover_proto::JobSpec;
use serde_json::{Map, Value};

use crate::reply::{errno, Failure};

/// Where the submission comes from (the caller's home is the default
/// working directory, as for slurmrestd).
pub struct Submitter<'a> {
    pub home: &'a str,
    pub host: &'a str,
}

/// What a description field turns into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// An sbatch option taking the value as text.
    Opt(&'static str),
    /// An sbatch option taking a memory size in MB.
    MemMb(&'static str),
    /// A minutes value (time limits).
    Minutes(&'static str),
    /// A boolean sbatch flag (true: the first, false: the second, if any).
    Flag(&'static str, Option<&'static str>),
    /// `tres_per_node`/`tres_per_job`: `gres/gpu:2` etc.
    Tres(&'static str),
    /// A string taken as it is (script, working directory).
    Text,
    /// A list of strings (environment, argv).
    List,
}

/// Every field of `job` Drover acts on (the OpenAPI document lists these).
pub const FIELDS: &[(&str, Field)] = &[
    ("account", Field::Opt("account")),
    ("array", Field::Opt("array")),
    ("comment", Field::Opt("comment")),
    ("constraints", Field::Opt("constraint")),
    ("cpus_per_task", Field::Opt("cpus-per-task")),
    ("dependency", Field::Opt("dependency")),
    ("name", Field::Opt("job-name")),
    ("nice", Field::Opt("nice")),
    ("nodes", Field::Opt("nodes")),
    ("partition", Field::Opt("partition")),
    ("qos", Field::Opt("qos")),
    ("reservation", Field::Opt("reservation")),
    ("standard_output", Field::Opt("output")),
    ("standard_error", Field::Opt("error")),
    ("standard_input", Field::Opt("input")),
    ("tasks", Field::Opt("ntasks")),
    ("tasks_per_node", Field::Opt("ntasks-per-node")),
    ("mail_user", Field::Opt("mail-user")),
    ("mail_type", Field::Opt("mail-type")),
    ("wckey", Field::Opt("wckey")),
    ("required_nodes", Field::Opt("nodelist")),
    ("excluded_nodes", Field::Opt("exclude")),
    ("licenses", Field::Opt("licenses")),
    ("minimum_cpus", Field::Opt("mincpus")),
    ("memory_per_node", Field::MemMb("mem")),
    ("memory_per_cpu", Field::MemMb("mem-per-cpu")),
    ("time_limit", Field::Minutes("time")),
    ("time_minimum", Field::Minutes("time-min")),
    ("hold", Field::Flag("hold", None)),
    ("requeue", Field::Flag("requeue", Some("no-requeue"))),
    ("contiguous", Field::Flag("contiguous", None)),
    ("overcommit", Field::Flag("overcommit", None)),
    ("tres_per_node", Field::Tres("gres")),
    ("tres_per_job", Field::Tres("gpus")),
    ("script", Field::Text),
    ("current_working_directory", Field::Text),
    ("environment", Field::List),
    ("argv", Field::List),
];

fn field(name: &str) -> Option<Field> {
    FIELDS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// A number in either of Slurm's forms: `5` or `{"set": true,
/// "infinite": false, "number": 5}`. Ok(None): not set; "infinite" as
/// Err-free `Some(None)`.
fn no_val(v: &Value) -> Result<Option<Option<i64>>, ()> {
    match v {
        Value::Number(n) => n.as_i64().map(|n| Some(Some(n))).ok_or(()),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map(|n| Some(Some(n)))
            .map_err(|_| ()),
        Value::Object(o) => {
            let flag = |k: &str| o.get(k).and_then(Value::as_bool);
            if flag("infinite") == Some(true) {
                return Ok(Some(None));
            }
            if flag("set") == Some(false) {
                return Ok(None);
            }
            match o.get("number") {
                Some(n) => no_val(n),
                None => Err(()),
            }
        }
        Value::Null => Ok(None),
        _ => Err(()),
    }
}

/// A text value: strings as they are, numbers and lists of strings
/// (joined with commas) as Slurm accepts them.
fn text(v: &Value) -> Result<Option<String>, ()> {
    match v {
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Array(items) => {
            let parts: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            parts.map(|p| Some(p.join(","))).ok_or(())
        }
        Value::Object(_) => match no_val(v)? {
            Some(Some(n)) => Ok(Some(n.to_string())),
            _ => Ok(None),
        },
        Value::Null => Ok(None),
        Value::Bool(_) => Err(()),
    }
}

fn bad(path: &str, why: &str) -> Failure {
    Failure::new(
        axum::http::StatusCode::BAD_REQUEST,
        errno::REST_INVALID_JOBS_DESC,
        "Jobs description entry not found, empty or not dictionary or list",
        why.to_string(),
    )
    .at(path.to_string())
}

/// Turn a parsed request body into the job to submit, plus warnings (fields
/// Drover does not act on).
pub fn to_spec(
    body: &Value,
    who: &Submitter<'_>,
    now: i64,
) -> Result<(JobSpec, Vec<String>), Failure> {
    let Some(top) = body.as_object() else {
        return Err(bad("#/", "the request body is not a JSON object"));
    };
    if top.contains_key("jobs") {
        return Err(bad(
            "#/jobs",
            "heterogeneous jobs are not supported by Drover",
        ));
    }
    let empty = Map::new();
    let job = match top.get("job") {
        Some(Value::Object(j)) => j,
        Some(_) => return Err(bad("#/job", "\"job\" is not an object")),
        None => &empty,
    };
    let script = match job.get("script").or_else(|| top.get("script")) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(bad("#/script", "the batch script is missing or empty")),
    };
    if let Err(lines) = spec::check_script(script.as_bytes()) {
        return Err(bad("#/script", &lines.join("; ")));
    }

    let mut o = SbatchOpts::default();
    // Directives in the script, then the description (which wins).
    match directives::parse(&script) {
        Ok(found) => {
            for (_line, f) in found {
                o.apply(f.key, f.value.as_deref(), now).map_err(|e| {
                    bad(
                        "#/script",
                        &format!("{e} (in an #SBATCH directive of the script)"),
                    )
                })?;
            }
        }
        Err(e) => {
            return Err(bad(
                "#/script",
                &format!(
                    "{} (in #SBATCH directive on line {} of the batch script)",
                    e.message, e.line
                ),
            ))
        }
    }

    let mut warnings = Vec::new();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut cwd = who.home.to_string();
    let mut script_args = Vec::new();
    for (k, v) in job {
        let path = format!("#/job/{k}");
        let Some(f) = field(k) else {
            warnings.push(format!("{path}: field not supported by Drover, ignored"));
            continue;
        };
        let fail = |why: &str| bad(&path, why);
        match f {
            Field::Opt(opt) => {
                if let Some(t) = text(v).map_err(|_| fail("expected a string or a number"))? {
                    o.apply(opt, Some(&t), now).map_err(|e| fail(&e))?;
                }
            }
            Field::MemMb(opt) => match no_val(v).map_err(|_| fail("expected a number (MB)"))? {
                Some(Some(n)) if n >= 0 => o
                    .apply(opt, Some(&format!("{n}M")), now)
                    .map_err(|e| fail(&e))?,
                Some(_) => return Err(fail("expected a number of MB")),
                None => {}
            },
            Field::Minutes(opt) => match no_val(v).map_err(|_| fail("expected minutes"))? {
                Some(Some(n)) if n >= 0 => o
                    .apply(opt, Some(&n.to_string()), now)
                    .map_err(|e| fail(&e))?,
                Some(None) => o.apply(opt, Some("UNLIMITED"), now).map_err(|e| fail(&e))?,
                Some(Some(_)) => return Err(fail("expected a non-negative number of minutes")),
                None => {}
            },
            Field::Flag(yes, no) => match v {
                Value::Bool(true) => o.apply(yes, None, now).map_err(|e| fail(&e))?,
                Value::Bool(false) => {
                    if let Some(no) = no {
                        o.apply(no, None, now).map_err(|e| fail(&e))?
                    }
                }
                _ => return Err(fail("expected true or false")),
            },
            Field::Tres(opt) => {
                let t = text(v)
                    .map_err(|_| fail("expected a TRES string such as gres/gpu:2"))?
                    .unwrap_or_default();
                let t = t.strip_prefix("gres/").unwrap_or(&t);
                let t = if opt == "gpus" {
                    t.strip_prefix("gpu:").unwrap_or(t)
                } else {
                    t
                };
                if !t.is_empty() {
                    o.apply(opt, Some(t), now).map_err(|e| fail(&e))?;
                }
            }
            Field::Text | Field::List => match k.as_str() {
                "environment" => {
                    let Some(list) = v.as_array() else {
                        return Err(fail("expected a list of \"NAME=value\" strings"));
                    };
                    for item in list {
                        let kv = item
                            .as_str()
                            .and_then(|s| s.split_once('='))
                            .ok_or_else(|| fail("expected a list of \"NAME=value\" strings"))?;
                        env.push((kv.0.to_string(), kv.1.to_string()));
                    }
                }
                "current_working_directory" => {
                    cwd = v
                        .as_str()
                        .filter(|d| d.starts_with('/'))
                        .ok_or_else(|| fail("expected an absolute path"))?
                        .to_string();
                }
                "argv" => {
                    let Some(list) = v.as_array() else {
                        return Err(fail("expected a list of strings"));
                    };
                    for a in list {
                        script_args.push(
                            a.as_str()
                                .ok_or_else(|| fail("expected a list of strings"))?
                                .to_string(),
                        );
                    }
                    // Slurm's argv[0] is the script name.
                    if !script_args.is_empty() {
                        script_args.remove(0);
                    }
                }
                _ => {}
            },
        }
    }
    let ctx = spec::Context {
        env,
        cwd,
        host: who.host.to_string(),
        script: script.into_bytes(),
        script_args,
        default_name: "sbatch".to_string(),
        command: String::new(),
    };
    Ok((spec::build(&o, &ctx), warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn who() -> Submitter<'static> {
        Submitter {
            home: "/home/alice",
            host: "rest1",
        }
    }

    fn spec(v: Value) -> Result<JobSpec, Failure> {
        to_spec(&v, &who(), 1_700_000_000).map(|(s, _)| s)
    }

    #[test]
    fn description_fields_reach_the_spec() {
        let s = spec(json!({
            "script": "#!/bin/sh\n#SBATCH -J fromscript\n#SBATCH -t 5\nhostname\n",
            "job": {
                "name": "fromjson",
                "partition": "debug",
                "time_limit": {"set": true, "infinite": false, "number": 30},
                "cpus_per_task": 2,
                "memory_per_node": {"set": true, "number": 512},
                "current_working_directory": "/tmp",
                "environment": ["PATH=/bin", "A=b=c"],
                "hold": true,
                "nice": 5
            }
        }))
        .unwrap();
        assert_eq!(s.name, "fromjson");
        assert_eq!(s.partition, "debug");
        assert_eq!(s.time_limit, 30);
        assert_eq!(s.cpus_per_task, 2);
        assert_eq!(s.work_dir, "/tmp");
        assert!(s.environment.contains(&"A=b=c".to_string()));
        assert!(s
            .environment
            .contains(&"SLURM_SUBMIT_HOST=rest1".to_string()));
    }

    #[test]
    fn script_directives_apply_when_the_description_is_silent() {
        let s = spec(json!({"script": "#!/bin/sh\n#SBATCH -J viadirective\n#SBATCH -t 0:5:0\ntrue\n", "job": {}})).unwrap();
        assert_eq!(s.name, "viadirective");
        assert_eq!(s.time_limit, 5);
        assert_eq!(s.work_dir, "/home/alice");
        let s =
            spec(json!({"job": {"script": "#!/bin/sh\ntrue\n", "time_limit": {"infinite": true}}}))
                .unwrap();
        assert_eq!(s.name, "sbatch");
        assert_eq!(s.time_limit, drover_proto::INFINITE);
    }

    #[test]
    fn bad_descriptions_are_refused_with_the_field() {
        let cases = [
            (json!([1]), "#/"),
            (json!({"job": {}}), "#/script"),
            (json!({"script": "no shebang\n", "job": {}}), "#/script"),
            (
                json!({"script": "#!/bin/sh\n#SBATCH --time=forever\n"}),
                "#/script",
            ),
            (
                json!({"script": "#!/bin/sh\n", "job": {"time_limit": "soon"}}),
                "#/job/time_limit",
            ),
            (
                json!({"script": "#!/bin/sh\n", "job": {"cpus_per_task": 0}}),
                "#/job/cpus_per_task",
            ),
            (
                json!({"script": "#!/bin/sh\n", "job": {"environment": "PATH=/bin"}}),
                "#/job/environment",
            ),
            (
                json!({"script": "#!/bin/sh\n", "job": {"hold": "yes"}}),
                "#/job/hold",
            ),
            (
                json!({"script": "#!/bin/sh\n", "job": {"current_working_directory": "rel"}}),
                "#/job/current_working_directory",
            ),
            (json!({"script": "#!/bin/sh\n", "jobs": []}), "#/jobs"),
        ];
        for (body, source) in cases {
            let f = spec(body.clone()).unwrap_err();
            assert_eq!(f.source, source, "{body}");
            assert_eq!(f.status, axum::http::StatusCode::BAD_REQUEST);
        }
    }

    #[test]
    fn unknown_fields_warn() {
        let (_, w) = to_spec(
            &json!({"script": "#!/bin/sh\n", "job": {"frobnicate": 1}}),
            &who(),
            0,
        )
        .unwrap();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("frobnicate"));
    }
}
