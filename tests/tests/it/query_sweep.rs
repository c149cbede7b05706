//! Issue 11's sweep of the query commands against real daemons: scancel's
//! `-R`/`--wckey` and `SCANCEL_*` filters really select, `-M`/
//! `SLURM_CLUSTERS` name only this cluster (with Slurm's `CLUSTER:` line),
//! `sinfo -T` lists the reservations, and jobs and partitions marked
//! `Hidden=YES` show only with `-a` (or to root).

use std::time::Duration;

use drover_tests::{Cluster, Spec};

const WAIT: Duration = Duration::from_secs(30);
const NOBODY: u32 = 65534;
const SLEEP: &str = "#!/bin/sh\nsleep 300\n";

fn text(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn running(c: &Cluster, id: u32) {
    c.wait_state(&id.to_string(), &["RUNNING"], WAIT);
}

#[test]
fn scancel_reservation_wckey_and_environment_filters() {
    let c = Cluster::start(Spec {
        cpus: 8,
        ..Spec::default()
    });
    c.wait_nodes_idle(WAIT).unwrap();
    c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=r1",
            "StartTime=now",
            "Duration=60",
            "Nodes=node1",
            "Users=root",
        ],
    );
    let in_resv = c.sbatch(&["--reservation=r1", "-o", "/dev/null"], SLEEP);
    let keyed = c.sbatch(&["--wckey=w1", "-o", "/dev/null"], SLEEP);
    let named = c.sbatch(&["-J", "victim", "-o", "/dev/null"], SLEEP);
    let other = c.sbatch(&["-J", "keeper", "-o", "/dev/null"], SLEEP);
    for id in [in_resv, keyed, named, other] {
        running(&c, id);
    }
    // -R: only the job in the reservation (Drover used to cancel every job).
    c.ok("scancel", &["-R", "r1"]);
    c.expect_end(in_resv, "CANCELLED");
    for id in [keyed, named, other] {
        assert_eq!(
            c.job_field(&id.to_string(), "JobState").as_deref(),
            Some("RUNNING"),
            "job {id} after scancel -R"
        );
    }
    // No job in that reservation any more: nothing to do (with -v, Slurm's note).
    let o = c.run("scancel", &["-v", "-R", "r1"]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("No active jobs match ALL job filters, including: reservation=r1 "),
        "{err}"
    );
    // --wckey.
    c.ok("scancel", &["--wckey=w1"]);
    c.expect_end(keyed, "CANCELLED");
    // SCANCEL_NAME is a filter on its own; the command line would win.
    let o = c
        .cmd("scancel")
        .env("SCANCEL_NAME", "victim")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    c.expect_end(named, "CANCELLED");
    assert_eq!(
        c.job_field(&other.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    // sinfo -T: the reservation, in Slurm's layout.
    let out = c.ok("sinfo", &["-T"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST",
        "{out}"
    );
    assert!(lines[1].starts_with("r1           ACTIVE  "), "{out}");
    assert!(lines[1].ends_with("     01:00:00  node1"), "{out}");
}

#[test]
fn clusters_option_names_this_cluster_only() {
    let c = Cluster::start(Spec::default());
    c.wait_nodes_idle(WAIT).unwrap();
    let out = c.ok("squeue", &["-M", "test"]);
    assert!(
        out.starts_with("CLUSTER: test\n             JOBID"),
        "{out}"
    );
    let out = c.ok("sinfo", &["--clusters=all", "-o", "%P"]);
    assert_eq!(out, "CLUSTER: test\nPARTITION\ndebug*\n");
    assert_eq!(c.ok("squeue", &["-M", "test", "-h"]), "");
    c.ok("scontrol", &["-M", "test", "show", "partition"]);
    for (prog, args) in [
        ("squeue", &["-M", "elsewhere"][..]),
        ("sinfo", &["-M", "elsewhere"][..]),
        ("scancel", &["-M", "elsewhere", "5"][..]),
        ("scontrol", &["-M", "elsewhere", "show", "node"][..]),
    ] {
        let o = c.run(prog, args);
        assert_eq!(o.status.code(), Some(1), "{prog}");
        assert_eq!(
            text(&o).1,
            format!(
                "{prog}: error: 'elsewhere' can't be reached now, or it is an invalid entry for \
                 --cluster.  Use 'sacctmgr list clusters' to see available clusters.\n"
            )
        );
    }
    let o = c
        .cmd("squeue")
        .env("SLURM_CLUSTERS", "elsewhere")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).1.contains("invalid entry for SLURM_CLUSTERS."),
        "{}",
        text(&o).1
    );

    // SLURM_TIME_FORMAT shapes the times every command prints.
    let id = c.sbatch(&["-H", "-o", "/dev/null"], SLEEP).to_string();
    let submit = |fmt: &str| {
        let o = c
            .cmd("squeue")
            .args(["-h", "-j", &id, "-o", "%V"])
            .env("SLURM_TIME_FORMAT", fmt)
            .output()
            .unwrap();
        text(&o)
    };
    let (iso, _) = submit("standard");
    assert_eq!(iso.trim().len(), 19, "{iso}");
    let year = iso[..4].to_string();
    assert_eq!(submit("%Y|%m").0.trim(), format!("{year}|{}", &iso[5..7]));
    // Today's time as H:M:S (the job was submitted a moment ago).
    let (rel, _) = submit("relative");
    assert_eq!(rel.trim(), &iso.trim()[11..], "{rel}");
    let (out, err) = submit("iso");
    assert_eq!(out, iso);
    assert_eq!(err, "squeue: error: invalid SLURM_TIME_FORMAT = 'iso'\n");
    let o = c
        .cmd("scontrol")
        .args(["show", "job", &id])
        .env("SLURM_TIME_FORMAT", "%Y")
        .output()
        .unwrap();
    assert!(
        text(&o).0.contains(&format!("SubmitTime={year} ")),
        "{}",
        text(&o).0
    );
}

