//! The commands' output shapes that tools parse, against a live cluster.

use std::time::Duration;

use drover_tests::{Cluster, Spec};

#[test]
fn sinfo_squeue_scontrol_outputs() {
    let c = Cluster::start(Spec::default());
    // sinfo default: header, default partition marked, nodes grouped by state.
    let s = c.ok("sinfo", &[]);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "PARTITION",
            "AVAIL",
            "TIMELIMIT",
            "NODES",
            "STATE",
            "NODELIST"
        ]
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["debug*", "up", "infinite", "2", "idle", "node[1-2]"]
    );
    // A running job makes its node mixed; squeue default columns.
    let id = c.sbatch(
        &["-J", "averylongjobname", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 60\n",
    );
    c.wait_state(&id.to_string(), &["RUNNING"], Duration::from_secs(20));
    let q = c.ok("squeue", &[]);
    let mut ql = q.lines();
    assert_eq!(
        ql.next().unwrap().split_whitespace().collect::<Vec<_>>(),
        [
            "JOBID",
            "PARTITION",
            "NAME",
            "USER",
            "ST",
            "TIME",
            "NODES",
            "NODELIST(REASON)"
        ]
    );
    let row: Vec<&str> = ql.next().unwrap().split_whitespace().collect();
    assert_eq!(row[0], id.to_string());
    assert_eq!(row[1], "debug");
    assert_eq!(row[2], "averylon"); // NAME is %.8j: truncated to 8 columns
    assert_eq!(row[3], "root");
    assert_eq!(row[4], "R");
    let s = c.ok("sinfo", &["-h", "-o", "%P %t %D"]);
    let mut states: Vec<&str> = s.lines().collect();
    states.sort();
    assert_eq!(states, vec!["debug* idle 1", "debug* mix 1"], "{s}");
    // JSON outputs parse and carry the job.
    let j = c.ok("squeue", &["--json"]);
    assert!(
        j.contains(&format!("\"job_id\":{id}")) || j.contains(&format!("\"job_id\": {id}")),
        "{j}"
    );
    let v = c.ok("sinfo", &["--json"]);
    assert!(
        v.trim_start().starts_with('{') && v.contains("node1"),
        "{v}"
    );
    // scontrol show partition / node / config / hostnames / ping.
    let p = c.ok("scontrol", &["show", "partition", "debug"]);
    assert!(
        p.contains("PartitionName=debug")
            && p.contains("Default=YES")
            && p.contains("Nodes=node[1-2]"),
        "{p}"
    );
    let n = c.ok("scontrol", &["show", "node", "node1"]);
    assert!(
        n.contains("NodeName=node1") && n.contains("CPUTot=4"),
        "{n}"
    );
    let cfg = c.ok("scontrol", &["show", "config"]);
    assert!(
        cfg.lines()
            .any(|l| l.starts_with("MinJobAge") && l.trim_end().ends_with("= 300 sec")),
        "{cfg}"
    );
    assert!(
        cfg.lines()
            .any(|l| l.starts_with("MaxArraySize") && l.trim_end().ends_with("= 1001")),
        "{cfg}"
    );
    let h = c.ok("scontrol", &["show", "hostnames", "node[1-3],gpu07"]);
    assert_eq!(h, "node1\nnode2\nnode3\ngpu07\n");
    let h = c.ok("scontrol", &["show", "hostlist", "n1,n2,n3,n5"]);
    assert_eq!(h.trim(), "n[1-3,5]");
    let ping = c.ok("scontrol", &["ping"]);
    assert!(
        ping.contains("Slurmctld(primary) at localhost is UP"),
        "{ping}"
    );
    // scontrol update of the time limit and the job's -d details.
    c.ok(
        "scontrol",
        &["update", &format!("JobId={id}"), "TimeLimit=10:00"],
    );
    assert_eq!(
        c.job_field(&id.to_string(), "TimeLimit").as_deref(),
        Some("00:10:00")
    );
    let d = c.ok("scontrol", &["show", "job", "-d", &id.to_string()]);
    assert!(d.contains("CPU_IDs="), "{d}");
    // sacct without accounting.
    let o = c.run("sacct", &["-X"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Slurm accounting storage is disabled"));
}

#[test]
fn drain_resume_signals_and_min_job_age() {
    let c = Cluster::start(Spec {
        nodes: 1,
        extra: vec!["MinJobAge=2".into()],
        ..Spec::default()
    });
    let out = c.path().join("sig.out");
    let id = c.sbatch(
        &["-o", out.to_str().unwrap()],
        // Only builtins besides sleep: a USR1 that lands in a helper like
        // `$(seq 600)` would end the loop early and the job with it.
        "#!/bin/bash\ntrap 'echo got USR1' USR1\necho ready\ni=0; while [ $i -lt 600 ]; do i=$((i+1)); sleep 0.1; done\n",
    );
    c.wait_file(&out, |t| t.contains("ready"));
    // --full: the batch shell too (by default a signal goes to the steps).
    c.ok("scancel", &["--full", "--signal=USR1", &id.to_string()]);
    c.wait_file(&out, |t| t.contains("got USR1"));
    assert_eq!(
        c.job_field(&id.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    // Drain with a job on the node: draining; new work waits.
    c.ok(
        "scontrol",
        &[
            "update",
            "NodeName=node1",
            "State=DRAIN",
            "Reason=maintenance",
        ],
    );
    let s = c.ok("sinfo", &["-h", "-N", "-o", "%N %t"]);
    assert_eq!(s.trim(), "node1 drng");
    let r = c.ok("sinfo", &["-R", "-h"]);
    assert!(r.contains("maintenance"), "{r}");
    let waiting = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        c.job_field(&waiting.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );
    c.ok("scancel", &[&id.to_string()]);
    c.wait_done(id);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while c.ok("sinfo", &["-h", "-N", "-o", "%t"]).trim() != "drain" {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(25));
    }
    c.ok("scontrol", &["update", "NodeName=node1", "State=RESUME"]);
    assert_eq!(c.wait_done(waiting), "COMPLETED");
    // MinJobAge=2: the finished job leaves squeue -t all after about 2 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let q = c.ok("squeue", &["-h", "-t", "all", "-o", "%i"]);
        if !q.lines().any(|l| l.trim() == waiting.to_string()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job never purged: {q}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = c.run("squeue", &["-j", &waiting.to_string()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Invalid job id specified"));
}

#[test]
fn reconfigure_reads_the_new_config_and_refuses_a_broken_one() {
    let c = Cluster::start(Spec::default());
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 30\n");
    c.wait_state(&id.to_string(), &["RUNNING"], Duration::from_secs(20));
    let conf = std::fs::read_to_string(&c.conf).unwrap();
    std::fs::write(
        &c.conf,
        format!("{conf}PartitionName=short Nodes=node2 MaxTime=10 State=UP\n"),
    )
    .unwrap();
    c.ok("scontrol", &["reconfigure"]);
    let s = c.ok("sinfo", &["-h", "-o", "%P %l"]);
    assert!(s.lines().any(|l| l.trim() == "short 10:00"), "{s}");
    // The running job is unaffected.
    assert_eq!(
        c.job_field(&id.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    let o = c.run("sbatch", &["-p", "short", "-t", "20", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("Requested time limit is invalid"));
    // A broken file is refused with its line; the old config stays in force.
    std::fs::write(&c.conf, format!("{conf}NodeName=node9 CPUs=lots\n")).unwrap();
    let o = c.run("scontrol", &["reconfigure"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("CPUs"), "{e}");
    std::fs::write(&c.conf, &conf).unwrap();
    let s = c.ok("sinfo", &["-h", "-o", "%P"]);
    assert!(s.contains("short"), "{s}");
}
