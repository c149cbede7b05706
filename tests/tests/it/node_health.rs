//! A node that cannot confine jobs as cgroup.conf asks drains itself with
//! the reason (path and why, no errno numbers), and the job it could not set
//! up goes back to the queue instead of running unconfined or failing.

use std::path::Path;
use std::time::{Duration, Instant};

use drover_tests::{field, Cluster, Spec};

fn root() -> bool {
    drover_proto::sys::is_root()
}

/// Wait for node1's `Reason=` to satisfy `pred`; returns `scontrol show node`.
fn wait_node_reason(c: &Cluster, pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = c.run("scontrol", &["show", "node", "node1"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if field(&text, "Reason").is_some_and(|r| pred(&r)) || pred_line(&text, &pred) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "node reason never matched: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `Reason=` runs to the end of its line (it has spaces).
fn pred_line(text: &str, pred: &impl Fn(&str) -> bool) -> bool {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("Reason="))
        .any(pred)
}

#[test]
fn unusable_cgroup_conf_registers_the_node_drained() {
    if !root() {
        eprintln!("needs root (the agent only uses cgroups as root)");
        return;
    }
    let c = Cluster::start_any(Spec {
        nodes: 1,
        files: vec![(
            "cgroup.conf".into(),
            "CgroupPlugin=cgroup/v2\nCgroupMountpoint={DIR}/no-cgroup-here\nConstrainRAMSpace=yes\n"
                .into(),
        )],
        ..Spec::default()
    });
    let mount = c.path().join("no-cgroup-here").display().to_string();
    let node = wait_node_reason(&c, |r| r.contains("cgroup v2 is not mounted"));
    assert!(
        node.contains(&format!("CgroupMountpoint={mount}")),
        "{node}"
    );
    assert!(!node.contains("os error"), "{node}");
    let state = field(&node, "State").unwrap_or_default();
    assert!(state.contains("DRAIN"), "{node}");
    let r = c.ok("sinfo", &["-R", "-h", "-o", "%n %E"]);
    assert!(
        r.contains("node1 cgroup.conf: cgroup v2 is not mounted"),
        "{r}"
    );
    // Nothing is started there.
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let q = c.ok("squeue", &["-h", "-j", &id.to_string(), "-o", "%T"]);
    assert_eq!(q.trim(), "PENDING");
}

#[test]
fn a_job_whose_cgroup_cannot_be_made_is_requeued_and_drains_the_node() {
    let cpuset = Path::new("/sys/fs/cgroup/cpuset");
    if !root() || !cpuset.join("cgroup.procs").exists() || num_cpus() < 2 {
        eprintln!("needs root, the v1 cpuset controller and 2 CPUs");
        return;
    }
    let c = Cluster::start(Spec {
        nodes: 1,
        cpus: 2,
        files: vec![("cgroup.conf".into(), "ConstrainCores=yes\n".into())],
        ..Spec::default()
    });
    // Someone shrank the node's cpuset behind the agent's back: a 2-CPU job
    // cannot get CPUs 0-1 there.
    let node_cpus = cpuset
        .join(format!("drover/node1_{}", c.agent_port))
        .join("cpuset.cpus");
    std::fs::write(&node_cpus, "0").unwrap();
    let done = c.path().join("done");
    let id = c.sbatch(
        &["-c2", "-o", "/dev/null"],
        &format!("#!/bin/sh\ntouch {}\n", done.display()),
    );
    let sid = id.to_string();
    let node = wait_node_reason(&c, |r| r.starts_with("cgroup setup failed"));
    // The path and the kernel's words (EACCES or EINVAL, by kernel).
    assert!(node.contains("/cpuset.cpus: "), "{node}");
    assert!(node.contains(&format!("job_{id}")), "{node}");
    assert!(!node.contains("os error"), "{node}");
    // The job was not the problem: back in the queue, not failed.
    let state = c.wait_state(&sid, &["PENDING"], Duration::from_secs(30));
    assert_eq!(state, "PENDING");
    let restarts = c.job_field(&sid, "Restarts").unwrap_or_default();
    assert_eq!(restarts, "1");
    assert!(!done.exists());
    // Fixed and resumed, the node runs it.
    std::fs::write(&node_cpus, "0-1").unwrap();
    c.ok("scontrol", &["update", "NodeName=node1", "State=RESUME"]);
    c.expect_end(id, "COMPLETED");
    assert!(done.exists());
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
