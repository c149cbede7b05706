use std::time::Duration;

use drover_tests::{Cluster, Spec};

#[test]
fn controller_kill_9_keeps_pending_and_running_jobs() {
    let mut c = Cluster::start(Spec {
        nodes: 1,
        cpus: 2,
        ..Spec::default()
    });
    let marker = c.path().join("ran");
    let running = c.sbatch(
        &["-o", "/dev/null"],
        &format!("#!/bin/sh\nsleep 3\ntouch {}\n", marker.display()),
    );
    let running2 = c.sbatch(&["-o", "/dev/null", "-c", "1"], "#!/bin/sh\nsleep 300\n");
    let pending = c.sbatch(&["-o", "/dev/null", "-c", "2"], "#!/bin/sh\ntrue\n");
    let held = c.sbatch(&["-o", "/dev/null", "-H"], "#!/bin/sh\ntrue\n");
    c.wait_state(&running.to_string(), &["RUNNING"], Duration::from_secs(20));
    c.wait_state(&running2.to_string(), &["RUNNING"], Duration::from_secs(20));
    c.kill_ctld();
    c.start_ctld().unwrap();
    // Everything accepted before the crash is still there.
    for id in [running, running2, pending, held] {
        assert!(
            c.job_field(&id.to_string(), "JobState").is_some(),
            "job {id} lost"
        );
    }
    assert_eq!(
        c.job_field(&held.to_string(), "Reason").as_deref(),
        Some("JobHeldUser")
    );
    // The running job finished while the controller was away or after: its end is recorded.
    assert_eq!(c.wait_done(running), "COMPLETED");
    assert!(marker.exists());
    c.ok("scancel", &[&running2.to_string()]);
    assert_eq!(c.wait_done(running2), "CANCELLED");
    assert_eq!(c.wait_done(pending), "COMPLETED");
    // Ids are never reused.
    let next = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert!(next > held, "{next} <= {held}");
    // Crash again right after a burst of submissions: every acknowledged id survives.
    let ids: Vec<u32> = (0..20)
        .map(|_| c.sbatch(&["-o", "/dev/null", "-H"], "#!/bin/sh\ntrue\n"))
        .collect();
    c.kill_ctld();
    c.start_ctld().unwrap();
    for id in ids {
        assert_eq!(
            c.job_field(&id.to_string(), "JobState").as_deref(),
            Some("PENDING"),
            "job {id}"
        );
    }
}

#[test]
fn agent_restart_keeps_running_job() {
    let mut c = Cluster::start(Spec {
        nodes: 1,
        ..Spec::default()
    });
    let out = c.path().join("agent-restart.out");
    let id = c.sbatch(
        &["-o", out.to_str().unwrap()],
        "#!/bin/sh\necho started\nsleep 3\necho finished\n",
    );
    c.wait_file(&out, |t| t.contains("started"));
    c.kill_agent();
    c.start_agent().unwrap();
    c.expect_end(id, "COMPLETED");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "started\nfinished\n"
    );
}

#[test]
fn lost_node_fails_its_jobs_or_requeues_them() {
    let mut c = Cluster::start(Spec {
        nodes: 1,
        slurmd_timeout: 3,
        ..Spec::default()
    });
    let failing = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 300\n");
    let requeued = c.sbatch(&["-o", "/dev/null", "--requeue"], "#!/bin/sh\nsleep 300\n");
    c.wait_state(&failing.to_string(), &["RUNNING"], Duration::from_secs(20));
    c.wait_state(&requeued.to_string(), &["RUNNING"], Duration::from_secs(20));
    c.kill_agent();
    assert_eq!(c.wait_done(failing), "NODE_FAIL");
    c.wait_state(&requeued.to_string(), &["PENDING"], Duration::from_secs(20));
    assert_eq!(
        c.job_field(&requeued.to_string(), "Restarts").as_deref(),
        Some("1")
    );
    let s = c.ok("sinfo", &["-h", "-N", "-o", "%N %t"]);
    assert!(s.contains("node1 down"), "{s}");
    // The node comes back: the controller tells it to kill what it gave up on.
    c.start_agent().unwrap();
    c.ok("scontrol", &["update", "NodeName=node1", "State=RESUME"]);
    c.wait_state(&requeued.to_string(), &["RUNNING"], Duration::from_secs(30));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        // This cluster's script path only: other tests run their own job 1.
        let stepds =
            drover_tests::pids_mentioning(&format!("{}/spool/job{failing}/", c.path().display()));
        if stepds.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "failed job still running: {stepds:?}\n--- agent\n{}\n--- stepd\n{}",
            c.log_text("droverd"),
            std::fs::read_to_string(c.path().join(format!("spool/job{failing}/stepd.log")))
                .unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
