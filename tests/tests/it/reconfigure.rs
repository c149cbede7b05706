//! `scontrol reconfigure` on one host: what it applies at once
//! (accounting switched on: the jobs that ended before have records too)
//! and what it names as needing a restart.

use std::time::Duration;

use drover_tests::{Cluster, Spec};

const WAIT: Duration = Duration::from_secs(60);

/// Accounting switched on in the file and applied by reconfigure, without
/// a restart: a job that finished before and one that finishes after both
/// reach the accounting database; a changed StateSaveLocation is named as
/// needing a restart and the running controller keeps its old one;
/// SIGHUP reconfigures too.
#[test]
fn accounting_switched_on_by_reconfigure_records_jobs() {
    let mut c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        ..Default::default()
    });
    let with = std::fs::read_to_string(&c.conf).unwrap();
    let line = with
        .lines()
        .find(|l| l.starts_with("AccountingStorageType="))
        .expect("accounting line")
        .to_string();
    c.stop_ctld();
    std::fs::write(&c.conf, with.replace(&line, "")).unwrap();
    c.start_ctld().unwrap();
    c.wait_nodes_idle(WAIT).unwrap();
    let before = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(before, "COMPLETED");
    let o = c.run("sacct", &["-n"]);
    assert!(!o.status.success(), "accounting is off");

    let state = with
        .lines()
        .find(|l| l.starts_with("StateSaveLocation="))
        .unwrap()
        .to_string();
    std::fs::write(&c.conf, with.replace(&state, &format!("{state}-moved"))).unwrap();
    let o = c.run("scontrol", &["reconfigure"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("scontrol: warning: StateSaveLocation changed")
            && err.contains("it takes effect when droverctld restarts"),
        "{err}"
    );
    let shown = c.ok("scontrol", &["show", "config"]);
    let old = state.trim_start_matches("StateSaveLocation=");
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("StateSaveLocation") && l.trim_end().ends_with(old)),
        "{shown}"
    );
    assert!(shown.contains("accounting_storage/slurmdbd"), "{shown}");
    // SIGHUP does the same, as slurmctld's: a partition appears.
    let conf = std::fs::read_to_string(&c.conf).unwrap();
    std::fs::write(
        &c.conf,
        format!("{conf}PartitionName=extra Nodes=node1 State=UP\n"),
    )
    .unwrap();
    let (_, pid) = c
        .daemon_pids()
        .into_iter()
        .find(|(n, _)| *n == "droverctld")
        .unwrap();
    // SAFETY: kill(2) on the test's own daemon.
    unsafe { libc::kill(pid as i32, libc::SIGHUP) };
    let deadline = std::time::Instant::now() + WAIT;
    while !c.ok("sinfo", &["-h", "-o", "%P"]).contains("extra") {
        assert!(
            std::time::Instant::now() < deadline,
            "SIGHUP did not reconfigure"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nexit 3\n");
    c.expect_end(after, "FAILED");
    let ids = format!("{before},{after}");
    let text = c.wait_sacct(
        &["-X", "-n", "-P", "-j", &ids, "-o", "JobID,State"],
        WAIT,
        |t| t.contains(&format!("{before}|COMPLETED")) && t.contains(&format!("{after}|FAILED")),
    );
    eprintln!("{text}");
}
