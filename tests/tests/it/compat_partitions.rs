//! `scontrol create|update|delete partition` against real daemons: limits
//! and states take effect on the next pass, only admins may edit, edits
//! survive a controller restart and `scontrol reconfigure` drops them.

use std::time::{Duration, Instant};

use drover_tests::{field, Cluster, Spec};

const NOBODY: u32 = 65534;
const WAIT: Duration = Duration::from_secs(30);
const TRUE: &str = "#!/bin/sh\ntrue\n";

/// One partition's `Key` from `scontrol show partition -o NAME`.
fn part(c: &Cluster, name: &str, key: &str) -> Option<String> {
    let out = c.run("scontrol", &["show", "partition", "-o", name]);
    field(&String::from_utf8_lossy(&out.stdout), key)
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Poll until job `id` has `Reason=want`.
fn wait_reason(c: &Cluster, id: u32, want: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let got = c.job_field(&id.to_string(), "Reason");
        if got.as_deref() == Some(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {id}: Reason {got:?}, want {want}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn create_update_delete_partition() {
    let c = Cluster::start(Spec::default());
    c.wait_nodes_idle(WAIT).unwrap();
    c.ok(
        "scontrol",
        &["create", "PartitionName=short", "Nodes=node1", "MaxTime=2"],
    );
    assert_eq!(part(&c, "short", "MaxTime").as_deref(), Some("00:02:00"));
    assert_eq!(part(&c, "short", "Nodes").as_deref(), Some("node1"));
    let o = c.run(
        "scontrol",
        &["create", "PartitionName=short", "Nodes=node2"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Error creating the partition: Duplicate partition name"),
        "{}",
        stderr(&o)
    );

    // Over MaxTime: refused at submit (EnforcePartLimits=ALL).
    let o = c.run("sbatch", &["-p", "short", "-t", "5", "--wrap", "true"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Requested time limit is invalid"),
        "{}",
        stderr(&o)
    );
    // Raised: the same job is taken and runs.
    c.ok("scontrol", &["update", "PartitionName=short", "MaxTime=10"]);
    assert_eq!(part(&c, "short", "MaxTime").as_deref(), Some("00:10:00"));
    let id = c.sbatch(&["-p", "short", "-t", "5", "-o", "/dev/null"], TRUE);
    c.expect_end(id, "COMPLETED");

    // DOWN: jobs wait with Reason=PartitionDown; UP again: they run.
    c.ok("scontrol", &["update", "PartitionName=short", "State=DOWN"]);
    assert_eq!(part(&c, "short", "State").as_deref(), Some("DOWN"));
    let id = c.sbatch(&["-p", "short", "-o", "/dev/null"], TRUE);
    wait_reason(&c, id, "PartitionDown");
    assert_eq!(
        c.job_field(&id.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );
    // INACTIVE: Slurm's own reason, PartitionInactive.
    c.ok(
        "scontrol",
        &["update", "PartitionName=short", "State=INACTIVE"],
    );
    wait_reason(&c, id, "PartitionInactive");
    c.ok("scontrol", &["update", "PartitionName=short", "State=DOWN"]);
    wait_reason(&c, id, "PartitionDown");

    // In use: not deleted, in Slurm's words.
    let o = c.run("scontrol", &["delete", "PartitionName=short"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("delete_partition PartitionName=short: Partition is in use"),
        "{}",
        stderr(&o)
    );
    // DRAIN: what it has runs, nothing new is taken (Slurm's words).
    c.ok(
        "scontrol",
        &["update", "PartitionName=short", "State=DRAIN"],
    );
    c.expect_end(id, "COMPLETED");
    let o = c.run("sbatch", &["-p", "short", "--wrap", "true"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Required partition not available (inactive or drain)"),
        "{}",
        stderr(&o)
    );
    c.ok("scontrol", &["update", "PartitionName=short", "State=UP"]);

    // Not an admin: refused, nothing changed.
    let o = c.run_as(
        NOBODY,
        "scontrol",
        &["update", "PartitionName=short", "State=DOWN"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("slurm_update error: Access/permission denied"),
        "{}",
        stderr(&o)
    );
    let o = c.run_as(NOBODY, "scontrol", &["delete", "PartitionName=short"]);
    assert!(
        stderr(&o).contains("Access/permission denied"),
        "{}",
        stderr(&o)
    );
    assert_eq!(part(&c, "short", "State").as_deref(), Some("UP"));

    // Bad input named.
    let o = c.run("scontrol", &["update", "PartitionName=short", "Colour=red"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("Colour"), "{}", stderr(&o));
    let o = c.run("scontrol", &["update", "PartitionName=nope", "State=UP"]);
    assert!(
        stderr(&o).contains("slurm_update error: Invalid partition name specified"),
        "{}",
        stderr(&o)
    );

    c.ok("scontrol", &["delete", "PartitionName=short"]);
    let o = c.run("scontrol", &["show", "partition", "short"]);
    assert!(!o.status.success());
    let o = c.run("sbatch", &["-p", "short", "--wrap", "true"]);
    assert!(
        stderr(&o).contains("invalid partition specified: short"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn partition_edits_survive_restart_not_reconfigure() {
    let mut c = Cluster::start(Spec::default());
    c.wait_nodes_idle(WAIT).unwrap();
    c.ok("scontrol", &["update", "PartitionName=debug", "MaxTime=30"]);
    c.ok(
        "scontrol",
        &[
            "create",
            "partition",
            "PartitionName=extra",
            "Nodes=node2",
            "Hidden=YES",
        ],
    );
    c.stop_ctld();
    c.start_ctld().unwrap();
    assert_eq!(part(&c, "debug", "MaxTime").as_deref(), Some("00:30:00"));
    assert_eq!(part(&c, "extra", "Hidden").as_deref(), Some("YES"));
    // A job over the edited limit is still refused after the restart.
    let o = c.run("sbatch", &["-t", "60", "--wrap", "true"]);
    assert!(
        stderr(&o).contains("Requested time limit is invalid"),
        "{}",
        stderr(&o)
    );

    // reconfigure: slurm.conf's partitions again (and so after a restart).
    c.ok("scontrol", &["reconfigure"]);
    assert_eq!(part(&c, "debug", "MaxTime").as_deref(), Some("UNLIMITED"));
    assert!(part(&c, "extra", "Hidden").is_none());
    c.stop_ctld();
    c.start_ctld().unwrap();
    assert_eq!(part(&c, "debug", "MaxTime").as_deref(), Some("UNLIMITED"));
    assert!(part(&c, "extra", "Hidden").is_none());
}

#[test]
fn requeuehold_special_exit() {
    let c = Cluster::start(Spec::default());
    c.wait_nodes_idle(WAIT).unwrap();
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    let js = id.to_string();
    c.wait_state(&js, &["RUNNING"], WAIT);
    let o = c.run("scontrol", &["requeuehold", "State=Finished", &js]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Invalid state: State=Finished"),
        "{}",
        stderr(&o)
    );
    c.ok("scontrol", &["requeuehold", "State=SpecialExit", &js]);
    c.wait_state(&js, &["SPECIAL_EXIT"], WAIT);
    wait_reason(&c, id, "JobHeldUser");
    assert_eq!(c.ok("squeue", &["-h", "-o", "%t", "-j", &js]).trim(), "SE");
    assert_eq!(
        c.ok("squeue", &["-h", "-o", "%T", "-j", &js]).trim(),
        "SPECIAL_EXIT"
    );
    assert_eq!(c.job_field(&js, "Restarts").as_deref(), Some("1"));
    // JSON: Slurm's base state with the flag, in squeue and scontrol alike.
    for (prog, args) in [
        ("squeue", vec!["--json", "-j", js.as_str()]),
        ("scontrol", vec!["show", "job", "--json", js.as_str()]),
    ] {
        let v: serde_json::Value = serde_json::from_str(&c.ok(prog, &args)).unwrap();
        assert_eq!(
            v["jobs"][0]["job_state"],
            serde_json::json!(["PENDING", "SPECIAL_EXIT"]),
            "{prog}"
        );
    }
    // -t SE: only such jobs; -t PD: they are pending ones too.
    let other = c.sbatch(&["-H", "-o", "/dev/null"], TRUE).to_string();
    assert_eq!(c.ok("squeue", &["-h", "-t", "SE", "-o", "%i"]).trim(), js);
    let pd = c.ok("squeue", &["-h", "-t", "PD", "-o", "%i"]);
    assert!(pd.contains(&js) && pd.contains(&other), "{pd}");
    c.ok("scancel", &[&other]);
    // Released: it runs again.
    c.ok("scontrol", &["release", &js]);
    c.wait_state(&js, &["RUNNING"], WAIT);
    assert_eq!(c.ok("squeue", &["-h", "-t", "SE", "-o", "%i"]).trim(), "");
    c.ok("scancel", &[&js]);
    c.wait_done(id);
    // A plain requeuehold stays a plain hold (PENDING, JobHeldUser).
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    let js = id.to_string();
    c.wait_state(&js, &["RUNNING"], WAIT);
    c.ok("scontrol", &["requeuehold", &js]);
    wait_reason(&c, id, "JobHeldUser");
    assert_eq!(c.job_field(&js, "JobState").as_deref(), Some("PENDING"));
    c.ok("scancel", &[&js]);
}
