//! `scontrol reconfigure`: what it applies at once (accounting switched
//! on: the jobs that ended before have records too), what it names as
//! needing a restart, and agents on hosts of their own re-reading their
//! files (configless agents: tests/it/configless.rs).

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
    let _ = drover_proto::sys::kill(pid as i32, libc::SIGHUP);
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

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + WAIT;
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

const DRIFT: &str = "appears to have a different slurm.conf than the slurmctld";

/// Agents with files of their own: reconfigure makes each re-read its file
/// and register again. node1 shares the controller's file and runs the
/// Prolog added to it at once; node2 still has the old copy, so the
/// controller names it as different (its digest, sent again) and it runs
/// no Prolog, until its copy is updated and reconfigure sent again.
#[test]
fn reconfigure_makes_agents_re_read_their_own_files() {
    use std::os::unix::fs::PermissionsExt;
    let Some(mut c) = Cluster::start_hosts(Spec {
        nodes: 2,
        cpus: 2,
        slurmd_timeout: 10,
        ..Default::default()
    }) else {
        return;
    };
    let copy = c.path().join("node2.conf");
    std::fs::copy(&c.conf, &copy).unwrap();
    c.signal_host_agent("node2", libc::SIGTERM);
    c.start_host_agent_with("node2", &copy).unwrap();
    c.wait_nodes_idle(WAIT).unwrap();
    let prolog = c.path().join("prolog.sh");
    let marker = |h: &str| c.path().join(format!("prolog-{h}"));
    std::fs::write(
        &prolog,
        format!(
            "#!/bin/sh\ntouch {}/prolog-$(hostname)\n",
            c.path().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&prolog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = std::fs::read_to_string(&c.conf).unwrap();
    let new = text.replacen(
        "KillWait=",
        &format!("Prolog={}\nKillWait=", prolog.display()),
        1,
    );
    std::fs::write(&c.conf, &new).unwrap();
    let registrations = |c: &Cluster, h: &str| {
        c.log_text(&format!("droverd-{h}"))
            .matches("registered 1 node(s)")
            .count()
    };
    let before = [registrations(&c, "node1"), registrations(&c, "node2")];
    c.ok("scontrol", &["reconfigure"]);
    wait_until("both agents register again", || {
        registrations(&c, "node1") > before[0] && registrations(&c, "node2") > before[1]
    });
    wait_until("node2 named as different", || {
        c.log_text("droverctld").contains(DRIFT)
    });
    let log = c.log_text("droverctld");
    let warned: Vec<&str> = log.lines().filter(|l| l.contains(DRIFT)).collect();
    // Only node2 is named (once per registration it makes: a heartbeat
    // may ask it to register again while the reconfigure is under way).
    assert!(!warned.is_empty(), "{log}");
    assert!(warned.iter().all(|w| w.contains("Node node2 ")), "{log}");
    for h in ["node1", "node2"] {
        let id = c.sbatch(&["-w", h, "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
        c.expect_end(id, "COMPLETED");
    }
    assert!(marker("node1").exists(), "node1 did not run the new Prolog");
    assert!(
        !marker("node2").exists(),
        "node2 ran a Prolog it never read"
    );

    // The admin copies the file to node2 and reconfigures again.
    std::fs::write(&copy, &new).unwrap();
    let before = registrations(&c, "node2");
    c.ok("scontrol", &["reconfigure"]);
    wait_until("node2 registers again", || {
        registrations(&c, "node2") > before
    });
    let id = c.sbatch(&["-w", "node2", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
    assert!(marker("node2").exists(), "node2 did not run the Prolog");
    // Once its copy matches, node2 is not named again: no warning follows
    // the second reconfigure.
    let log = c.log_text("droverctld");
    let second = log
        .rfind("reconfigured from")
        .expect("second reconfigure logged");
    assert!(!log[second..].contains(DRIFT), "{log}");
}
