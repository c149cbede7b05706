//! The groups of srun steps under a job's groups (`step_<id>`): an optional
//! memory limit of their own (`srun --mem`), and what the kernel counted for
//! them (OOM kills, peak memory, CPU time) before they are removed.

use std::ffi::CString;
use std::path::PathBuf;

use super::job::{keyed, no_load_balance, read, sum_tree, v2_enable_down, write, JobCgroup};
use super::plan::Version;
use super::Dev;

/// What a step's groups counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepStats {
    /// Processes of the step the OOM killer killed.
    pub oom_kills: u64,
    pub cpu_usec: Option<u64>,
    pub mem_peak_kb: Option<u64>,
}

impl JobCgroup {
    /// v1: the step's group in the cpuacct hierarchy (steps only: the batch
    /// step gets its CPU time from the supervisor's rusage, and a join costs
    /// an attach per hierarchy), unless cpuacct shares a mount Drover uses
    /// already.
    fn cpuacct_step(&self, step: &str) -> Option<PathBuf> {
        if self.plan.version != Version::V1 {
            return None;
        }
        let m = self.mount("cpuacct")?;
        let dir = m.join(&self.plan.job_rel);
        if self.job_dirs().iter().any(|(_, d)| *d == dir) {
            return None;
        }
        Some(dir.join(step))
    }

    /// Create the `step_<id>` group of an srun step under the job's groups
    /// (which the batch supervisor created) and return its `cgroup.procs`
    /// files for the tasks to join. The job-level limits cover the step;
    /// with `mem_bytes` (the step's `--mem` on this node) and the job's RAM
    /// constrained, the step also gets a memory limit of its own; `deny`:
    /// devices of the job the step may not open (its GPUs are fewer).
    pub fn create_step(
        &self,
        step: &str,
        mem_bytes: Option<u64>,
        deny: &[Dev],
    ) -> Result<Vec<CString>, String> {
        let mem = mem_bytes.filter(|_| self.plan.mem_bytes.is_some());
        if mem.is_some() && self.plan.version == Version::V2 {
            // The job's group must hand the memory controller down.
            v2_enable_down(&self.plan.root, &format!("{}/{step}", self.plan.job_rel))?;
        }
        let mut out = Vec::new();
        for (ctrl, dir) in self.job_dirs() {
            let sdir = dir.join(step);
            std::fs::create_dir_all(&sdir)
                .map_err(|e| format!("cannot create {}: {e}", sdir.display()))?;
            if ctrl == "cpuset" {
                no_load_balance(&sdir);
                for f in ["cpuset.cpus", "cpuset.mems"] {
                    let v = read(&dir.join(f)).unwrap_or_default();
                    write(&sdir.join(f), v.trim())?;
                }
            }
            if ctrl == "devices" {
                for d in deny {
                    write(
                        &sdir.join("devices.deny"),
                        &format!("c {}:{} rwm", d.major, d.minor),
                    )?;
                }
            }
            if self.plan.version == Version::V2 && !deny.is_empty() {
                // Programs of the job's group (BPF_F_ALLOW_MULTI) apply too.
                super::bpf::attach_deny(&sdir, deny)?;
            }
            if let Some(m) = mem {
                match self.plan.version {
                    Version::V1 if ctrl == "memory" => {
                        write(&sdir.join("memory.limit_in_bytes"), &m.to_string())?
                    }
                    Version::V2 => write(&sdir.join("memory.max"), &m.to_string())?,
                    Version::V1 => {}
                }
            }
            if let Ok(c) = CString::new(
                sdir.join("cgroup.procs")
                    .into_os_string()
                    .into_encoded_bytes(),
            ) {
                out.push(c);
            }
        }
        // CPU time is a nicety: without the group the step still runs.
        if let Some(sdir) = self.cpuacct_step(step) {
            if std::fs::create_dir_all(&sdir).is_ok() {
                if let Ok(c) = CString::new(
                    sdir.join("cgroup.procs")
                        .into_os_string()
                        .into_encoded_bytes(),
                ) {
                    out.push(c);
                }
            }
        }
        Ok(out)
    }

    /// What the kernel counted for a step (read before [`remove_step`]).
    ///
    /// [`remove_step`]: JobCgroup::remove_step
    pub fn step_stats(&self, step: &str) -> StepStats {
        let Some(dir) = self.dir_of("memory").map(|d| d.join(step)) else {
            return StepStats::default();
        };
        let num = |f: &str| {
            read(&dir.join(f))
                .and_then(|t| t.trim().parse::<u64>().ok())
                .map(|b| b / 1024)
        };
        match self.plan.version {
            Version::V1 => {
                // v1 counts a kill in the killed task's own group only.
                let mut oom = 0;
                sum_tree(&dir, "memory.oom_control", "oom_kill", &mut oom, 0);
                StepStats {
                    oom_kills: oom,
                    cpu_usec: self
                        .cpuacct_step(step)
                        .and_then(|d| read(&d.join("cpuacct.usage")))
                        .and_then(|t| t.trim().parse::<u64>().ok())
                        .map(|ns| ns / 1000),
                    mem_peak_kb: num("memory.max_usage_in_bytes"),
                }
            }
            Version::V2 => StepStats {
                oom_kills: read(&dir.join("memory.events"))
                    .and_then(|t| keyed(&t, "oom_kill"))
                    .unwrap_or(0),
                cpu_usec: read(&dir.join("cpu.stat")).and_then(|t| keyed(&t, "usage_usec")),
                mem_peak_kb: num("memory.peak"),
            },
        }
    }

    /// Remove an empty step group (best effort).
    pub fn remove_step(&self, step: &str) {
        for (_, dir) in self.job_dirs() {
            let _ = std::fs::remove_dir(dir.join(step));
        }
        if let Some(sdir) = self.cpuacct_step(step) {
            let _ = std::fs::remove_dir(&sdir);
            // The job's cpuacct group holds steps only: gone with the last.
            if let Some(job) = sdir.parent() {
                let _ = std::fs::remove_dir(job);
            }
        }
    }
}
