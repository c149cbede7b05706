//! Pending array tasks addressed one by one (`A_i`), as Slurm 23.11 does:
//! `scontrol show job A_i` shows the task (`ArrayTaskId=i`) or says `Job A_i
//! not found`; hold/release/update act on that task only; scancel drops a
//! pending task (no record left, in accounting either); `aftercorr` waits
//! for the corresponding task only. All of it survives a controller restart.

use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

/// `squeue -r` lines `A_i ST` of array `a`, sorted.
fn tasks(c: &Cluster, a: u32) -> Vec<String> {
    let q = c.ok("squeue", &["-h", "-r", "-j", &a.to_string(), "-o", "%i %t"]);
    let mut v: Vec<String> = q.lines().map(str::to_string).collect();
    v.sort();
    v
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn pending_array_tasks_are_shown_held_updated_and_cancelled_one_by_one() {
    let mut c = Cluster::start(Spec {
        nodes: 1,
        cpus: 1,
        accounting: Some("sqlite".into()),
        ..Spec::default()
    });
    let a = c.sbatch(&["--array=0-4", "-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    let t = |i: u32| format!("{a}_{i}");
    c.wait_state(&t(0), &["RUNNING"], Duration::from_secs(20));

    // A task still in the meta record: the record, shown as that task.
    assert_eq!(c.job_field(&t(3), "JobId"), Some(a.to_string()));
    assert_eq!(c.job_field(&t(3), "ArrayTaskId").as_deref(), Some("3"));
    assert_eq!(c.job_field(&t(3), "JobState").as_deref(), Some("PENDING"));
    // A task the array does not have.
    let out = c.run("scontrol", &["show", "job", &t(9)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("Job {a}_9 not found\n")
    );

    // hold acts on task 2 only: it gets a record (and job id) of its own.
    c.ok("scontrol", &["hold", &t(2)]);
    let held = c.job_field(&t(2), "JobId").unwrap();
    assert_ne!(held, a.to_string());
    assert_eq!(c.job_field(&t(2), "ArrayTaskId").as_deref(), Some("2"));
    assert_eq!(
        c.job_field(&t(2), "Reason").as_deref(),
        Some("JobHeldAdmin")
    );
    assert_eq!(c.job_field(&t(2), "Priority").as_deref(), Some("0"));
    assert_ne!(c.job_field(&t(3), "Priority").as_deref(), Some("0"));
    // update acts on task 4 only.
    c.ok(
        "scontrol",
        &["update", &format!("jobid={}", t(4)), "TimeLimit=7"],
    );
    assert_eq!(c.job_field(&t(4), "TimeLimit").as_deref(), Some("00:07:00"));
    assert_ne!(c.job_field(&t(3), "TimeLimit").as_deref(), Some("00:07:00"));
    // scancel of pending task 3: dropped, no record left.
    c.ok("scancel", &[&t(3)]);
    let out = c.run("scontrol", &["show", "job", &t(3)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("Job {a}_3 not found\n")
    );
    let want = vec![
        format!("{a}_0 R"),
        format!("{a}_1 PD"),
        format!("{a}_2 PD"),
        format!("{a}_4 PD"),
    ];
    assert_eq!(tasks(&c, a), want);

    // All of it is durable.
    c.stop_ctld();
    c.start_ctld().expect("controller restarts");
    assert_eq!(tasks(&c, a), want);
    assert_eq!(c.job_field(&t(2), "JobId"), Some(held.clone()));
    assert_eq!(
        c.job_field(&t(2), "Reason").as_deref(),
        Some("JobHeldAdmin")
    );
    assert_eq!(c.job_field(&t(4), "TimeLimit").as_deref(), Some("00:07:00"));
    assert_eq!(c.job_field(&t(1), "JobId"), Some(a.to_string()));
    assert!(c.job_field(&t(3), "JobId").is_none());

    // The rest of the array still runs: task 1 once task 0 is gone, then 4;
    // the held task 2 when released.
    c.ok("scancel", &[&t(0)]);
    c.wait_state(&t(1), &["RUNNING"], Duration::from_secs(20));
    c.ok("scancel", &[&t(1)]);
    c.wait_state(&t(4), &["RUNNING"], Duration::from_secs(20));
    assert_eq!(c.job_field(&t(2), "JobState").as_deref(), Some("PENDING"));
    c.ok("scontrol", &["release", &t(2)]);
    c.ok("scancel", &[&t(4)]);
    c.wait_state(&t(2), &["RUNNING"], Duration::from_secs(20));
    c.ok("scancel", &[&a.to_string()]);
    wait_until("array ended", Duration::from_secs(20), || {
        tasks(&c, a).is_empty()
    });

    // Accounting: every task that was run, none for the dropped one.
    let ids = a.to_string();
    let text = c.wait_sacct(
        &["-X", "-n", "-P", "-j", &ids, "-o", "JobID,State"],
        Duration::from_secs(30),
        |t| {
            [0, 1, 2, 4]
                .iter()
                .all(|i| t.contains(&format!("{a}_{i}|CANCELLED")))
        },
    );
    assert!(!text.contains(&format!("{a}_3")), "{text}");
}

#[test]
fn aftercorr_waits_for_the_corresponding_task_only() {
    let c = Cluster::start(Spec::default());
    // Task 0 runs long and fails; task 1 succeeds at once.
    let a = c.sbatch(
        &["--array=0-1", "-o", "/dev/null"],
        "#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 0 ]; then sleep 30; exit 1; fi\n",
    );
    let b = c.sbatch(
        &[
            "--array=0-1",
            "-o",
            "/dev/null",
            "-d",
            &format!("aftercorr:{a}"),
        ],
        "#!/bin/sh\ntrue\n",
    );
    c.wait_state(&format!("{b}_1"), &["COMPLETED"], Duration::from_secs(30));
    assert_eq!(
        c.job_field(&format!("{a}_0"), "JobState").as_deref(),
        Some("RUNNING"),
        "B_1 ran while A_0 still runs"
    );
    assert_eq!(
        c.job_field(&format!("{b}_0"), "Reason").as_deref(),
        Some("Dependency")
    );
    c.ok("scancel", &[&format!("{a}_0")]);
    wait_until("B_0 never satisfied", Duration::from_secs(20), || {
        c.job_field(&format!("{b}_0"), "Reason").as_deref() == Some("DependencyNeverSatisfied")
    });
    assert_eq!(
        c.job_field(&format!("{b}_0"), "JobState").as_deref(),
        Some("PENDING")
    );
}
