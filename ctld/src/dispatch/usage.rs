//! Fair-share usage and priorities between passes: charging running jobs'
//! usage, logging and replaying it, the share tree, priority factors.

use std::collections::{BTreeSet, HashMap};

use drover_proto::state::wal_record::Kind;
use drover_proto::state::{FairShareUsage, UsageEntry, WalRecord};
use drover_proto::{JobState, ReservationInfo};

use crate::ctld::Ctld;
use crate::fairshare::Usage;
use crate::priority::{factors, JobFacts, PrioConf};

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
                // Summed first: four map entries a partition, not a node.
                let (mut cpu, mut mem, mut gpu) = (0u64, 0u64, 0u64);
                for &i in &p.nodes {
                    let n = &self.cluster.nodes[i];
                    cpu += u64::from(n.conf.cpus);
                    mem += n.conf.real_memory;
                    gpu += n.gres.iter().filter(|g| g.name == "gpu").count() as u64;
                }
                let mut t = crate::assoc::Tres::new();
                if !p.nodes.is_empty() {
                    t.insert("cpu".into(), cpu);
                    t.insert("mem".into(), mem);
                    t.insert("node".into(), p.nodes.len() as u64);
                    t.insert("gres/gpu".into(), gpu);
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
            let tres = job.request().map(crate::request::tres).unwrap_or_default();
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
