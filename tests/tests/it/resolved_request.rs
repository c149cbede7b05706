//! A job's request is resolved once (partition defaults applied at submit
//! and at `scontrol update`), stored with the job, and the launch carries
//! the allocation made from it: the cgroup limit, `SLURM_MEM_PER_*` and
//! `scontrol show job` agree. Needs root and the v1 memory controller.

use std::path::Path;
use std::time::Duration;

use drover_tests::{Cluster, Spec};

fn can_limit_memory() -> bool {
    let root = drover_proto::sys::is_root();
    root && Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists()
}

const MIB: u64 = 1 << 20;

fn cluster(partition_extra: &str) -> Cluster {
    Cluster::start(Spec {
        nodes: 1,
        topology: Some(format!(
            "NodeName=node1 NodeAddr=127.0.0.1 Port={{AGENT_PORT}} CPUs=4 RealMemory=4000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP {partition_extra}\n"
        )),
        files: vec![("cgroup.conf".into(), "ConstrainRAMSpace=yes\n".into())],
        ..Spec::default()
    })
}

/// Prints the memory variables, then waits to be cancelled.
const SCRIPT: &str = "#!/bin/sh\necho \"MEM=${SLURM_MEM_PER_CPU:-}/${SLURM_MEM_PER_NODE:-} CPUS=$SLURM_CPUS_ON_NODE\"\nexec sleep 300\n";

/// Run held job `id` (released now) until its script printed its line;
/// the line and the job's cgroup memory limit in bytes, then cancel it.
fn release_and_read(c: &Cluster, id: u32, out: &Path) -> (String, u64) {
    let sid = id.to_string();
    c.ok("scontrol", &["release", &sid]);
    c.wait_state(&sid, &["RUNNING"], Duration::from_secs(30));
    let line = c.wait_file(out, |t| t.contains('\n'));
    let limit = Path::new("/sys/fs/cgroup/memory")
        .join(format!("drover/node1_{}/job_{id}", c.agent_port))
        .join("memory.limit_in_bytes");
    let limit = std::fs::read_to_string(&limit)
        .unwrap_or_else(|e| panic!("{}: {e}", limit.display()))
        .trim()
        .parse()
        .expect("a number");
    c.ok("scancel", &[&sid]);
    c.wait_done(id);
    (line.trim().to_string(), limit)
}

#[test]
fn partition_default_memory_per_cpu_decides_the_cgroup_limit() {
    if !can_limit_memory() {
        eprintln!("needs root and the v1 memory controller");
        return;
    }
    // The cluster-wide default says otherwise: the partition's wins.
    let c = cluster("DefMemPerCPU=100");
    let out = c.path().join("percpu.out");
    let id = c.sbatch(&["-H", "-c", "2", "-o", out.to_str().unwrap()], SCRIPT);
    let sid = id.to_string();
    assert_eq!(c.job_field(&sid, "MinMemoryCPU").as_deref(), Some("100M"));
    let (line, limit) = release_and_read(&c, id, &out);
    assert_eq!(line, "MEM=100/ CPUS=2");
    assert_eq!(limit, 200 * MIB, "DefMemPerCPU=100 with -c 2");
}

#[test]
fn updating_a_pending_jobs_memory_changes_the_launched_limit() {
    if !can_limit_memory() {
        eprintln!("needs root and the v1 memory controller");
        return;
    }
    let c = cluster("DefMemPerCPU=100");
    let out = c.path().join("update.out");
    let id = c.sbatch(&["-H", "-c", "2", "-o", out.to_str().unwrap()], SCRIPT);
    let sid = id.to_string();
    c.ok(
        "scontrol",
        &["update", &format!("JobId={id}"), "MinMemoryNode=300"],
    );
    assert_eq!(c.job_field(&sid, "MinMemoryNode").as_deref(), Some("300M"));
    let (line, limit) = release_and_read(&c, id, &out);
    assert_eq!(line, "MEM=/300 CPUS=2");
    assert_eq!(limit, 300 * MIB);
}

#[test]
fn a_request_resolved_at_submit_survives_a_restart_with_new_defaults() {
    if !can_limit_memory() {
        eprintln!("needs root and the v1 memory controller");
        return;
    }
    let mut c = cluster("DefMemPerCPU=100");
    let out = c.path().join("restart.out");
    let id = c.sbatch(&["-H", "-c", "2", "-o", out.to_str().unwrap()], SCRIPT);
    // The partition's default changes while the job waits; its request was
    // resolved (and logged) at submit, as Slurm does.
    c.kill_ctld();
    let conf = std::fs::read_to_string(&c.conf).unwrap();
    std::fs::write(
        &c.conf,
        conf.replace("DefMemPerCPU=100", "DefMemPerCPU=300"),
    )
    .unwrap();
    c.start_ctld().unwrap();
    let (line, limit) = release_and_read(&c, id, &out);
    assert_eq!(line, "MEM=100/ CPUS=2");
    assert_eq!(limit, 200 * MIB);
    // A job submitted now gets the new default.
    let out = c.path().join("after.out");
    let id = c.sbatch(&["-H", "-c", "2", "-o", out.to_str().unwrap()], SCRIPT);
    let (line, limit) = release_and_read(&c, id, &out);
    assert_eq!(line, "MEM=300/ CPUS=2");
    assert_eq!(limit, 600 * MIB);
}

#[test]
fn partition_memory_maxima_refuse_or_add_cpus_as_slurm_does() {
    let c = Cluster::start(Spec {
        nodes: 1,
        topology: Some(
            "NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=8 RealMemory=4000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP MaxMemPerNode=1000\n\
             PartitionName=percpu Nodes=ALL MaxTime=UNLIMITED State=UP MaxMemPerCPU=100\n"
                .into(),
        ),
        ..Spec::default()
    });
    let script = c.script("hold.sh", "#!/bin/sh\ntrue\n");
    let script = script.to_str().unwrap();
    let out = c.run("sbatch", &["-H", "--mem=2000", script]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Batch job submission failed: Memory required by task is not available"),
        "{err}"
    );
    // Within the maximum: accepted as asked.
    let id = c.sbatch(&["-H", "--mem=1000"], "#!/bin/sh\ntrue\n");
    assert_eq!(
        c.job_field(&id.to_string(), "MinMemoryNode").as_deref(),
        Some("1000M")
    );
    // 250 MiB per CPU with -c 2 under MaxMemPerCPU=100: 5 CPUs per task at
    // 100 MiB each, the task's 500 MiB kept.
    let id = c.sbatch(
        &["-H", "-p", "percpu", "--mem-per-cpu=250", "-c", "2"],
        "#!/bin/sh\ntrue\n",
    );
    let sid = id.to_string();
    assert_eq!(c.job_field(&sid, "CPUs/Task").as_deref(), Some("5"));
    assert_eq!(c.job_field(&sid, "MinMemoryCPU").as_deref(), Some("100M"));
    assert_eq!(c.job_field(&sid, "NumCPUs").as_deref(), Some("5"));
}
