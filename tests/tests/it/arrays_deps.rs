use std::time::Duration;

use drover_tests::{Cluster, Spec};

#[test]
fn array_tasks_get_ids_environment_and_throttle() {
    let c = Cluster::start(Spec::default());
    let out = c.path().join("arr");
    std::fs::create_dir(&out).unwrap();
    let script = format!(
        "#!/bin/bash\n#SBATCH --array=0-5%2\n#SBATCH -o {}/%A_%a.out\n\
         echo \"$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX $SLURM_JOB_ID\"\n\
         sleep 1\n",
        out.display()
    );
    let id = c.sbatch(&[], &script);
    // While running: at most 2 tasks at once; the pending rest shows as A_[i-j%2].
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut saw_meta = false;
    loop {
        let q = c.ok("squeue", &["-h", "-o", "%i %t"]);
        let running = q.lines().filter(|l| l.ends_with(" R")).count();
        assert!(running <= 2, "throttle broken:\n{q}");
        if q.lines()
            .any(|l| l.starts_with(&format!("{id}_[")) && l.contains("%2]"))
        {
            saw_meta = true;
        }
        let done = (0..6)
            .filter(|t| out.join(format!("{id}_{t}.out")).exists())
            .count();
        if q.trim().is_empty() && done == 6 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "array did not finish:\n{q}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(saw_meta, "pending remainder never shown as {id}_[..%2]");
    let mut job_ids = std::collections::HashSet::new();
    for t in 0..6 {
        let text = std::fs::read_to_string(out.join(format!("{id}_{t}.out"))).unwrap();
        let f: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(
            &f[..5],
            &[id.to_string().as_str(), &t.to_string(), "6", "0", "5"],
            "{text}"
        );
        job_ids.insert(f[5].to_string());
    }
    assert_eq!(job_ids.len(), 6, "each task has its own SLURM_JOB_ID");
    // squeue -r -t all lists one line per task, A_i.
    let q = c.ok(
        "squeue",
        &[
            "-h",
            "-r",
            "-t",
            "all",
            "-j",
            &id.to_string(),
            "-o",
            "%i %T",
        ],
    );
    let mut lines: Vec<&str> = q.lines().collect();
    lines.sort();
    assert_eq!(lines.len(), 6, "{q}");
    assert!(lines.iter().all(|l| l.ends_with("COMPLETED")), "{q}");
}

#[test]
fn cancel_single_array_tasks_and_ranges() {
    let c = Cluster::start(Spec {
        nodes: 1,
        cpus: 1,
        ..Spec::default()
    });
    let id = c.sbatch(&["--array=1-6", "-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    c.wait_state(&format!("{id}_1"), &["RUNNING"], Duration::from_secs(20));
    c.ok("scancel", &[&format!("{id}_3")]);
    c.ok("scancel", &[&format!("{id}_[4-5]")]);
    let q = c.ok("squeue", &["-h", "-r", "-o", "%i %t"]);
    let mut have: Vec<String> = q.lines().map(|l| l.to_string()).collect();
    have.sort();
    assert_eq!(
        have,
        vec![
            format!("{id}_1 R"),
            format!("{id}_2 PD"),
            format!("{id}_6 PD")
        ],
        "{q}"
    );
    // A cancelled pending task is dropped, as in Slurm: no record left.
    assert_eq!(c.job_field(&format!("{id}_4"), "JobState"), None);
    c.ok("scancel", &[&id.to_string()]);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !c.ok("squeue", &["-h"]).trim().is_empty() {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn dependencies_and_holds() {
    let c = Cluster::start(Spec::default());
    let first = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 1\nexit 1\n");
    let ok_dep = c.sbatch(
        &["-o", "/dev/null", &format!("--dependency=afterok:{first}")],
        "#!/bin/sh\ntrue\n",
    );
    let notok = c.sbatch(
        &["-o", "/dev/null", "-d", &format!("afternotok:{first}")],
        "#!/bin/sh\ntrue\n",
    );
    let any = c.sbatch(
        &["-o", "/dev/null", "-d", &format!("afterany:{first}")],
        "#!/bin/sh\ntrue\n",
    );
    assert_eq!(
        c.job_field(&ok_dep.to_string(), "Reason").as_deref(),
        Some("Dependency")
    );
    assert_eq!(c.wait_done(first), "FAILED");
    assert_eq!(c.wait_done(notok), "COMPLETED");
    assert_eq!(c.wait_done(any), "COMPLETED");
    c.wait_state(&ok_dep.to_string(), &["PENDING"], Duration::from_secs(5));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while c.job_field(&ok_dep.to_string(), "Reason").as_deref() != Some("DependencyNeverSatisfied")
    {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(25));
    }
    // Unknown job in a dependency is refused at submit.
    let out = c.run("sbatch", &["-d", "afterok:999999", "--wrap", "true"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Job dependency problem"));
    // Singleton: the second waits for the first of the same name.
    let a = c.sbatch(&["-J", "single", "-o", "/dev/null"], "#!/bin/sh\nsleep 2\n");
    let b = c.sbatch(
        &["-J", "single", "-o", "/dev/null", "-d", "singleton"],
        "#!/bin/sh\ntrue\n",
    );
    c.wait_state(&a.to_string(), &["RUNNING"], Duration::from_secs(10));
    assert_eq!(
        c.job_field(&b.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );
    assert_eq!(c.wait_done(b), "COMPLETED");
    // Holds: held job stays pending until released.
    let h = c.sbatch(&["-H", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        c.job_field(&h.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );
    assert_eq!(
        c.job_field(&h.to_string(), "Priority").as_deref(),
        Some("0")
    );
    c.ok("scontrol", &["release", &h.to_string()]);
    assert_eq!(c.wait_done(h), "COMPLETED");
    let h2 = c.sbatch(&["--begin=now+1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.ok("scontrol", &["hold", &h2.to_string()]);
    assert_eq!(
        c.job_field(&h2.to_string(), "Reason").as_deref(),
        Some("JobHeldAdmin")
    );
    c.ok("scontrol", &["release", &h2.to_string()]);
    assert_eq!(c.wait_done(h2), "COMPLETED");
}

/// A dependency found failed stays failed once the job it names is purged
/// (MinJobAge), and across a controller restart, as in Slurm; a job that
/// depended on it never starts.
#[test]
fn a_failed_dependency_outlives_the_purge_of_its_job() {
    let mut c = Cluster::start(Spec {
        extra: vec!["MinJobAge=2".into()],
        ..Spec::default()
    });
    let first = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nexit 1\n");
    let dep = c.sbatch(
        &["-o", "/dev/null", "-d", &format!("afterok:{first}")],
        "#!/bin/sh\ntrue\n",
    );
    let dep_s = dep.to_string();
    assert_eq!(c.wait_done(first), "FAILED");
    let never = |c: &Cluster| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while c.job_field(&dep_s, "Reason").as_deref() != Some("DependencyNeverSatisfied") {
            assert!(
                std::time::Instant::now() < deadline,
                "{}",
                c.ok("scontrol", &["show", "job", &dep_s])
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    };
    never(&c);
    // The failed job is purged.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while c.job_field(&first.to_string(), "JobState").is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "job {first} not purged"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Another job runs to its end (passes happen after the purge): the
    // dependent one stays pending, never satisfied.
    let other = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert_eq!(c.wait_done(other), "COMPLETED");
    assert_eq!(c.job_field(&dep_s, "JobState").as_deref(), Some("PENDING"));
    never(&c);
    // And after a restart (the outcome was logged with the job).
    c.stop_ctld();
    c.start_ctld().expect("controller restarts");
    let other = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert_eq!(c.wait_done(other), "COMPLETED");
    assert_eq!(c.job_field(&dep_s, "JobState").as_deref(), Some("PENDING"));
    never(&c);
}
