//! Partition OverSubscribe: jobs sharing CPUs (FORCE[:N], YES[:N] with
//! -s/--oversubscribe) on a one-node, 2-CPU cluster.

use std::path::{Path, PathBuf};
use std::time::Duration;

use drover_tests::{Cluster, Spec};

const T: Duration = Duration::from_secs(30);

fn two_cpus(over_subscribe: &str) -> Cluster {
    let topology = format!(
        "NodeName=node1 NodeAddr=127.0.0.1 Port={{AGENT_PORT}} CPUs=2 RealMemory=2000\n\
         PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP OverSubscribe={over_subscribe}\n"
    );
    Cluster::start(Spec {
        nodes: 1,
        topology: Some(topology),
        ..Spec::default()
    })
}

fn wait_reason(c: &Cluster, id: u32, want: &str) {
    let deadline = std::time::Instant::now() + T;
    loop {
        let r = c.job_field(&id.to_string(), "Reason").unwrap_or_default();
        if r == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job {id}: reason {r}, want {want}\n{}",
            c.ok("scontrol", &["show", "job", &id.to_string()])
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A 2-CPU job (extra sbatch `args`) whose script writes a file and sleeps.
fn submit(c: &Cluster, name: &str, args: &[&str]) -> (u32, PathBuf) {
    let f = c.path().join(format!("{name}.started"));
    let script = format!("#!/bin/sh\necho up > {}\nsleep 300\n", f.display());
    let mut a = vec!["-c2", "--mem=100", "-o", "/dev/null"];
    a.extend_from_slice(args);
    (c.sbatch(&a, &script), f)
}

fn running(c: &Cluster, id: u32, f: &Path) {
    c.wait_state(&id.to_string(), &["RUNNING"], T);
    c.wait_file(f, |s| s.contains("up"));
}

fn cancel(c: &Cluster, ids: &[u32]) {
    for id in ids {
        c.run("scancel", &[&id.to_string()]);
    }
}

#[test]
fn oversubscribe_force2_runs_two_jobs_on_two_cpus() {
    let mut c = two_cpus("FORCE:2");
    let (a, fa) = submit(&c, "a", &[]);
    let (b, fb) = submit(&c, "b", &[]);
    running(&c, a, &fa);
    running(&c, b, &fb);
    let (d, fd) = submit(&c, "d", &[]);
    wait_reason(&c, d, "Resources");
    let show = c.ok("scontrol", &["show", "job", &a.to_string()]);
    assert!(show.contains("OverSubscribe=OK"), "{show}");
    // Both jobs on CPUs 0-1: two CPUs allocated, never more.
    let node = c.ok("scontrol", &["show", "node", "node1"]);
    assert!(node.contains("CPUAlloc=2"), "{node}");
    let sinfo = c.ok("sinfo", &["-h", "-o", "%C"]);
    assert_eq!(sinfo.trim(), "2/0/0/2", "{sinfo}");
    // The controller restarts: the two still share, the third still waits.
    c.kill_ctld();
    c.start_ctld().unwrap();
    for id in [a, b] {
        c.wait_state(&id.to_string(), &["RUNNING"], T);
    }
    wait_reason(&c, d, "Resources");
    let node = c.ok("scontrol", &["show", "node", "node1"]);
    assert!(node.contains("CPUAlloc=2"), "{node}");
    // One ends: its place on the CPUs is free again, the third starts.
    cancel(&c, &[a]);
    running(&c, d, &fd);
    cancel(&c, &[b, d]);
}

#[test]
fn oversubscribe_no_runs_one_job_at_a_time() {
    let c = two_cpus("NO");
    let (a, fa) = submit(&c, "a", &["-s"]);
    running(&c, a, &fa);
    let (b, _) = submit(&c, "b", &["-s"]);
    wait_reason(&c, b, "Resources");
    let show = c.ok("scontrol", &["show", "job", &a.to_string()]);
    assert!(show.contains("OverSubscribe=NO"), "{show}");
    cancel(&c, &[a, b]);
}

#[test]
fn oversubscribe_yes2_shares_only_with_the_flag() {
    let c = two_cpus("YES:2");
    let (a, fa) = submit(&c, "a", &["--oversubscribe"]);
    running(&c, a, &fa);
    // Without -s: needs CPUs nobody uses.
    let (b, _) = submit(&c, "b", &[]);
    wait_reason(&c, b, "Resources");
    let show = c.ok("scontrol", &["show", "job", &b.to_string()]);
    assert!(show.contains("OverSubscribe=NO"), "{show}");
    // With -s: shares a's CPUs (b, ahead of it, cannot start anyway).
    let (d, fd) = submit(&c, "d", &["-s"]);
    running(&c, d, &fd);
    let show = c.ok("scontrol", &["show", "job", &d.to_string()]);
    assert!(show.contains("OverSubscribe=OK"), "{show}");
    // srun -s outside an allocation shares too (d's place, once it ends).
    cancel(&c, &[d]);
    let out = c.run("srun", &["-s", "-c2", "--mem=100", "echo", "shared-step"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("shared-step"), "{out:?}");
    cancel(&c, &[a, b]);
}
