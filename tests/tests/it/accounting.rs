//! Accounting end to end, on SQLite, PostgreSQL and MariaDB: records flow
//! from the controller to droverdbd and come back through sacct; outages of
//! the daemon and of its database lose nothing; sacctmgr associations are
//! enforced at submit; sreport and seff read the same data.

use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

const WAIT: Duration = Duration::from_secs(60);

fn cluster(backend: &str, proxy: bool, extra: &[&str]) -> Cluster {
    Cluster::start(Spec {
        accounting: Some(backend.to_string()),
        db_proxy: proxy,
        extra: extra.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
}

/// Lines of `sacct -P -n` output as fields.
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

fn row<'a>(rows: &'a [Vec<String>], id: &str) -> &'a Vec<String> {
    rows.iter()
        .find(|r| r[0] == id)
        .unwrap_or_else(|| panic!("no row {id} in {rows:?}"))
}

fn job_fields(backend: &str) {
    let c = cluster(backend, false, &[]);
    let ok = c.sbatch(
        &["-J", "good", "-o", "/dev/null", "--comment=hello"],
        "#!/bin/sh\necho hi\n",
    );
    let bad = c.sbatch(
        &["-J", "bad", "-o", "/dev/null", "-c", "2"],
        "#!/bin/sh\nexit 3\n",
    );
    let long = c.sbatch(&["-J", "long", "-o", "/dev/null"], "#!/bin/sh\nsleep 300\n");
    let pend = c.sbatch(
        &["-J", "held", "-H", "-o", "/dev/null"],
        "#!/bin/sh\ntrue\n",
    );
    let arr = c.sbatch(
        &["-J", "arr", "-o", "/dev/null", "--array=1-3"],
        "#!/bin/sh\nexit $SLURM_ARRAY_TASK_ID\n",
    );
    c.expect_end(ok, "COMPLETED");
    c.expect_end(bad, "FAILED");
    c.wait_state(&long.to_string(), &["RUNNING"], WAIT);
    c.ok("scancel", &[&long.to_string()]);
    c.expect_end(long, "CANCELLED");
    for t in 1..=3 {
        c.wait_state(&format!("{arr}_{t}"), &["FAILED"], WAIT);
    }
    let ids = format!("{ok},{bad},{long},{pend},{arr}");
    let fmt = "JobID,JobIDRaw,JobName,State,ExitCode,AllocCPUS,Partition,User,NodeList,Comment,Start,End,Elapsed";
    let text = c.wait_sacct(&["-j", &ids, "-P", "-n", "-o", fmt], WAIT, |t| {
        let r = rows(t);
        t.contains("CANCELLED by 0")
            && r.iter()
                .filter(|x| {
                    x[0].starts_with(&format!("{arr}_")) && !x[0].contains('.') && x[3] == "FAILED"
                })
                .count()
                == 3
            && r.iter()
                .any(|x| x[0] == ok.to_string() && x[3] == "COMPLETED")
            && r.iter()
                .any(|x| x[0] == bad.to_string() && x[3] == "FAILED")
            && r.iter().any(|x| x[0] == format!("{bad}.batch"))
    });
    let r = rows(&text);
    let g = row(&r, &ok.to_string());
    assert_eq!(
        &g[1..5],
        [
            ok.to_string(),
            "good".into(),
            "COMPLETED".into(),
            "0:0".into()
        ]
    );
    assert_eq!(g[5], "1");
    assert_eq!(g[6], "debug");
    assert_eq!(g[7], "root");
    assert!(g[8] == "node1" || g[8] == "node2", "{g:?}");
    assert_eq!(g[9], "hello");
    assert_ne!(g[10], "Unknown");
    assert_ne!(g[11], "Unknown");
    let b = row(&r, &bad.to_string());
    assert_eq!(
        (b[3].as_str(), b[4].as_str(), b[5].as_str()),
        ("FAILED", "3:0", "2")
    );
    let bs = row(&r, &format!("{bad}.batch"));
    assert_eq!(
        (bs[2].as_str(), bs[3].as_str(), bs[4].as_str()),
        ("batch", "FAILED", "3:0")
    );
    let l = row(&r, &long.to_string());
    assert_eq!(l[3], "CANCELLED by 0");
    let ls = row(&r, &format!("{long}.batch"));
    assert_eq!(ls[3], "CANCELLED");
    let p = row(&r, &pend.to_string());
    assert_eq!(
        (p[3].as_str(), p[8].as_str(), p[10].as_str()),
        ("PENDING", "None assigned", "Unknown")
    );
    for t in 1..=3 {
        let a = row(&r, &format!("{arr}_{t}"));
        assert_eq!(a[4], format!("{t}:0"));
        assert_eq!(a[2], "arr");
    }
    // -X hides steps; a user's own view; widths and truncation in the table.
    let x = c.ok("sacct", &["-X", "-n", "-P", "-j", &ids, "-o", "JobID"]);
    assert!(!x.contains(".batch"), "{x}");
    assert_eq!(x.lines().count(), 7, "{x}");
    let t = c.ok(
        "sacct",
        &["-X", "-j", &long.to_string(), "-o", "jobid,STATE,state%20"],
    );
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "JobID             State                State ");
    assert_eq!(lines[1], "------------ ---------- -------------------- ");
    assert_eq!(
        lines[2],
        format!("{long:<12} CANCELLED+       CANCELLED by 0 ")
    );
    // -p ends every line with '|'; --name and -s filter.
    let p = c.ok(
        "sacct",
        &[
            "-X",
            "-p",
            "-n",
            "--name",
            "good",
            "-S",
            "now-1hours",
            "-o",
            "JobName,State",
        ],
    );
    assert_eq!(p, "good|COMPLETED|\n");
    let f = c.ok(
        "sacct",
        &[
            "-X",
            "-P",
            "-n",
            "-s",
            "F",
            "-S",
            "now-1hours",
            "-o",
            "JobName",
        ],
    );
    assert_eq!(f.lines().filter(|l| *l == "arr").count(), 3, "{f}");
    assert!(f.lines().any(|l| l == "bad"), "{f}");
    // JSON for tools.
    let j = c.ok("sacct", &["--json", "-j", &bad.to_string()]);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(v["jobs"][0]["state"]["current"][0], "FAILED");
    assert_eq!(v["jobs"][0]["exit_code"]["return_code"]["number"], 3);
    // seff on the failed job.
    let s = c.ok("seff", &[&bad.to_string()]);
    assert!(s.contains(&format!("Job ID: {bad}")), "{s}");
    assert!(s.contains("State: FAILED (exit code 3)"), "{s}");
    assert!(s.contains("CPU Efficiency:"), "{s}");
}

