//! Cost of one job's cgroup life cycle on this host: create the groups with
//! a memory limit and a cpuset, start `sh -c true` inside (the child joins
//! before exec, as the supervisor's does), kill/usage, remove. Needs root
//! and cgroups; prints per-job milliseconds.
//!
//!   cargo bench -p drover-nodeagent --bench cgroup_cycle [-- N]

use std::process::Command;
use std::time::{Duration, Instant};

use drover_conf::CgroupConf;
use drover_nodeagent::cgroup::job::JobCgroup;
use drover_nodeagent::cgroup::{Plan, System};

fn main() {
    let n: u32 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200);
    if drover_proto::sys::geteuid() != 0 {
        println!("cgroup_cycle: needs root");
        return;
    }
    let sys = match System::detect(&CgroupConf::default()) {
        Ok(Some(s)) => s,
        other => {
            println!("cgroup_cycle: no usable cgroups ({other:?})");
            return;
        }
    };
    let port = 50000 + (std::process::id() % 10000) as u16;
    sys.prepare_node("cgbench", port).expect("prepare node");
    let mut phases = [Duration::ZERO; 4];
    for i in 0..n {
        let inputs = sys.plan_inputs(port, 0, 1, &[], &|_| None);
        let mut p: Plan = Plan::build(
            &inputs,
            &drover_proto::LaunchRequest {
                job_id: 930_000 + i,
                node: "cgbench".into(),
                ..Default::default()
            },
        );
        p.mem_bytes = Some(256 << 20);
        p.cpus = Some("0".into());
        let cg = JobCgroup::open(p);
        let t0 = Instant::now();
        cg.create().expect("create");
        let t1 = Instant::now();
        let files = cg.join_files();
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "true"]);
        drover_proto::sys::join_cgroups_in_child(&mut cmd, files);
        assert!(cmd.status().expect("run").success());
        let t2 = Instant::now();
        cg.kill_all();
        let _ = (cg.usage(), cg.oom_kills());
        let t3 = Instant::now();
        cg.remove().expect("remove");
        let t4 = Instant::now();
        for (k, d) in [t1 - t0, t2 - t1, t3 - t2, t4 - t3].into_iter().enumerate() {
            phases[k] += d;
        }
    }
    // Leave nothing behind.
    let scope = format!("drover/cgbench_{port}");
    let _ = std::fs::remove_dir(sys.root.join(&scope));
    for (_, m) in &sys.v1_mounts {
        let _ = std::fs::remove_dir(m.join(&scope));
    }
    let per = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(n);
    println!(
        "cgroup_cycle ({} jobs, {}): create {:.2} ms, run `true` inside {:.2} ms, kill+usage {:.2} ms, remove {:.2} ms",
        n,
        sys.describe(),
        per(phases[0]),
        per(phases[1]),
        per(phases[2]),
        per(phases[3])
    );
}
