//! A backup controller (issue 13 item 3): the primary on host `ctl`, the
//! backup on `ctl2`, one shared StateSaveLocation, each a network
//! namespace of its own. Skipped, with a printed reason, where the machine
//! cannot make namespaces.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drover_tests::ha::IN_CONTROL;
use drover_tests::{Cluster, Spec};

fn ha_cluster() -> Option<Cluster> {
    let mut c = Cluster::start_hosts(Spec {
        nodes: 2,
        cpus: 2,
        slurmd_timeout: 30,
        backup_ctld: true,
        extra: vec!["SlurmctldTimeout=3".into(), "MinJobAge=3600".into()],
        ..Default::default()
    })?;
    c.start_backup_ctld().expect("backup controller");
    Some(c)
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Job ids squeue (run on `host`) knows.
fn known_ids(c: &Cluster, host: &str) -> BTreeSet<u32> {
    let o = c.run_on(host, "squeue", &["-h", "-o", "%i"]);
    assert!(o.status.success(), "squeue: {}", text(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Lines of a file that is appended to every 0.2 s by a running job.
fn lines(p: &std::path::Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |t| t.lines().count())
}

/// kill -9 the primary while four clients submit 1,000 jobs: every id an
/// sbatch printed exists on the backup afterwards, the running job keeps
/// running, and the primary, started again, takes control back cleanly
/// (the backup hands over and returns to standby).
#[test]
fn failover_under_load_loses_no_acknowledged_job() {
    let Some(c) = ha_cluster() else { return };
    let ping = c.run_on("ctl2", "scontrol", &["ping"]);
    assert_eq!(
        String::from_utf8_lossy(&ping.stdout),
        "Slurmctld(primary) at ctl is UP\nSlurmctld(backup) at ctl2 is UP\n",
        "{}",
        text(&ping)
    );
    assert!(ping.status.success());
    // The backup in standby refuses at once, saying so (a config naming
    // only it: nothing else to try).
    let only_backup = c.path().join("backup-only.conf");
    let conf = std::fs::read_to_string(&c.conf).unwrap();
    let conf: String = conf
        .lines()
        .filter(|l| !l.starts_with("SlurmctldHost=ctl("))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&only_backup, conf).unwrap();
    let o = c
        .cmd_on("ctl2", "squeue")
        .env("DROVER_CONF", &only_backup)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        text(&o).contains("not the active controller (standby"),
        "{}",
        text(&o)
    );
    let beat = c.path().join("beat.out");
    let running = c.sbatch(
        &["-w", "node1", "-o", beat.to_str().unwrap()],
        "#!/bin/sh\nwhile true; do echo x; sleep 0.2; done\n",
    );
    c.wait_state(&running.to_string(), &["RUNNING"], Duration::from_secs(30));
    let script = c.script("held.sh", "#!/bin/sh\ntrue\n");
    let script = script.to_str().unwrap().to_string();

    // Four submitters on node hosts (their agents serve the auth socket).
    // (id, when sbatch started, when it printed the id)
    let acked = Arc::new(Mutex::new(Vec::<(u32, Instant, Instant)>::new()));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let c = Arc::new(Mutex::new(c));
    let mut threads = Vec::new();
    for t in 0..4 {
        let (c, acked, failures, script) =
            (c.clone(), acked.clone(), failures.clone(), script.clone());
        threads.push(std::thread::spawn(move || {
            let host = if t % 2 == 0 { "node1" } else { "node2" };
            for _ in 0..250 {
                let mut cmd = c.lock().unwrap().cmd_on(host, "sbatch");
                let sent = Instant::now();
                let o = cmd
                    .args(["--parsable", "-H", "-o", "/dev/null", &script])
                    .output()
                    .expect("sbatch");
                let out = String::from_utf8_lossy(&o.stdout);
                match out.trim().parse::<u32>() {
                    Ok(id) if o.status.success() => {
                        acked.lock().unwrap().push((id, sent, Instant::now()))
                    }
                    _ => failures.lock().unwrap().push(text(&o)),
                }
            }
        }));
    }
    // Kill the primary once a third is in.
    let deadline = Instant::now() + Duration::from_secs(300);
    while acked.lock().unwrap().len() < 300 {
        assert!(Instant::now() < deadline, "submissions too slow");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = lines(&beat);
    let killed = Instant::now();
    c.lock().unwrap().signal_ctld(libc::SIGKILL);
    let ids_at_kill = acked.lock().unwrap().len();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = Arc::try_unwrap(c).ok().unwrap().into_inner().unwrap();
    let acked = acked.lock().unwrap().clone();
    let failures = failures.lock().unwrap().clone();
    // Failover as a client sees it: the first submission sent after the
    // kill, acknowledged (by the backup).
    let first_after = acked
        .iter()
        .filter(|(_, sent, _)| *sent > killed)
        .map(|(_, _, at)| at.duration_since(killed))
        .min()
        .expect("no submission acknowledged after the kill");
    c.wait_log("droverctld-ctl2", IN_CONTROL, 1);
    println!(
        "failover: {} jobs acknowledged ({ids_at_kill} before kill -9 of the primary), \
         {} refused; first acknowledgement by the backup {:.2} s after the kill \
         (SlurmctldTimeout=3)",
        acked.len(),
        failures.len(),
        first_after.as_secs_f64()
    );
    // Every acknowledged id exists on the backup.
    let known = known_ids(&c, "ctl2");
    let lost: Vec<u32> = acked
        .iter()
        .map(|(id, _, _)| *id)
        .filter(|id| !known.contains(id))
        .collect();
    assert!(lost.is_empty(), "acknowledged jobs lost: {lost:?}");
    let unique: BTreeSet<u32> = acked.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(unique.len(), acked.len(), "an id was given twice");
    // The running job kept running across the failover.
    let state = c.run_on(
        "ctl2",
        "squeue",
        &["-h", "-j", &running.to_string(), "-o", "%T"],
    );
    assert_eq!(
        String::from_utf8_lossy(&state.stdout),
        "RUNNING\n",
        "squeue -j {running} on ctl2 (the logs follow): {}",
        text(&state)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while lines(&beat) <= before + 5 {
        assert!(Instant::now() < deadline, "the running job stopped");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ping = c.run_on("ctl2", "scontrol", &["ping"]);
    assert_eq!(
        String::from_utf8_lossy(&ping.stdout),
        "Slurmctld(primary) at ctl is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
    );
    assert!(ping.status.success(), "the backup is in control");

    // The primary returns: the backup hands back and goes to standby.
    c.start_ctld().expect("primary again");
    c.wait_log("droverctld", IN_CONTROL, 2);
    c.wait_log("droverctld-ctl2", "back to standby", 1);
    c.wait_log("droverctld-ctl2", "standby: backup controller", 2);
    let known = known_ids(&c, "ctl");
    assert!(
        acked.iter().all(|(id, _, _)| known.contains(id)),
        "a job was lost handing control back"
    );
    let ping = c.run_on("ctl", "scontrol", &["ping"]);
    assert_eq!(
        String::from_utf8_lossy(&ping.stdout),
        "Slurmctld(primary) at ctl is UP\nSlurmctld(backup) at ctl2 is UP\n"
    );
    assert_eq!(
        c.ok("squeue", &["-h", "-j", &running.to_string(), "-o", "%T"]),
        "RUNNING\n"
    );
    c.ok("scancel", &["-u", "root"]);
}

/// `scontrol takeover` while the primary is frozen (SIGSTOP): the backup
/// raises the epoch and takes control; the primary, let go (SIGCONT),
/// finds the epoch moved on, writes nothing and exits. A submission sent
/// to the frozen primary ends on the backup, once.
#[test]
fn takeover_deposes_a_frozen_primary_which_writes_nothing() {
    let Some(mut c) = ha_cluster() else { return };
    let before = known_ids(&c, "ctl");
    c.signal_ctld(libc::SIGSTOP);
    // Sent to the frozen primary first (it is the first SlurmctldHost).
    let script = c.script("late.sh", "#!/bin/sh\ntrue\n");
    let late = c
        .cmd_on("node1", "sbatch")
        .args([
            "--parsable",
            "-H",
            "-o",
            "/dev/null",
            script.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sbatch");
    let o = c.run_on("ctl2", "scontrol", &["takeover"]);
    assert!(o.status.success(), "takeover: {}", text(&o));
    c.wait_log("droverctld-ctl2", "taking control: scontrol takeover", 1);
    c.wait_log("droverctld-ctl2", IN_CONTROL, 1);
    c.signal_ctld(libc::SIGCONT);
    let code = c.wait_ctld_exit(Duration::from_secs(30));
    assert_eq!(code, Some(1), "the deposed primary must exit");
    let log = c.log_text("droverctld");
    let line = log
        .lines()
        .find(|l| l.contains("this controller was deposed and writes nothing more"))
        .unwrap_or_else(|| panic!("{log}"));
    println!("deposed primary: {line}");
    let o = late.wait_with_output().expect("sbatch");
    assert!(o.status.success(), "sbatch ({}): {}", o.status, text(&o));
    let id: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let after = known_ids(&c, "ctl2");
    assert!(after.contains(&id), "job {id} acknowledged but unknown");
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    let ping = c.run_on("ctl2", "scontrol", &["ping"]);
    assert_eq!(
        String::from_utf8_lossy(&ping.stdout),
        "Slurmctld(primary) at ctl is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
    );
    // Nothing the deposed primary did reached the log: the primary, back,
    // replays it without skipping a stale batch and knows the job.
    c.start_ctld().expect("primary again");
    c.wait_log("droverctld", IN_CONTROL, 2);
    let log = c.log_text("droverctld");
    assert!(!log.contains("deposed controller were skipped"), "{log}");
    assert!(known_ids(&c, "ctl").contains(&id));
}

/// A primary the backup cannot reach over the network but which still
/// writes its heartbeat in the shared state directory is left in control
/// (no split brain from a cut cable between the two controllers).
#[test]
fn a_backup_cut_off_from_a_live_primary_does_not_take_over() {
    let Some(c) = ha_cluster() else { return };
    let net = c.net.as_ref().expect("hosts");
    net.set_link("ctl", false);
    c.wait_log(
        "droverctld-ctl2",
        "but the heartbeat in the state directory goes on",
        1,
    );
    // Five more heartbeats (> SlurmctldTimeout=3 s) without a takeover.
    let hb = c.path().join("state/heartbeat");
    let mut seen = std::fs::read_to_string(&hb).unwrap_or_default();
    let mut beats = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while beats < 5 {
        assert!(Instant::now() < deadline, "the heartbeat stopped");
        let now = std::fs::read_to_string(&hb).unwrap_or_default();
        if now != seen && !now.is_empty() {
            beats += 1;
            seen = now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = c.log_text("droverctld-ctl2");
    assert!(!log.contains("taking control"), "{log}");
    net.set_link("ctl", true);
    let o = c.run_on("ctl", "scontrol", &["ping"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "Slurmctld(primary) at ctl is UP\nSlurmctld(backup) at ctl2 is UP\n"
    );
}

/// `scontrol takeover` with a live primary: the primary writes its log,
/// hands over and exits with status 0 (Slurm's primary terminates); the
/// backup serves every job, the running one still running.
#[test]
fn takeover_from_a_live_primary_hands_over_cleanly() {
    let Some(mut c) = ha_cluster() else { return };
    let running = c.sbatch(
        &["-w", "node2", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    c.wait_state(&running.to_string(), &["RUNNING"], Duration::from_secs(30));
    let held = c.sbatch(&["-H", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let o = c.run_on("ctl2", "scontrol", &["takeover"]);
    assert!(o.status.success(), "takeover: {}", text(&o));
    assert_eq!(c.wait_ctld_exit(Duration::from_secs(30)), Some(0));
    assert!(c
        .log_text("droverctld")
        .contains("control handed over: the primary controller exits"));
    c.wait_log("droverctld-ctl2", IN_CONTROL, 1);
    let known = known_ids(&c, "node1");
    assert!(
        known.contains(&running) && known.contains(&held),
        "{known:?}"
    );
    let o = c.run_on(
        "node1",
        "squeue",
        &["-h", "-j", &running.to_string(), "-o", "%T"],
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "RUNNING\n",
        "{}",
        text(&o)
    );
    // A takeover sent to the controller already in control changes nothing.
    let o = c.run_on("ctl2", "scontrol", &["takeover"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = c.run_on("ctl2", "scontrol", &["takeover", "2"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("no backup controller 2"), "{}", text(&o));
    c.run_on(
        "node1",
        "scancel",
        &[&running.to_string(), &held.to_string()],
    );
}
