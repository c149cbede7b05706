use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use drover_tests::{Cluster, Spec};

#[test]
fn users_run_as_themselves_and_touch_only_their_jobs() {
    let c = Cluster::start(Spec::default());
    let home = c.path().join("nobody-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    let root_job = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    // nobody submits a job; it runs as nobody in its directory.
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
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let out = home.join(format!("slurm-{theirs}.out"));
    let text = c.wait_file(&out, |t| t.lines().count() >= 2);
    assert_eq!(text, "65534\n65534\n");
    assert_eq!(std::fs::metadata(&out).unwrap().uid(), 65534);
    assert_eq!(
        c.job_field(&theirs.to_string(), "UserId").as_deref(),
        Some("nobody(65534)")
    );
    // nobody may not cancel, hold or update root's job.
    let o = c.run_as(65534, "scancel", &[&root_job.to_string()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Access/permission denied"));
    let o = c.run_as(
        65534,
        "scontrol",
        &["update", &format!("JobId={root_job}"), "TimeLimit=1"],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Access/permission denied"));
    let o = c.run_as(
        65534,
        "scontrol",
        &["update", "NodeName=node1", "State=DRAIN", "Reason=x"],
    );
    assert!(!o.status.success());
    assert_eq!(
        c.job_field(&root_job.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    // ...but their own, yes; and --me shows only theirs.
    let me = c.run_as(65534, "squeue", &["--me", "-h", "-o", "%i"]);
    assert_eq!(
        String::from_utf8_lossy(&me.stdout).trim(),
        theirs.to_string()
    );
    let o = c.run_as(65534, "scancel", &[&theirs.to_string()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(c.wait_done(theirs), "CANCELLED");
    // Root (the SlurmUser) may act on anyone's jobs.
    c.ok("scancel", &[&root_job.to_string()]);
    c.wait_state(
        &root_job.to_string(),
        &["CANCELLED"],
        Duration::from_secs(20),
    );
}
