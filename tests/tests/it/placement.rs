//! Placement flags through the real daemons: node lists, features,
//! exclusive nodes, GPUs (fake device nodes), requeue from inside a job.

use std::time::Duration;

use drover_tests::{Cluster, Spec};

fn node_of(c: &Cluster, id: u32) -> String {
    c.wait_state(
        &id.to_string(),
        &["RUNNING", "COMPLETED"],
        Duration::from_secs(20),
    );
    c.job_field(&id.to_string(), "NodeList").unwrap_or_default()
}

#[test]
fn nodelist_exclude_constraint_exclusive_and_gpus() {
    let topology = "GresTypes=gpu\n\
         NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000 Feature=cpu,small\n\
         NodeName=node2 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000 Feature=gpu,big Gres=gpu:a100:2\n\
         PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n"
        .to_string();
    let c = Cluster::start(Spec {
        topology: Some(topology),
        ..Spec::default()
    });
    let long = "#!/bin/sh\nsleep 30\n";
    let a = c.sbatch(&["-w", "node2", "-o", "/dev/null"], long);
    assert_eq!(node_of(&c, a), "node2");
    let b = c.sbatch(&["-x", "node2", "-o", "/dev/null"], long);
    assert_eq!(node_of(&c, b), "node1");
    let f = c.sbatch(&["-C", "big&gpu", "-o", "/dev/null"], long);
    assert_eq!(node_of(&c, f), "node2");
    // As in Slurm, a feature no node has is refused even inside an OR.
    let o = c.run("sbatch", &["-C", "nothere|small", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("Invalid feature specification"));
    let f2 = c.sbatch(&["-C", "cpu|gpu", "-x", "node2", "-o", "/dev/null"], long);
    assert_eq!(node_of(&c, f2), "node1");
    // A GPU job sees only its GPUs.
    let out = c.path().join("gpu.out");
    let g = c.sbatch(
        &["--gres=gpu:a100:1", "-o", out.to_str().unwrap()],
        "#!/bin/sh\necho \"cvd=$CUDA_VISIBLE_DEVICES n=$SLURM_GPUS_ON_NODE\"\n",
    );
    assert_eq!(c.wait_done(g), "COMPLETED");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.starts_with("cvd=0 n=1") || text.starts_with("cvd=1 n=1"),
        "{text}"
    );
    // Exclusive: waits for a whole idle node, then holds all of it.
    for id in [a, b, f, f2] {
        c.ok("scancel", &[&id.to_string()]);
        c.wait_done(id);
    }
    let x = c.sbatch(&["--exclusive", "-w", "node1", "-o", "/dev/null"], long);
    c.wait_state(&x.to_string(), &["RUNNING"], Duration::from_secs(20));
    assert_eq!(c.job_field(&x.to_string(), "NumCPUs").as_deref(), Some("4"));
    let s = c.ok("sinfo", &["-h", "-N", "-n", "node1", "-o", "%t"]);
    assert_eq!(s.trim(), "alloc");
    let small = c.sbatch(&["-w", "node1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        c.job_field(&small.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );
    c.ok("scancel", &[&x.to_string()]);
    assert_eq!(c.wait_done(small), "COMPLETED");
}

#[test]
fn requeue_from_inside_the_job() {
    let c = Cluster::start(Spec {
        nodes: 1,
        ..Spec::default()
    });
    let out = c.path().join("rq.out");
    let id = c.sbatch(
        &["--open-mode=append", "-o", out.to_str().unwrap()],
        "#!/bin/bash\necho \"run $SLURM_RESTART_COUNT\"\n\
         if [ \"$SLURM_RESTART_COUNT\" = 0 ]; then scontrol requeue $SLURM_JOB_ID; sleep 60; fi\n",
    );
    c.expect_end(id, "COMPLETED");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "run 0\nrun 1\n");
    assert_eq!(
        c.job_field(&id.to_string(), "Restarts").as_deref(),
        Some("1")
    );
}
