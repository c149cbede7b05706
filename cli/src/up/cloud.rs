//! `drover up --cloud-nodes N`: N emulated cloud nodes (`State=CLOUD`),
//! powered down until a job needs them. Their ResumeProgram starts an agent
//! of their own (one `droverd -N cloudK` each, on the node's port) as a
//! cloud CLI would start an instance; their SuspendProgram stops it. The
//! text builders are pure; [`stop_instances`] stops what is left at exit.

use std::path::Path;

/// Idle seconds before a cloud node of the demo is powered down.
pub const SUSPEND_TIME: u32 = 30;

/// `cloud[1-N]` (or `cloud1`).
pub fn cloud_expr(n: u32) -> String {
    if n == 1 {
        "cloud1".into()
    } else {
        format!("cloud[1-{n}]")
    }
}

/// The drover.conf lines of the cloud nodes and their partition.
pub fn config_lines(dir: &str, ports: &[u16], cpus: u32, mem_mb: u64) -> String {
    let mut c = String::new();
    c.push_str("# Power saving: the cloud nodes only (their partition's SuspendTime)\n");
    c.push_str(&format!("SuspendProgram={dir}/power/suspend.sh\n"));
    c.push_str(&format!("ResumeProgram={dir}/power/resume.sh\n"));
    c.push_str("SuspendTimeout=10\nResumeTimeout=60\n");
    c.push_str("PrivateData=cloud\n");
    for (i, p) in ports.iter().enumerate() {
        c.push_str(&format!(
            "NodeName=cloud{} NodeAddr=127.0.0.1 Port={p} CPUs={cpus} RealMemory={mem_mb} \
             State=CLOUD\n",
            i + 1
        ));
    }
    c.push_str(&format!(
        "PartitionName=cloud Nodes={} MaxTime=UNLIMITED State=UP SuspendTime={SUSPEND_TIME}\n",
        cloud_expr(ports.len() as u32)
    ));
    c
}

/// ResumeProgram: one agent per node, in a session of its own, its pid in
/// `DIR/run/cloud-NODE.pid`, its log in `DIR/log/droverd-NODE.log`.
pub fn resume_script(dir: &str, conf: &str) -> String {
    format!(
        "#!/bin/sh\n# Written by drover up: \"power up\" emulated cloud nodes (an agent each).\n\
         # A real site would call its cloud's CLI here (see the admin guide).\n\
         for n in $(SLURM_CONF={conf} {dir}/bin/scontrol show hostnames \"$1\"); do\n\
         \tsetsid {dir}/bin/droverd -D -f {conf} -N \"$n\" \
         >>{dir}/log/droverd-$n.log 2>&1 </dev/null &\n\
         \techo $! > {dir}/run/cloud-$n.pid\ndone\n"
    )
}

/// SuspendProgram: stop those agents.
pub fn suspend_script(dir: &str, conf: &str) -> String {
    format!(
        "#!/bin/sh\n# Written by drover up: \"power down\" emulated cloud nodes.\n\
         for n in $(SLURM_CONF={conf} {dir}/bin/scontrol show hostnames \"$1\"); do\n\
         \tf={dir}/run/cloud-$n.pid\n\
         \t[ -f \"$f\" ] && kill \"$(cat \"$f\")\" 2>/dev/null\n\
         \trm -f \"$f\"\ndone\nexit 0\n"
    )
}

/// Stop the cloud nodes' agents still running (drover up is stopping).
pub fn stop_instances(dir: &Path) {
    let Ok(list) = std::fs::read_dir(dir.join("run")) else {
        return;
    };
    for e in list.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !(name.starts_with("cloud-") && name.ends_with(".pid")) {
            continue;
        }
        let pid = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        if let Some(pid) = pid.filter(|&p| p > 1) {
            let _ = drover_proto::sys::kill(pid, libc::SIGTERM);
        }
        let _ = std::fs::remove_file(e.path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lines_parse_and_name_the_programs() {
        let lines = config_lines("/c", &[7100, 7101], 2, 1000);
        let text = format!(
            "ClusterName=c\nNodeName=node1 CPUs=2\nPartitionName=debug Nodes=node1 Default=YES\n\
             {lines}"
        );
        let (cfg, _) =
            drover_conf::slurmconf::parse_str(&text, "c.conf", &mut |p| Err(format!("no {p}")))
                .unwrap();
        assert_eq!(
            cfg.power.resume_program.as_deref(),
            Some("/c/power/resume.sh")
        );
        assert_eq!(cfg.power.suspend_time, None);
        let part = cfg.partition("cloud").unwrap();
        assert_eq!(part.nodes, vec!["cloud1".to_string(), "cloud2".to_string()]);
        assert_eq!(
            drover_conf::power::partition_secs(part, "SuspendTime"),
            Some(Some(u64::from(SUSPEND_TIME)))
        );
        assert_eq!(cfg.node("cloud2").unwrap().state, "CLOUD");
        assert_eq!(cfg.node("cloud2").unwrap().port, 7101);
    }

    #[test]
    fn scripts_start_and_stop_one_agent_per_node() {
        let r = resume_script("/c", "/c/slurm.conf");
        assert!(r.contains("/c/bin/droverd -D -f /c/slurm.conf -N \"$n\""));
        assert!(r.contains("/c/run/cloud-$n.pid"));
        let s = suspend_script("/c", "/c/slurm.conf");
        assert!(s.contains("kill \"$(cat \"$f\")\""));
    }
}
