//! What a run produced: one row per job, the time series for the plot,
//! the fair-share samples, and the totals the summary is made of.

use drover_proto::JobState;

#[derive(Debug, Clone)]
pub struct Options {
    /// Periodic checks and full passes, simulated seconds (default: the
    /// config's `bf_interval`, else 30).
    pub tick: i64,
    /// Points of the time series (plot), at most.
    pub samples: usize,
}

/// One job's result (a row of the CSV).
#[derive(Debug, Clone, PartialEq)]
pub struct JobOut {
    pub id: String,
    pub trace_id: String,
    pub user: String,
    pub account: String,
    pub partition: String,
    pub submit: i64,
    /// None: never started.
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// Seconds it ran (its last run).
    pub run: i64,
    pub cpus: u64,
    pub state: JobState,
    /// Why it still waits (jobs left pending at the end).
    pub reason: String,
}

/// The cluster at one instant (plot).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t: i64,
    /// Pending jobs (each task of an array counted).
    pub pending: u64,
    pub cpus: u64,
    pub gpus: u64,
}

/// The users' fair-share factors (the core's sshare FairShare) at a point.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareSample {
    pub t: i64,
    /// (user, fair-share factor), users with jobs or usage.
    pub users: Vec<(String, f64)>,
}

/// What a run produced.
#[derive(Debug, Default)]
pub struct Outcomes {
    pub jobs: Vec<JobOut>,
    /// Trace jobs the core refused at submission: (trace line, id, why).
    pub refused: Vec<(usize, String, String)>,
    /// Dependencies on jobs outside the trace or already forgotten
    /// (MinJobAge), dropped.
    pub deps_dropped: usize,
    pub series: Vec<Sample>,
    pub shares: Vec<ShareSample>,
    pub total_cpus: u64,
    pub total_gpus: u64,
    pub busy_cpu_secs: f64,
    pub busy_gpu_secs: f64,
    /// First submission to the last end.
    pub t0: i64,
    pub t_end: i64,
    /// Scheduling passes run, events handled.
    pub passes: u64,
    pub events: u64,
}
