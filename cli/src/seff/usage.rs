//! The measured figures of a finished job that seff and `drover advise`
//! reason about, taken from its accounting record; and the worst case of
//! several (an array's tasks, a group of similar jobs). Pure.

use drover_proto::acct::JobRecord;
use drover_proto::{JobState, GPU_OOM_COMMENT};

/// What a job asked for and what it used.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub state: JobState,
    /// Killed by the host memory limit (cgroup OOM).
    pub host_oom: bool,
    /// Its node found a GPU out-of-memory error in its stderr.
    pub gpu_oom: bool,
    pub partition: String,
    pub nodes: u32,
    pub cpus: u32,
    pub tasks: u32,
    /// Seconds run.
    pub elapsed: u64,
    /// CPU seconds used.
    pub cpu_secs: u64,
    /// CPUs busy on average (CPU time / wall time).
    pub busy_cpus: f64,
    /// Largest peak resident memory of a step (one node), KiB.
    pub peak_rss_kb: u64,
    /// `--mem` per node or `--mem-per-cpu` (see `mem_per_cpu`), MiB.
    pub mem_asked_mb: u64,
    pub mem_per_cpu: bool,
    /// The memory a node gave the job, MiB (0 = not known/unlimited).
    pub mem_limit_mb: u64,
    /// Minutes, `drover_proto::INFINITE` = none.
    pub time_limit_min: u32,
    pub gpus: u32,
    pub gpu_type: String,
    /// Peak GPU memory (NVML), MiB.
    pub gpu_mem_max_mb: u64,
}

impl Usage {
    pub fn cpus_per_node(&self) -> u32 {
        (self.cpus / self.nodes.max(1)).max(1)
    }

    /// Peak memory over the node's limit, 0-1+ (None without both).
    pub fn mem_efficiency(&self) -> Option<f64> {
        (self.peak_rss_kb > 0 && self.mem_limit_mb > 0)
            .then(|| self.peak_rss_kb as f64 / (self.mem_limit_mb as f64 * 1024.0))
    }

    /// CPU time over core wall time, 0-1 (None before it ran).
    pub fn cpu_efficiency(&self) -> Option<f64> {
        (self.elapsed > 0 && self.cpus > 0).then(|| self.busy_cpus / f64::from(self.cpus))
    }

    /// The worst case of two: the larger peaks and times, an OOM if either
    /// had one, COMPLETED only if both completed. Advice for the result
    /// fits both.
    pub fn worst(&self, o: &Usage) -> Usage {
        let state = if self.state == JobState::Completed {
            o.state
        } else {
            self.state
        };
        Usage {
            state: if self.host_oom || o.host_oom {
                JobState::OutOfMemory
            } else {
                state
            },
            host_oom: self.host_oom || o.host_oom,
            gpu_oom: self.gpu_oom || o.gpu_oom,
            partition: self.partition.clone(),
            nodes: self.nodes.max(o.nodes),
            cpus: self.cpus.max(o.cpus),
            tasks: self.tasks.max(o.tasks),
            elapsed: self.elapsed.max(o.elapsed),
            cpu_secs: self.cpu_secs.max(o.cpu_secs),
            busy_cpus: self.busy_cpus.max(o.busy_cpus),
            peak_rss_kb: self.peak_rss_kb.max(o.peak_rss_kb),
            mem_asked_mb: self.mem_asked_mb.max(o.mem_asked_mb),
            mem_per_cpu: self.mem_per_cpu,
            mem_limit_mb: self.mem_limit_mb.max(o.mem_limit_mb),
            time_limit_min: self.time_limit_min.max(o.time_limit_min),
            gpus: self.gpus.max(o.gpus),
            gpu_type: self.gpu_type.clone(),
            gpu_mem_max_mb: self.gpu_mem_max_mb.max(o.gpu_mem_max_mb),
        }
    }
}

/// Seconds the job ran (until `now` while it runs).
pub fn elapsed(j: &JobRecord, now: i64) -> u64 {
    if j.start_time == 0 {
        0
    } else if j.end_time == 0 {
        (now - j.start_time).max(0) as u64
    } else {
        (j.end_time - j.start_time).max(0) as u64
    }
}

/// CPU time of the job: its steps' sum, or the job's own figure.
pub fn cpu_usec(j: &JobRecord) -> u64 {
    j.steps
        .iter()
        .map(|s| s.cpu_time_usec)
        .sum::<u64>()
        .max(j.cpu_time_usec)
}

/// The largest peak RSS of its steps (or the job's), KiB.
pub fn peak_rss_kb(j: &JobRecord) -> u64 {
    j.steps
        .iter()
        .map(|s| s.max_rss_kb)
        .max()
        .unwrap_or(0)
        .max(j.max_rss_kb)
}

/// A count out of a TRES text (`cpu=4,gres/gpu=2`).
pub fn tres_count<'a>(tres: &'a str, key: &str) -> Option<&'a str> {
    tres.split(',')
        .find_map(|p| p.split_once('=').and_then(|(k, v)| (k == key).then_some(v)))
}

/// GPUs allocated and their type (`gres/gpu:a100=2`), from AllocTRES.
pub fn gpus(alloc_tres: &str) -> (u32, String) {
    let n = tres_count(alloc_tres, "gres/gpu")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let ty = alloc_tres
        .split(',')
        .find_map(|p| p.strip_prefix("gres/gpu:"))
        .and_then(|p| p.split_once('='))
        .map(|(t, _)| t.to_string())
        .unwrap_or_default();
    (n, ty)
}

