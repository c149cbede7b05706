//! The scheduler's part of the controller state: reservations, fair-share
//! usage, the last pass's planned starts and priority factors.

use std::collections::HashMap;

use drover_conf::slurmconf::Config;
use drover_proto::ReservationInfo;

use crate::assoc::PreemptMode;
use crate::fairshare::Usage;
use crate::priority::{Factors, PrioConf};
use crate::sched::{Params, PlaceOpts, PreemptKind};

#[derive(Default)]
pub struct SchedState {
    /// Pending job -> expected start planned by the last pass that saw it.
    pub expected: HashMap<u32, i64>,
    /// Pending job -> multifactor priority factors (when multifactor).
    pub factors: HashMap<u32, Factors>,
    pub usage: Usage,
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

use std::collections::BTreeSet;

use drover_proto::state::wal_record::Kind;
use drover_proto::state::{FairShareUsage, UsageEntry, WalRecord};
use drover_proto::JobState;

use crate::ctld::Ctld;
use crate::priority::{factors, JobFacts};

/// How often the fair-share table is written to the log, seconds (a crash
/// loses at most this much usage; usage is never acknowledged to anyone).
const USAGE_LOG_EVERY: i64 = 5;

impl Ctld {
    pub fn recover_sched(&mut self, usage: Option<FairShareUsage>, resvs: Vec<ReservationInfo>) {
        if let Some(u) = usage {
            self.sched.usage = usage_from(u);
        }
        self.sched.resvs = resvs;
    }

    pub fn replay_sched(&mut self, k: Kind) {
        match k {
            Kind::Usage(u) => self.sched.usage = usage_from(u),
            Kind::Resv(r) => match self.sched.resvs.iter_mut().find(|x| x.name == r.name) {
                Some(x) => *x = r,
                None => self.sched.resvs.push(r),
            },
            Kind::ResvDelete(n) => self.sched.resvs.retain(|r| r.name != n),
            _ => {}
        }
    }

    pub fn usage_record(&self) -> FairShareUsage {
        FairShareUsage {
            time: self.sched.usage.time,
            entries: self
                .sched
                .usage
                .map
                .iter()
                .map(|((a, u), v)| UsageEntry {
                    account: a.clone(),
                    user: u.clone(),
                    usage: *v,
                })
                .collect(),
        }
    }

    /// Charge running jobs for the time since the last charge (billing
    /// TRES-seconds), decay the table, and log it now and then.
    pub fn charge_usage(&mut self, t: i64, pc: &PrioConf) {
        if self.sched.usage.time == 0 {
            self.sched.usage.time = t;
            return;
        }
        let dt = t - self.sched.usage.time;
        if dt <= 0 {
            return;
        }
        self.sched.usage.decay_to(t, pc.half_life);
        let mut charges = Vec::new();
        for job in self.jobs.values() {
            if job.state() != JobState::Running {
                continue;
            }
            let rt = job.rt();
            let cpus: u64 = rt.alloc.iter().map(|a| a.cpu_ids.len() as u64).sum();
            let mem: u64 = rt.alloc.iter().map(|a| a.mem_mb).sum();
            let gpus: u64 = rt
                .alloc
                .iter()
                .flat_map(|a| a.gres.iter())
                .filter(|g| g.name == "gpu")
                .map(|g| g.indices.len() as u64)
                .sum();
            let weights = self
                .cfg
                .partition(&rt.partition)
                .and_then(|p| p.tres_billing_weights.as_deref())
                .map(crate::priority::parse_weights)
                .unwrap_or_default();
            let b = crate::fairshare::billing(cpus, mem, gpus, &weights);
            let o = self.owner(job);
            let account = if o.account.is_empty() {
                "root".to_string()
            } else {
                o.account
            };
            charges.push((account, o.user, b * dt as f64));
        }
        for (a, u, v) in charges {
            self.sched.usage.charge(&a, &u, v);
        }
        if t - self.sched.usage_logged >= USAGE_LOG_EVERY {
            self.sched.usage_logged = t;
            let rec = self.usage_record();
            self.log(WalRecord {
                kind: Some(Kind::Usage(rec)),
            });
        }
    }

