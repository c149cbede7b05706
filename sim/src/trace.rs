//! The workload, whatever it was read from: one [`TraceJob`] per job (or
//! array task) of the trace, with what it asked for and how it really ran.
//! The simulator submits what it asked for and lets it run as it ran.

use drover_proto::{JobSpec, INFINITE};

/// Memory asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mem {
    /// Not given: the partition's default.
    #[default]
    Default,
    PerNode(u64),
    PerCpu(u64),
}

/// How the job's run ended in the trace (what the simulated agent reports
/// when the run time is over).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outcome {
    #[default]
    Completed,
    /// Ended by itself with this exit code (not 0).
    Failed(i32),
    /// Cancelled by its owner after `run` seconds of running (or, if it
    /// never ran in the trace, at [`TraceJob::cancel_at`]).
    Cancelled,
    /// Ran into its time limit: the core's own time limit ends it.
    Timeout,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceJob {
    /// Line of the trace file (0: generated).
    pub line: usize,
    /// The job's id in the trace (`1234`, or `1234_7` for an array task).
    pub id: String,
    pub user: String,
    pub account: String,
    /// "" = the default partition.
    pub partition: String,
    pub qos: String,
    /// Unix seconds.
    pub submit: i64,
    /// Nodes asked for (0 = not given).
    pub nodes: u32,
    /// CPUs over the whole job (at least 1).
    pub cpus: u32,
    pub mem: Mem,
    /// GPUs over the whole job.
    pub gpus: u32,
    pub gpu_type: String,
    /// Minutes; None = the partition's default; u32::MAX = UNLIMITED.
    pub time_limit: Option<u32>,
    /// Seconds it ran (None: it never started).
    pub run: Option<i64>,
    pub outcome: Outcome,
    /// Cancelled while pending in the trace: when (unix seconds).
    pub cancel_at: Option<i64>,
    /// Array task: (array job id as in the trace, task id).
    pub array: Option<(String, u32)>,
    /// Slurm dependency text naming jobs by their trace ids.
    pub dependency: String,
}

/// A trace read from text: the jobs, and what was wrong with the lines
/// left out (each naming its line).
#[derive(Debug, Default)]
pub struct Workload {
    pub jobs: Vec<TraceJob>,
    /// `file:line: why` for every malformed line.
    pub bad: Vec<String>,
    /// Lines left out on purpose (steps, jobs still running at export).
    pub ignored: usize,
}

impl TraceJob {
    /// What the job asked for, as sbatch would send it.
    pub fn spec(&self) -> JobSpec {
        let j = self;
        let mut spec = JobSpec {
            name: format!("sim-{}", j.id),
            script: b"#!/bin/sh\n# simulated\n".to_vec(),
            work_dir: "/tmp".into(),
            partition: j.partition.clone(),
            account: j.account.clone(),
            qos: j.qos.clone(),
            ntasks: j.cpus.max(1),
            min_nodes: j.nodes,
            max_nodes: j.nodes,
            time_limit: match j.time_limit {
                None => 0,
                Some(u32::MAX) => INFINITE,
                Some(m) => m.max(1),
            },
            submit_host: "sim".into(),
            ..Default::default()
        };
        match j.mem {
            Mem::Default => {}
            Mem::PerNode(m) => spec.mem_per_node_mb = m,
            Mem::PerCpu(m) => spec.mem_per_cpu_mb = m,
        }
        if j.gpus > 0 {
            spec.gpus = j.gpus;
            spec.gpus_type = j.gpu_type.clone();
        }
        spec
    }
}

impl Workload {
    /// Sort by submit time (stable: trace order within a second).
    pub fn sort(&mut self) {
        self.jobs.sort_by_key(|j| j.submit);
    }
}

/// Seconds of a Slurm `[D-]HH:MM:SS` text (the workspace's one parser).
pub fn duration_secs(s: &str) -> Result<Option<i64>, String> {
    drover_conf::units::parse_duration(s).map(|v| v.map(|x| x.min(i64::MAX as u64) as i64))
}
