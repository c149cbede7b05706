//! The scheduler through the real daemons: backfill order and expected
//! starts, multifactor priority (sprio), partition-priority preemption,
//! reservations, fair-share usage (sshare).

use std::time::Duration;

use drover_tests::{Cluster, Spec};

const T: Duration = Duration::from_secs(30);

fn one_node(extra: &[&str], parts: &str) -> Cluster {
    let topology = format!(
        "NodeName=node1 NodeAddr=127.0.0.1 Port={{AGENT_PORT}} CPUs=4 RealMemory=4000\n{parts}"
    );
    Cluster::start(Spec {
        nodes: 1,
        extra: extra.iter().map(|s| s.to_string()).collect(),
        topology: Some(topology),
        ..Spec::default()
    })
}

const DEBUG: &str = "PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n";

fn wait_reason(c: &Cluster, id: u32, want: &str) {
    let deadline = std::time::Instant::now() + T;
    loop {
        let r = c.job_field(&id.to_string(), "Reason").unwrap_or_default();
        if r == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job {id}: reason {r}, want {want}\n{}",
            c.ok("scontrol", &["show", "job", &id.to_string()])
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn backfill_starts_what_fits_and_shows_expected_starts() {
    let c = one_node(
        &["SchedulerParameters=bf_resolution=1,bf_window=120"],
        DEBUG,
    );
    let sleep = "#!/bin/sh\nsleep 300\n";
    let a = c.sbatch(&["-n", "2", "-t", "10", "-o", "/dev/null"], sleep);
    c.wait_state(&a.to_string(), &["RUNNING"], T);
    // b needs the whole node: planned when a's time limit ends.
    let b = c.sbatch(&["-n", "4", "-t", "10", "-o", "/dev/null"], sleep);
    // cc would run past that and delay b; d ends before it: backfilled.
    let cc = c.sbatch(&["-n", "2", "-t", "60", "-o", "/dev/null"], sleep);
    let d = c.sbatch(&["-n", "2", "-t", "5", "-o", "/dev/null"], sleep);
    c.wait_state(&d.to_string(), &["RUNNING"], T);
    wait_reason(&c, b, "Resources");
    wait_reason(&c, cc, "Priority");
    assert_eq!(
        c.job_field(&cc.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );
    // Expected starts: b at a's end, cc at b's end.
    let start = |id: u32| {
        c.ok("squeue", &["-h", "-j", &id.to_string(), "-o", "%S"])
            .trim()
            .to_string()
    };
    let a_end = c.job_field(&a.to_string(), "EndTime").unwrap();
    assert_eq!(start(b), a_end, "b starts when a's limit ends");
    let b_end = c.job_field(&b.to_string(), "EndTime").unwrap();
    assert_eq!(start(cc), b_end);
    // scontrol shows the planned start too.
    assert_eq!(
        c.job_field(&b.to_string(), "StartTime"),
        Some(a_end.clone())
    );
    let s = c.ok("squeue", &["--start"]);
    assert!(s.lines().next().unwrap().contains("START_TIME"), "{s}");
    assert!(
        s.contains(&a_end) && s.contains("(Resources)") && s.contains("(Priority)"),
        "{s}"
    );
    // A held job is planned no more: Unknown, as Slurm shows it.
    c.ok("scontrol", &["hold", &b.to_string()]);
    assert_eq!(
        c.job_field(&b.to_string(), "StartTime").as_deref(),
        Some("Unknown")
    );
    assert_eq!(start(b), "N/A");
    for id in [a, b, cc, d] {
        c.run("scancel", &[&id.to_string()]);
    }
}

#[test]
fn multifactor_priority_and_sprio() {
    let c = one_node(
        &[
            "PriorityType=priority/multifactor",
            "PriorityWeightAge=1000",
            "PriorityWeightJobSize=1000",
            "PriorityWeightFairshare=0",
            "PriorityWeightPartition=1000",
            "PriorityMaxAge=1-0",
        ],
        DEBUG,
    );
    let sleep = "#!/bin/sh\nsleep 300\n";
    let a = c.sbatch(&["-n", "4", "-o", "/dev/null"], sleep);
    c.wait_state(&a.to_string(), &["RUNNING"], T);
    let small = c.sbatch(&["-n", "1", "-o", "/dev/null"], sleep);
    let big = c.sbatch(&["-n", "4", "-o", "/dev/null"], sleep);
    let nice = c.sbatch(&["-n", "4", "--nice=300", "-o", "/dev/null"], sleep);
    // Job size (4 of 4 CPUs) gives 1000 * (1 + 1) / 2; one CPU 1000 * (1 + 1/4) / 2.
    let prio = |id: u32| -> u32 {
        let deadline = std::time::Instant::now() + T;
        loop {
            let p: u32 = c
                .ok("squeue", &["-h", "-j", &id.to_string(), "-o", "%Q"])
                .trim()
                .parse()
                .unwrap();
            if p < 1_000_000 || std::time::Instant::now() > deadline {
                return p;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let (ps, pb, pn) = (prio(small), prio(big), prio(nice));
    assert!(pb > ps, "bigger job ranks higher: {pb} vs {ps}");
    assert!((2000..2010).contains(&pb), "{pb}");
    assert!((1625..1635).contains(&ps), "{ps}");
    assert!(
        pn + 300 >= pb && pn + 290 <= pb,
        "nice lowers by 300: {pn} vs {pb}"
    );
    let out = c.ok("sprio", &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS"
    );
    let row = lines
        .iter()
        .find(|l| l.split_whitespace().next() == Some(&big.to_string()))
        .unwrap_or_else(|| panic!("{out}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[1], "debug");
    assert_eq!(cols[6], "1000", "jobsize: {row}");
    assert_eq!(cols[7], "1000", "partition: {row}");
    let w = c.ok("sprio", &["-w"]);
    assert!(w.contains("Weights"), "{w}");
    // An admin-set priority wins and sorts the job first.
    c.ok(
        "scontrol",
        &["update", &format!("JobId={small}"), "Priority=50000"],
    );
    let deadline = std::time::Instant::now() + T;
    while prio(small) != 50000 {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
    let p = c.ok("sprio", &["-h", "-j", &small.to_string()]);
    assert!(p.contains("50000"), "{p}");
    for id in [a, small, big, nice] {
        c.run("scancel", &[&id.to_string()]);
    }
}

fn preempt_cluster(mode: &str) -> Cluster {
    one_node(
        &[
            "PreemptType=preempt/partition_prio",
            &format!("PreemptMode={mode}"),
        ],
        "PartitionName=low Nodes=ALL Default=YES PriorityTier=1 MaxTime=UNLIMITED State=UP\n\
         PartitionName=high Nodes=ALL PriorityTier=10 MaxTime=UNLIMITED State=UP\n",
    )
}

#[test]
fn partition_priority_preemption_requeues_the_low_job() {
    let c = preempt_cluster("REQUEUE");
    let out = c.path().join("low.out");
    let low = c.sbatch(
        &[
            "-p",
            "low",
            "-n",
            "4",
            "--requeue",
            "-o",
            out.to_str().unwrap(),
        ],
        "#!/bin/sh\necho \"restart=$SLURM_RESTART_COUNT\"\nsleep 300\n",
    );
    c.wait_state(&low.to_string(), &["RUNNING"], T);
    let high = c.sbatch(
        &["-p", "high", "-n", "4", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 2\n",
    );
    c.wait_state(&high.to_string(), &["RUNNING"], T);
    assert_eq!(c.wait_done(high), "COMPLETED");
    // The low job was requeued and runs again, knowing it restarted.
    c.wait_state(&low.to_string(), &["RUNNING"], T);
    assert_eq!(
        c.job_field(&low.to_string(), "Restarts").as_deref(),
        Some("1")
    );
    c.wait_file(&out, |t| t.contains("restart=1"));
    c.run("scancel", &[&low.to_string()]);
}

#[test]
fn partition_priority_preemption_cancels_with_preempted_state() {
    let c = preempt_cluster("CANCEL");
    let low = c.sbatch(
        &["-p", "low", "-n", "3", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    let keep = c.sbatch(
        &["-p", "low", "-n", "1", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    c.wait_state(&low.to_string(), &["RUNNING"], T);
    c.wait_state(&keep.to_string(), &["RUNNING"], T);
    // Two CPUs: preempting the 3-CPU job is enough; the 1-CPU one stays.
    let high = c.sbatch(
        &["-p", "high", "-n", "2", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    c.wait_state(&high.to_string(), &["RUNNING"], T);
    c.wait_state(&low.to_string(), &["PREEMPTED"], T);
    assert_eq!(
        c.job_field(&keep.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    let sacct_like = c.ok(
        "squeue",
        &["-h", "-t", "all", "-j", &low.to_string(), "-o", "%T"],
    );
    assert_eq!(sacct_like.trim(), "PREEMPTED");
    for id in [keep, high] {
        c.run("scancel", &[&id.to_string()]);
    }
}

#[test]
fn reservations_hold_nodes_and_survive_restart() {
    let mut c = Cluster::start(Spec {
        nodes: 2,
        ..Spec::default()
    });
    let out = c.ok(
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
    assert_eq!(out.trim(), "Reservation created: r1");
    let show = c.ok("scontrol", &["show", "reservation", "r1"]);
    assert!(show.starts_with("ReservationName=r1 StartTime="), "{show}");
    assert!(show.contains("Nodes=node1 NodeCnt=1"), "{show}");
    assert!(
        show.contains("Users=root") && show.contains("State=ACTIVE"),
        "{show}"
    );
    let st = c.ok("sinfo", &["-h", "-N", "-n", "node1", "-o", "%t"]);
    assert_eq!(st.trim(), "resv");
    // Outside the reservation: node2. Inside: node1.
    let sleep = "#!/bin/sh\nsleep 300\n";
    let out_job = c.sbatch(&["-n", "1", "-o", "/dev/null"], sleep);
    c.wait_state(&out_job.to_string(), &["RUNNING"], T);
    assert_eq!(
        c.job_field(&out_job.to_string(), "NodeList").as_deref(),
        Some("node2")
    );
    let in_job = c.sbatch(&["--reservation=r1", "-n", "1", "-o", "/dev/null"], sleep);
    c.wait_state(&in_job.to_string(), &["RUNNING"], T);
    assert_eq!(
        c.job_field(&in_job.to_string(), "NodeList").as_deref(),
        Some("node1")
    );
    // A job too big for node2 waits for the reservation to end.
    let big = c.sbatch(&["-n", "4", "-t", "5", "-o", "/dev/null"], sleep);
    wait_reason(&c, big, "Resources");
    let bad = c.run("sbatch", &["--reservation=nope", "--wrap", "true"]);
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Requested reservation is invalid"),
        "{bad:?}"
    );
    let err = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "StartTime=now",
            "Duration=5",
            "Nodes=node1",
        ],
    );
    assert!(String::from_utf8_lossy(&err.stderr).contains("lacks users or accounts"));
    // Kept across a controller restart.
    c.kill_ctld();
    c.start_ctld().unwrap();
    let show = c.ok("scontrol", &["show", "reservation"]);
    assert!(show.contains("ReservationName=r1"), "{show}");
    c.ok("scontrol", &["delete", "reservation", "r1"]);
    let show = c.ok("scontrol", &["show", "reservation"]);
    assert_eq!(show.trim(), "No reservations in the system");
    for id in [out_job, in_job, big] {
        c.run("scancel", &[&id.to_string()]);
    }
}

#[test]
fn fair_share_usage_is_charged_and_shown() {
    let c = one_node(
        &[
            "PriorityType=priority/multifactor",
            "PriorityWeightFairshare=1000",
        ],
        DEBUG,
    );
    let id = c.sbatch(&["-n", "2", "-o", "/dev/null"], "#!/bin/sh\nsleep 300\n");
    c.wait_state(&id.to_string(), &["RUNNING"], T);
    let deadline = std::time::Instant::now() + T;
    loop {
        let out = c.ok("sshare", &["-a", "-P", "-n"]);
        let root_user = out.lines().find(|l| l.split('|').nth(1) == Some("root"));
        if let Some(l) = root_user {
            let usage: u64 = l.split('|').nth(4).unwrap().parse().unwrap();
            // Past one usage log period (5 s) with usage in it, so a crash
            // keeps some: 2 CPUs for 7 s.
            if usage >= 14 {
                break;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no usage charged: {out}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = c.ok("sshare", &[]);
    assert!(
        out.starts_with("Account                    User  RawShares"),
        "{out}"
    );
    // Usage is kept across a controller crash.
    let mut c = c;
    c.kill_ctld();
    c.start_ctld().unwrap();
    let out = c.ok("sshare", &["-a", "-P", "-n"]);
    let l = out
        .lines()
        .find(|l| l.split('|').nth(1) == Some("root"))
        .unwrap_or_else(|| panic!("{out}"));
    let usage: u64 = l.split('|').nth(4).unwrap().parse().unwrap();
    assert!(usage >= 1, "usage lost on restart: {out}");
    c.run("scancel", &[&id.to_string()]);
}

#[test]
fn oversubscribe_exclusive_partitions_give_whole_nodes() {
    let c = one_node(
        &[],
        "PartitionName=whole Nodes=ALL Default=YES OverSubscribe=EXCLUSIVE MaxTime=UNLIMITED State=UP\n",
    );
    let sleep = "#!/bin/sh\nsleep 300\n";
    let a = c.sbatch(&["-n", "1", "-o", "/dev/null"], sleep);
    c.wait_state(&a.to_string(), &["RUNNING"], T);
    assert_eq!(c.job_field(&a.to_string(), "NumCPUs").as_deref(), Some("4"));
    let b = c.sbatch(&["-n", "1", "-o", "/dev/null"], sleep);
    wait_reason(&c, b, "Resources");
    for id in [a, b] {
        c.run("scancel", &[&id.to_string()]);
    }
}