    /// The share tree with every association's factor.
    pub fn share_rows(&self, pc: &PrioConf) -> Vec<crate::fairshare::Row> {
        let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
        if self.assoc.is_empty() {
            for j in self.jobs.values() {
                if j.state().is_final() {
                    continue;
                }
                let o = self.owner(j);
                seen.insert((o.account, o.user));
            }
            for (a, u) in self.sched.usage.map.keys() {
                seen.insert((
                    if a == "root" {
                        String::new()
                    } else {
                        a.clone()
                    },
                    u.clone(),
                ));
            }
        }
        crate::fairshare::compute(&self.assoc, &self.sched.usage, &seen, pc.fair_tree)
    }

    /// Recompute every pending job's multifactor priority.
    pub fn recompute_priorities(&mut self, t: i64, pc: &PrioConf) {
        if !pc.multifactor {
            self.sched.factors.clear();
            return;
        }
        let rows = self.share_rows(pc);
        let fs: HashMap<(String, String), f64> = rows
            .iter()
            .filter(|r| !r.user.is_empty())
            .map(|r| {
                let a = if r.account == "root" && self.assoc.is_empty() {
                    String::new()
                } else {
                    r.account.clone()
                };
                ((a, r.user.clone()), r.fairshare)
            })
            .collect();
        let total_cpus: u64 = self
            .cluster
            .nodes
            .iter()
            .map(|n| u64::from(n.conf.cpus))
            .sum();
        let total_nodes = self.cluster.nodes.len() as u64;
        let max_part = self
            .cluster
            .parts
            .iter()
            .map(|p| p.conf.priority_job_factor)
            .max()
            .unwrap_or(0);
        let max_qos = self
            .assoc
            .qos
            .values()
            .map(|q| q.priority)
            .max()
            .unwrap_or(0);
        let part_tres: Vec<crate::assoc::Tres> = self
            .cluster
            .parts
            .iter()
            .map(|p| {
                let mut t = crate::assoc::Tres::new();
                for &i in &p.nodes {
                    let n = &self.cluster.nodes[i];
                    *t.entry("cpu".into()).or_default() += u64::from(n.conf.cpus);
                    *t.entry("mem".into()).or_default() += n.conf.real_memory;
                    *t.entry("node".into()).or_default() += 1;
                    let gpus = n.gres.iter().filter(|g| g.name == "gpu").count() as u64;
                    *t.entry("gres/gpu".into()).or_default() += gpus;
                }
                t
            })
            .collect();
        let ids: Vec<u32> = self.queue.iter().map(|(_, id)| *id).collect();
        self.sched.factors.retain(|id, _| {
            self.jobs
                .get(id)
                .is_some_and(|j| j.state() == JobState::Pending)
        });
        let mut changed = Vec::new();
        for id in ids {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            let spec = job.spec();
            let pidx = spec
                .partition
                .split(',')
                .find_map(|p| self.cluster.part_idx(p.trim()));
            let req = crate::job::build_request(spec, &self.cfg, &self.cluster, pidx).ok();
            let tres = req
                .as_ref()
                .map(crate::sched::request_tres)
                .unwrap_or_default();
            let o = self.owner(job);
            let qos = if o.qos.is_empty() { "normal" } else { &o.qos };
            let facts = JobFacts {
                eligible: job.rt().eligible_time,
                cpus: tres.get("cpu").copied().unwrap_or(1),
                nodes: tres.get("node").copied().unwrap_or(1),
                tres,
                part_job_factor: pidx.map_or(0, |p| self.cluster.parts[p].conf.priority_job_factor),
                max_part_job_factor: max_part,
                qos_priority: self.assoc.qos.get(qos).map_or(0, |q| q.priority),
                max_qos_priority: max_qos,
                fairshare: fs
                    .get(&(o.account.clone(), o.user.clone()))
                    .copied()
                    .unwrap_or(0.0),
                nice: spec.nice,
                total_cpus,
                total_nodes,
                part_tres: pidx.map(|p| part_tres[p].clone()).unwrap_or_default(),
            };
            let f = factors(pc, &facts, t);
            let prio = if spec.priority > 0 {
                spec.priority
            } else {
                f.priority()
            };
            self.sched.factors.insert(id, f);
            if job.rt().priority != prio {
                changed.push((id, prio));
            }
        }
        for (id, prio) in changed {
            if let Some(j) = self.jobs.get_mut(&id) {
                j.rt_mut().priority = prio;
            }
            self.sync_queue(id);
        }
    }
}

fn usage_from(u: FairShareUsage) -> Usage {
    Usage {
        time: u.time,
        map: u
            .entries
            .into_iter()
            .map(|e| ((e.account, e.user), e.usage))
            .collect(),
    }
}
