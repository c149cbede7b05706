//! What an unprivileged user may do, checked the same way whichever path
//! the commands take to the controller (TCP with a credential, or the
//! controller's local socket).

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use crate::Cluster;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A directory `nobody` (65534) owns, for its jobs to run in.
pub fn nobody_home(c: &Cluster) -> std::path::PathBuf {
    let home = c.path().join("nobody-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    home
}

/// `nobody` submits a job that runs as nobody in `home`; may not cancel,
/// update or drain what is not theirs (`root_job`, a node); sees only
/// their own job with `--me` and may cancel it; root (the SlurmUser) may
/// cancel anyone's. Leaves both jobs cancelled.
pub fn nobody_touches_only_their_jobs(c: &Cluster, home: &std::path::Path, root_job: u32) {
    let o = c.run_as(
        65534,
        "sbatch",
        &[
            "--parsable",
            "-D",
            home.to_str().unwrap(),
            "--wrap",
            "id -u; id -g; sleep 60",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let theirs: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let out = home.join(format!("slurm-{theirs}.out"));
    assert_eq!(
        c.wait_file(&out, |t| t.lines().count() >= 2),
        "65534\n65534\n"
    );
    assert_eq!(std::fs::metadata(&out).unwrap().uid(), 65534);
    assert_eq!(
        c.job_field(&theirs.to_string(), "UserId").as_deref(),
        Some("nobody(65534)")
    );
    // Not root's job, not a node, not the controller.
    for args in [
        vec!["scancel".to_string(), root_job.to_string()],
        vec![
            "scontrol".into(),
            "update".into(),
            format!("JobId={root_job}"),
            "TimeLimit=1".into(),
        ],
    ] {
        let rest: Vec<&str> = args[1..].iter().map(String::as_str).collect();
        let o = c.run_as(65534, &args[0], &rest);
        assert!(!o.status.success(), "{args:?}");
        assert!(
            stderr(&o).contains("Access/permission denied"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    for args in [
        &["update", "NodeName=node1", "State=DRAIN", "Reason=x"][..],
        &["shutdown"][..],
    ] {
        let o = c.run_as(65534, "scontrol", args);
        assert!(!o.status.success(), "{args:?}");
    }
    assert_eq!(
        c.job_field(&root_job.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    // Their own, yes; and --me shows only theirs.
    let me = c.run_as(65534, "squeue", &["--me", "-h", "-o", "%i"]);
    assert_eq!(
        String::from_utf8_lossy(&me.stdout).trim(),
        theirs.to_string()
    );
    let o = c.run_as(65534, "scancel", &[&theirs.to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c.wait_done(theirs), "CANCELLED");
    let o = c.run("scancel", &[&root_job.to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    c.wait_state(
        &root_job.to_string(),
        &["CANCELLED"],
        Duration::from_secs(20),
    );
}
