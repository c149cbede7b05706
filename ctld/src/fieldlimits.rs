//! Sizes of the user-set fields of a job, bounded at submit and update so
//! that one user cannot fill the controller's memory or state log. The
//! limits are Slurm's (`_test_job_desc_fields`: 1 KiB for names, 4 KiB for
//! paths, 64 KiB for node lists, 128 KiB for dependencies, the script up to
//! `SchedulerParameters=max_script_size`, default 4 MiB), plus bounds Slurm
//! leaves to the kernel (environment and arguments, which `execve` could not
//! take beyond a few MiB anyway). Pure: no I/O.

use drover_proto::JobSpec;

/// Slurm's `ESLURM_PATHNAME_TOO_LONG`, the error for any field too large.
pub const TOO_LONG: &str = "Pathname of a file, directory or other parameter too long";

/// Short text fields (names, accounts, comment, ...): Slurm's 1 KiB.
pub const SHORT: usize = 1024;
/// Paths (work dir, output files, command): Slurm's `MAXPATHLEN`.
pub const PATH: usize = 4096;
/// Array expressions: Slurm's 4 KiB.
pub const ARRAY: usize = 4096;
/// Node lists: Slurm's 64 KiB.
pub const NODE_LIST: usize = 64 * 1024;
/// Dependency lists: Slurm's 128 KiB.
pub const DEPENDENCY: usize = 128 * 1024;
/// The whole environment (and, separately, the script's arguments).
pub const ENV_BYTES: usize = 4 * 1024 * 1024;
/// Environment variables (and arguments) in number.
pub const ENV_COUNT: usize = 65_536;

/// The largest request the controller decodes: a submission at every
/// limit (script, environment, arguments) and room for the rest. Anything
/// larger is refused by the transport before it is held in memory.
pub fn max_request_bytes(max_script: usize) -> usize {
    max_script + 2 * ENV_BYTES + 4 * 1024 * 1024
}

fn check(field: &str, len: usize, max: usize) -> Result<(), String> {
    if len > max {
        Err(format!("{TOO_LONG} ({field}: {len} bytes, at most {max})"))
    } else {
        Ok(())
    }
}

fn check_list(field: &str, v: &[String], max_bytes: usize) -> Result<(), String> {
    if v.len() > ENV_COUNT {
        return Err(format!(
            "{TOO_LONG} ({field}: {} entries, at most {ENV_COUNT})",
            v.len()
        ));
    }
    check(field, v.iter().map(String::len).sum(), max_bytes)
}

/// Refuse a spec with a field over its limit, naming the field.
/// `max_script` is `SchedulerParameters=max_script_size`.
pub fn check_sizes(spec: &JobSpec, max_script: usize) -> Result<(), String> {
    let short = [
        ("name", &spec.name),
        ("partition", &spec.partition),
        ("account", &spec.account),
        ("qos", &spec.qos),
        ("comment", &spec.comment),
        ("wckey", &spec.wckey),
        ("reservation", &spec.reservation),
        ("gres", &spec.gres),
        ("gpus", &spec.gpus_type),
        ("constraint", &spec.constraint),
        ("licenses", &spec.licenses),
        ("mail_type", &spec.mail_type),
        ("mail_user", &spec.mail_user),
        ("cluster", &spec.cluster),
        ("submit_host", &spec.submit_host),
    ];
    for (field, v) in short {
        check(field, v.len(), SHORT)?;
    }
    let paths = [
        ("work_dir", &spec.work_dir),
        ("std_out", &spec.std_out),
        ("std_err", &spec.std_err),
        ("std_in", &spec.std_in),
    ];
    for (field, v) in paths {
        check(field, v.len(), PATH)?;
    }
    check("array", spec.array.len(), ARRAY)?;
    check("nodelist", spec.nodelist.len(), NODE_LIST)?;
    check("exclude", spec.exclude.len(), NODE_LIST)?;
    check("dependency", spec.dependency.len(), DEPENDENCY)?;
    // The command is the script path or the --wrap text (itself in the script).
    check("command", spec.command.len(), max_script.max(PATH))?;
    if spec.script.len() > max_script {
        return Err(format!(
            "{TOO_LONG} (script: {} bytes, max_script_size={max_script})",
            spec.script.len()
        ));
    }
    check_list("environment", &spec.environment, ENV_BYTES)?;
    check_list("argv", &spec.argv, ENV_BYTES)?;
    check_list("spank", &spec.spank, SHORT * 64)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_limits_passes() {
        let spec = JobSpec {
            name: "x".repeat(SHORT),
            work_dir: "/".repeat(PATH),
            script: vec![b'a'; 100],
            environment: vec!["A=1".into(); 100],
            ..Default::default()
        };
        assert_eq!(check_sizes(&spec, 100), Ok(()));
    }

    #[test]
    fn each_limit_names_its_field() {
        let base = JobSpec::default();
        let cases: Vec<(JobSpec, &str)> = vec![
            (
                JobSpec {
                    script: vec![b'a'; 101],
                    ..base.clone()
                },
                "script: 101 bytes, max_script_size=100",
            ),
            (
                JobSpec {
                    comment: "c".repeat(SHORT + 1),
                    ..base.clone()
                },
                "comment: 1025 bytes",
            ),
            (
                JobSpec {
                    work_dir: "d".repeat(PATH + 1),
                    ..base.clone()
                },
                "work_dir",
            ),
            (
                JobSpec {
                    dependency: "a".repeat(DEPENDENCY + 1),
                    ..base.clone()
                },
                "dependency",
            ),
            (
                JobSpec {
                    environment: vec![String::new(); ENV_COUNT + 1],
                    ..base.clone()
                },
                "environment: 65537 entries",
            ),
            (
                JobSpec {
                    environment: vec!["V=".to_string() + &"x".repeat(ENV_BYTES)],
                    ..base.clone()
                },
                "environment:",
            ),
            (
                JobSpec {
                    array: "1,".repeat(ARRAY),
                    ..base.clone()
                },
                "array",
            ),
        ];
        for (spec, want) in cases {
            let e = check_sizes(&spec, 100).unwrap_err();
            assert!(e.starts_with(TOO_LONG), "{e}");
            assert!(e.contains(want), "{e} lacks {want}");
        }
    }
}