/// Submit `n` quick jobs; returns their ids.
fn burst(c: &Cluster, n: usize, name: &str) -> Vec<u32> {
    (0..n)
        .map(|_| c.sbatch(&["-J", name, "-o", "/dev/null"], "#!/bin/sh\ntrue\n"))
        .collect()
}

fn all_completed(c: &Cluster, ids: &[u32]) {
    for id in ids {
        c.expect_end(*id, "COMPLETED");
    }
    let list: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    let list = list.join(",");
    let text = c.wait_sacct(
        &["-X", "-n", "-P", "-j", &list, "-o", "JobID,State"],
        WAIT,
        |t| {
            let r = rows(t);
            r.len() == ids.len() && r.iter().all(|x| x[1] == "COMPLETED")
        },
    );
    assert_eq!(text.lines().count(), ids.len());
}

fn outages(backend: &str) {
    let proxy = backend != "sqlite";
    let mut c = cluster(backend, proxy, &[]);
    // The daemon dies (kill -9) while jobs complete; they wait on disk.
    c.kill_dbd();
    let first = burst(&c, 15, "during-dbd-down");
    for id in &first {
        c.expect_end(*id, "COMPLETED");
    }
    let o = c.run("sacct", &["-X", "-n"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Problem talking to the database"));
    c.start_dbd().unwrap();
    all_completed(&c, &first);
    if proxy {
        // The database goes away under a running daemon.
        c.db_outage();
        let second = burst(&c, 15, "during-db-down");
        for id in &second {
            c.expect_end(*id, "COMPLETED");
        }
        std::thread::sleep(Duration::from_millis(300));
        c.db_restore();
        all_completed(&c, &second);
    }
    // A controller restart does not duplicate or regress anything.
    c.kill_ctld();
    c.start_ctld().unwrap();
    let again = c.ok(
        "sacct",
        &["-X", "-n", "-P", "-S", "now-1hours", "-o", "State"],
    );
    assert!(again.lines().all(|l| l == "COMPLETED"), "{again}");
}

/// Retry a command until its outcome matches (association changes reach
/// the controller asynchronously).
fn until(what: &str, f: impl Fn() -> Option<String>) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn associations(backend: &str) {
    let c = cluster(
        backend,
        false,
        &["AccountingStorageEnforce=associations,limits,qos"],
    );
    // The controller registered its cluster (with root's association).
    until("cluster registration", || {
        let o = c.run(
            "sacctmgr",
            &["-n", "-P", "list", "cluster", "format=cluster"],
        );
        (String::from_utf8_lossy(&o.stdout).trim() == "test").then_some(String::new())
    });
    let tmp = c.path().display().to_string();
    let submit_nobody = |args: &[&str]| {
        let mut a = vec![
            "--parsable",
            "-o",
            "/dev/null",
            "-D",
            tmp.as_str(),
            "--wrap",
            "true",
        ];
        a.extend_from_slice(args);
        c.run_as(65534, "sbatch", &a)
    };
    let o = submit_nobody(&[]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("Invalid account or account/partition combination specified"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    c.ok(
        "sacctmgr",
        &["-i", "add", "account", "science", "Description=Science"],
    );
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "add",
            "account",
            "ml",
            "parent=science",
            "fairshare=10",
        ],
    );
    c.ok(
        "sacctmgr",
        &["-i", "add", "user", "nobody", "account=ml", "MaxWall=10"],
    );
    // A non-admin may not change associations.
    let o = c.run_as(65534, "sacctmgr", &["-i", "add", "account", "x"]);
    assert!(!o.status.success());
    let id = until("nobody's association", || {
        let o = submit_nobody(&[]);
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    });
    // The default account is filled in; the job runs under it.
    c.wait_sacct(
        &["-X", "-n", "-P", "-j", &id, "-o", "Account,User"],
        WAIT,
        |t| t.trim() == "ml|nobody",
    );
    // MaxWall is enforced at submit with Slurm's message.
    let o = submit_nobody(&["-t", "20"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Job violates accounting/QOS policy"));
    // An account the user has no association with is refused.
    let o = submit_nobody(&["-A", "science"]);
    assert!(!o.status.success());
    // sacctmgr shows the tree and the limits.
    let assoc = c.ok(
        "sacctmgr",
        &[
            "-n",
            "-P",
            "show",
            "assoc",
            "where",
            "user=nobody",
            "format=account,user,maxwall",
        ],
    );
    assert_eq!(assoc.trim(), "ml|nobody|00:10:00");
    let acc = c.ok(
        "sacctmgr",
        &["-n", "-s", "list", "user", "nobody", "format=account%256"],
    );
    assert_eq!(acc.trim(), "ml");
    let tree = c.ok(
        "sacctmgr",
        &["-n", "-P", "list", "account", "format=account,descr"],
    );
    assert!(tree.lines().any(|l| l == "science|Science"), "{tree}");
    // Removing the user takes effect too.
    c.ok("sacctmgr", &["-i", "delete", "user", "nobody"]);
    until("nobody refused again", || {
        (!submit_nobody(&[]).status.success()).then_some(String::new())
    });
    // Usage reports read the same database.
    let r = c.ok(
        "sreport",
        &["-n", "-P", "cluster", "utilization", "-t", "hours"],
    );
    assert!(r.starts_with("test|"), "{r}");
}

macro_rules! backend {
    ($m:ident, $b:expr) => {
        mod $m {
            #[test]
            fn job_fields_through_sacct() {
                super::job_fields($b);
            }
            #[test]
            fn outages_lose_nothing() {
                super::outages($b);
            }
            #[test]
            fn associations_and_limits() {
                super::associations($b);
            }
        }
    };
}

backend!(sqlite, "sqlite");
backend!(postgres, "postgres");
backend!(mysql, "mysql");

#[test]
fn timeout_is_recorded() {
    let c = cluster("sqlite", false, &[]);
    let id = c.sbatch(&["-t", "1", "-o", "/dev/null"], "#!/bin/sh\nsleep 300\n");
    c.wait_state(&id.to_string(), &["TIMEOUT"], Duration::from_secs(150));
    let t = c.wait_sacct(
        &[
            "-n",
            "-P",
            "-j",
            &id.to_string(),
            "-o",
            "JobID,State,Timelimit",
        ],
        WAIT,
        |t| t.contains("|TIMEOUT|") && t.contains(".batch|CANCELLED|") && t.lines().count() == 2,
    );
    assert_eq!(t, format!("{id}|TIMEOUT|00:01:00\n{id}.batch|CANCELLED|\n"));
}

#[test]
fn sacct_without_accounting_is_disabled() {
    let c = Cluster::start(Spec::default());
    let o = c.run("sacct", &["-X"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Slurm accounting storage is disabled"));
}
