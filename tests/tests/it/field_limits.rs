//! Bounded submissions: the batch script within
//! `SchedulerParameters=max_script_size` (Slurm's default 4 MiB) and every
//! other user-set field within its limit, refused at submit with Slurm's
//! error and the field's name.

use drover_tests::{Cluster, Spec};

const TOO_LONG: &str =
    "sbatch: error: Batch job submission failed: Pathname of a file, directory or other parameter too long";

/// A script of about `bytes` bytes (a comment pads it).
fn script_of(c: &Cluster, bytes: usize) -> String {
    let head = "#!/bin/sh\ntrue\n#";
    let body = format!("{head}{}\n", "x".repeat(bytes - head.len() - 1));
    assert_eq!(body.len(), bytes);
    c.script(&format!("big-{bytes}.sh"), &body)
        .display()
        .to_string()
}

fn sbatch(c: &Cluster, args: &[&str]) -> (bool, String, String) {
    let o = c.run("sbatch", args);
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn scripts_over_the_default_4_mib_are_refused() {
    let c = Cluster::start(Spec::default());
    let big = script_of(&c, 10 * 1024 * 1024);
    let (ok, _, err) = sbatch(&c, &["-o", "/dev/null", &big]);
    assert!(!ok, "a 10 MiB script was accepted");
    assert!(err.starts_with(TOO_LONG), "{err}");
    assert!(
        err.contains("script: 10485760 bytes, max_script_size=4194304"),
        "{err}"
    );
    // Nothing of it was kept.
    assert_eq!(c.ok("squeue", &["-h", "-t", "all"]).trim(), "");
    // Just under the limit is fine.
    let fits = script_of(&c, 4 * 1024 * 1024);
    let (ok, out, err) = sbatch(&c, &["--parsable", "-o", "/dev/null", &fits]);
    assert!(ok, "{err}");
    c.wait_done(out.trim().parse().expect("job id"));
}

#[test]
fn configured_max_script_size_and_other_fields() {
    let c = Cluster::start(Spec {
        extra: vec!["SchedulerParameters=max_script_size=2000".into()],
        ..Spec::default()
    });
    let big = script_of(&c, 2001);
    let (ok, _, err) = sbatch(&c, &["-o", "/dev/null", &big]);
    assert!(!ok);
    assert!(err.starts_with(TOO_LONG), "{err}");
    assert!(
        err.contains("script: 2001 bytes, max_script_size=2000"),
        "{err}"
    );
    let fits = script_of(&c, 2000);
    let (ok, _, err) = sbatch(&c, &["--parsable", "-o", "/dev/null", &fits]);
    assert!(ok, "{err}");

    // Other fields: the comment (1 KiB), the job name, the working directory.
    let comment = "c".repeat(1025);
    let (ok, _, err) = sbatch(&c, &["--comment", &comment, "--wrap", "true"]);
    assert!(!ok);
    assert!(
        err.starts_with(TOO_LONG) && err.contains("(comment: 1025 bytes"),
        "{err}"
    );
    let name = "n".repeat(5000);
    let (ok, _, err) = sbatch(&c, &["-J", &name, "--wrap", "true"]);
    assert!(!ok);
    assert!(err.contains("(name: 5000 bytes"), "{err}");
    // A comment at the limit is accepted.
    let (ok, _, err) = sbatch(&c, &["--comment", &"c".repeat(1024), "--wrap", "true"]);
    assert!(ok, "{err}");
}
