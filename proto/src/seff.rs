//! seff's report layout, line for line, from plain figures: `seff` prints
//! it from the accounting record (cli/src/seff/report.rs) and END/FAIL
//! mails carry it from what the controller knows when the job ends
//! (ctld/src/mail/), as Slurm's contributed `smail` mails what `seff`
//! prints. Pure.

/// What the summary is made of.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub job_id: u32,
    /// `42_3` for an array task (then the first line is `Job ID: <job_id>`
    /// and the second `Array Job ID: 42_3`, as seff).
    pub array_id: Option<String>,
    pub cluster: String,
    pub user: String,
    pub group: String,
    /// Slurm's long state name.
    pub state: String,
    pub finished: bool,
    pub exit_code: i32,
    pub nodes: u32,
    /// CPUs allocated, all nodes.
    pub cpus: u32,
    pub elapsed_secs: u64,
    pub cpu_secs: u64,
    pub max_rss_kb: u64,
    /// Memory allocated, all nodes (MiB).
    pub mem_mb: u64,
    pub gpus: u32,
    pub gpu_util_pct: u32,
    pub gpu_mem_mb: u64,
}

/// `1.50 GB`, `512.00 MB` (seff's `kbytes2str`).
pub fn kb_text(kb: u64) -> String {
    let kb = kb as f64;
    let k = 1024.0;
    if kb >= k * k * k {
        format!("{:.2} TB", kb / (k * k * k))
    } else if kb >= k * k {
        format!("{:.2} GB", kb / (k * k))
    } else if kb >= k {
        format!("{:.2} MB", kb / k)
    } else {
        format!("{kb:.2} KB")
    }
}

/// `HH:MM:SS`, `D-HH:MM:SS` from a day on.
fn hms(secs: u64) -> String {
    drover_conf::units::format_hms(secs)
}

/// seff's report of one job, line for line.
pub fn efficiency_summary(u: &Usage) -> String {
    let mut o = String::new();
    match &u.array_id {
        Some(a) => o.push_str(&format!("Job ID: {}\nArray Job ID: {a}\n", u.job_id)),
        None => o.push_str(&format!("Job ID: {}\n", u.job_id)),
    }
    o.push_str(&format!("Cluster: {}\n", u.cluster));
    o.push_str(&format!("User/Group: {}/{}\n", u.user, u.group));
    if u.finished {
        o.push_str(&format!("State: {} (exit code {})\n", u.state, u.exit_code));
    } else {
        o.push_str(&format!("State: {}\n", u.state));
    }
    let nodes = u.nodes.max(1);
    o.push_str(&format!("Nodes: {nodes}\n"));
    o.push_str(&format!("Cores per node: {}\n", u.cpus / nodes));
    o.push_str(&format!("CPU Utilized: {}\n", hms(u.cpu_secs)));
    let core_wall = u.elapsed_secs * u64::from(u.cpus);
    let cpu_pct = if core_wall > 0 {
        u.cpu_secs as f64 * 100.0 / core_wall as f64
    } else {
        0.0
    };
    o.push_str(&format!(
        "CPU Efficiency: {cpu_pct:.2}% of {} core-walltime\n",
        hms(core_wall)
    ));
    o.push_str(&format!("Job Wall-clock time: {}\n", hms(u.elapsed_secs)));
    o.push_str(&format!("Memory Utilized: {}\n", kb_text(u.max_rss_kb)));
    let mem_pct = if u.mem_mb > 0 {
        u.max_rss_kb as f64 * 100.0 / (u.mem_mb as f64 * 1024.0)
    } else {
        0.0
    };
    let mem = if u.mem_mb > 0 {
        kb_text(u.mem_mb * 1024)
    } else {
        "0.00 MB".into()
    };
    o.push_str(&format!("Memory Efficiency: {mem_pct:.2}% of {mem}\n"));
    if u.gpus > 0 {
        o.push_str(&format!("GPUs: {}\n", u.gpus));
        o.push_str(&format!("GPU Utilization: {}%\n", u.gpu_util_pct));
        o.push_str(&format!(
            "GPU Memory Utilized: {}\n",
            kb_text(u.gpu_mem_mb * 1024)
        ));
    }
    if !u.finished {
        o.push_str("WARNING: Efficiency statistics may be misleading for RUNNING jobs.\n");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seff_layout() {
        let u = Usage {
            job_id: 42,
            cluster: "lab".into(),
            user: "alice".into(),
            group: "users".into(),
            state: "COMPLETED".into(),
            finished: true,
            exit_code: 0,
            nodes: 1,
            cpus: 4,
            elapsed_secs: 600,
            cpu_secs: 1200,
            max_rss_kb: 512 * 1024,
            mem_mb: 2048,
            ..Default::default()
        };
        assert_eq!(
            efficiency_summary(&u),
            "Job ID: 42\n\
             Cluster: lab\n\
             User/Group: alice/users\n\
             State: COMPLETED (exit code 0)\n\
             Nodes: 1\n\
             Cores per node: 4\n\
             CPU Utilized: 00:20:00\n\
             CPU Efficiency: 50.00% of 00:40:00 core-walltime\n\
             Job Wall-clock time: 00:10:00\n\
             Memory Utilized: 512.00 MB\n\
             Memory Efficiency: 25.00% of 2.00 GB\n"
        );
        let gpu = Usage {
            array_id: Some("40_2".into()),
            gpus: 2,
            gpu_util_pct: 80,
            gpu_mem_mb: 1536,
            ..u
        };
        let t = efficiency_summary(&gpu);
        assert!(t.starts_with("Job ID: 42\nArray Job ID: 40_2\n"), "{t}");
        assert!(t.contains("GPUs: 2\nGPU Utilization: 80%\nGPU Memory Utilized: 1.50 GB\n"));
        let empty = efficiency_summary(&Usage::default());
        assert!(empty.contains("CPU Efficiency: 0.00% of 00:00:00 core-walltime"));
        assert!(empty.contains("Memory Efficiency: 0.00% of 0.00 MB"));
        assert!(empty.ends_with("misleading for RUNNING jobs.\n"));
    }
}
