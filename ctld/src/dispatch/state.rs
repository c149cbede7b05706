//! The scheduler's part of the controller state: reservations, fair-share
//! usage, the last pass's planned starts and priority factors.

use drover_conf::slurmconf::Config;
use drover_proto::ReservationInfo;

use crate::assoc::PreemptMode;
use crate::fairshare::Usage;
use crate::priority::{Factors, PrioConf};
use crate::sched::{Params, PlaceOpts, PreemptKind};

#[derive(Default)]
pub struct SchedState {
    /// Pending job -> expected start planned by the last pass that saw it.
    pub expected: rustc_hash::FxHashMap<u32, i64>,
    /// Unheld pending job -> multifactor priority factors (when
    /// multifactor): a job without is prioritised at the next full pass.
    pub factors: rustc_hash::FxHashMap<u32, Factors>,
    /// When every pending job's priority was last recomputed (and running
    /// jobs charged): every PriorityCalcPeriod (0: never yet).
    pub prio_calc_at: i64,
    /// Each account's users' fair-share factors then, for the jobs
    /// prioritised in between (account "" without associations).
    pub shares: rustc_hash::FxHashMap<String, rustc_hash::FxHashMap<String, f64>>,
    pub usage: Usage,
    /// Running jobs as the planner saw them (`Ctld::running_snaps`), kept
    /// until the job changes (`Ctld::sync_queue`), for nodes and
    /// partitions of generation `runs_gen` (`Cluster::kept_gen`).
    pub runs: rustc_hash::FxHashMap<u32, crate::sched::RunSnap>,
    pub runs_gen: u64,
    /// When usage was last written to the log.
    pub usage_logged: i64,
    pub resvs: Vec<ReservationInfo>,
    /// Counter for generated reservation names.
    pub resv_seq: u32,
    /// A pass is running on a worker thread.
    pub in_flight: bool,
    /// Something asked for a pass while one was in flight.
    pub again: bool,
    /// A pass planned inline has just ended: (jobs looked at, queue length),
    /// for the runtime to time it (sdiag).
    pub cycle_done: Option<(usize, usize)>,
}

/// Scheduler settings from the configuration.
pub fn params(cfg: &Config) -> Params {
    let sp = cfg.sched_params();
    let stp: Vec<String> = cfg
        .select_type_parameters
        .iter()
        .map(|s| s.to_ascii_uppercase())
        .collect();
    let place = if stp.is_empty() {
        PlaceOpts::default()
    } else {
        PlaceOpts {
            track_memory: stp.iter().any(|s| s.ends_with("_MEMORY")),
            whole_cores: stp.iter().any(|s| s.starts_with("CR_CORE")),
            share: 1,
        }
    };
    let preempt = match cfg.preempt_type.as_str() {
        "preempt/qos" => PreemptKind::Qos,
        "preempt/partition_prio" => PreemptKind::PartitionPrio,
        _ => PreemptKind::Off,
    };
    Params {
        backfill: cfg.scheduler_type != "sched/builtin",
        bf_window: i64::from(sp.bf_window_min) * 60,
        bf_resolution: i64::from(sp.bf_resolution_s),
        bf_max_job_test: sp.bf_max_job_test as usize,
        bf_max_job_user: sp.bf_max_job_user as usize,
        place,
        preempt,
        quick: false,
    }
}

/// The preempt mode of a job running in a partition (partition setting,
/// else the cluster's); SUSPEND is carried out as REQUEUE.
pub fn preempt_mode(cfg: &Config, part: Option<&str>, qos_mode: PreemptMode) -> PreemptMode {
    if qos_mode != PreemptMode::Off {
        return qos_mode;
    }
    let text = part
        .and_then(|p| cfg.partition(p))
        .and_then(|p| p.preempt_mode.clone())
        .unwrap_or_else(|| cfg.preempt_mode.clone());
    PreemptMode::parse(&text).unwrap_or(PreemptMode::Off)
}

/// Priority settings (cached per pass).
pub fn prio_conf(cfg: &Config) -> PrioConf {
    PrioConf::from_config(cfg)
}