/// Memory the job asked for in total, MiB.
pub fn requested_total_mb(j: &JobRecord) -> u64 {
    let from_tres =
        tres_count(&j.req_tres, "mem").and_then(|v| drover_conf::units::parse_mem_mb(v).ok());
    from_tres.unwrap_or(if j.req_mem_per_cpu {
        j.req_mem_mb * u64::from(j.ncpus.max(1))
    } else {
        j.req_mem_mb * u64::from(j.nnodes.max(1))
    })
}

/// Peak GPU memory of the job or any of its steps (NVML), MiB.
pub fn gpu_mem_max_mb(j: &JobRecord) -> u64 {
    j.steps
        .iter()
        .map(|s| s.gpu_mem_max_mb)
        .max()
        .unwrap_or(0)
        .max(j.gpu_mem_max_mb)
}

/// Peak GPU utilisation of the job or any of its steps, percent.
pub fn gpu_util_pct(j: &JobRecord) -> u32 {
    j.steps
        .iter()
        .map(|s| s.gpu_util_pct)
        .max()
        .unwrap_or(0)
        .max(j.gpu_util_pct)
}

/// The figures of one job record.
pub fn of(j: &JobRecord, now: i64) -> Usage {
    let state = JobState::try_from(j.state).unwrap_or(JobState::Pending);
    let nodes = j.nnodes.max(1);
    let cpus = j.ncpus.max(1);
    let elapsed = elapsed(j, now);
    let cpu_secs = cpu_usec(j) / 1_000_000;
    let (mem_asked_mb, mem_per_cpu) = if j.req_mem_mb > 0 {
        (j.req_mem_mb, j.req_mem_per_cpu)
    } else {
        (requested_total_mb(j) / u64::from(nodes), false)
    };
    let mem_limit_mb = if mem_per_cpu {
        mem_asked_mb * u64::from((cpus / nodes).max(1))
    } else {
        mem_asked_mb
    };
    let (gpus, gpu_type) = gpus(&j.alloc_tres);
    let gpu_mem_max_mb = gpu_mem_max_mb(j);
    Usage {
        state,
        host_oom: state == JobState::OutOfMemory || j.oom,
        gpu_oom: j.system_comment.starts_with(GPU_OOM_COMMENT),
        partition: j.partition.clone(),
        nodes,
        cpus,
        tasks: j.ntasks.max(1),
        elapsed,
        cpu_secs,
        busy_cpus: if elapsed > 0 {
            cpu_secs as f64 / elapsed as f64
        } else {
            0.0
        },
        peak_rss_kb: peak_rss_kb(j),
        mem_asked_mb,
        mem_per_cpu,
        mem_limit_mb,
        time_limit_min: j.time_limit,
        gpus,
        gpu_type,
        gpu_mem_max_mb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::acct::StepRecord;

    #[test]
    fn figures_of_a_record() {
        let j = JobRecord {
            state: JobState::Failed as i32,
            nnodes: 2,
            ncpus: 8,
            ntasks: 2,
            start_time: 100,
            end_time: 200,
            req_mem_mb: 512,
            req_mem_per_cpu: true,
            alloc_tres: "cpu=8,mem=4G,node=2,billing=8,gres/gpu=2,gres/gpu:a100=2".into(),
            system_comment: "GPU out of memory: CUDA out of memory.".into(),
            steps: vec![
                StepRecord {
                    cpu_time_usec: 100_000_000,
                    max_rss_kb: 1000,
                    ..Default::default()
                },
                StepRecord {
                    cpu_time_usec: 100_000_000,
                    max_rss_kb: 3000,
                    gpu_mem_max_mb: 40_000,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let u = of(&j, 0);
        assert!(u.gpu_oom && !u.host_oom);
        assert_eq!((u.elapsed, u.cpu_secs, u.busy_cpus), (100, 200, 2.0));
        assert_eq!(u.peak_rss_kb, 3000);
        assert_eq!((u.mem_asked_mb, u.mem_limit_mb), (512, 2048));
        assert_eq!((u.gpus, u.gpu_type.as_str()), (2, "a100"));
        assert_eq!(u.gpu_mem_max_mb, 40_000);
        assert_eq!(u.cpu_efficiency(), Some(0.25));
        // No per-node figure: the TRES total over the nodes.
        let k = JobRecord {
            nnodes: 2,
            req_tres: "cpu=2,mem=8G,node=2".into(),
            ..Default::default()
        };
        assert_eq!(of(&k, 0).mem_limit_mb, 4096);
    }

    #[test]
    fn worst_of_two() {
        let a = Usage {
            state: JobState::Completed,
            peak_rss_kb: 10,
            elapsed: 50,
            busy_cpus: 1.0,
            ..of(&JobRecord::default(), 0)
        };
        let b = Usage {
            state: JobState::OutOfMemory,
            host_oom: true,
            peak_rss_kb: 5,
            elapsed: 70,
            busy_cpus: 0.5,
            ..a.clone()
        };
        let w = a.worst(&b);
        assert!(w.host_oom);
        assert_eq!(w.state, JobState::OutOfMemory);
        assert_eq!((w.peak_rss_kb, w.elapsed, w.busy_cpus), (10, 70, 1.0));
        let c = a.worst(&a);
        assert_eq!(c.state, JobState::Completed);
    }
}
