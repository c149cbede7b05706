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
    /// (which the batch supervisor created) and return its join files
    /// ([`Version::join_file`]) for the tasks to write themselves into. The
    /// job-level limits cover the step; with `mem_bytes` (the step's `--mem`
    /// on this node) and the job's RAM constrained, the step also gets a
    /// memory limit of its own; `deny`: devices of the job the step may not
    /// open (its GPUs are fewer).
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
                sdir.join(self.plan.version.join_file())
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
                    sdir.join(Version::V1.join_file())
                        .into_os_string()
                        .into_encoded_bytes(),
                ) {
                    out.push(c);
                }
            }
        }
        Ok(out)
    }

    /// A task's own device group, `step_<id>/task_<n>`, for a task that may
    /// open fewer GPUs than its step (`deny`: the step's devices it may not
    /// open). v1: in the devices hierarchy only, the task's other groups
    /// stay the step's; v2: a child of the step's group with a deny program
    /// of its own (the step's and the job's programs apply too). Returns the
    /// task's join files: `step_files` with the step's devices group
    /// replaced by the task's.
    pub fn create_task(
        &self,
        step: &str,
        task: u32,
        deny: &[Dev],
        step_files: &[CString],
    ) -> Result<Vec<CString>, String> {
        let sdir = match self.plan.version {
            Version::V2 => Some(self.plan.root.join(&self.plan.job_rel).join(step)),
            Version::V1 => self.dir_of("devices").map(|d| d.join(step)),
        };
        let Some(sdir) = sdir.filter(|_| !deny.is_empty()) else {
            return Ok(step_files.to_vec());
        };
        let tdir = sdir.join(format!("task_{task}"));
        std::fs::create_dir_all(&tdir)
            .map_err(|e| format!("cannot create {}: {e}", tdir.display()))?;
        match self.plan.version {
            Version::V1 => {
                for d in deny {
                    write(
                        &tdir.join("devices.deny"),
                        &format!("c {}:{} rwm", d.major, d.minor),
                    )?;
                }
            }
            Version::V2 => super::bpf::attach_deny(&tdir, deny)?,
        }
        let file = self.plan.version.join_file();
        let procs = |d: &std::path::Path| {
            CString::new(d.join(file).into_os_string().into_encoded_bytes()).ok()
        };
        let (Some(old), Some(new)) = (procs(&sdir), procs(&tdir)) else {
            return Err(format!("bad cgroup path {}", tdir.display()));
        };
        Ok(step_files
            .iter()
            .map(|f| if *f == old { new.clone() } else { f.clone() })
            .collect())
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
            let sdir = dir.join(step);
            // Tasks' own device groups first (see `create_task`).
            for e in std::fs::read_dir(&sdir).into_iter().flatten().flatten() {
                if e.file_name().to_string_lossy().starts_with("task_") {
                    let _ = std::fs::remove_dir(e.path());
                }
            }
            let _ = std::fs::remove_dir(sdir);
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