#[test]
fn hidden_partition_needs_all() {
    let c = Cluster::start(Spec {
        topology: Some(
            "NodeName=node[1-2] NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n\
             PartitionName=secret Nodes=ALL Hidden=YES State=UP\n"
                .into(),
        ),
        ..Spec::default()
    });
    c.wait_nodes_idle(WAIT).unwrap();
    let hid = c.sbatch(&["-p", "secret", "-o", "/dev/null"], SLEEP);
    let seen = c.sbatch(&["-o", "/dev/null"], SLEEP);
    running(&c, hid);
    running(&c, seen);
    let ids = |o: std::process::Output| -> Vec<String> {
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        out.lines().map(str::to_string).collect()
    };
    let squeue = |args: &[&str]| {
        let mut a = vec!["-h", "-o", "%i"];
        a.extend_from_slice(args);
        ids(c.run_as(NOBODY, "squeue", &a))
    };
    assert_eq!(squeue(&[]), vec![seen.to_string()]);
    let mut all = squeue(&["-a"]);
    all.sort();
    let mut want = vec![hid.to_string(), seen.to_string()];
    want.sort();
    assert_eq!(all, want);
    assert_eq!(squeue(&["-a", "--hide"]), vec![seen.to_string()]);
    assert_eq!(squeue(&["-p", "secret"]), vec![hid.to_string()]);
    // root sees every job, as slurmctld shows it.
    assert_eq!(c.ok("squeue", &["-h", "-o", "%i"]).lines().count(), 2);
    // scontrol show partition: the hidden one only with -a.
    let parts = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend_from_slice(&["show", "partition", "-o"]);
        let (out, err) = text(&c.run_as(NOBODY, "scontrol", &a));
        assert!(err.is_empty(), "{err}");
        out.lines()
            .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(parts(&[]), vec!["PartitionName=debug"]);
    assert_eq!(
        parts(&["-a"]),
        vec!["PartitionName=debug", "PartitionName=secret"]
    );
}

#[test]
fn sacct_selections_the_database_query_lacks() {
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".to_string()),
        ..Spec::default()
    });
    c.wait_nodes_idle(WAIT).unwrap();
    let quick = "#!/bin/sh\ntrue\n";
    let a = c.sbatch(&["--wckey=w1", "-N", "2", "-o", "/dev/null"], quick);
    let b = c.sbatch(&["--wckey=w2", "-n", "3", "-o", "/dev/null"], quick);
    for id in [a, b] {
        c.expect_end(id, "COMPLETED");
    }
    let ids = format!("{a},{b}");
    let base = [
        "-X",
        "-n",
        "-P",
        "-j",
        ids.as_str(),
        "-o",
        "JobID,WCKey,NNodes",
    ];
    c.wait_sacct(&base, Duration::from_secs(60), |t| t.lines().count() == 2);
    let sacct = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        c.ok("sacct", &args)
    };
    assert_eq!(sacct(&["-W", "w1"]), format!("{a}|w1|2\n"));
    assert_eq!(sacct(&["--wckeys=w2,w3"]), format!("{b}|w2|1\n"));
    assert_eq!(sacct(&["-i", "2"]), format!("{a}|w1|2\n"));
    assert_eq!(sacct(&["--nnodes=1-1"]), format!("{b}|w2|1\n"));
    assert_eq!(sacct(&["-i", "3-4"]), "");
    assert_eq!(sacct(&["-W", "w1", "--delimiter=;"]), format!("{a};w1;2\n"));
    // Every record has the submitter's primary group.
    assert_eq!(sacct(&["-g", "0"]).lines().count(), 2);
    assert_eq!(sacct(&["--gid=12345"]), "");
}
