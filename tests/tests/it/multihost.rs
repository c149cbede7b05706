//! Several hosts for real: the controller on host `ctl` and every node on a
//! host of its own, each a network namespace with its own address, hostname
//! and spool (see drover_tests::hosts). Skipped, with a printed reason,
//! where the machine cannot make namespaces.

use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

fn hosts(nodes: u32, extra: &[&str]) -> Option<Cluster> {
    Cluster::start_hosts(Spec {
        nodes,
        cpus: 2,
        slurmd_timeout: 4,
        extra: extra.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
}

/// A batch job over two hosts: each task runs on its own host (its
/// hostname is the node's), the batch script and rank 0 on the first node
/// of the node list even when placement preferred the other one.
#[test]
fn rank_zero_runs_on_the_first_node_of_the_list() {
    let Some(c) = hosts(2, &[]) else { return };
    // node2 partly busy: best fit prefers partly used nodes, and used to
    // put the next -N2 job's batch script and rank 0 on node2.
    let busy = c.sbatch(
        &["-w", "node2", "-c1", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    c.wait_state(&busy.to_string(), &["RUNNING"], Duration::from_secs(30));
    let out = c.path().join("ranks.out");
    let id = c.sbatch(
        &["-N2", "-n2", "-c1", "-o", out.to_str().unwrap()],
        "#!/bin/sh\n\
         echo batch $(hostname) first=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -1)\n\
         srun -l sh -c 'echo rank $SLURM_PROCID node $SLURM_NODEID host $(hostname)' | sort\n",
    );
    c.expect_end(id, "COMPLETED");
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        c.job_field(&id.to_string(), "BatchHost").as_deref(),
        Some("node1"),
        "{text}"
    );
    assert!(text.contains("batch node1 first=node1"), "{text}");
    assert!(text.contains("0: rank 0 node 0 host node1"), "{text}");
    assert!(text.contains("1: rank 1 node 1 host node2"), "{text}");
    c.ok("scancel", &[&busy.to_string()]);
}

/// A node whose agent stops answering goes DOWN (not responding), comes
/// back by ReturnToService when it registers again, and stays back across
/// controller restarts (it used to be DOWN again with the old reason).
#[test]
fn a_returned_node_stays_up_across_controller_restarts() {
    let Some(mut c) = hosts(2, &["ReturnToService=1"]) else {
        return;
    };
    let state = |c: &Cluster| {
        let o = c.run("sinfo", &["-h", "-N", "-n", "node2", "-o", "%T"]);
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let wait_for = |c: &Cluster, want: &dyn Fn(&str) -> bool, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let s = state(c);
            if want(&s) {
                return;
            }
            assert!(Instant::now() < deadline, "node2 never {what}: {s}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    // Cut node2 off the network: after SlurmdTimeout it is DOWN.
    c.net.as_ref().unwrap().set_link("node2", false);
    wait_for(&c, &|s| s.starts_with("down"), "went down");
    c.net.as_ref().unwrap().set_link("node2", true);
    wait_for(&c, &|s| s == "idle", "came back");
    // kill -9 and a clean stop: both must remember it is back.
    for sig in [libc::SIGKILL, libc::SIGTERM] {
        if sig == libc::SIGKILL {
            c.kill_ctld();
        } else {
            c.stop_ctld();
        }
        c.start_ctld().unwrap();
        wait_for(&c, &|s| s == "idle", "stayed up after a controller restart");
    }
    // The controller recovered it as up: it never had to bring it back again.
    let log = c.log_text("droverctld");
    assert_eq!(log.matches("node node2 is back").count(), 1, "{log}");
    // A job runs there again.
    let id = c.sbatch(&["-w", "node2", "-o", "/dev/null"], "#!/bin/sh\nhostname\n");
    c.expect_end(id, "COMPLETED");
}

/// Pids of step tasks whose command line holds `marker`, srun itself left out.
fn tasks_marked(marker: &str, srun: &[u32]) -> Vec<i32> {
    drover_tests::pids_mentioning(marker)
        .into_iter()
        .filter(|p| !srun.contains(&(*p as u32)))
        .collect()
}

/// Kills what a test started when it ends, passed or failed: the sruns
/// (one may be frozen) and the tasks marked with the test's markers.
struct Leftovers(Vec<u32>, &'static [&'static str]);

impl Drop for Leftovers {
    fn drop(&mut self) {
        let pids = self
            .0
            .iter()
            .map(|p| *p as i32)
            .chain(self.1.iter().flat_map(|m| tasks_marked(m, &[])));
        for p in pids {
            // Processes this test started.
            let _ = drover_proto::sys::kill(p, libc::SIGKILL);
            let _ = drover_proto::sys::kill(p, libc::SIGCONT);
        }
    }
}

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A node of a running step is cut off: the job ends NODE_FAIL, srun says
/// Slurm's `Node failure on node2` and exits (it used to wait for ever), and
/// when node2 is back its agent kills the step tasks of the ended job (only
/// batch scripts used to be killed): here from an allocation srun made
/// itself (no batch script anywhere), with its srun frozen so that nothing
/// but the re-registration can end them.
#[test]
fn a_failed_node_ends_srun_and_its_tasks_are_killed_when_it_returns() {
    use std::process::Stdio;
    let Some(c) = hosts(2, &[]) else { return };
    let srun = |marker: &str| {
        c.cmd("srun")
            .args(["-N2", "-n2", "-c1", "sh", "-c"])
            .arg(format!("sleep 300; echo {marker}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("srun")
    };
    let mut a = srun("mh-step-a");
    let mut b = srun("mh-step-b");
    let sruns = [a.id(), b.id()];
    let _cleanup = Leftovers(sruns.to_vec(), &["mh-step-a", "mh-step-b"]);
    for m in ["mh-step-a", "mh-step-b"] {
        wait_until(&format!("both tasks of {m} run"), 30, || {
            tasks_marked(m, &sruns).len() >= 2
        });
    }
    let _ = drover_proto::sys::kill(b.id() as i32, libc::SIGSTOP);
    c.net.as_ref().unwrap().set_link("node2", false);
    // srun a reports the failure and exits while node2 is still away.
    let deadline = Instant::now() + Duration::from_secs(40);
    let status = loop {
        if let Some(st) = a.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "srun never exited after node2 failed"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = a.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("srun: error: Node failure on node2"), "{err}");
    assert!(!status.success(), "{status:?} {err}");
    eprintln!("srun after the node failure: {status}\n{err}");
    // Both allocations ended NODE_FAIL.
    let states = c.ok("squeue", &["-h", "-t", "all", "-o", "%T"]);
    assert_eq!(
        states.split_whitespace().collect::<Vec<_>>(),
        ["NODE_FAIL"; 2],
        "{states}"
    );
    // node2 comes back: its agent registers and the tasks of both ended
    // jobs go (srun b is frozen: its connection says nothing).
    c.net.as_ref().unwrap().set_link("node2", true);
    wait_until("the tasks on node2 are killed", 40, || {
        tasks_marked("mh-step-a", &sruns).is_empty() && tasks_marked("mh-step-b", &sruns).is_empty()
    });
    let log = c.log_text("droverd-node2");
    assert!(log.contains("killing its step tasks"), "{log}");
    let _ = drover_proto::sys::kill(b.id() as i32, libc::SIGKILL);
    let _ = b.wait();
}

/// A copy of the cluster's config with `from` replaced by `to`, as `name`.
fn conf_variant(c: &Cluster, name: &str, from: &str, to: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(&c.conf).unwrap();
    assert!(text.contains(from), "{from} not in the config");
    let p = c.path().join(name);
    std::fs::write(&p, text.replace(from, to)).unwrap();
    p
}

/// A host with the wrong key: its agent and its commands are refused, and
/// the controller's log says so with the host's address, once (a peer that
/// keeps failing is rate-limited: one line per minute with a count).
#[test]
fn a_wrong_key_is_refused_and_logged_with_the_peer_address() {
    use std::os::unix::fs::PermissionsExt;
    let Some(mut c) = hosts(2, &[]) else { return };
    let key = c.path().join("drover.key").display().to_string();
    let bad_key = c.path().join("bad.key");
    std::fs::write(&bad_key, "not the cluster key, but long enough 0123\n").unwrap();
    std::fs::set_permissions(&bad_key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let bad_conf = conf_variant(
        &c,
        "bad.conf",
        &format!("AuthKeyFile={key}"),
        &format!("AuthKeyFile={}", bad_key.display()),
    );
    c.signal_host_agent("node2", libc::SIGTERM);
    c.start_host_agent_with("node2", &bad_conf).unwrap();
    let addr = c.net.as_ref().unwrap().host("node2").addr.clone();
    let sinfo = |c: &Cluster| {
        c.cmd_on("node2", "sinfo")
            .env("DROVER_CONF", &bad_conf)
            .output()
            .unwrap()
    };
    // Once node2's new agent serves its auth socket, its commands are refused.
    let mut refused = String::new();
    wait_until("a command on node2 is refused", 30, || {
        let o = sinfo(&c);
        refused = String::from_utf8_lossy(&o.stderr).into_owned();
        !o.status.success() && refused.contains("Authentication failure")
    });
    for _ in 0..3 {
        assert!(!sinfo(&c).status.success());
    }
    let log = c.log_text("droverctld");
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(&format!("authentication failure from {addr}:")))
        .collect();
    assert_eq!(lines.len(), 1, "{refused}\n{log}");
    assert!(lines[0].contains("WARN"), "{}", lines[0]);
    assert!(lines[0].contains("wrong cluster key"), "{}", lines[0]);
    eprintln!("{}\n{refused}", lines[0]);
    // The cluster's own hosts are not affected.
    c.ok("sinfo", &[]);
}

/// Restart host `host`'s agent with config `conf` and wait until it has
/// registered with the controller.
fn restart_agent_with(c: &mut Cluster, host: &str, conf: &std::path::Path) {
    let log = format!("droverd-{host}");
    let before = c.log_text(&log).matches("registered 1 node(s)").count();
    c.signal_host_agent(host, libc::SIGTERM);
    c.start_host_agent_with(host, conf).unwrap();
    wait_until(&format!("{host}'s agent registers again"), 30, || {
        c.log_text(&log).matches("registered 1 node(s)").count() > before
    });
}

const DRIFT: &str = "appears to have a different slurm.conf than the slurmctld";

/// Config drift: an agent whose file differs from the controller's (here
/// SlurmdTimeout) is named in a warning at registration, the others are
/// not; an agent whose file gives its node less memory than the
/// controller's registers it drained "Low RealMemory".
#[test]
fn an_agent_with_a_different_config_is_named_by_the_controller() {
    let Some(mut c) = hosts(2, &[]) else { return };
    assert!(!c.log_text("droverctld").contains(DRIFT));
    let drift = conf_variant(&c, "drift.conf", "SlurmdTimeout=4\n", "SlurmdTimeout=5\n");
    restart_agent_with(&mut c, "node2", &drift);
    let log = c.log_text("droverctld");
    let warned: Vec<&str> = log.lines().filter(|l| l.contains(DRIFT)).collect();
    assert_eq!(warned.len(), 1, "{log}");
    assert!(
        warned[0].contains("WARN") && warned[0].contains("Node node2 "),
        "{}",
        warned[0]
    );
    assert!(
        warned[0].contains("DebugFlags=NO_CONF_HASH"),
        "{}",
        warned[0]
    );
    // Less memory in the agent's file than in the controller's: drained.
    let mem = format!("RealMemory={}\nPartitionName", c.spec.mem_mb);
    let low = conf_variant(&c, "low.conf", &mem, "RealMemory=1000\nPartitionName");
    restart_agent_with(&mut c, "node2", &low);
    let reason = c.ok("sinfo", &["-h", "-R", "-o", "%n|%E"]);
    assert_eq!(reason.trim(), "node2|Low RealMemory", "{reason}");
    assert_eq!(c.log_text("droverctld").matches(DRIFT).count(), 2);
}

/// `DebugFlags=NO_CONF_HASH`: no warning for a different config (Slurm's
/// way to say the difference is intended).
#[test]
fn no_conf_hash_silences_the_drift_warning() {
    let Some(mut c) = hosts(2, &["DebugFlags=NO_CONF_HASH"]) else {
        return;
    };
    let drift = conf_variant(&c, "drift.conf", "SlurmdTimeout=4\n", "SlurmdTimeout=5\n");
    restart_agent_with(&mut c, "node2", &drift);
    assert!(!c.log_text("droverctld").contains(DRIFT));
}

/// srun typed on the controller host, a submit host that is no node: it
/// gets its own two-node allocation and the nodes connect back to it, so it
/// listens on the address it reaches the controller by (10.x), not on
/// 127.0.0.1 (which on a node is the node itself).
#[test]
fn srun_on_a_submit_host_runs_a_step_on_both_hosts() {
    let Some(c) = hosts(2, &[]) else { return };
    let out = c.run(
        "srun",
        &[
            "-N2",
            "-n2",
            "-l",
            "sh",
            "-c",
            "echo $(hostname) $SLURM_PROCID",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["0: node1 0", "1: node2 1"], "{text}");
}

/// A batch job over both hosts: the script on node1, one step task on each
/// host, each host's output file written by that host (`%N`) and read back
/// from the host that wrote it.
#[test]
fn a_batch_job_over_both_hosts_writes_each_hosts_output() {
    let Some(c) = hosts(2, &[]) else { return };
    let d = c.path().display().to_string();
    let id = c.sbatch(
        &["-N2", "-n2", "-o", &format!("{d}/batch-%j.out")],
        &format!(
            "#!/bin/sh\necho batch on $(hostname)\n\
             srun -o {d}/step-%N.out sh -c 'echo task $SLURM_PROCID on $(hostname)'\n"
        ),
    );
    c.expect_end(id, "COMPLETED");
    let batch = std::fs::read_to_string(c.path().join(format!("batch-{id}.out"))).unwrap();
    assert_eq!(batch.trim(), "batch on node1", "{batch}");
    for (i, host) in ["node1", "node2"].iter().enumerate() {
        let out = c
            .net
            .as_ref()
            .unwrap()
            .command(host, "cat")
            .arg(c.path().join(format!("step-{host}.out")))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.trim(), format!("task {i} on {host}"), "{host}: {text}");
    }
}
