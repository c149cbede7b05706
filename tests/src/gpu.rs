//! GPU tests without GPUs: fake NVIDIA device nodes, whether this machine
//! can confine jobs to devices, and a one-node cluster with two fake GPUs.

use std::path::Path;

use crate::{Cluster, Spec};

/// Fake GPUs for binding tests: character devices 195:N named `nvidiaN` in
/// `dir` (no driver behind them: opening an allowed one gives ENXIO, one the
/// device cgroup denies gives EPERM). Needs root.
pub fn fake_gpus(dir: &Path, n: u32) {
    for i in 0..n {
        let p = dir.join(format!("nvidia{i}"));
        crate::sys::mknod_char(&p, 195, i).unwrap_or_else(|e| panic!("mknod {}: {e}", p.display()));
    }
}

/// Can this machine confine jobs with cgroup v1 devices and cpusets (and
/// create device nodes)? Says why not when it cannot.
pub fn can_bind_devices() -> bool {
    let root = crate::sys::geteuid() == 0;
    let v1 = |c: &str| {
        Path::new("/sys/fs/cgroup")
            .join(c)
            .join("cgroup.procs")
            .exists()
    };
    if !root || !v1("devices") || !v1("cpuset") {
        eprintln!("needs root and the v1 devices and cpuset controllers");
        return false;
    }
    true
}

/// A one-node cluster (2 CPUs) with two fake GPUs in `devs` and this
/// cgroup.conf; None when the machine cannot bind devices.
pub fn gpu_cluster(devs: &Path, cgroup_conf: &str) -> Option<Cluster> {
    gpu_cluster_with(devs, cgroup_conf, &[])
}

/// [`gpu_cluster`] with extra drover.conf lines (`TaskPlugin=...`).
pub fn gpu_cluster_with(devs: &Path, cgroup_conf: &str, extra: &[&str]) -> Option<Cluster> {
    if !can_bind_devices() {
        return None;
    }
    fake_gpus(devs, 2);
    let d = devs.display().to_string();
    Some(Cluster::start(Spec {
        nodes: 1,
        extra: std::iter::once("GresTypes=gpu")
            .chain(extra.iter().copied())
            .map(String::from)
            .collect(),
        topology: Some(
            "NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=2 RealMemory=4000 Gres=gpu:2\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n"
                .into(),
        ),
        files: vec![
            (
                "gres.conf".into(),
                format!("NodeName=node1 Name=gpu File={d}/nvidia[0-1]\n"),
            ),
            ("cgroup.conf".into(), cgroup_conf.into()),
        ],
        ..Spec::default()
    }))
}
