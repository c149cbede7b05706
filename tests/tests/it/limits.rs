//! QOS and association limits through the real daemons: associations and
//! QOS made with sacctmgr (stored by droverdbd), cached by the controller,
//! applied by the scheduler with Slurm's pending reasons, and QOS priority
//! visible in sprio.

use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

const T: Duration = Duration::from_secs(60);

fn until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + T;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn reason(c: &Cluster, id: &str) -> String {
    c.ok("squeue", &["-h", "-j", id, "-o", "%t|%r"])
        .trim()
        .to_string()
}

#[test]
fn qos_and_association_limits_hold_jobs_with_slurms_reasons() {
    let c = Cluster::start(Spec {
        nodes: 1,
        cpus: 8,
        accounting: Some("sqlite".into()),
        extra: vec![
            "AccountingStorageEnforce=associations,limits,qos".into(),
            "PriorityType=priority/multifactor".into(),
            "PriorityWeightQOS=1000".into(),
        ],
        ..Spec::default()
    });
    until("cluster registration", || {
        let o = c.run(
            "sacctmgr",
            &["-n", "-P", "list", "cluster", "format=cluster"],
        );
        (String::from_utf8_lossy(&o.stdout).trim() == "test").then_some(())
    });
    c.ok(
        "sacctmgr",
        &["-i", "add", "qos", "one", "MaxJobsPerUser=1", "Priority=10"],
    );
    c.ok("sacctmgr", &["-i", "add", "account", "ml", "GrpTRES=cpu=4"]);
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "add",
            "user",
            "nobody",
            "account=ml",
            "qos=normal,one",
            "defaultqos=normal",
        ],
    );
    let dir = c.path().display().to_string();
    let submit = |args: &[&str]| -> Option<String> {
        let mut a = vec!["--parsable", "-o", "/dev/null", "-D", dir.as_str()];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--wrap", "sleep 300"]);
        let o = c.run_as(65534, "sbatch", &a);
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // The controller learns of the new association (it is told of changes).
    let first = until("nobody's association", || submit(&["--qos=one", "-c1"]));
    c.wait_state(&first, &["RUNNING"], T);
    // QOS MaxJobsPerUser=1: the second job of the QOS waits with Slurm's reason.
    let second = submit(&["--qos=one", "-c1"]).expect("submit");
    until("QOS reason", || {
        (reason(&c, &second) == "PD|QOSMaxJobsPerUserLimit").then_some(())
    });
    // Account GrpTRES=cpu=4: 1 CPU is in use, a 3-CPU job fits, then nothing more.
    let fits = submit(&["-c3"]).expect("submit");
    c.wait_state(&fits, &["RUNNING"], T);
    let over = submit(&["-c1"]).expect("submit");
    until("association reason", || {
        (reason(&c, &over) == "PD|AssocGrpCpuLimit").then_some(())
    });
    // The QOS's priority shows in sprio's QOS column (Priority=10 of the
    // highest QOS priority 10 -> factor 1.0 x PriorityWeightQOS=1000).
    // Priorities are recomputed every pass: wait for the next one.
    until("QOS factor in sprio", || {
        let p = c.ok("sprio", &["-j", &second]);
        let head: Vec<&str> = p.lines().next().unwrap_or("").split_whitespace().collect();
        let row: Vec<&str> = p.lines().nth(1).unwrap_or("").split_whitespace().collect();
        let col = head.iter().position(|h| *h == "QOS").expect("QOS column");
        (row.get(col).copied() == Some("1000")).then_some(())
    });
    // Freeing the account's CPUs lets the held job run.
    c.ok("scancel", &[&fits]);
    c.wait_state(&over, &["RUNNING"], T);
    // And the first job's end lets the QOS-limited one run.
    c.ok("scancel", &[&first]);
    c.wait_state(&second, &["RUNNING"], T);
    c.run("scancel", &[&second, &over]);
}
